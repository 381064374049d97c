// Wave and tile quantization of GPU kernels: the fraction of a kernel's launched work that is
// useful when its output is cut into fixed-size tiles and the tiles run in waves over the SMs.
//
// Follows NVIDIA's "Matrix Multiplication Background" guide: a grid of ceil(M/tm)·ceil(N/tn)
// tiles runs in ceil(tiles / SMs) waves, the padding of the edge tiles is computed and thrown
// away (tile quantization) and the last wave's idle SMs are lost (wave quantization). Libraries
// choose among tile shapes (and Stream-K on sm90+), so the GEMM figure takes the best of a small
// tile set rather than assuming one: an upper bound on the utilization, a lower bound on the loss.
// A device with sm_count <= 0 (unknown) has no wave loss.
//
// Used by the simulator's roofline default (simulator/default_efficiency.h: the system's matmul
// efficiency times the GEMM utilization; attention times its grid's utilization over that of the
// published curves' grid, simulator/attention_shape.h), by calibrate (which divides it back out
// when it fits those efficiencies) and by the predictor's shape features, bounds and cross-device
// rescaling. Pure functions (the causal schedule is memoized, invisibly and thread-safely).
#pragma once

#include <cstdint>

#include "core/kernel_keys.h"

namespace calisim {

// tiles / (waves · sm_count) with waves = ceil(tiles / sm_count); 1 when either is <= 0.
double wave_utilization(double tiles, int sm_count);

// Useful fraction of the padded tile grid: m·n / (ceil(m/tm)·tm · ceil(n/tn)·tn), in (0, 1].
double tile_utilization(std::int64_t m, std::int64_t n, int tile_m, int tile_n);

// Best tile·wave utilization over the tile shapes cuBLAS-class libraries pick from
// (64x128, 128x128, 128x256, 256x128), for `batch` independent m x n outputs (a batched or
// grouped GEMM's groups share the waves). In (0, 1].
double gemm_quantization(std::int64_t m, std::int64_t n, std::int64_t batch, int sm_count);

// Flash-attention grid utilization. CTAs: batch · heads_q · ceil(seq_q / 128) forward (one 128-row
// query block each), batch · heads_q · ceil(seq_kv / 128) backward (one 128-row key block each).
// Without a causal mask every CTA does the same work: the wave utilization of that grid. With one,
// a CTA's work is the number of 128-blocks the mask lets it visit (aligned bottom right), and the
// CTAs are list-scheduled in launch order onto the SMs: total work / (SMs · makespan). 64 waves
// and more are approximated (makespan = total / SMs + half the largest CTA). In (0, 1].
double attention_quantization(const AttentionKey& key, int sm_count);

}  // namespace calisim
