// The GEMM efficiency ceiling a device's own rows reach, and the matmul efficiency ratio of
// cross-device scaling anchored on it.
//
// Why: a system file's efficiency.matmul is 0.9 × the device's published Maximum Achievable Matmul
// FLOPS (MAMF, a best-case brute-force benchmark; configs/systems/*.json descriptions). A measured
// table need not sit at that level: the SimuMax A100-PCIe rows of long compute-bound shapes reach
// 0.765 of peak at their 95th percentile (training shapes on a power-capped 300 W card), while that
// card's MAMF is 0.811. Scaling by the ratio of the two system files (MAMF_T / MAMF_S) assumes the source data sit
// at the same fraction of their MAMF as every benchmark of the target, which the data contradict.
// So when the source's rows show their own ceiling, a source row's work efficiency is read as a
// fraction of that ceiling and mapped onto the target's MAMF: a_c,S = ceiling, a_c,T = MAMF_T =
// efficiency.matmul / kSystemMatmulShareOfMamf, per dtype: the GEMM's input dtype picks
// efficiency.matmul_by_dtype where the system file gives one (FP8: the FP8 MAMF), else matmul.
// The prediction then answers "the target under best-case benchmark conditions", the conditions
// of the published target figures (and of MAMF).
//
// The ceiling: the kCeilingQuantile quantile (nearest rank) of the work efficiency (the fixed per-call
// overhead t0 taken off, kernel_overhead.h) over the rows that are compute-bound on the source's own
// achievable roofline and long (work time ≥ kShortRowFactor · t0, so t0 is ≤ 4 % of them), when at
// least kMinCeilingRows rows qualify; otherwise no ceiling (the system-file ratio is used). A high
// quantile rather than the maximum, so one lucky row does not set it. Pure functions.
#pragma once

#include <optional>
#include <vector>

#include "db/records.h"
#include "predictor/device_fit.h"
#include "predictor/device_profile.h"

namespace calisim::predictor {

// The system files' efficiency.matmul is this share of MAMF (their descriptions: "matmul 0.72 =
// MAMF 794.5 / 989 dense bf16 (0.803) x 0.9").
inline constexpr double kSystemMatmulShareOfMamf = 0.9;
inline constexpr double kCeilingQuantile = 0.95;
inline constexpr std::size_t kMinCeilingRows = 3;

// The ceiling of one dtype's GEMM rows on `device` (profile: spec, achievable efficiencies),
// t0 = overhead_s. nullopt when fewer than kMinCeilingRows rows qualify.
std::optional<double> gemm_ceiling(const std::vector<db::GemmRow>& rows, const DeviceProfile& device,
                                   double overhead_s);

// The profile with matmul_ceiling filled for every dtype with enough qualifying rows.
DeviceProfile with_gemm_ceilings(DeviceProfile profile, const std::vector<db::RunBatch>& runs, double overhead_s);

// The pair (a_c source, a_c target) of GEMM scaling for `dtype`: (ceiling, MAMF_T) when the source
// has a ceiling and the target a matmul efficiency; else the system-file pair (0 = unknown). Both
// system-file figures are the dtype's (DeviceProfile::matmul_efficiency_for).
struct MatmulPair {
  double source = 0, target = 0;
  bool anchored = false;  // true: the source's ceiling against the target's MAMF
};
MatmulPair matmul_pair(const DeviceProfile& source, const DeviceProfile& target, DType dtype);

// Attention, likewise anchored on the source's own level. A system file's efficiency.attention is
// forward + backward at the reference shape (causal, head dim 128, 4k-8k tokens, the curves' grid:
// hidden 2048, 16k tokens per batch; simulator/attention_shape.h) for the best kernel of its GPU,
// from published figures. Measured rows need not sit there: the H200's cuDNN 9.19 rows reach
// 0.52-0.57 at that shape against the file's 0.50 (2024 figures). with_attention_level evaluates the
// source's own fits at the reference shape, forward and backward, 4k and 8k tokens:
// level = mean of 3.5 / (1/fwd + 2.5/bwd), the first of bf16, fp16 with both directions fitted. A
// source row is then read as a fraction of that level and mapped onto the target's file figure
// (cross_device.h, scale_attention): the target under the conditions its file describes. Not for
// FlashAttention-2 rows (their level is scaled by the kernel's share instead, kernel_overhead.h).
DeviceProfile with_attention_level(DeviceProfile profile, const DeviceFit& fit);

}  // namespace calisim::predictor
