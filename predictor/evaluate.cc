#include "predictor/evaluate.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <type_traits>

#include "db/published_import.h"
#include "predictor/achievable_ceiling.h"
#include "predictor/cross_device.h"
#include "predictor/device_fit.h"
#include "predictor/interpolating_model.h"
#include "predictor/kernel_overhead.h"
#include "predictor/scaled_model.h"

namespace calisim::predictor {
namespace {

// Percentage errors collected per family label, in label order.
class ErrorTable {
 public:
  void add(const std::string& family, double predicted, double actual, std::string key = {}) {
    if (!(actual > 0)) return;
    errors_[family].push_back(100.0 * std::abs(predicted - actual) / actual);
    if (!key.empty()) rows_[family].push_back({std::move(key), actual, predicted});
  }
  void append_to(std::vector<ErrorSummary>& out, const std::string& from, const std::string& device) const {
    for (const auto& [family, e] : errors_) {
      ErrorSummary s{from, device, family, e.size(), 0, 0, {}, {}};
      if (const auto it = rows_.find(family); it != rows_.end()) s.rows = it->second;
      for (double v : e) {
        s.mape_pct += v / static_cast<double>(e.size());
        s.max_ape_pct = std::max(s.max_ape_pct, v);
      }
      out.push_back(s);
    }
  }

 private:
  std::map<std::string, std::vector<double>> errors_;
  std::map<std::string, std::vector<ScoredRow>> rows_;
};

std::string dir_name(AttentionDirection d) { return d == AttentionDirection::forward ? "fwd" : "bwd"; }
std::string gemm_family(const GemmKey& k) { return "gemm " + std::string(to_string(k.dtype)); }
std::string attention_family(const AttentionKey& k) {
  return "attention " + dir_name(k.direction) + " " + std::string(to_string(k.dtype));
}
std::string collective_family(const CollectiveKey& k) { return "collective " + std::string(to_string(k.op)); }
std::string memory_family(const MemoryOpKey& k) { return "memory " + k.kind; }

template <class Row>
std::vector<Row> without(const std::vector<Row>& rows, std::size_t i) {
  std::vector<Row> out;
  out.reserve(rows.size() - 1);
  for (std::size_t j = 0; j < rows.size(); ++j) {
    if (j != i) out.push_back(rows[j]);
  }
  return out;
}

// Leave-one-out over one group; `fit_predict(others, held_out)` returns the prediction.
template <class Row, class FitPredict>
void leave_one_out(const std::vector<Row>& group, std::size_t min_rows, const std::string& family, ErrorTable& table,
                   FitPredict fit_predict) {
  if (group.size() < min_rows + 1) return;
  for (std::size_t i = 0; i < group.size(); ++i) {
    table.add(family, fit_predict(without(group, i), group[i]), std::min(group[i].efficiency, 1.0));
  }
}

bool eager_loop(const db::RunBatch& b) { return db::published_timing(b.run) == db::PublishedTiming::eager_loop; }

// Time of a row's work at the device's dense peak (or HBM bandwidth): efficiency e takes work_s / e.
double work_s(const GemmKey& k, const DeviceSpec& d) { return k.flops() / d.peak_flops_per_s(k.dtype); }
double work_s(const AttentionKey& k, const DeviceSpec& d) { return k.flops() / d.peak_flops_per_s(k.dtype); }
double work_s(const MemoryOpKey& k, const DeviceSpec& d) {
  return static_cast<double>(std::max<std::int64_t>(k.bytes, 1)) / d.hbm_bytes_per_s();
}

// Efficiency of one iteration of a host-issued loop: the kernel's time, or the host's dispatch time
// of one op when that is longer (the loop cannot issue faster).
double host_bound(double kernel_efficiency, double work, double dispatch_s) {
  if (!(dispatch_s > 0) || !(kernel_efficiency > 0)) return kernel_efficiency;
  return work / std::max(work / kernel_efficiency, dispatch_s);
}

// Rows of one fit group with their timing and where they sit in the runs (run, row index).
template <class Row>
struct Tagged {
  std::vector<Row> rows;
  std::vector<bool> eager;
  std::vector<std::pair<std::size_t, std::size_t>> at;
};
struct TaggedGroups {
  std::array<Tagged<db::GemmRow>, kDTypeCount> gemm;
  std::array<Tagged<db::AttentionRow>, 2 * kDTypeCount> attention;  // by attention_group
};

// The GEMM and attention groups of group_rows (predicted rows left out), with each row's timing.
TaggedGroups tagged_groups(const std::vector<db::RunBatch>& runs) {
  TaggedGroups g;
  const auto push = [](auto& group, const auto& row, bool eager, std::size_t run, std::size_t i) {
    group.rows.push_back(row);
    group.eager.push_back(eager);
    group.at.emplace_back(run, i);
  };
  for (std::size_t b = 0; b < runs.size(); ++b) {
    if (runs[b].run.source == db::Source::predicted) continue;
    const bool eager = eager_loop(runs[b]);
    const auto& rows = runs[b].rows;
    for (std::size_t i = 0; i < rows.gemm.size(); ++i) {
      push(g.gemm[static_cast<int>(rows.gemm[i].key.dtype)], rows.gemm[i], eager, b, i);
    }
    for (std::size_t i = 0; i < rows.attention.size(); ++i) {
      const auto& r = rows.attention[i];
      push(g.attention[attention_group(r.key.dtype, r.key.direction)], r, eager, b, i);
    }
  }
  return g;
}

// Which rows a kernel-efficiency fit must leave out: eager-loop rows whose kernel, as the fit of the
// other rows of the group predicts it, is shorter than the host's dispatch time (their figure is the
// host's pace and bounds the kernel time from above only). One pass: every row is judged against
// all the others. Nothing is left out when fewer than kMinRowsPerFit rows would remain.
template <class Row, class FitPredict>
std::vector<bool> host_bound_rows(const Tagged<Row>& g, const DeviceSpec& spec, double dispatch_s,
                                  FitPredict fit_predict) {
  std::vector<bool> out(g.rows.size(), false);
  if (!(dispatch_s > 0) || g.rows.size() <= kMinRowsPerFit) return out;
  std::size_t left_out = 0;
  for (std::size_t j = 0; j < g.rows.size(); ++j) {
    if (!g.eager[j]) continue;
    const double e = fit_predict(without(g.rows, j), g.rows[j].key);
    out[j] = e > 0 && work_s(g.rows[j].key, spec) / e < dispatch_s;
    left_out += out[j] ? 1 : 0;
  }
  if (g.rows.size() - left_out < kMinRowsPerFit) std::fill(out.begin(), out.end(), false);
  return out;
}

template <class Row>
std::vector<Row> kept(const std::vector<Row>& rows, const std::vector<bool>& drop) {
  std::vector<Row> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!drop[i]) out.push_back(rows[i]);
  }
  return out;
}

// Leave-one-out over one shape-fit group with the eager-loop rule: the fit of the other rows leaves
// out their host-bound rows, and an eager-loop held-out row is predicted as host_bound(kernel).
// Returns how many eager-loop rows were scored.
template <class Row, class FitPredict>
std::size_t leave_one_out_timed(const Tagged<Row>& g, const std::string& family, ErrorTable& table,
                                const DeviceSpec& spec, double dispatch_s, FitPredict fit_predict) {
  if (g.rows.size() < kMinRowsPerFit + 1) return 0;
  std::size_t eager = 0;
  for (std::size_t i = 0; i < g.rows.size(); ++i) {
    Tagged<Row> others{without(g.rows, i), without(g.eager, i), {}};
    const std::vector<Row> fit_rows = kept(others.rows, host_bound_rows(others, spec, dispatch_s, fit_predict));
    const Row& r = g.rows[i];
    double predicted = fit_predict(fit_rows, r.key);
    if (g.eager[i]) {
      predicted = host_bound(predicted, work_s(r.key, spec), dispatch_s);
      ++eager;
    }
    table.add(family, predicted, std::min(r.efficiency, 1.0));
  }
  return eager;
}

std::string eager_note(std::size_t rows, double dispatch_s) {
  if (rows == 0) return {};
  if (!(dispatch_s > 0)) return fmt::format("{} eager-loop rows, no host dispatch time: scored as kernels", rows);
  return fmt::format("{} eager-loop rows: max(kernel, host {:.1f} us/op); fits skip their host-bound rows", rows,
                     dispatch_s * 1e6);
}

void evaluate_leave_one_out(const DeviceData& d, double dispatch_s, std::vector<ErrorSummary>& out) {
  const DeviceSpec& spec = d.profile.spec;
  const double prior = kernel_overhead_s(d.profile);
  const GroupedRows g = group_rows(d.runs);
  const TaggedGroups tg = tagged_groups(d.runs);
  const auto gemm_fp = [&](const std::vector<db::GemmRow>& rows, const GemmKey& k) {
    return predict_gemm(fit_gemm(rows, spec, prior), k, spec);
  };
  const auto attention_fp = [&](const std::vector<db::AttentionRow>& rows, const AttentionKey& k) {
    return predict_attention(fit_attention(rows, spec, prior), k, spec);
  };
  ErrorTable table;
  std::map<std::string, std::size_t> eager_rows;
  for (int t = 0; t < kDTypeCount; ++t) {
    if (spec.peak_tflops[t] <= 0) continue;
    if (!tg.gemm[t].rows.empty()) {
      const std::string family = gemm_family(tg.gemm[t].rows.front().key);
      eager_rows[family] += leave_one_out_timed(tg.gemm[t], family, table, spec, dispatch_s, gemm_fp);
    }
    for (int dir = 0; dir < 2; ++dir) {
      const auto& group = tg.attention[t * 2 + dir];
      if (group.rows.empty()) continue;
      const std::string family = attention_family(group.rows.front().key);
      eager_rows[family] += leave_one_out_timed(group, family, table, spec, dispatch_s, attention_fp);
    }
  }
  for (const auto& [code, rows_c] : g.collective) {
    leave_one_out(rows_c, 1, collective_family(rows_c.front().key), table,
                  [](const auto& rows, const db::CollectiveRow& r) {
                    return predict_collective(fit_collective(rows), r.key);
                  });
  }
  if (spec.hbm_gb_s > 0) {
    for (const auto& [kind, rows_m] : g.memory) {
      leave_one_out(rows_m, 1, memory_family(rows_m.front().key), table,
                    [&](const auto& rows, const db::MemoryOpRow& r) {
                      return predict_memory(fit_memory(rows), r.key, spec);
                    });
    }
  }
  const std::size_t first = out.size();
  table.append_to(out, "", d.record.name);
  for (std::size_t i = first; i < out.size(); ++i) {
    if (const auto it = eager_rows.find(out[i].family); it != eager_rows.end()) {
      out[i].note = eager_note(it->second, dispatch_s);
    }
  }
}

// The runs a source device's fits are built from: its host-bound eager-loop GEMM and attention rows
// (host_bound_rows) taken out. `left_out` counts them per kind (GEMM, attention).
struct LeftOut {
  std::size_t gemm = 0, attention = 0;
};
std::vector<db::RunBatch> kernel_runs(const std::vector<db::RunBatch>& runs, const DeviceProfile& profile,
                                      double dispatch_s, LeftOut& left_out) {
  left_out = {};
  if (!(dispatch_s > 0)) return runs;
  const DeviceSpec& spec = profile.spec;
  const double prior = kernel_overhead_s(profile);
  const TaggedGroups tg = tagged_groups(runs);
  std::set<std::pair<std::size_t, std::size_t>> gemm_out, attention_out;
  for (int t = 0; t < kDTypeCount; ++t) {
    if (spec.peak_tflops[t] <= 0) continue;
    const auto drop = host_bound_rows(tg.gemm[t], spec, dispatch_s, [&](const auto& rows, const GemmKey& k) {
      return predict_gemm(fit_gemm(rows, spec, prior), k, spec);
    });
    for (std::size_t i = 0; i < drop.size(); ++i) {
      if (drop[i]) gemm_out.insert(tg.gemm[t].at[i]);
    }
    for (int dir = 0; dir < 2; ++dir) {
      const auto& group = tg.attention[t * 2 + dir];
      const auto drop_a = host_bound_rows(group, spec, dispatch_s, [&](const auto& rows, const AttentionKey& k) {
        return predict_attention(fit_attention(rows, spec, prior), k, spec);
      });
      for (std::size_t i = 0; i < drop_a.size(); ++i) {
        if (drop_a[i]) attention_out.insert(group.at[i]);
      }
    }
  }
  left_out = {gemm_out.size(), attention_out.size()};
  if (gemm_out.empty() && attention_out.empty()) return runs;
  std::vector<db::RunBatch> out = runs;
  for (std::size_t b = 0; b < out.size(); ++b) {
    const auto filter = [b](auto& rows, const std::set<std::pair<std::size_t, std::size_t>>& gone) {
      std::decay_t<decltype(rows)> keep;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (!gone.count({b, i})) keep.push_back(rows[i]);
      }
      rows = std::move(keep);
    };
    filter(out[b].rows.gemm, gemm_out);
    filter(out[b].rows.attention, attention_out);
  }
  return out;
}

std::string overhead_note(const DeviceProfile& source, bool fitted, const DeviceProfile& target) {
  return fmt::format("t0 {:.1f} us ({}) -> {:.1f} us ({})", kernel_overhead_s(source) * 1e6,
                     fitted ? "fitted" : "prior", kernel_overhead_s(target) * 1e6,
                     target.kernel_overhead_us > 0 ? "given" : "prior");
}

// How the GEMM compute ratio was taken (bf16, the dtype of every GEMM figure held).
std::string matmul_note(const DeviceProfile& s, const DeviceProfile& t) {
  const MatmulPair p = matmul_pair(s, t, DType::bf16);
  if (p.anchored) return fmt::format("a_c ceiling {:.3f} -> MAMF {:.3f}", p.source, p.target);
  return fmt::format("a_c {:.3f} -> {:.3f} (system files)", p.source, p.target);
}

std::string attention_note(const DeviceProfile& s, const DeviceProfile& t, AttentionKernel target_rows) {
  const auto share = [](const DeviceProfile& p, AttentionKernel k) {
    const auto v = attention_kernel_share(p.spec, k);
    return v ? fmt::format("{:.3f}", *v) : std::string("unknown, 1");
  };
  const AttentionKernel k = s.attention_kernel;
  std::string note = fmt::format("{0}->{0}: a {1:.2f} x share {2} -> {3:.2f} x share {4}", to_string(k),
                                 s.attention_efficiency, share(s, k), t.attention_efficiency, share(t, k));
  if (target_rows != k) {
    note = fmt::format("kernel-generation change ({} rows -> {} rows), not predicted from specs; ", to_string(k),
                       to_string(target_rows)) + note;
  }
  return note;
}

void evaluate_pair(const DeviceData& from, double from_dispatch_s, const DeviceData& to, double to_dispatch_s,
                   std::vector<ErrorSummary>& out) {
  LeftOut source_left_out;
  const std::vector<db::RunBatch> from_runs = kernel_runs(from.runs, from.profile, from_dispatch_s, source_left_out);
  DeviceProfile source = with_row_kernels(with_row_links(from.profile, from_runs), from_runs);
  // The target's rows are only scored: its overhead is its profile's (or the prior), never fitted here.
  const DeviceProfile target = with_row_kernels(with_row_links(to.profile, to.runs), to.runs);
  const auto fit = std::make_shared<const DeviceFit>(source.spec, group_rows(from_runs), kernel_overhead_s(source));
  const auto fitted = fit->fitted_overhead_s();
  if (fitted) source.kernel_overhead_us = *fitted * 1e6;
  source = with_gemm_ceilings(source, from_runs, kernel_overhead_s(source));
  SourceDevice s{source, make_interpolating_model(fit, from.record, from_runs, no_data_model())};
  const auto model = make_scaled_model({s}, target, no_data_model());
  ErrorTable table;
  std::map<std::string, std::size_t> eager_rows;
  // An eager-loop row of the target is compared with its loop: host_bound of the predicted kernel.
  const auto score = [&](const std::string& family, Efficiency e, double actual, const auto& key, bool eager) {
    if (e.source != EfficiencySource::scaled) return;
    double predicted = e.value;
    if constexpr (!std::is_same_v<std::decay_t<decltype(key)>, CollectiveKey>) {
      if (eager) {
        predicted = host_bound(predicted, work_s(key, target.spec), to_dispatch_s);
        ++eager_rows[family];
      }
    }
    table.add(family, predicted, std::min(actual, 1.0), to_string(key));
  };
  for (const auto& b : to.runs) {
    if (b.run.source == db::Source::predicted) continue;
    const bool eager = eager_loop(b);
    for (const auto& r : b.rows.gemm) score(gemm_family(r.key), model->gemm(r.key), r.efficiency, r.key, eager);
    for (const auto& r : b.rows.attention) {
      score(attention_family(r.key), model->attention(r.key), r.efficiency, r.key, eager);
    }
    for (const auto& r : b.rows.collective) {
      score(collective_family(r.key), model->collective(r.key), r.efficiency, r.key, false);
    }
    for (const auto& r : b.rows.memory) {
      score(memory_family(r.key), model->memory_op(r.key), r.efficiency, r.key, eager && target.spec.hbm_gb_s > 0);
    }
  }
  const std::size_t first = out.size();
  table.append_to(out, from.record.name, to.record.name);
  for (std::size_t i = first; i < out.size(); ++i) {
    if (out[i].family.rfind("gemm", 0) == 0) {
      out[i].note = overhead_note(source, fitted.has_value(), target) + "; " + matmul_note(source, target);
    }
    if (out[i].family.rfind("attention", 0) == 0) out[i].note = attention_note(source, target, target.attention_kernel);
    if (const auto it = eager_rows.find(out[i].family); it != eager_rows.end()) {
      out[i].note += "; " + eager_note(it->second, to_dispatch_s);
    }
    const bool gemm = out[i].family.rfind("gemm", 0) == 0;
    const std::size_t skipped = gemm ? source_left_out.gemm
                                     : (out[i].family.rfind("attention", 0) == 0 ? source_left_out.attention : 0);
    if (skipped > 0) out[i].note += fmt::format("; source fit skips {} host-bound eager-loop row(s)", skipped);
  }
}

}  // namespace

Evaluation evaluate(const std::vector<DeviceData>& devices, const std::map<std::string, double>& op_dispatch_s) {
  const auto dispatch = [&](const DeviceData& d) {
    const auto it = op_dispatch_s.find(d.record.name);
    return it == op_dispatch_s.end() ? 0.0 : it->second;
  };
  Evaluation e;
  for (const auto& d : devices) evaluate_leave_one_out(d, dispatch(d), e.leave_one_out);
  for (const auto& a : devices) {
    for (const auto& b : devices) {
      if (&a != &b) evaluate_pair(a, dispatch(a), b, dispatch(b), e.cross_device);
    }
  }
  return e;
}

}  // namespace calisim::predictor
