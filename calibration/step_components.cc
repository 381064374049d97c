#include "calibration/step_components.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "calibration/run_fit.h"

namespace calisim::calibration {
namespace {

double modelled_s(const StepParts& parts, const StepParts& m) {
  double t = 0;
  for (int k = 0; k < kStepComponents; ++k) t += m[k] * parts[k];
  return t;
}

constexpr int kComputePart = static_cast<int>(StepComponent::compute);
constexpr int kAttentionPart = static_cast<int>(StepComponent::attention);
using PartMask = std::array<bool, kStepComponents>;

// Attention follows compute when compute is fitted and attention is not (ComponentMultipliers).
bool attention_tied(const PartMask& fit) { return fit[kComputePart] && !fit[kAttentionPart]; }

// A row's parts as the fit sees them: a tied attention part counted in compute.
StepParts fitted_parts(const StepParts& parts, bool tied) {
  StepParts p = parts;
  if (tied) {
    p[kComputePart] += p[kAttentionPart];
    p[kAttentionPart] = 0;
  }
  return p;
}

// Non-negative relative least squares over `use` (row indices): every subset of the parts asked for
// that some used row has is solved unconstrained; the best solution without a negative multiplier
// wins. The other parts keep 1 and are marked not fitted; a tied attention part takes compute's.
ComponentMultipliers solve(const std::vector<ComponentRow>& rows, const std::vector<std::size_t>& use,
                           const PartMask& fit) {
  ComponentMultipliers out;
  const bool tied = attention_tied(fit);
  std::vector<StepParts> parts;
  parts.reserve(use.size());
  for (std::size_t i : use) parts.push_back(fitted_parts(rows[i].parts_s, tied));
  std::vector<int> present;
  for (int k = 0; k < kStepComponents; ++k) {
    const bool any = fit[k] && std::any_of(parts.begin(), parts.end(), [&](const StepParts& p) { return p[k] > 0; });
    out.fitted[k] = any;
    if (any) present.push_back(k);
  }
  out.attention_tied = tied && out.fitted[kComputePart];
  if (present.empty()) return out;
  // Each row divided by its measured step: the target is 1 for every row, less the parts kept as
  // simulated.
  Eigen::MatrixXd a(static_cast<Eigen::Index>(use.size()), static_cast<Eigen::Index>(present.size()));
  Eigen::VectorXd target(static_cast<Eigen::Index>(use.size()));
  for (std::size_t r = 0; r < use.size(); ++r) {
    const double measured_s = rows[use[r]].measured_s;
    double kept_s = 0;
    for (int k = 0; k < kStepComponents; ++k)
      if (!out.fitted[k]) kept_s += parts[r][k];
    target(static_cast<Eigen::Index>(r)) = 1 - kept_s / measured_s;
    for (std::size_t c = 0; c < present.size(); ++c) {
      a(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = parts[r][present[c]] / measured_s;
    }
  }
  // The empty subset (every fitted multiplier 0) is a candidate too: the optimum when no other
  // subset has a non-negative solution, or a better one.
  double best = target.squaredNorm();
  Eigen::VectorXd best_x = Eigen::VectorXd::Zero(a.cols());
  const unsigned subsets = 1u << present.size();
  for (unsigned mask = 1; mask < subsets; ++mask) {
    std::vector<Eigen::Index> cols;
    for (std::size_t c = 0; c < present.size(); ++c)
      if (mask & (1u << c)) cols.push_back(static_cast<Eigen::Index>(c));
    Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(cols.size()));
    for (std::size_t j = 0; j < cols.size(); ++j) sub.col(static_cast<Eigen::Index>(j)) = a.col(cols[j]);
    const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(sub);
    // A subset whose columns are dependent has no unique solution; a smaller subset covers it.
    if (qr.rank() < static_cast<Eigen::Index>(cols.size())) continue;
    const Eigen::VectorXd x = qr.solve(target);
    if ((x.array() < 0).any()) continue;
    const double err = (sub * x - target).squaredNorm();
    if (err < best) {
      best = err;
      best_x.setZero();
      for (std::size_t j = 0; j < cols.size(); ++j) best_x(cols[j]) = x(static_cast<Eigen::Index>(j));
    }
  }
  for (std::size_t c = 0; c < present.size(); ++c) out.value[present[c]] = best_x(static_cast<Eigen::Index>(c));
  if (out.attention_tied) out.value[kAttentionPart] = out.value[kComputePart];
  return out;
}

using Folds = std::vector<std::pair<std::string, std::vector<std::size_t>>>;  // name -> row indices

// The folds to hold out among `use` (row indices): by fold name, or row by row when they share one
// (calibration::holdout_folds); each fold's rows as indices into `rows`.

Folds folds_of(const std::vector<ComponentRow>& rows, const std::vector<std::size_t>& use, bool* by_fold = nullptr) {
  std::vector<std::string> fold_of, run_ids;
  for (std::size_t i : use) {
    fold_of.push_back(rows[i].fold);
    run_ids.push_back(rows[i].run_id);
  }
  HoldoutFolds h = holdout_folds(fold_of, run_ids);
  if (by_fold) *by_fold = h.by_fold;
  for (auto& [name, held] : h.folds)
    for (std::size_t& i : held) i = use[i];
  return std::move(h.folds);
}

std::vector<std::size_t> all_but(const std::vector<std::size_t>& use, const std::vector<std::size_t>& held) {
  std::vector<std::size_t> train;
  for (std::size_t i : use)
    if (std::find(held.begin(), held.end(), i) == held.end()) train.push_back(i);
  return train;
}

// Mean |relative error| of `use`'s rows, each predicted with the parts `fit` fitted on the other
// folds (`folds`, a partition of `use` into at least two).
double cross_validated_error(const std::vector<ComponentRow>& rows, const std::vector<std::size_t>& use,
                             const Folds& folds, const PartMask& fit) {
  double sum = 0;
  for (const auto& [name, held] : folds) {
    const ComponentMultipliers m = solve(rows, all_but(use, held), fit);
    for (std::size_t i : held) sum += std::abs(modelled_s(rows[i].parts_s, m.value) / rows[i].measured_s - 1);
  }
  return sum / static_cast<double>(use.size());
}

// The subset of `allowed` with the smallest cross-validated error over `use` (ties: fewer parts,
// then the earlier mask); `allowed` itself when `use` cannot be cross-validated.
PartMask choose_parts(const std::vector<ComponentRow>& rows, const std::vector<std::size_t>& use,
                      const PartMask& allowed) {
  const Folds folds = folds_of(rows, use);
  if (folds.size() < 2) return allowed;  // nothing to hold out
  std::vector<int> asked;
  for (int k = 0; k < kStepComponents; ++k)
    if (allowed[k]) asked.push_back(k);
  PartMask best = allowed;
  double best_err = std::numeric_limits<double>::infinity();
  int best_count = kStepComponents + 1;
  for (unsigned mask = 0; mask < (1u << asked.size()); ++mask) {
    PartMask candidate{};
    int count = 0;
    for (std::size_t c = 0; c < asked.size(); ++c)
      if (mask & (1u << c)) candidate[asked[c]] = true, ++count;
    const double err = cross_validated_error(rows, use, folds, candidate);
    if (err < best_err - 1e-12 || (err <= best_err + 1e-12 && count < best_count)) {
      best = candidate;
      best_err = err;
      best_count = count;
    }
  }
  return best;
}

// Per component, in enum order: the label tables print and the JSON / command-line name.
struct ComponentNames {
  const char* label;
  const char* json;
};
constexpr ComponentNames kComponentNames[kStepComponents] = {
    {"compute", "compute"},
    {"attention kernels", "attention"},
    {"model-parallel comm", "model_parallel_comm"},
    {"data-parallel comm", "data_parallel_comm"},
    {"bubble", "bubble"},
    {"other", "other"},
};

}  // namespace

const char* to_string(StepComponent c) { return kComponentNames[static_cast<int>(c)].label; }

const char* json_name(StepComponent c) { return kComponentNames[static_cast<int>(c)].json; }

StepParts step_parts(const SimulationResult& r) {
  StepParts p{};
  p[kComputePart] = r.other_kernel_s();
  p[kAttentionPart] = r.attention_kernel_s;
  p[static_cast<int>(StepComponent::model_parallel_comm)] =
      r.tp_comm_exposed_s + r.cp_comm_exposed_s + r.ep_comm_exposed_s + r.pp_comm_exposed_s;
  p[static_cast<int>(StepComponent::data_parallel_comm)] = r.dp_comm_exposed_s;
  p[static_cast<int>(StepComponent::bubble)] = r.bubble_s;
  p[static_cast<int>(StepComponent::other)] = r.optimizer_s + r.host_exposed_s + r.straggler_s + r.offload_exposed_s;
  return p;
}

StepComponent parse_step_component(const std::string& word) {
  for (int k = 0; k < kStepComponents; ++k) {
    if (word == json_name(static_cast<StepComponent>(k))) return static_cast<StepComponent>(k);
  }
  throw std::invalid_argument(
      "expected compute, attention, model_parallel_comm, data_parallel_comm, bubble or other, got '" + word + "'");
}

ComponentFit fit_components(const std::vector<ComponentRow>& rows, const PartMask& fit, bool select_parts) {
  if (rows.empty()) throw std::invalid_argument("no simulated rows to decompose");
  if (std::none_of(fit.begin(), fit.end(), [](bool b) { return b; })) throw std::invalid_argument("no part to fit");
  StepParts total{};
  for (const auto& r : rows) {
    if (!(r.measured_s > 0)) throw std::invalid_argument("row " + r.run_id + ": measured step time is not positive");
    for (int k = 0; k < kStepComponents; ++k) total[k] += r.parts_s[k];
  }
  double sum = 0;
  for (double t : total) sum += t;
  if (!(sum > 0)) throw std::invalid_argument("the rows' simulated steps have no time in any part");

  ComponentFit out;
  out.selected = select_parts;
  for (int k = 0; k < kStepComponents; ++k) out.share[k] = total[k] / sum;
  std::vector<std::size_t> all(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) all[i] = i;
  out.multipliers = solve(rows, all, select_parts ? choose_parts(rows, all, fit) : fit);
  for (const auto& r : rows) {
    out.simulated_s.push_back(modelled_s(r.parts_s, ComponentMultipliers{}.value));
    out.fitted_s.push_back(modelled_s(r.parts_s, out.multipliers.value));
  }
  out.held_out_s = out.fitted_s;  // a single row has no fold: its fit is all there is

  for (const auto& [name, held] : folds_of(rows, all, &out.by_fold)) {
    const std::vector<std::size_t> train = all_but(all, held);
    const ComponentMultipliers m = solve(rows, train, select_parts ? choose_parts(rows, train, fit) : fit);
    for (std::size_t i : held) out.held_out_s[i] = modelled_s(rows[i].parts_s, m.value);
    out.folds.push_back(name);
    out.held_out.push_back(m);
    out.fold_rows.push_back(held);
  }
  return out;
}

}  // namespace calisim::calibration
