#include "predictor/cross_device.h"

#include <algorithm>

#include "predictor/shape_features.h"

namespace calisim::predictor {
namespace {

double bounded(double e) { return std::clamp(e, 1e-6, 1.0); }

// The shared roofline / achievable-efficiency / quantization rule of GEMM and attention.
ScaledEfficiency scale_kernel(double eff_s, double flops, double bytes, DType dtype, double compute_eff_s,
                              double compute_eff_t, double q_s, double q_t, const DeviceProfile& s,
                              const DeviceProfile& t) {
  const double roof_s = roofline_fraction(flops, bytes, dtype, s.spec);
  const double roof_t = roofline_fraction(flops, bytes, dtype, t.spec);
  ScaledEfficiency out;
  out.source_regime = roof_s >= 1.0 ? Regime::compute : Regime::bandwidth;
  out.target_regime = roof_t >= 1.0 ? Regime::compute : Regime::bandwidth;
  const double a_s = out.source_regime == Regime::compute ? compute_eff_s : s.memory_efficiency;
  const double a_t = out.target_regime == Regime::compute ? compute_eff_t : t.memory_efficiency;
  const double a_ratio = known_ratio(a_t, a_s);
  const double q_ratio = q_s > 0 ? q_t / q_s : 1.0;
  out.efficiency = bounded(roof_t * (eff_s / roof_s) * a_ratio * q_ratio);
  return out;
}

}  // namespace

double known_ratio(double target, double source) { return target > 0 && source > 0 ? target / source : 1.0; }

ScaledEfficiency scale_gemm(double eff, const GemmKey& key, const DeviceProfile& s, const DeviceProfile& t) {
  return scale_kernel(eff, key.flops(), key.bytes(), key.dtype, s.matmul_efficiency, t.matmul_efficiency,
                      gemm_quantization(key.m, key.n, key.batch, s.spec.sm_count),
                      gemm_quantization(key.m, key.n, key.batch, t.spec.sm_count), s, t);
}

ScaledEfficiency scale_attention(double eff, const AttentionKey& key, const DeviceProfile& s,
                                 const DeviceProfile& t) {
  return scale_kernel(eff, key.flops(), key.bytes(), key.dtype, s.attention_efficiency, t.attention_efficiency,
                      attention_quantization(key, s.spec.sm_count), attention_quantization(key, t.spec.sm_count), s,
                      t);
}

db::LinkTier collective_tier(const CollectiveKey& key) {
  return key.ranks > key.ranks_per_node ? db::LinkTier::inter_node : db::LinkTier::intra_node;
}

int collective_steps(CollectiveOp op, int ranks) {
  const int n1 = std::max(ranks - 1, 1);
  switch (op) {
    case CollectiveOp::all_reduce: return 2 * n1;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all: return n1;
    case CollectiveOp::send_recv: return 1;
  }
  return n1;
}

double scale_collective(double eff, const CollectiveKey& key, const DeviceProfile& s, const DeviceProfile& t) {
  const db::LinkTier tier = collective_tier(key);
  const LinkSpec& ls = s.tier(tier);
  const LinkSpec& lt = t.tier(tier);
  if (ls.gpu_gb_s <= 0 || lt.gpu_gb_s <= 0) return bounded(eff);
  const int op = static_cast<int>(key.op);
  const double eff_ratio = known_ratio(lt.efficiency[op], ls.efficiency[op]);
  const double wire = static_cast<double>(std::max<std::int64_t>(key.bytes, 1)) * db::bus_factor(key.op, key.ranks);
  if (wire <= 0) return bounded(eff * eff_ratio);
  const int steps = collective_steps(key.op, key.ranks);
  const double t_s = wire / (eff * ls.gpu_gb_s * 1e9);
  // The latency share is capped so a tiny message never leaves a negative bandwidth part.
  const double alpha_s = std::min(steps * ls.latency_us * 1e-6, 0.9 * t_s);
  const double beta_s = wire / (t_s - alpha_s);
  const double beta_t = beta_s * (lt.gpu_gb_s / ls.gpu_gb_s) * eff_ratio;
  const double alpha_t = lt.latency_us > 0 ? steps * lt.latency_us * 1e-6 : alpha_s;
  return bounded(wire / (alpha_t + wire / beta_t) / (lt.gpu_gb_s * 1e9));
}

double scale_memory_op(double eff, const DeviceProfile& s, const DeviceProfile& t) {
  return bounded(eff * known_ratio(t.memory_efficiency, s.memory_efficiency));
}

}  // namespace calisim::predictor
