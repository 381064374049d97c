#include "predictor/evaluate.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>

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

void evaluate_leave_one_out(const DeviceData& d, std::vector<ErrorSummary>& out) {
  const DeviceSpec& spec = d.profile.spec;
  const double prior = kernel_overhead_s(d.profile);
  const GroupedRows g = group_rows(d.runs);
  ErrorTable table;
  for (int t = 0; t < kDTypeCount; ++t) {
    if (spec.peak_tflops[t] <= 0) continue;
    if (!g.gemm[t].empty()) {
      leave_one_out(g.gemm[t], kMinRowsPerFit, gemm_family(g.gemm[t].front().key), table,
                    [&](const auto& rows, const db::GemmRow& r) { return predict_gemm(fit_gemm(rows, spec, prior), r.key, spec); });
    }
    for (int dir = 0; dir < 2; ++dir) {
      const auto& rows_a = g.attention[t * 2 + dir];
      if (rows_a.empty()) continue;
      leave_one_out(rows_a, kMinRowsPerFit, attention_family(rows_a.front().key), table,
                    [&](const auto& rows, const db::AttentionRow& r) {
                      return predict_attention(fit_attention(rows, spec, prior), r.key, spec);
                    });
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
  table.append_to(out, "", d.record.name);
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

void evaluate_pair(const DeviceData& from, const DeviceData& to, std::vector<ErrorSummary>& out) {
  DeviceProfile source = with_row_kernels(with_row_links(from.profile, from.runs), from.runs);
  // The target's rows are only scored: its overhead is its profile's (or the prior), never fitted here.
  const DeviceProfile target = with_row_kernels(with_row_links(to.profile, to.runs), to.runs);
  const auto fit = std::make_shared<const DeviceFit>(source.spec, group_rows(from.runs), kernel_overhead_s(source));
  const auto fitted = fit->fitted_overhead_s();
  if (fitted) source.kernel_overhead_us = *fitted * 1e6;
  source = with_gemm_ceilings(source, from.runs, kernel_overhead_s(source));
  SourceDevice s{source, make_interpolating_model(fit, from.record, from.runs, no_data_model())};
  const auto model = make_scaled_model({s}, target, no_data_model());
  ErrorTable table;
  const auto score = [&](const std::string& family, Efficiency e, double actual, const auto& key) {
    if (e.source == EfficiencySource::scaled) table.add(family, e.value, std::min(actual, 1.0), to_string(key));
  };
  for (const auto& b : to.runs) {
    if (b.run.source == db::Source::predicted) continue;
    for (const auto& r : b.rows.gemm) score(gemm_family(r.key), model->gemm(r.key), r.efficiency, r.key);
    for (const auto& r : b.rows.attention) {
      score(attention_family(r.key), model->attention(r.key), r.efficiency, r.key);
    }
    for (const auto& r : b.rows.collective) {
      score(collective_family(r.key), model->collective(r.key), r.efficiency, r.key);
    }
    for (const auto& r : b.rows.memory) score(memory_family(r.key), model->memory_op(r.key), r.efficiency, r.key);
  }
  const std::size_t first = out.size();
  table.append_to(out, from.record.name, to.record.name);
  for (std::size_t i = first; i < out.size(); ++i) {
    if (out[i].family.rfind("gemm", 0) == 0) {
      out[i].note = overhead_note(source, fitted.has_value(), target) + "; " + matmul_note(source, target);
    }
    if (out[i].family.rfind("attention", 0) == 0) out[i].note = attention_note(source, target, target.attention_kernel);
  }
}

}  // namespace

Evaluation evaluate(const std::vector<DeviceData>& devices) {
  Evaluation e;
  for (const auto& d : devices) evaluate_leave_one_out(d, e.leave_one_out);
  for (const auto& a : devices) {
    for (const auto& b : devices) {
      if (&a != &b) evaluate_pair(a, b, e.cross_device);
    }
  }
  return e;
}

}  // namespace calisim::predictor
