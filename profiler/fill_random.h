// Filling device buffers with reproducible random numbers of a given dtype.
//
// Benchmarks must not run on zeros (the device notes saw a bf16 GEMM run 13 % faster on zeros),
// so every input is filled with uniform values in [-scale, scale) from a counter-based hash of
// (seed, index): the same seed gives the same contents on any GPU, and the CPU can recompute any
// element (random_uniform) for reference checks.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"

namespace calisim::profiler {

// Fills `count` elements of `dtype` at `ptr` (tf32 is stored as fp32).
void fill_random(void* ptr, std::int64_t count, DType dtype, std::uint64_t seed, float scale, cudaStream_t stream);

// Copies `count` elements of `dtype` from the device and widens them to double (for CPU
// reference checks in tests). Synchronous.
void copy_to_host_as_double(const void* device_ptr, std::int64_t count, DType dtype, double* out);

// The value fill_random puts at `index` before rounding to the dtype.
float random_uniform(std::uint64_t seed, std::uint64_t index, float scale);

}  // namespace calisim::profiler
