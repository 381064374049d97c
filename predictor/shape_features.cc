#include "predictor/shape_features.h"

#include <algorithm>
#include <cmath>

namespace calisim::predictor {
namespace {

double log2_at_least_1(double v) { return std::log2(std::max(v, 1.0)); }

}  // namespace

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
