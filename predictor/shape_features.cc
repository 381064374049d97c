#include "predictor/shape_features.h"

#include <algorithm>
#include <cmath>

namespace calisim::predictor {
namespace {

double log2_at_least_1(double v) { return std::log2(std::max(v, 1.0)); }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

double wave_utilization(double tiles, int sm_count) {
  if (tiles <= 0 || sm_count <= 0) return 1.0;
  const double waves = std::ceil(tiles / sm_count);
  return tiles / (waves * sm_count);
}

double tile_utilization(std::int64_t m, std::int64_t n, int tile_m, int tile_n) {
  if (m <= 0 || n <= 0) return 1.0;
  const double padded = static_cast<double>(ceil_div(m, tile_m) * tile_m) * static_cast<double>(ceil_div(n, tile_n) * tile_n);
  return static_cast<double>(m) * static_cast<double>(n) / padded;
}

double gemm_quantization(std::int64_t m, std::int64_t n, std::int64_t batch, int sm_count) {
  static constexpr std::array<std::array<int, 2>, 4> kTiles{{{64, 128}, {128, 128}, {128, 256}, {256, 128}}};
  double best = 0;
  for (const auto& [tm, tn] : kTiles) {
    const double tiles = static_cast<double>(ceil_div(std::max<std::int64_t>(m, 1), tm) *
                                             ceil_div(std::max<std::int64_t>(n, 1), tn)) *
                         static_cast<double>(std::max<std::int64_t>(batch, 1));
    best = std::max(best, tile_utilization(m, n, tm, tn) * wave_utilization(tiles, sm_count));
  }
  return best;
}

double attention_quantization(const AttentionKey& key, int sm_count) {
  const double ctas = static_cast<double>(key.batch) * static_cast<double>(key.heads_q) *
                      static_cast<double>(ceil_div(std::max<std::int64_t>(key.seq_q, 1), 128));
  return wave_utilization(ctas, sm_count);
}

double roofline_fraction(double flops, double bytes, DType dtype, const DeviceSpec& device) {
  if (flops <= 0 || bytes <= 0 || device.hbm_gb_s <= 0) return 1.0;
  const double compute_s = flops / device.peak_flops_per_s(dtype);
  const double memory_s = bytes / device.hbm_bytes_per_s();
  return compute_s / std::max(compute_s, memory_s);
}

GemmFeatures gemm_features(const GemmKey& key, const DeviceSpec& device) {
  const double lm = log2_at_least_1(static_cast<double>(key.m));
  const double ln = log2_at_least_1(static_cast<double>(key.n));
  const double lk = log2_at_least_1(static_cast<double>(key.k));
  return {lm,
          ln,
          lk,
          log2_at_least_1(static_cast<double>(key.batch)),
          lm * lm,
          ln * ln,
          lk * lk,
          std::min(lm, ln),
          std::log2(std::max(key.flops(), 1.0) / std::max(key.bytes(), 1.0)),
          gemm_quantization(key.m, key.n, key.batch, device.sm_count),
          key.layout == GemmLayout::NN ? 1.0 : 0.0,
          key.layout == GemmLayout::NT ? 1.0 : 0.0,
          key.accumulate ? 1.0 : 0.0};
}

AttentionFeatures attention_features(const AttentionKey& key, const DeviceSpec& device) {
  const double rows = static_cast<double>(key.batch) * static_cast<double>(key.heads_q);
  return {log2_at_least_1(static_cast<double>(key.seq_q)),
          log2_at_least_1(static_cast<double>(key.seq_kv)),
          log2_at_least_1(static_cast<double>(key.head_dim_qk)),
          log2_at_least_1(static_cast<double>(key.head_dim_v)),
          log2_at_least_1(rows),
          log2_at_least_1(static_cast<double>(key.heads_q) / std::max<double>(static_cast<double>(key.heads_kv), 1.0)),
          log2_at_least_1(rows * static_cast<double>(key.seq_q)),
          key.causal ? 1.0 : 0.0,
          attention_quantization(key, device.sm_count)};
}

}  // namespace calisim::predictor
