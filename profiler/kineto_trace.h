// Reading a PyTorch profiler trace (Kineto's Chrome-trace JSON, what torch.profiler's
// export_chrome_trace / tensorboard_trace_handler write) into trace records, so that a training
// step someone already profiled can be compared with its simulation (calibration/trace_comparison.h)
// without libcalisim_trace.so.
//
// Contract:
//   - read_kineto_trace() reads one rank's trace file, plain or gzip-compressed (.json.gz, as
//     tensorboard_trace_handler(use_gzip=True) writes it; profiler/gzip_input.h): a JSON object
//     whose "traceEvents" array holds complete events ("ph": "X"). It keeps the GPU records — "kernel" (name, device,
//     stream, grid, block), "gpu_memcpy" and "gpu_memset" (bytes; the direction or memory kind
//     parsed from Kineto's name, "Memcpy HtoD (Pageable -> Device)" -> HtoD, "Memset (Device)" ->
//     device) — with ts / dur (microseconds) turned into nanoseconds, each kernel demangled and
//     classified by profiler/kernel_class.h, copies named as libcalisim_trace.so names them.
//     CPU events are dropped while parsing (a trace of many steps is mostly CPU events). The first
//     Kineto traces' category names ("Kernel", "Memcpy", "Memset", "Runtime") are read as today's.
//   - Steps: each record's `nvtx_range` is set to the "ProfilerStep#N" range it belongs to —
//     by the GPU-side "gpu_user_annotation" ranges of that name on its device when the trace has
//     them, else by the CPU-side "ProfilerStep#N" range that holds the launch of the record
//     (matched through args.correlation to its "cuda_runtime" / "cuda_driver" event); records
//     that fall in no step keep an empty range and are counted in `outside_steps`.
//   - Devices: "deviceProperties" (id -> name); a device the trace does not name maps to
//     `device_name_override` when given, else the trace is refused with what to pass. A given
//     override names every device of the trace. "distributedInfo" gives rank and world size.
//   - Operators (traces recorded with record_shapes=True): the CPU events of the PyTorch operators
//     profiler/aten_operator_keys.h keys (aten::mm ... the scaled_dot_product_attention family)
//     are kept with their key, or the reason they have none. Each kernel is attributed to the
//     outermost keyed operator on the thread that launched it whose CPU span holds the launch
//     (args.correlation -> its cuda_runtime / cuda_driver event): so the flash kernel of
//     scaled_dot_product_attention belongs to that operator, not to the internal one inside it.
//     `operators` lists each call that launched kernels, with the summed duration of its kernels
//     (copies, memsets and communication kernels not counted), its device and step, and whether
//     any of its kernels ran while a communication kernel (class nccl) ran on the same device.
//     Communication kernels go the same way to the `record_param_comms` call (c10d's record of a
//     collective) whose span holds their launch: one TracedOperator per collective call, its
//     communication kernels' time (which includes waiting for the slowest peer). GEMM and attention
//     kernels that no keyed operator launched (TransformerEngine's GEMMs and fused attention,
//     flash-attn's own operators, CUDA graphs) are summed in `unkeyed_s`.
//   - Errors are InputError naming the file and the field (e.g. "traceEvents[12].dur: expected a
//     non-negative number of microseconds"): a file that is not JSON, a truncated or damaged
//     .gz, no "traceEvents", a kept event with a malformed field, a trace with no GPU kernel at
//     all (profiled without ProfilerActivity.CUDA).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "db/trace_store.h"
#include "profiler/aten_operator_keys.h"

namespace calisim::profiler {

// One call of a keyed operator that launched kernels.
struct TracedOperator {
  std::string name;     // e.g. "aten::mm"
  OperatorKey key;
  int device = 0;
  std::string step;     // the ProfilerStep of its first kernel, "" when none
  double gpu_s = 0;     // summed duration of the kernels it launched
  int kernels = 0;
  bool overlaps_communication = false;
};

// GEMM / attention kernel time no keyed operator launched, by kernel class ("gemm", "attention").
struct UnkeyedKernels {
  std::int64_t count = 0;
  double total_s = 0;
};

struct KinetoTrace {
  std::vector<db::TraceKernel> records;  // kernels, copies and memsets, start order
  std::map<int, std::string> device_names;  // CUDA ordinal -> name
  int rank = -1, world_size = 0;            // from distributedInfo; -1 / 0 when absent
  std::vector<std::string> steps;           // ProfilerStep names, in order of first appearance
  std::string step_source;                  // "gpu annotations", "cpu ranges and launch correlation" or ""
  std::int64_t outside_steps = 0;           // records in no step (when there are steps)
  std::int64_t kernels = 0, copies = 0;     // of `records`
  std::vector<TracedOperator> operators;    // keyed operator calls with kernels, in launch order
  std::int64_t operator_events = 0;         // CPU events of keyed operators (with or without kernels)
  std::map<std::string, UnkeyedKernels> unkeyed;  // "gemm" / "attention" kernels outside keyed operators
  bool record_shapes = false;               // the trace's top-level "record_shapes" flag
};

KinetoTrace read_kineto_trace(const std::string& path, const std::string& device_name_override = "");

}  // namespace calisim::profiler
