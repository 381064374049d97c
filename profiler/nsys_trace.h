// Reading an Nsight Systems report exported to SQLite (`nsys export --type sqlite report.nsys-rep`)
// into trace records: the profiler Megatron-LM's and NeMo's `--profile` runs by default, so a
// traced training step can be compared with its simulation (calibration/trace_comparison.h)
// without libcalisim_trace.so.
//
// Contract:
//   - read_nsys_sqlite() opens the file read-only and reads CUPTI_ACTIVITY_KIND_KERNEL (start,
//     end in ns; deviceId, streamId; the name from StringIds by demangledName, else shortName;
//     grid and block when the columns exist), CUPTI_ACTIVITY_KIND_MEMCPY (bytes, CUPTI copyKind as
//     HtoD, DtoH, ...) and CUPTI_ACTIVITY_KIND_MEMSET (bytes, memKind / memoryKind as device,
//     pinned, ...) when those tables exist. Kernels are demangled and classified by
//     profiler/kernel_class.h, copies named as libcalisim_trace.so names them; records CUPTI could
//     not time (start = end = 0) are left out and counted.
//   - Devices: the CUDA ordinal's name from TARGET_INFO_GPU (through TARGET_INFO_CUDA_DEVICE's
//     gpuId -> cudaId when the report has it); `device_name_override` names every device, and is
//     needed when the report names none. One report may hold several GPUs (a node's ranks):
//     records keep their device, so storing them gives one trace run per GPU.
//   - Steps: nsys reports carry no ProfilerStep ranges. With `nvtx_step_prefix` empty, records
//     get no step (the comparison then needs the number of steps the capture holds). Given, the
//     program's own NVTX ranges whose text starts with it are the steps (`torch.cuda.nvtx.range_push(
//     f"iteration{i}")` and the like): NVTX_EVENTS push/pop and start/end ranges (eventType 59 /
//     60; text inline or through StringIds by textId; start >= 0), per process (nsys's pid,
//     globalTid / 2^24 % 2^24); each record joins the range of its process that holds its launch
//     — its CUPTI_ACTIVITY_KIND_RUNTIME call, by the process and correlationId, whatever thread
//     launched it (PyTorch's backward runs on the autograd thread) — and is stored with the step
//     name "ProfilerStep#k" (k = 1, 2, ... in time order per process; the ranges' own texts are in
//     `steps`); records in no range are counted in `outside_steps`. InputError when the report has
//     no NVTX or runtime table, or no range with that prefix (naming some of the ranges it has).
//   - InputError naming the file (and table) for: not an SQLite file, not an Nsight Systems
//     export (no StringIds table), no kernel table or no kernel (captured without --trace=cuda),
//     a kernel table without start / end / deviceId / streamId or a name column, an unnamed device
//     without an override.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "db/trace_store.h"

namespace calisim::profiler {

struct NsysTrace {
  std::vector<db::TraceKernel> records;     // kernels, copies and memsets, start order
  std::map<int, std::string> device_names;  // CUDA ordinal -> name
  std::int64_t kernels = 0, copies = 0;
  std::int64_t untimed = 0;                 // records with start = end = 0, left out
  std::vector<std::string> steps;           // with a step prefix: the ranges' texts, time order (first process)
  std::int64_t outside_steps = 0;           // with a step prefix: records in no step range
};

NsysTrace read_nsys_sqlite(const std::string& path, const std::string& device_name_override = "",
                           const std::string& nvtx_step_prefix = "");

}  // namespace calisim::profiler
