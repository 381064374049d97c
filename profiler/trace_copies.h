// Memory copies and memsets in a trace: the CUDA-free half of recording CUPTI's MEMCPY, MEMCPY2
// (peer-to-peer) and MEMSET activity records in libcalisim_trace.so, testable without a GPU.
//
// Contract:
//   - copy_direction_name() maps a CUpti_ActivityMemcpyKind value to a short name (HtoD, DtoH,
//     HtoA, AtoH, AtoA, AtoD, DtoA, DtoD, HtoH, PtoP; "unknown" for 0 and values this build does
//     not know). memory_kind_name() maps a CUpti_ActivityMemoryKind value (pageable, pinned,
//     device, array, managed, device_static, managed_static; "unknown" otherwise). The numbers are
//     CUPTI's; trace_injection.cc static_asserts that they match the headers it compiles against.
//   - copy_record() / memset_record() build the trace record: class memcpy / memset, the bytes,
//     copy_kind = the direction (copies) or the memory set (memsets), grid and block 0 (not a
//     kernel), and a name like Nsight's, "[CUDA memcpy HtoD]", "[CUDA memcpy PtoP 0->1]",
//     "[CUDA memset device]". A record whose end precedes its start (CUPTI reports 0 for both
//     when it could not time it) gets end = start.
//   - is_copy_api() says whether a driver API function (CUPTI callback functionName) issues a
//     copy or memset ("cuMemcpy...", "cuMemset..."): the trace library remembers the NVTX range
//     open at such a call under its correlation id, which the copy's record carries.
#pragma once

#include <cstdint>
#include <string_view>

#include "db/trace_store.h"

namespace calisim::profiler {

std::string_view copy_direction_name(int cupti_copy_kind);
std::string_view memory_kind_name(int cupti_memory_kind);
// The inverse, for traces that give the names (Kineto's "Memcpy HtoD ...", "Memset (Device)"):
// the CUPTI value of a direction ("HtoD") or a memory kind ("device", any case); 0 (unknown) for
// names the tables do not hold.
int copy_kind_from_name(std::string_view direction);
int memory_kind_from_name(std::string_view memory_kind);

struct CopyActivity {
  int copy_kind = 0;  // CUpti_ActivityMemcpyKind
  std::uint64_t bytes = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  int device = 0;
  std::int64_t stream = 0;
  int src_device = -1, dst_device = -1;  // peer copies (MEMCPY2 records) only
};

struct MemsetActivity {
  int memory_kind = 0;  // CUpti_ActivityMemoryKind
  std::uint64_t bytes = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  int device = 0;
  std::int64_t stream = 0;
};

bool is_copy_api(std::string_view driver_function);

db::TraceKernel copy_record(const CopyActivity& a);
db::TraceKernel memset_record(const MemsetActivity& a);

}  // namespace calisim::profiler
