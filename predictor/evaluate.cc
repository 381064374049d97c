#include "predictor/evaluate.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>

#include "predictor/achievable_ceiling.h"
#include "predictor/cross_device.h"
#include "predictor/device_fit.h"
#include "predictor/interpolating_model.h"
#include "predictor/kernel_overhead.h"
#include "predictor/scaled_model.h"
#include "predictor/source_fit.h"

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

// Leave-one-out over one group; `fit_predict(others, held_out)` returns the prediction.
template <class Row, class FitPredict>
void leave_one_out(const std::vector<Row>& group, std::size_t min_rows, const std::string& family, ErrorTable& table,
                   FitPredict fit_predict) {
  if (group.size() < min_rows + 1) return;
  for (std::size_t i = 0; i < group.size(); ++i) {
    table.add(family, fit_predict(without(group, i), group[i]), std::min(group[i].efficiency, 1.0),
              to_string(group[i].key));
  }
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
std::size_t leave_one_out_timed(const TimedGroup<Row>& g, const std::string& family, ErrorTable& table,
                                const DeviceSpec& spec, double dispatch_s, double prior_s, FitPredict fit_predict) {
  if (g.rows.size() < kMinRowsPerFit + 1) return 0;
  std::size_t eager = 0;
  for (std::size_t i = 0; i < g.rows.size(); ++i) {
    const TimedGroup<Row> others{without(g.rows, i), without(g.eager, i), {}};
    const std::vector<Row> fit_rows = kept(others.rows, host_bound_rows(others, spec, dispatch_s, prior_s));
    const Row& r = g.rows[i];
    double predicted = fit_predict(fit_rows, r.key);
    if (g.eager[i]) {
      predicted = host_bound(predicted, work_s(r.key, spec), dispatch_s);
      ++eager;
    }
    table.add(family, predicted, std::min(r.efficiency, 1.0), to_string(r.key));
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
  const TimedGroups tg = timed_groups(d.runs);
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
      eager_rows[family] += leave_one_out_timed(tg.gemm[t], family, table, spec, dispatch_s, prior, gemm_fp);
    }
    for (int dir = 0; dir < 2; ++dir) {
      const auto& group = tg.attention[t * 2 + dir];
      if (group.rows.empty()) continue;
      const std::string family = attention_family(group.rows.front().key);
      eager_rows[family] += leave_one_out_timed(group, family, table, spec, dispatch_s, prior, attention_fp);
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
  std::string note =
      s.attention_level > 0
          ? fmt::format("{0}->{0}: a {1:.3f} (its rows at the reference shape) -> {2:.2f} x share {3}", to_string(k),
                        s.attention_level, t.attention_efficiency, share(t, k))
          : fmt::format("{0}->{0}: a {1:.2f} x share {2} -> {3:.2f} x share {4}", to_string(k), s.attention_efficiency,
                        share(s, k), t.attention_efficiency, share(t, k));
  if (target_rows != k) {
    note = fmt::format("kernel-generation change ({} rows -> {} rows), not predicted from specs; ", to_string(k),
                       to_string(target_rows)) + note;
  }
  return note;
}

void evaluate_pair(const DeviceData& from, double from_dispatch_s, const DeviceData& to, double to_dispatch_s,
                   std::vector<ErrorSummary>& out) {
  const SourceFit fitted = fit_source(from, from_dispatch_s);
  const DeviceProfile& source = fitted.source.profile;
  // The target's rows are only scored: its overhead is its profile's (or the prior), never fitted here.
  const DeviceProfile target = with_row_kernels(with_row_links(to.profile, to.runs), to.runs);
  const auto model = make_scaled_model({fitted.source}, target, no_data_model());
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
      out[i].note = overhead_note(source, fitted.overhead_fitted, target) + "; " + matmul_note(source, target);
    }
    if (out[i].family.rfind("attention", 0) == 0) out[i].note = attention_note(source, target, target.attention_kernel);
    if (const auto it = eager_rows.find(out[i].family); it != eager_rows.end()) {
      out[i].note += "; " + eager_note(it->second, to_dispatch_s);
    }
    const bool gemm = out[i].family.rfind("gemm", 0) == 0;
    const std::size_t skipped = gemm ? fitted.gemm_left_out
                                     : (out[i].family.rfind("attention", 0) == 0 ? fitted.attention_left_out : 0);
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
