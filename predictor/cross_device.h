// Cross-device scaling rules: an efficiency measured (or interpolated) on a source GPU turned into
// the efficiency the same kernel reaches on a target GPU known only by its profile.
//
// GEMM and attention (profiling_notes.md §6, in time form
//   t_T = t_S · (T_roof,T / T_roof,S) · (a_S / a_T) · (Q_S / Q_T), T_roof = max(F/peak, B/BW)):
//   - each side's regime comes from the kernel's arithmetic intensity against that side's ridge
//     point: compute-bound when F/peak >= B/BW;
//   - compute-bound scales with the peak ratio and the ratio of achievable efficiencies a (the
//     profiles' matmul or attention efficiency); bandwidth-bound with the bandwidth ratio and the
//     ratio of achievable memory efficiencies; a kernel that changes regime uses max(compute,
//     memory) on each side and each side's own achievable efficiency; an unknown a gives ratio 1;
//   - wave and tile quantization is recomputed with the target's SM count (Q: shape_features.h).
//   As a fraction of the target's peak: eff_T = roof_T · (eff_S / roof_S) · (a_T / a_S) · (Q_T / Q_S).
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
