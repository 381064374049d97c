// Shape features of GEMM and attention kernels: what the per-device fits regress efficiency on,
// and the wave/tile quantization terms that cross-device scaling recomputes for a target GPU.
//
// Pure functions of a key and a device spec. Quantization follows NVIDIA's "Matrix
// Multiplication Background" guide (profiling_notes.md §5): a grid of ceil(M/tm)·ceil(N/tn)
// tiles runs in ceil(tiles / SMs) waves, and the last wave's idle SMs are lost. Modern libraries
// choose among tile shapes (and Stream-K on sm90+), so the model takes the best of a small tile
// set rather than assuming one; that makes it an upper bound on the loss, as the notes advise.
// A device with sm_count 0 (unknown) has no wave loss (utilization 1).
#pragma once

#include <array>
#include <cstdint>

#include "core/device_spec.h"
#include "core/kernel_keys.h"

namespace calisim::predictor {

// tiles / (waves · sm_count) with waves = ceil(tiles / sm_count); 1 when either is <= 0.
double wave_utilization(double tiles, int sm_count);

// Useful fraction of the padded tile grid: m·n / (ceil(m/tm)·tm · ceil(n/tn)·tn), in (0, 1].
double tile_utilization(std::int64_t m, std::int64_t n, int tile_m, int tile_n);

// Best tile·wave utilization over the tile shapes cuBLAS-class libraries pick from
// (64x128, 128x128, 128x256, 256x128), for `batch` independent m x n outputs.
double gemm_quantization(std::int64_t m, std::int64_t n, std::int64_t batch, int sm_count);

// Flash-attention CTAs = batch · heads_q · ceil(seq_q / 128) (one 128-row query block per CTA),
// spread over the SMs: wave utilization of that grid.
double attention_quantization(const AttentionKey& key, int sm_count);

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
