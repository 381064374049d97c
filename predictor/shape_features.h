// Shape features of GEMM and attention kernels: what the per-device fits regress efficiency on,
// and the wave/tile quantization terms (core/tile_quantization.h) that cross-device scaling
// recomputes for a target GPU.
//
// Pure functions of a key and a device spec.
#pragma once

#include <array>
#include <cstdint>

#include "core/device_spec.h"
#include "core/kernel_keys.h"
#include "core/tile_quantization.h"

namespace calisim::predictor {

// The quantization terms live in core/tile_quantization.h (the simulator's roofline default uses
// them too); they are named here so predictor code keeps calling them unqualified.
using calisim::attention_quantization;
using calisim::gemm_quantization;
using calisim::tile_utilization;
using calisim::wave_utilization;

// The fraction of the dense peak the roofline allows: min(1, intensity / ridge) =
// (flops/peak) / max(flops/peak, bytes/bandwidth). 1 when the device has no bandwidth figure.
double roofline_fraction(double flops, double bytes, DType dtype, const DeviceSpec& device);

inline constexpr int kGemmFeatureCount = 13;
inline constexpr int kAttentionFeatureCount = 9;
using GemmFeatures = std::array<double, kGemmFeatureCount>;
using AttentionFeatures = std::array<double, kAttentionFeatureCount>;

// log2 m, n, k, batch, their squares for m, n, k (curvature), log2 min(m, n), log2 intensity,
// quantization on this device, layout NN, layout NT, accumulate.
GemmFeatures gemm_features(const GemmKey& key, const DeviceSpec& device);

// log2 seq_q, seq_kv, head_dim_qk, head_dim_v, batch·heads_q, heads_q/heads_kv (GQA ratio),
// total query rows, causal, quantization on this device.
AttentionFeatures attention_features(const AttentionKey& key, const DeviceSpec& device);

}  // namespace calisim::predictor
