#include "predictor/source_fit.h"

#include <algorithm>
#include <set>
#include <type_traits>

#include "db/published_import.h"
#include "predictor/achievable_ceiling.h"
#include "predictor/interpolating_model.h"
#include "predictor/kernel_overhead.h"

namespace calisim::predictor {
namespace {

// One pass: every eager row is judged against the fit of all the others (not iterated to a fixed
// point, so the answer does not depend on the order rows are dropped in).
template <class Row, class FitPredict>
std::vector<bool> host_bound_rows_of(const TimedGroup<Row>& g, const DeviceSpec& spec, double dispatch_s,
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

using Places = std::set<std::pair<std::size_t, std::size_t>>;

template <class Row>
void add_dropped(const TimedGroup<Row>& g, const std::vector<bool>& drop, Places& out) {
  for (std::size_t i = 0; i < drop.size(); ++i) {
    if (drop[i]) out.insert(g.at[i]);
  }
}

// The runs with the rows at `gemm_out` / `attention_out` taken out.
std::vector<db::RunBatch> without_rows(const std::vector<db::RunBatch>& runs, const Places& gemm_out,
                                       const Places& attention_out) {
  std::vector<db::RunBatch> out = runs;
  for (std::size_t b = 0; b < out.size(); ++b) {
    const auto filter = [b](auto& rows, const Places& gone) {
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

}  // namespace

bool eager_loop(const db::RunBatch& batch) {
  return db::published_timing(batch.run) == db::PublishedTiming::eager_loop;
}

double work_s(const GemmKey& key, const DeviceSpec& device) { return key.flops() / device.peak_flops_per_s(key.dtype); }
double work_s(const AttentionKey& key, const DeviceSpec& device) {
  return key.flops() / device.peak_flops_per_s(key.dtype);
}
double work_s(const MemoryOpKey& key, const DeviceSpec& device) {
  return static_cast<double>(std::max<std::int64_t>(key.bytes, 1)) / device.hbm_bytes_per_s();
}

double host_bound(double kernel_efficiency, double work, double dispatch_s) {
  if (!(dispatch_s > 0) || !(kernel_efficiency > 0)) return kernel_efficiency;
  return work / std::max(work / kernel_efficiency, dispatch_s);
}

TimedGroups timed_groups(const std::vector<db::RunBatch>& runs) {
  TimedGroups g;
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

std::vector<bool> host_bound_rows(const TimedGroup<db::GemmRow>& group, const DeviceSpec& device, double dispatch_s,
                                  double overhead_prior_s) {
  return host_bound_rows_of(group, device, dispatch_s, [&](const std::vector<db::GemmRow>& rows, const GemmKey& k) {
    return predict_gemm(fit_gemm(rows, device, overhead_prior_s), k, device);
  });
}

std::vector<bool> host_bound_rows(const TimedGroup<db::AttentionRow>& group, const DeviceSpec& device,
                                  double dispatch_s, double overhead_prior_s) {
  return host_bound_rows_of(group, device, dispatch_s,
                            [&](const std::vector<db::AttentionRow>& rows, const AttentionKey& k) {
                              return predict_attention(fit_attention(rows, device, overhead_prior_s), k, device);
                            });
}

SourceFit fit_source(const DeviceData& device, double dispatch_s) {
  SourceFit out;
  out.runs = device.runs;
  if (dispatch_s > 0) {
    const DeviceSpec& spec = device.profile.spec;
    const double prior = kernel_overhead_s(device.profile);
    const TimedGroups tg = timed_groups(device.runs);
    Places gemm_out, attention_out;
    for (int t = 0; t < kDTypeCount; ++t) {
      if (spec.peak_tflops[t] <= 0) continue;
      add_dropped(tg.gemm[t], host_bound_rows(tg.gemm[t], spec, dispatch_s, prior), gemm_out);
      for (int dir = 0; dir < 2; ++dir) {
        const auto& group = tg.attention[t * 2 + dir];
        add_dropped(group, host_bound_rows(group, spec, dispatch_s, prior), attention_out);
      }
    }
    out.gemm_left_out = gemm_out.size();
    out.attention_left_out = attention_out.size();
    if (!gemm_out.empty() || !attention_out.empty()) out.runs = without_rows(device.runs, gemm_out, attention_out);
  }
  DeviceProfile profile = with_row_kernels(with_row_links(device.profile, out.runs), out.runs);
  out.fit = std::make_shared<const DeviceFit>(profile.spec, group_rows(out.runs), kernel_overhead_s(profile));
  const auto t0 = out.fit->fitted_overhead_s();
  out.overhead_fitted = t0.has_value();
  if (t0) profile.kernel_overhead_us = *t0 * 1e6;
  profile = with_gemm_ceilings(profile, out.runs, kernel_overhead_s(profile));
  profile = with_attention_level(profile, *out.fit);
  out.source = {profile, make_interpolating_model(out.fit, device.record, out.runs, no_data_model())};
  return out;
}

}  // namespace calisim::predictor
