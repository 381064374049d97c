// What cross-device scaling knows about one GPU: its datasheet spec, the efficiencies a
// well-tuned kernel typically reaches on it, and its links.
//
// Built from a database device record (a measured source) or from a system file (a target; the
// CLI converts SystemConfig, so this library does not depend on the simulator). Achievable
// efficiencies and links are optional (0 = unknown): a scaling ratio that needs an unknown number
// is taken as 1, which is stated in the prediction's provenance.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/device_spec.h"
#include "core/kernel_keys.h"
#include "db/records.h"

namespace calisim::predictor {

struct LinkSpec {
  double gpu_gb_s = 0;     // per-GPU one-direction bandwidth of the tier, GB/s; 0 = unknown
  double latency_us = 0;   // per algorithm step; 0 = unknown
  std::array<double, 5> efficiency{};  // busbw / gpu_gb_s by CollectiveOp; 0 = unknown
};

// The kernel generation a device's attention rows were measured with. `best` is what a system
// file's attention efficiency describes (the best kernel on that GPU: FlashAttention-2 on Ampere,
// FlashAttention-3 / cuDNN on Hopper); `flash2` is FlashAttention-2 wherever it runs.
enum class AttentionKernel { best, flash2 };

struct DeviceProfile {
  DeviceSpec spec;
  // Typical achieved fraction of peak for compute-bound GEMMs and flash attention, and of HBM
  // bandwidth for bandwidth-bound kernels (a system file's "efficiency" block); 0 = unknown.
  double matmul_efficiency = 0, attention_efficiency = 0, memory_efficiency = 0;
  // Per-input-dtype matmul efficiency (a system file's efficiency.matmul_by_dtype, a fraction of
  // that dtype's peak); 0 = not given, matmul_efficiency applies. FP8 GEMMs reach a smaller share
  // of their peak than BF16 ones, so an FP8 prediction must use the FP8 figure.
  std::array<double, kDTypeCount> matmul_efficiency_by_dtype{};
  LinkSpec intra_node, inter_node;
  int ranks_per_node = 0;  // GPUs in one scale-up domain; 0 = unknown
  // Fixed cost of one GEMM / attention call (launch gap + prologue/epilogue), microseconds;
  // 0 = unknown: kernel_overhead_s() then gives the documented prior (kernel_overhead.h).
  double kernel_overhead_us = 0;
  // What the device's attention rows were measured with (with_row_kernels); `best` when unknown.
  AttentionKernel attention_kernel = AttentionKernel::best;
  // What joins the GPUs of one node ("nvswitch", "nvlink", "pcie": the system file's
  // network.scale_up.kind); empty = unknown. Collective efficiencies are properties of this fabric
  // (and of the scale-out path behind it), so they are only carried between devices whose
  // scale-up kind is known and the same (cross_device.h, collectives_transfer).
  std::string scale_up_kind;
  // The ceiling the device's own GEMM rows reach, per dtype (achievable_ceiling.h); 0 = not
  // estimated (too few large compute-bound rows, or a target known only by its system file).
  std::array<double, kDTypeCount> matmul_ceiling{};
  // The forward + backward attention efficiency the device's own rows reach at the reference shape
  // of a system file's efficiency.attention (achievable_ceiling.h, with_attention_level); 0 = not
  // estimated (rows of one direction only, FlashAttention-2 rows, or a target known by its file).
  double attention_level = 0;

  const LinkSpec& tier(db::LinkTier t) const { return t == db::LinkTier::intra_node ? intra_node : inter_node; }
  // The matmul efficiency of GEMMs whose inputs are `dtype` (0 = unknown).
  double matmul_efficiency_for(DType dtype) const {
    const double e = matmul_efficiency_by_dtype[static_cast<int>(dtype)];
    return e > 0 ? e : matmul_efficiency;
  }
};

// The spec of a database device; efficiencies and links unknown.
DeviceProfile profile_from_record(const db::DeviceRecord& record);

// Fills what `record_profile` lacks (sm_count, l2, efficiencies, links) from `system`, which
// describes the same GPU model. Peaks and bandwidth stay those of the record, because the stored
// efficiencies are fractions of them.
DeviceProfile enrich_profile(DeviceProfile record_profile, const DeviceProfile& system);

// The per-GPU link bandwidth of each tier as the device's collective rows and fits recorded it
// (their efficiencies are fractions of it), replacing the profile's where the rows have one.
DeviceProfile with_row_links(DeviceProfile profile, const std::vector<db::RunBatch>& runs);

// The attention kernel generation of the device's (non-predicted) attention rows, read from the
// runs' notes: every run holding attention rows names FlashAttention-2 ("flash2", "FlashAttention-2",
// "FA2") => flash2; otherwise best.
DeviceProfile with_row_kernels(DeviceProfile profile, const std::vector<db::RunBatch>& runs);

// A device record for storing predictions of the target (name and specs from its profile).
db::DeviceRecord record_from_profile(const DeviceProfile& profile);

}  // namespace calisim::predictor
