// Trace runs: every kernel one CUDA program ran, as libcalisim_trace.so recorded it
// (profiler/trace_injection.cc), stored as a run of source `trace` with one row per kernel in the
// table trace_kernels (schema version 3).
//
// Contract:
//   - write_trace_run() inserts the run and all of its kernels in one transaction: a trace is
//     stored whole or not at all. The run's device must exist (add it first); the run's source
//     must be Source::trace (std::invalid_argument otherwise). Kernels need end_ns >= start_ns.
//   - The kernel class is stored as text (profiler/kernel_class.h names: gemm, attention, nccl,
//     elementwise, memcpy, other); db/ does not classify, it only groups by that column.
//   - summarize_trace() groups one run's kernels by class: count, total kernel time (the sum of
//     durations, so overlapping kernels on several streams each count) and its share of the run's
//     total; classes ordered by total time, largest first. `wall_s` is last end - first start.
//   - Trace rows are not measurement rows: lookups, export and merge ignore them; deleting the
//     run deletes them (ON DELETE CASCADE).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/efficiency_db.h"

namespace calisim::db {

struct TraceKernel {
  std::string name;          // demangled when the demangler could, else as CUDA reported it
  std::string kernel_class;  // gemm, attention, nccl, elementwise, memcpy, other
  int device = 0;
  std::int64_t stream = 0;
  int grid_x = 1, grid_y = 1, grid_z = 1;
  int block_x = 1, block_y = 1, block_z = 1;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::string nvtx_range;    // innermost enclosing NVTX push/pop range on the launching thread
  double duration_s() const { return static_cast<double>(end_ns - start_ns) * 1e-9; }
};

struct TraceClassSummary {
  std::string kernel_class;
  std::int64_t count = 0;
  double total_s = 0;
  double share = 0;  // of the run's summed kernel time
};

struct TraceSummary {
  std::int64_t run_id = 0;
  std::int64_t kernels = 0;
  double total_s = 0;  // summed kernel time
  double wall_s = 0;   // first kernel start to last kernel end
  std::vector<TraceClassSummary> classes;
};

// Returns the new run id.
std::int64_t write_trace_run(EfficiencyDb& db, const RunRecord& run, const std::vector<TraceKernel>& kernels);

TraceSummary summarize_trace(EfficiencyDb& db, std::int64_t run_id);

// The kernels of one run, in start order (for tests and tools).
std::vector<TraceKernel> load_trace_kernels(EfficiencyDb& db, std::int64_t run_id);

}  // namespace calisim::db
