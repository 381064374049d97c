#include "predictor/cross_device.h"

#include <algorithm>

#include "predictor/achievable_ceiling.h"
#include "predictor/kernel_overhead.h"
#include "predictor/shape_features.h"

namespace calisim::predictor {
namespace {

double bounded(double e) { return std::clamp(e, 1e-6, 1.0); }

// Achievable-roofline time of a kernel on one side: max(F / (peak · a_c), B / (BW · a_m)). The
// achievable efficiencies of a pair enter only when both sides know them (else 1 on both sides).
struct Bound {
  double time = 0;
  Regime regime = Regime::compute;
};
Bound achievable_bound(double flops, double bytes, DType dtype, const DeviceSpec& d, double a_c, double a_m) {
  Bound b;
  const double compute = flops / (d.peak_flops_per_s(dtype) * a_c);
  const double memory = d.hbm_gb_s > 0 && bytes > 0 ? bytes / (d.hbm_bytes_per_s() * a_m) : 0.0;
  b.time = std::max(compute, memory);
  b.regime = compute >= memory ? Regime::compute : Regime::bandwidth;
  return b;
}

// The shared rule of GEMM and attention: the fixed overhead t0 is taken off the source time, the
// work part scales with the achievable-roofline times and the quantization ratio, the target's t0
// is added back.
ScaledEfficiency scale_kernel(double eff_s, double flops, double bytes, DType dtype, double compute_eff_s,
                              double compute_eff_t, double q_s, double q_t, const DeviceProfile& s,
                              const DeviceProfile& t) {
  const bool compute_known = compute_eff_s > 0 && compute_eff_t > 0;
  const bool memory_known = s.memory_efficiency > 0 && t.memory_efficiency > 0;
  const Bound bs = achievable_bound(flops, bytes, dtype, s.spec, compute_known ? compute_eff_s : 1.0,
                                    memory_known ? s.memory_efficiency : 1.0);
  const Bound bt = achievable_bound(flops, bytes, dtype, t.spec, compute_known ? compute_eff_t : 1.0,
                                    memory_known ? t.memory_efficiency : 1.0);
  ScaledEfficiency out;
  out.source_regime = bs.regime;
  out.target_regime = bt.regime;
  const double peak_s = s.spec.peak_flops_per_s(dtype), peak_t = t.spec.peak_flops_per_s(dtype);
  if (!(flops > 0) || !(eff_s > 0)) {
    out.efficiency = bounded(eff_s);
    return out;
  }
  const double q_ratio = q_s > 0 && q_t > 0 ? q_s / q_t : 1.0;
  const double work_s = flops / (peak_s * remove_overhead(eff_s, flops, peak_s, kernel_overhead_s(s)));
  const double work_t = work_s * (bt.time / bs.time) * q_ratio;
  out.efficiency = bounded(flops / (peak_t * (kernel_overhead_s(t) + work_t)));
  return out;
}

}  // namespace

double known_ratio(double target, double source) { return target > 0 && source > 0 ? target / source : 1.0; }

ScaledEfficiency scale_gemm(double eff, const GemmKey& key, const DeviceProfile& s, const DeviceProfile& t) {
  const MatmulPair a_c = matmul_pair(s, t, key.dtype);
  return scale_kernel(eff, key.flops(), key.bytes(), key.dtype, a_c.source, a_c.target,
                      gemm_quantization(key.m, key.n, key.batch, s.spec.sm_count),
                      gemm_quantization(key.m, key.n, key.batch, t.spec.sm_count), s, t);
}

ScaledEfficiency scale_attention(double eff, const AttentionKey& key, const DeviceProfile& s,
                                 const DeviceProfile& t) {
  // Both sides' achievable attention efficiency for the kernel generation the source rows were
  // measured with (kernel_overhead.h): FA2 rows scale by FA2's share on each side.
  // A source with its own level (achievable_ceiling.h) is read against it instead of its file.
  const double share_s = attention_kernel_share(s.spec, s.attention_kernel).value_or(1.0);
  const double share_t = attention_kernel_share(t.spec, s.attention_kernel).value_or(1.0);
  const double a_s = s.attention_level > 0 ? s.attention_level : s.attention_efficiency * share_s;
  return scale_kernel(eff, key.flops(), key.bytes(), key.dtype, a_s, t.attention_efficiency * share_t,
                      attention_quantization(key, s.spec.sm_count), attention_quantization(key, t.spec.sm_count), s,
                      t);
}

bool collectives_transfer(const DeviceProfile& s, const DeviceProfile& t) {
  return !s.scale_up_kind.empty() && s.scale_up_kind == t.scale_up_kind;
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
