#include "calibration/run_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "calibration/efficiency_scale.h"
#include "core/dtype.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace calisim::calibration {
namespace {

double capped(double e, double k) { return std::min(1.0, e * k); }

// Mean squared log(simulated / measured) of `rows` (by index) under `f`.
struct Objective {
  const std::vector<FitRow>& rows;
  int* simulations;
  double step(const FitRow& r, const FitFactors& f) const {
    const SystemConfig sys = apply_factors(r.system, f);
    const DefaultEfficiencyModel eff(sys);
    SimulateOptions opt;
    opt.details = false;
    ++*simulations;
    return simulate(r.model, r.strategy, sys, eff, opt).duration_time_per_iter_s;
  }
  double operator()(const std::vector<std::size_t>& use, const FitFactors& f) const {
    double sum = 0;
    for (std::size_t i : use) {
      const double l = std::log(step(rows[i], f) / rows[i].measured_step_s);
      sum += l * l;
    }
    return sum / static_cast<double>(use.size());
  }
};

// Golden-section search for the factor of group `g` (the others held) on log(factor).
double best_factor(const Objective& obj, const std::vector<std::size_t>& use, FitFactors f, std::size_t g,
                   const RunFitOptions& o) {
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double a = std::log(o.min_factor), b = std::log(o.max_factor);
  auto value = [&](double x) {
    f.factor[g] = std::exp(x);
    return obj(use, f);
  };
  double c = b - phi * (b - a), d = a + phi * (b - a);
  double fc = value(c), fd = value(d);
  while (b - a > o.log_tolerance) {
    if (fc < fd) {
      b = d, d = c, fd = fc;
      c = b - phi * (b - a);
      fc = value(c);
    } else {
      a = c, c = d, fc = fd;
      d = a + phi * (b - a);
      fd = value(d);
    }
  }
  return std::exp((a + b) / 2);
}

// Whether a group's efficiencies price anything in the rows: the fp8 factor only with FP8 rows on
// a device with an FP8 peak (elsewhere the objective is flat in it and any value would "fit").
bool moves_rows(const Objective& obj, const std::vector<std::size_t>& use, FitGroup g) {
  if (g != FitGroup::fp8) return true;
  return std::any_of(use.begin(), use.end(), [&](std::size_t i) {
    const FitRow& r = obj.rows[i];
    return r.strategy.fp8 != Fp8Recipe::none &&
           r.system.device.peak_tflops[static_cast<int>(DType::fp8_e4m3)] > 0;
  });
}

FitFactors fit(const Objective& obj, const std::vector<std::size_t>& use, const RunFitOptions& o) {
  FitFactors f;
  f.groups = o.groups;
  f.factor.assign(o.groups.size(), 1.0);
  const int passes = o.groups.size() == 1 ? 1 : std::max(1, o.passes);
  for (int p = 0; p < passes; ++p) {
    for (std::size_t g = 0; g < f.groups.size(); ++g) {
      if (moves_rows(obj, use, f.groups[g])) f.factor[g] = best_factor(obj, use, f, g, o);
    }
  }
  return f;
}

}  // namespace

std::vector<std::string> cross_validation_folds(const std::vector<std::string>& groups,
                                                const std::vector<std::string>& documents) {
  if (groups.size() != documents.size()) throw std::invalid_argument("one document per row's group is needed");
  std::map<std::string, std::string> parent;  // union-find over group names
  std::vector<std::string> order;
  auto find = [&](std::string g) {
    while (parent[g] != g) g = parent[g];
    return g;
  };
  for (const auto& g : groups) {
    if (!parent.count(g)) {
      parent[g] = g;
      order.push_back(g);
    }
  }
  std::map<std::string, std::string> first_with_document;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (documents[i].empty()) continue;
    auto [it, fresh] = first_with_document.emplace(documents[i], groups[i]);
    if (fresh) continue;
    const std::string a = find(it->second), b = find(groups[i]);
    if (a == b) continue;
    // The group seen first names the joined fold.
    const bool a_first = std::find(order.begin(), order.end(), a) < std::find(order.begin(), order.end(), b);
    parent[a_first ? b : a] = a_first ? a : b;
  }
  std::map<std::string, int> members;
  for (const auto& g : order) ++members[find(g)];
  std::vector<std::string> out;
  for (const auto& g : groups) {
    const std::string root = find(g);
    const int n = members[root];
    out.push_back(n > 1 ? root + " (+ " + std::to_string(n - 1) + " source" + (n > 2 ? "s" : "") +
                              " citing the same document)"
                        : root);
  }
  return out;
}

HoldoutFolds holdout_folds(const std::vector<std::string>& fold_of, const std::vector<std::string>& run_ids) {
  if (fold_of.size() != run_ids.size()) throw std::invalid_argument("one fold name per row's run id is needed");
  std::map<std::string, std::vector<std::size_t>> by_fold;
  for (std::size_t i = 0; i < fold_of.size(); ++i) by_fold[fold_of[i]].push_back(i);
  HoldoutFolds out;
  out.by_fold = by_fold.size() > 1;
  if (out.by_fold) {
    for (auto& [name, idx] : by_fold) out.folds.emplace_back(name, std::move(idx));
  } else if (run_ids.size() > 1) {
    for (std::size_t i = 0; i < run_ids.size(); ++i) out.folds.push_back({run_ids[i], {i}});
  }
  return out;
}

const char* to_string(FitGroup g) {
  switch (g) {
    case FitGroup::compute: return "compute";
    case FitGroup::comm: return "comm";
    case FitGroup::memory: return "memory";
    case FitGroup::fp8: return "fp8";
  }
  return "?";
}

FitGroup parse_fit_group(const std::string& word) {
  if (word == "compute") return FitGroup::compute;
  if (word == "comm") return FitGroup::comm;
  if (word == "memory") return FitGroup::memory;
  if (word == "fp8") return FitGroup::fp8;
  throw std::invalid_argument("expected compute, comm, memory or fp8, got '" + word + "'");
}

double FitFactors::of(FitGroup g) const {
  for (std::size_t i = 0; i < groups.size(); ++i)
    if (groups[i] == g) return factor[i];
  return 1.0;
}

SystemConfig apply_factors(const SystemConfig& sys, const FitFactors& f) {
  SystemConfig s = sys;
  const double kc = f.of(FitGroup::compute), kn = f.of(FitGroup::comm), km = f.of(FitGroup::memory);
  s.matmul_efficiency = capped(s.matmul_efficiency, kc);
  for (double& e : s.matmul_efficiency_by_dtype)
    if (e > 0) e = capped(e, kc);
  // FP8 GEMMs: their own figure (or the matmul figure they fall back to) times both factors.
  const double kf = f.of(FitGroup::fp8);
  if (kf != 1.0) {
    // As the document is written (below): the file's FP8 entries, or both formats when it has none.
    const auto given = [&](DType d) { return sys.matmul_efficiency_by_dtype[static_cast<int>(d)] > 0; };
    const bool any = given(DType::fp8_e4m3) || given(DType::fp8_e5m2);
    for (DType d : {DType::fp8_e4m3, DType::fp8_e5m2}) {
      if (sys.device.peak_tflops[static_cast<int>(d)] > 0 && (given(d) || !any)) {
        s.matmul_efficiency_by_dtype[static_cast<int>(d)] = capped(sys.matmul_efficiency_for(d), kc * kf);
      }
    }
  }
  s.attention_efficiency = capped(s.attention_efficiency, kc);
  for (double& e : s.scale_up.efficiency) e = capped(e, kn);
  for (double& e : s.scale_out.efficiency) e = capped(e, kn);
  s.memory_efficiency = capped(s.memory_efficiency, km);
  return s;
}

std::vector<std::string> efficiencies_at_cap(const SystemConfig& sys, const FitFactors& f) {
  const double kc = f.of(FitGroup::compute), kn = f.of(FitGroup::comm), km = f.of(FitGroup::memory);
  const double kf = f.of(FitGroup::fp8);
  std::vector<std::string> out;
  if (sys.matmul_efficiency * kc >= 1) out.push_back("matmul");
  const bool fp8_peak = sys.device.peak_tflops[static_cast<int>(DType::fp8_e4m3)] > 0;
  if (fp8_peak && sys.matmul_efficiency_for(DType::fp8_e4m3) * kc * kf >= 1) out.push_back("matmul_by_dtype.fp8");
  for (DType d : {DType::fp32, DType::tf32, DType::bf16, DType::fp16}) {
    const double e = sys.matmul_efficiency_by_dtype[static_cast<int>(d)];
    if (e > 0 && e * kc >= 1) out.push_back(std::string("matmul_by_dtype.") + std::string(to_string(d)));
  }
  if (sys.attention_efficiency * kc >= 1) out.push_back("attention");
  if (sys.memory_efficiency * km >= 1) out.push_back("memory_bound");
  for (const auto& [tier, net] : {std::pair{"scale_up", &sys.scale_up}, std::pair{"scale_out", &sys.scale_out}}) {
    for (std::size_t i = 0; i < net->efficiency.size(); ++i) {
      if (net->efficiency[i] > 0 && net->efficiency[i] * kn >= 1) {
        out.push_back(fmt::format("{}.{}", tier, to_string(static_cast<CollectiveOp>(i))));
      }
    }
  }
  return out;
}

// The document is scaled by the shared mechanism (calibration/efficiency_scale.h): matmul and
// attention by the compute factor, the FP8 entries by compute × fp8, memory_bound and the
// collectives by theirs.
EfficiencyScale scale_of(const FitFactors& f) {
  EfficiencyScale s;
  s.matmul = s.attention = f.of(FitGroup::compute);
  s.fp8 = f.of(FitGroup::fp8);
  s.memory = f.of(FitGroup::memory);
  s.comm = f.of(FitGroup::comm);
  return s;
}

nlohmann::json apply_factors(nlohmann::json doc, const FitFactors& f) {
  return scale_efficiencies(std::move(doc), scale_of(f));
}
nlohmann::ordered_json apply_factors(nlohmann::ordered_json doc, const FitFactors& f) {
  return scale_efficiencies(std::move(doc), scale_of(f));
}

RunFitResult fit_runs(const std::vector<FitRow>& rows, const RunFitOptions& o,
                      const std::function<void(int, int)>& progress) {
  if (rows.empty()) throw std::invalid_argument("no simulated rows to fit");
  if (o.groups.empty()) throw std::invalid_argument("no efficiency group to fit");
  for (const auto& r : rows) {
    if (!(r.measured_step_s > 0)) throw std::invalid_argument("row " + r.run_id + ": measured step time is not positive");
  }
  RunFitResult out;
  const Objective obj{rows, &out.simulations};
  std::vector<std::size_t> all(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) all[i] = i;

  // Folds: one per group (groups citing one document joined), or one per row when every row
  // shares a group.
  std::vector<std::string> groups, documents, run_ids;
  for (const auto& r : rows) {
    groups.push_back(r.group);
    documents.push_back(r.document);
    run_ids.push_back(r.run_id);
  }
  const std::vector<std::string> fold_of = cross_validation_folds(groups, documents);
  const HoldoutFolds holdout = holdout_folds(fold_of, run_ids);
  const auto& folds = holdout.folds;
  out.by_group = holdout.by_fold;
  const int total = 1 + static_cast<int>(folds.size());

  out.factors = fit(obj, all, o);
  if (progress) progress(1, total);
  FitFactors none;
  out.rows.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    FittedRow& fr = out.rows[i];
    fr.run_id = rows[i].run_id;
    fr.group = fold_of[i];
    fr.measured_step_s = rows[i].measured_step_s;
    fr.default_step_s = obj.step(rows[i], none);
    fr.fitted_step_s = obj.step(rows[i], out.factors);
    fr.held_out_step_s = fr.fitted_step_s;  // one row alone has no fold: its fit is all there is
  }
  int done = 1;
  for (const auto& [name, held] : folds) {
    std::vector<std::size_t> train;
    for (std::size_t i : all)
      if (std::find(held.begin(), held.end(), i) == held.end()) train.push_back(i);
    const FitFactors f = fit(obj, train, o);
    for (std::size_t i : held) out.rows[i].held_out_step_s = obj.step(rows[i], f);
    out.held_out.push_back(f);
    out.folds.push_back(name);
    if (progress) progress(++done, total);
  }
  return out;
}

}  // namespace calisim::calibration
