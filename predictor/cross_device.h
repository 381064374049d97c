// Cross-device scaling rules: an efficiency measured (or interpolated) on a source GPU turned into
// the efficiency the same kernel reaches on a target GPU known only by its profile.
//
// GEMM and attention (profiling_notes.md §6, in time form), with the fixed per-call overhead t0 of
// kernel_overhead.h taken off the source time and the target's added back:
//   t_T = t0_T + (t_S − t0_S) · (T_T / T_S) · (Q_S / Q_T),
//   T = max(F / (peak · a_c), B / (BW · a_m))   (the achievable roofline of each side)
//   - a_c is the profile's matmul (for the GEMM's input dtype) or attention efficiency, a_m its
//     memory efficiency (GEMM: when
//     the source's own rows show a ceiling, the pair is (that ceiling, the target's MAMF),
//     achievable_ceiling.h); a pair
//     (a_c or a_m) enters only when both sides know it, else 1 on both sides. For attention a_c is
//     the share of the best kernel that the source rows' kernel generation reaches on each side
//     (FlashAttention-2 rows: Hopper 0.585, Ampere 1; kernel_overhead.h) times the profile figure;
//   - each side's regime is the larger term of its T (compute when F / (peak a_c) >= B / (BW a_m)),
//     so a kernel that changes regime uses each side's own bound and the rule is continuous at the
//     ridge;
//   - wave and tile quantization is recomputed with the target's SM count (Q: shape_features.h).
// Collectives: the source time is split into latency (steps · per-step latency of the source
// tier, when known) and bandwidth; the bandwidth part scales with the tier's link bandwidth and
// the ratio of the profiles' busbw efficiencies for the op, the latency part is replaced by the
// target's (steps: ring all_reduce 2(n−1), all_gather / reduce_scatter / all_to_all n−1,
// send_recv 1).
// Memory ops: efficiency (a fraction of HBM bandwidth) times the ratio of memory efficiencies.
// Every result is clamped to [1e-6, 1]. Pure functions.
#pragma once

#include "core/kernel_keys.h"
#include "predictor/device_profile.h"
#include "predictor/kernel_overhead.h"

namespace calisim::predictor {

// target / source when both are known (> 0), else 1.
double known_ratio(double target, double source);

enum class Regime { compute, bandwidth };

struct ScaledEfficiency {
  double efficiency = 0;
  Regime source_regime = Regime::compute, target_regime = Regime::compute;
};

ScaledEfficiency scale_gemm(double source_efficiency, const GemmKey& key, const DeviceProfile& source,
                            const DeviceProfile& target);
ScaledEfficiency scale_attention(double source_efficiency, const AttentionKey& key, const DeviceProfile& source,
                                 const DeviceProfile& target);

// Whether collective efficiencies of `source` may be carried to `target` at all: both scale-up
// kinds known and equal. A collective's efficiency belongs to the fabric, not the GPU: a ring over
// a PCIe box (shared switches, host bridges, P2P through PCIe even on the way to the NIC) says
// nothing about an NVSwitch node, whose links are ~15x faster with other latencies and protocols.
// When false the target's collectives are not predicted (the simulator's NCCL model of the target
// system answers them) and the prediction says so.
bool collectives_transfer(const DeviceProfile& source, const DeviceProfile& target);

// The tier a collective's group spans (inter_node when it has more ranks than one node holds).
db::LinkTier collective_tier(const CollectiveKey& key);
// Latency steps of the algorithm nccl-tests' bus factor assumes (ring).
int collective_steps(CollectiveOp op, int ranks);

// source_efficiency is busbw / the source tier's link bandwidth (source.tier(..).gpu_gb_s, which
// must be > 0); the result is busbw / the target tier's. A target without that tier's bandwidth
// keeps the source efficiency.
double scale_collective(double source_efficiency, const CollectiveKey& key, const DeviceProfile& source,
                        const DeviceProfile& target);

double scale_memory_op(double source_efficiency, const DeviceProfile& source, const DeviceProfile& target);

}  // namespace calisim::predictor
