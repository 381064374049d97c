// Trace runs: every kernel, memory copy and memset one CUDA program ran, as libcalisim_trace.so
// recorded it (profiler/trace_injection.cc), stored as a run of source `trace` with one row per
// record in the table trace_kernels (schema version 4; version 3 had kernels only).
//
// Contract:
//   - write_trace_run() inserts the run and all of its records in one transaction: a trace is
//     stored whole or not at all. The run's device must exist (add it first); the run's source
//     must be Source::trace (std::invalid_argument otherwise). Records need end_ns >= start_ns and
//     a class is_trace_class() accepts.
//   - The class is stored as text (profiler/kernel_class.h names: gemm, attention, nccl,
//     elementwise, memcpy, memset, other); db/ does not classify, it only groups by that column.
//     Copies and memsets carry the bytes moved or set and their kind (memcpy: the direction,
//     HtoD / DtoH / DtoD / HtoH / PtoP, or an array kind such as HtoA; memset: the memory set,
//     device / pinned / managed ...); kernels have bytes 0, kind "" and their grid and block.
//   - summarize_trace() groups one run's records by class: count, total time (the sum of
//     durations, so overlapping records on several streams each count), bytes, and the share of
//     the run's total; classes ordered by total time, largest first. `copies` groups the copy and
//     memset records by (class, kind) with their bytes and achieved GB/s. `wall_s` is last end -
//     first start.
//   - append_trace_kernels() adds records to an existing run (merge and import use it, so a
//     trace moves between files whole); load_trace_kernels() returns them in start order, so
//     writing a run's records and loading them back gives the same list.
//   - Trace records are not measurement rows: lookups ignore them; export (db/text_dump.h) and
//     merge (db/merge.h) carry them with their run; deleting the run deletes them (ON DELETE
//     CASCADE).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "db/efficiency_db.h"

namespace calisim::db {

struct TraceKernel {
  std::string name;          // demangled when the demangler could, else as CUDA reported it
  std::string kernel_class;  // gemm, attention, nccl, elementwise, memcpy, memset, other
  int device = 0;
  std::int64_t stream = 0;
  int grid_x = 1, grid_y = 1, grid_z = 1;   // 0 for copies and memsets
  int block_x = 1, block_y = 1, block_z = 1;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::string nvtx_range;    // innermost enclosing NVTX push/pop range on the launching thread
  std::int64_t bytes = 0;    // copies and memsets: bytes moved / set; 0 for kernels
  std::string copy_kind;     // copies: direction (HtoD, DtoH, DtoD, HtoH, PtoP, ...); memsets: memory kind
  double duration_s() const { return static_cast<double>(end_ns - start_ns) * 1e-9; }
  bool operator==(const TraceKernel&) const = default;
};

// The range name PyTorch's profiler gives each training step ("ProfilerStep#N"): a record whose
// nvtx_range starts with it belongs to that step (profiler/kineto_trace.h sets it on import;
// calibration/trace_comparison.h measures steps by it).
inline constexpr std::string_view kProfilerStepPrefix = "ProfilerStep#";

// The classes trace_kernels accepts (the schema's CHECK constraint lists the same).
const std::vector<std::string_view>& trace_classes();
bool is_trace_class(std::string_view c);

struct TraceClassSummary {
  std::string kernel_class;
  std::int64_t count = 0;
  double total_s = 0;
  std::int64_t bytes = 0;  // copies and memsets only
  double share = 0;        // of the run's summed time
};

// Copies or memsets of one kind: memcpy HtoD, memset device, ...
struct TraceCopySummary {
  std::string kernel_class;  // memcpy or memset
  std::string copy_kind;
  std::int64_t count = 0;
  std::int64_t bytes = 0;
  double total_s = 0;
  double gb_s() const { return total_s > 0 ? static_cast<double>(bytes) / total_s * 1e-9 : 0.0; }
};

struct TraceSummary {
  std::int64_t run_id = 0;
  std::int64_t kernels = 0;  // every record: kernels, copies and memsets
  double total_s = 0;        // summed record time
  double wall_s = 0;         // first record start to last record end
  std::vector<TraceClassSummary> classes;
  std::vector<TraceCopySummary> copies;  // ordered by total time, largest first
};

// Returns the new run id.
std::int64_t write_trace_run(EfficiencyDb& db, const RunRecord& run, const std::vector<TraceKernel>& kernels);

// Adds records to run `run_id` (which must exist) in one transaction. Same checks as write_trace_run.
void append_trace_kernels(EfficiencyDb& db, std::int64_t run_id, const std::vector<TraceKernel>& kernels);

TraceSummary summarize_trace(EfficiencyDb& db, std::int64_t run_id);

// The records of one run, in start order (ties in insertion order).
std::vector<TraceKernel> load_trace_kernels(EfficiencyDb& db, std::int64_t run_id);

// Runs that hold trace records, ascending.
std::vector<std::int64_t> runs_with_trace_kernels(EfficiencyDb& db);

}  // namespace calisim::db
