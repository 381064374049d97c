// CUPTI activity-record layout and buffer sizing shared by the CUPTI timer and the trace
// injection library (CUDA builds only; profiling_notes.md §3.2).
#pragma once

#include <cupti.h>

#include <cstddef>

namespace calisim::profiler {

// The kernel record struct of the CUPTI headers we compile against.
#if CUPTI_API_VERSION >= 130100
using CuptiKernelRecord = CUpti_ActivityKernel11;
#elif CUPTI_API_VERSION >= 130000
using CuptiKernelRecord = CUpti_ActivityKernel10;
#else
using CuptiKernelRecord = CUpti_ActivityKernel9;
#endif

// 8 MiB activity buffers (CUPTI's tutorial size), 8-byte aligned as records require.
inline constexpr std::size_t kCuptiBufferBytes = 8u << 20;
inline constexpr std::size_t kCuptiBufferAlign = 8;

}  // namespace calisim::profiler
