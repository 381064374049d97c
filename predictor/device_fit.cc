#include "predictor/device_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "predictor/shape_features.h"

namespace calisim::predictor {
namespace {

// Fitted target: logit of the fraction of the roofline bound reached, kept off 0 and 1.
double logit_of_fraction(double efficiency, double roof) {
  const double r = std::clamp(efficiency / roof, 1e-3, 0.999);
  return std::log(r / (1.0 - r));
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// The physical bound the learned part is a fraction of. GEMM: the roofline (tile/wave quantization
// stays a feature: libraries pick among tiles and Stream-K, so the best-tile figure is only an upper
// bound on the loss). Attention, both directions: the roofline times the utilization of its CTA grid
// (core/tile_quantization.h): equal-work waves without a mask; with a causal mask the unequal
// blocks list-scheduled in launch order, times the diagonal's share. (With equal-work waves for
// causal grids, backward did better without the factor: SimuMax A100 heads 4 -> 8 gains x1.13
// where equal waves say x1.33; the backward schedule says x1.12, and leave-one-out fell 4.7 -> 2.0 %.)
double roof_of(const GemmKey& k, const DeviceSpec& d, double /*cta_overhead_blocks*/) {
  return roofline_fraction(k.flops(), k.bytes(), k.dtype, d);
}
// The per-CTA overhead factor w / (w + c): w the 128-blocks one CTA visits (a forward query-block
// CTA walks the keys, a backward key-block CTA the queries; half of them under a causal mask).
// Only backward fits choose a c > 0 (fit_attention): on the H200 rows a forward term made
// leave-one-out worse at every c tried (4.1 % -> 5.3 % at c = 0.5), and the published FA2 forward
// figures worse still, while backward improved (7.9 % -> 4.0 % at c = 2).
double cta_work_factor(const AttentionKey& k, double c) {
  if (c <= 0) return 1.0;
  const std::int64_t walked = k.direction == AttentionDirection::forward ? k.seq_kv : k.seq_q;
  double w = std::ceil(static_cast<double>(std::max<std::int64_t>(walked, 1)) / 128.0);
  if (k.causal) w = std::max(1.0, 0.5 * w);
  return w / (w + c);
}
double roof_of(const AttentionKey& k, const DeviceSpec& d, double cta_overhead_blocks) {
  const double roof = roofline_fraction(k.flops(), k.bytes(), k.dtype, d);
  return roof * attention_quantization(k, d.sm_count) * cta_work_factor(k, cta_overhead_blocks);
}

template <class Row, class FeatureFn>
ShapeFit fit_shape(const std::vector<Row>& rows, const DeviceSpec& device, double prior_s, FeatureFn features,
                   std::span<const double> cta_grid) {
  using Features = decltype(features(rows.front().key, device));
  constexpr int p = std::tuple_size_v<Features>;
  const std::size_t n = rows.size();
  std::vector<double> x, eff(n), flops(n), peak(n), roof(n);
  x.reserve(n * p);
  std::size_t short_rows = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Row& r = rows[i];
    const Features f = features(r.key, device);
    x.insert(x.end(), f.begin(), f.end());
    eff[i] = std::min(r.efficiency, 1.0);
    flops[i] = r.key.flops();
    peak[i] = device.peak_flops_per_s(r.key.dtype);
    if (eff[i] > 0 && flops[i] / (peak[i] * eff[i]) < kShortRowFactor * prior_s) ++short_rows;
  }
  const auto targets = [&](double t0) {
    std::vector<double> y(n);
    for (std::size_t i = 0; i < n; ++i) {
      y[i] = logit_of_fraction(remove_overhead(eff[i], flops[i], peak[i], t0), roof[i]);
    }
    return y;
  };
  const bool fit_t0 = short_rows >= kMinShortRows && n >= kMinRowsPerFit;
  ShapeFit best;
  best.overhead_s = prior_s;
  if (!fit_t0 && cta_grid.size() <= 1) {
    for (std::size_t i = 0; i < n; ++i) roof[i] = roof_of(rows[i].key, device, cta_grid.empty() ? 0.0 : cta_grid[0]);
    best.fit = fit_ridge(x, targets(prior_s), p);
    return best;
  }
  // t0 (and c) by the exact leave-one-out error of the efficiency itself.
  static constexpr double kGridUs[] = {0, 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16};
  static constexpr double kPriorOnly[] = {-1};  // t0 stays the prior
  const std::span<const double> t0_grid = fit_t0 ? std::span<const double>(kGridUs) : std::span<const double>(kPriorOnly);
  static constexpr double kNoCta[] = {0};
  if (cta_grid.empty()) cta_grid = kNoCta;
  double best_err = std::numeric_limits<double>::infinity();
  std::vector<double> loo;
  for (double c : cta_grid) {
    for (std::size_t i = 0; i < n; ++i) roof[i] = roof_of(rows[i].key, device, c);
    for (double us : t0_grid) {
      const double t0 = us < 0 ? prior_s : us * 1e-6;
      LinearFit fit = fit_ridge(x, targets(t0), p, &loo);
      double err = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const double e = add_overhead(roof[i] * sigmoid(loo[i]), flops[i], peak[i], t0);
        err += std::abs(e - eff[i]) / std::max(eff[i], 1e-9);
      }
      if (err < best_err) {
        best_err = err;
        best.fit = std::move(fit);
        best.overhead_s = t0;
        best.overhead_fitted = fit_t0;
        best.cta_overhead_blocks = c;
      }
    }
  }
  return best;
}

}  // namespace

ShapeFit fit_gemm(const std::vector<db::GemmRow>& rows, const DeviceSpec& device, double overhead_prior_s) {
  return fit_shape(rows, device, overhead_prior_s, gemm_features, {});
}

double predict_gemm(const ShapeFit& fit, const GemmKey& key, const DeviceSpec& device) {
  const double work = roof_of(key, device, 0.0) * sigmoid(fit.fit.predict(gemm_features(key, device)));
  return add_overhead(work, key.flops(), device.peak_flops_per_s(key.dtype), fit.overhead_s);
}

ShapeFit fit_attention(const std::vector<db::AttentionRow>& rows, const DeviceSpec& device, double overhead_prior_s) {
  // One group is one direction: backward chooses its per-CTA overhead, forward has none.
  const bool backward = !rows.empty() && rows.front().key.direction == AttentionDirection::backward;
  return fit_shape(rows, device, overhead_prior_s, attention_features,
                   backward ? std::span<const double>(kCtaOverheadBlocks) : std::span<const double>());
}

double predict_attention(const ShapeFit& fit, const AttentionKey& key, const DeviceSpec& device) {
  const double work =
      roof_of(key, device, fit.cta_overhead_blocks) * sigmoid(fit.fit.predict(attention_features(key, device)));
  return add_overhead(work, key.flops(), device.peak_flops_per_s(key.dtype), fit.overhead_s);
}

CollectiveCurve fit_collective(const std::vector<db::CollectiveRow>& rows) {
  std::vector<double> wire, t, links;
  for (const auto& r : rows) {
    wire.push_back(static_cast<double>(r.key.bytes) * db::bus_factor(r.key.op, r.key.ranks));
    t.push_back(r.stats.median_s);
    links.push_back(r.link_gb_s);
  }
  std::nth_element(links.begin(), links.begin() + links.size() / 2, links.end());
  return {fit_alpha_beta(wire, t), links[links.size() / 2]};
}

double predict_collective(const CollectiveCurve& curve, const CollectiveKey& key) {
  const double wire = static_cast<double>(key.bytes) * db::bus_factor(key.op, key.ranks);
  if (wire <= 0 || curve.link_gb_s <= 0) return std::min(1.0, curve.time.beta_per_s / (curve.link_gb_s * 1e9));
  return std::min(1.0, wire / curve.time.time_s(wire) / (curve.link_gb_s * 1e9));
}

AlphaBetaFit fit_memory(const std::vector<db::MemoryOpRow>& rows) {
  std::vector<double> bytes, t;
  for (const auto& r : rows) {
    bytes.push_back(static_cast<double>(r.key.bytes));
    t.push_back(r.stats.median_s);
  }
  return fit_alpha_beta(bytes, t);
}

double predict_memory(const AlphaBetaFit& fit, const MemoryOpKey& key, const DeviceSpec& device) {
  const double bytes = static_cast<double>(std::max<std::int64_t>(key.bytes, 1));
  return std::min(1.0, bytes / fit.time_s(bytes) / device.hbm_bytes_per_s());
}

std::uint64_t collective_group(const CollectiveKey& key) {
  return (static_cast<std::uint64_t>(key.op) << 48) | (static_cast<std::uint64_t>(key.ranks) << 24) |
         static_cast<std::uint64_t>(key.ranks_per_node & 0xffffff);
}

int attention_group(DType dtype, AttentionDirection direction) {
  return static_cast<int>(dtype) * 2 + (direction == AttentionDirection::backward ? 1 : 0);
}

GroupedRows group_rows(const std::vector<db::RunBatch>& runs) {
  GroupedRows g;
  for (const auto& b : runs) {
    if (b.run.source == db::Source::predicted) continue;
    for (const auto& r : b.rows.gemm) g.gemm[static_cast<int>(r.key.dtype)].push_back(r);
    for (const auto& r : b.rows.attention) g.attention[attention_group(r.key.dtype, r.key.direction)].push_back(r);
    for (const auto& r : b.rows.collective) {
      if (r.stats.median_s > 0 && r.key.bytes > 0 && r.link_gb_s > 0) g.collective[collective_group(r.key)].push_back(r);
    }
    for (const auto& r : b.rows.memory) {
      if (r.stats.median_s > 0 && r.key.bytes > 0) g.memory[r.key.kind].push_back(r);
    }
  }
  return g;
}

DeviceFit::DeviceFit(const DeviceSpec& device, const GroupedRows& rows, double overhead_prior_s) : device_(device) {
  // A dtype the device has no peak for cannot be expressed as a fraction of it: not fitted.
  const auto has_peak = [&](int dtype) { return device_.peak_tflops[dtype] > 0; };
  for (int i = 0; i < kDTypeCount; ++i) {
    if (has_peak(i) && rows.gemm[i].size() >= kMinRowsPerFit) {
      gemm_[i] = fit_gemm(rows.gemm[i], device_, overhead_prior_s);
      gemm_rows_[i] = rows.gemm[i].size();
    }
  }
  for (int i = 0; i < 2 * kDTypeCount; ++i) {
    if (has_peak(i / 2) && rows.attention[i].size() >= kMinRowsPerFit) {
      attention_[i] = fit_attention(rows.attention[i], device_, overhead_prior_s);
    }
  }
  for (const auto& [code, group] : rows.collective) collective_.emplace(code, fit_collective(group));
  if (device_.hbm_gb_s > 0) {
    for (const auto& [kind, group] : rows.memory) memory_.emplace(kind, fit_memory(group));
  }
}

std::optional<double> DeviceFit::gemm(const GemmKey& key) const {
  const auto& fit = gemm_[static_cast<int>(key.dtype)];
  if (!fit || device_.peak_tflops[static_cast<int>(key.dtype)] <= 0) return std::nullopt;
  return predict_gemm(*fit, key, device_);
}

std::optional<double> DeviceFit::attention(const AttentionKey& key) const {
  const auto& fit = attention_[attention_group(key.dtype, key.direction)];
  if (!fit || device_.peak_tflops[static_cast<int>(key.dtype)] <= 0) return std::nullopt;
  return predict_attention(*fit, key, device_);
}

std::optional<double> DeviceFit::fitted_overhead_s() const {
  int most = -1;
  for (int i = 0; i < kDTypeCount; ++i) {
    if (gemm_[i] && (most < 0 || gemm_rows_[i] > gemm_rows_[most])) most = i;
  }
  if (most < 0 || !gemm_[most]->overhead_fitted) return std::nullopt;
  return gemm_[most]->overhead_s;
}

std::optional<double> DeviceFit::collective(const CollectiveKey& key) const {
  const auto it = collective_.find(collective_group(key));
  if (it == collective_.end()) return std::nullopt;
  return predict_collective(it->second, key);
}

std::optional<double> DeviceFit::memory_op(const MemoryOpKey& key) const {
  const auto it = memory_.find(key.kind);
  if (it == memory_.end()) return std::nullopt;
  return predict_memory(it->second, key, device_);
}

}  // namespace calisim::predictor
