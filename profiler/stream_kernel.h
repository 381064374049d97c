// The streaming kernel the memory benchmark times: `reads` input arrays in, `writes` outputs out.
//
// launch_stream_kernel enqueues out_w[i] = (w + 1) * sum_r in_r[i] (computed in fp32) for
// i < n, with 16-byte vector loads and stores and a scalar tail. Arrays hold `element_bytes`
// (2 = bf16, 4 = fp32) elements and must be 16-byte aligned (cudaMalloc's are). Throws
// std::invalid_argument for counts outside 1..kMaxStreamArrays and GpuError on launch failure.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace calisim::profiler {

inline constexpr int kMaxStreamArrays = 4;

void launch_stream_kernel(const void* const* in, int reads, void* const* out, int writes, std::int64_t n,
                          int element_bytes, cudaStream_t stream);

}  // namespace calisim::profiler
