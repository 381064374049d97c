// Fixed per-call cost of GEMM and attention kernels, and the kernel-generation factor of attention.
//
// A kernel call takes t = t0 + F / (peak · r): a fixed overhead t0 (the launch gap plus the
// prologue/epilogue every call pays: first tiles loaded from HBM, last tiles stored, grid drain)
// and the work at the achievable rate r(shape). As an efficiency of the dense peak,
//   e = F / (peak · t) = 1 / (1/r + peak · t0 / F),
// so e → r for large problems and falls as 1/F for tiny ones (an H100 1024³ BF16 GEMM: 2.1 GFLOP is
// 2.7 µs of work at 80 % of 989 TFLOP/s, the same order as t0). The fits (device_fit.h) learn r
// after removing t0 from every row; scaling (cross_device.h) scales only the work part and adds the
// target's t0 back.
//
// t0 per device: fitted from the device's rows where small problems exist (device_fit.h: at least
// kMinShortRows rows whose time is under kShortRowFactor · the prior), otherwise the prior
//   kOverheadPriorUs = 2 µs launch gap (the shipped system files' kernel_launch_us, itself an
//   assumption: "typical back-to-back launch gap") + 2 µs prologue/epilogue (assumption: one HBM
//   round trip for the first K-tiles plus the epilogue store and the tail of the grid,
//   ~2-3k cycles at 1.4-2 GHz).
//
// Attention kernel generations (kernel_figures.md §2.1, H100 SXM5 FP16 forward, FA3 paper figure):
// at causal head-dim-128 seq 4k-8k, the shapes the H100 system file's attention efficiency (0.50, fwd+bwd)
// was derived from, FlashAttention-2 reaches (319 + 333) / 2 = 326 TFLOP/s against the mean of
// FlashAttention-3 and cuDNN (579, 602, 518, 529) = 557: FA2 runs at 0.585 of the best Hopper
// kernel (FA3 abstract: FA2 reaches "only 35 % utilization on the H100"; 0.585 · 0.563 = 0.33).
// On Ampere the best kernel is FlashAttention-2 itself (the A100 system files' 0.57 / 0.53 are FA2
// figures): share 1. Elsewhere the share is unknown and taken as 1 (and said so).
#pragma once

#include <optional>
#include <string>

#include "predictor/device_profile.h"

namespace calisim::predictor {

inline constexpr double kOverheadPriorUs = 4.0;
// A group's overhead is fitted only when it holds this many rows shorter than
// kShortRowFactor · prior (where the prior is at least 1/kShortRowFactor of the time).
inline constexpr std::size_t kMinShortRows = 2;
inline constexpr double kShortRowFactor = 25.0;

// The device's t0 in seconds: profile.kernel_overhead_us when > 0, else the prior.
double kernel_overhead_s(const DeviceProfile& profile);

// e from the work efficiency r (see above); flops and peak_flops_per_s > 0, else r unchanged.
double add_overhead(double work_efficiency, double flops, double peak_flops_per_s, double overhead_s);
// r from a measured e: the inverse of add_overhead, with the work part kept at >= 10 % of the
// measured time (an overhead larger than that is not believed for this row).
double remove_overhead(double efficiency, double flops, double peak_flops_per_s, double overhead_s);

// Hopper-class GPU (H100, H200, H800, H20, GH200) by device name.
bool is_hopper(const DeviceSpec& spec);
// The share of the device's best attention kernel (what profile.attention_efficiency describes)
// that `kernel` reaches there; nullopt when unknown (caller takes 1 and says so).
std::optional<double> attention_kernel_share(const DeviceSpec& spec, AttentionKernel kernel);
inline constexpr double kHopperFlash2Share = 326.0 / 557.0;

const char* to_string(AttentionKernel k);

}  // namespace calisim::predictor
