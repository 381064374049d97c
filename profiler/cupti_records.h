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

// Memory copy, peer-to-peer copy (CUPTI_ACTIVITY_KIND_MEMCPY2) and memset records. Memcpy6
// (CUPTI 13) appends fields after runtimeCorrelationId to Memcpy5; the fields the trace reads
// (kinds, bytes, start, end, device, stream, correlation id) sit in the shared prefix.
#if CUPTI_API_VERSION >= 130000
using CuptiMemcpyRecord = CUpti_ActivityMemcpy6;
#else
using CuptiMemcpyRecord = CUpti_ActivityMemcpy5;
#endif
using CuptiPeerCopyRecord = CUpti_ActivityMemcpyPtoP4;
using CuptiMemsetRecord = CUpti_ActivityMemset4;

// 8 MiB activity buffers (CUPTI's tutorial size), 8-byte aligned as records require.
inline constexpr std::size_t kCuptiBufferBytes = 8u << 20;
inline constexpr std::size_t kCuptiBufferAlign = 8;

}  // namespace calisim::profiler
