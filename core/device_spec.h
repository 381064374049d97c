// Datasheet description of one accelerator: what roofline and cross-device scaling need.
//
// Units are in the names. Peaks are dense (no structured sparsity) tensor-core rates.
// A peak of 0 means the device has no such mode (for example fp8 on an A100); asking for it
// is the caller's error and peak_tflops() throws std::invalid_argument naming the device.
#pragma once

#include <array>
#include <string>

#include "core/dtype.h"

namespace calisim {

struct DeviceSpec {
  std::string name;                              // e.g. "NVIDIA H100 SXM5 80GB"
  std::array<double, kDTypeCount> peak_tflops{};  // indexed by DType; fp8_e5m2 == fp8_e4m3
  double memory_gb = 0;                          // HBM capacity, GB (1e9 bytes)
  double hbm_gb_s = 0;                           // HBM bandwidth, GB/s (1e9 bytes/s)
  int sm_count = 0;                              // streaming multiprocessors (CUs on AMD)
  double l2_mb = 0;                              // last-level cache, MB

  double peak_tflops_for(DType t) const;         // throws if the device lacks the mode
  double peak_flops_per_s(DType t) const { return peak_tflops_for(t) * 1e12; }
  double hbm_bytes_per_s() const { return hbm_gb_s * 1e9; }
  double memory_bytes() const { return memory_gb * 1e9; }
  // FLOPs per byte above which a kernel of this dtype is compute-bound on this device.
  double ridge_flops_per_byte(DType t) const { return peak_flops_per_s(t) / hbm_bytes_per_s(); }
};

}  // namespace calisim
