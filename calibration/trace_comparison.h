// A traced training step against its simulation, by kernel class: where the real step spends
// its GPU time that the simulation does not (the question the public runs' remaining bias asks,
// docs/validation.md), answered from a trace of one rank (libcalisim_trace.so or a PyTorch
// profiler trace imported with `calisim db import --kineto`).
//
// Contract (pure functions):
//   - trace_step_stats() takes one device's records (a trace run). When records carry
//     "ProfilerStep#N" ranges (nvtx_range), each such step is measured on its own and the
//     figures are the mean over the steps; records in no step are left out (counted). Without
//     steps the whole trace is `steps_if_unnamed` steps (InputError when that is < 1). Per step:
//     span (first record start to last record end), summed time per class (records on several
//     streams overlap, so sums can exceed the span; attention split into backward and the rest,
//     communication by collective, both by kernel name; communication is the kernel class
//     "nccl": NCCL's kernels and those of TE userbuffers, DeepEP, NVSHMEM, profiler/kernel_class.h),
//     the union of compute kernels (gemm, attention, elementwise, other), the time communication
//     kernels run with no compute kernel beside them, the time only copies / memsets run, and idle time (nothing running), split into gaps
//     under 20 us between busy segments (with their count) and longer waits.
//   - simulated_step_classes() splits one pipeline stage's simulated compute per step by class:
//     the stage's own compute (forward and backward with recompute, per micro-batch, less exposed
//     communication, blocking sends and host waits, times the micro-batches) divided between GEMM,
//     attention and memory-bound work as the per-op table divides it (fwd and bwd of every op times
//     its instances on the stage; recomputed ops' forward again in recomputed layers;
//     `class_split_scale` says how far the table's total was from the stage's), plus the optimizer
//     step as memory-bound work, the stage's exposed communication, and the rest of the step
//     (pipeline bubble, host dispatch, waits) as idle. Needs the result's op table.
//   - compare_trace() pairs the two: a row per quantity with traced and simulated seconds per
//     step and their ratio (simulated / traced; 0 when either is 0).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/trace_store.h"
#include "simulator/result.h"

namespace calisim::calibration {

struct TraceStepStats {
  int steps = 0;                 // steps averaged over
  std::string steps_text;        // "ProfilerStep#2 .. ProfilerStep#4 (3 steps)" or "whole trace as 2 steps"
  bool from_step_ranges = false;  // the steps are the trace's ProfilerStep ranges (else the given count)
  std::int64_t outside_steps = 0;  // records in no step (left out)
  double span_s = 0;
  double span_min_s = 0, span_max_s = 0;  // the shortest and longest step (with step ranges; else span_s)
  double gemm_s = 0, attention_s = 0, elementwise_s = 0, other_s = 0, nccl_s = 0, copy_s = 0;  // summed
  // Of attention_s: backward kernels (names with "bwd", "bprop", "backward" or xformers' "cutlassB").
  double attention_bwd_s = 0;
  // Of nccl_s (communication kernels), by collective (from kernel names): all-reduce, all-gather, reduce-scatter,
  // send/recv (pipeline transfers and all-to-all), the rest (broadcast, reduce, ...).
  double nccl_all_reduce_s = 0, nccl_all_gather_s = 0, nccl_reduce_scatter_s = 0, nccl_send_recv_s = 0,
         nccl_other_s = 0;
  // Of nccl_s: peer-to-peer copies (GPU to GPU through the copy engine: TE userbuffers' CE mode,
  // PyTorch async TP), communication that runs as copies rather than kernels; not in copy_s.
  double peer_copy_s = 0;
  double compute_busy_s = 0;     // union of compute kernels
  double comm_only_s = 0;        // communication kernels running, no compute kernel
  double copy_only_s = 0;        // only copies / memsets running
  double idle_s = 0;             // nothing running
  // Of idle_s: the gaps under 20 us between busy segments (launch and dispatch gaps between kernels
  // that follow each other), their number, and the rest (bubble, host-bound phases, waiting on peers).
  double short_gap_s = 0, short_gaps = 0, long_idle_s = 0;
};

TraceStepStats trace_step_stats(const std::vector<db::TraceKernel>& records, int steps_if_unnamed);

struct SimulatedStepClasses {
  int stage = 0;
  double step_s = 0;
  double gemm_s = 0, attention_s = 0, memory_s = 0, optimizer_s = 0;
  double attention_bwd_s = 0;    // of attention_s: backward (recomputed forwards count as forward)
  double compute_busy_s = 0;     // the sum of the above
  double class_split_scale = 1;  // stage compute / op-table sum (1 where the op table's instances are the stage's)
  double comm_exposed_s = 0;     // TP, CP, EP, ZeRO, blocking P2P and DP communication not hidden
  double idle_s = 0;             // step - busy - exposed communication
};

SimulatedStepClasses simulated_step_classes(const SimulationResult& r, int stage);

// The pipeline stage global rank `rank` runs: its pp coordinate in Megatron's numbering of the
// result's dense layout (simulator/rank_placement.h, rank_coordinate). InputError when the rank is
// outside the world.
int pipeline_stage_of_rank(const SimulationResult& r, int rank);

// The kernels that took the most time per step, by name (records of the steps only, as
// trace_step_stats counts them): at most `n`, largest first.
struct TopKernel {
  std::string name, kernel_class;
  double per_step_s = 0;
  double calls_per_step = 0;
};
std::vector<TopKernel> top_kernels(const std::vector<db::TraceKernel>& records, const TraceStepStats& stats,
                                   std::size_t n);

struct ComparisonRow {
  std::string quantity;
  double traced_s = 0, simulated_s = 0;
  bool has_simulated = true;     // false where the simulation has no counterpart
  double ratio() const { return traced_s > 0 && simulated_s > 0 ? simulated_s / traced_s : 0.0; }
};

std::vector<ComparisonRow> compare_trace(const TraceStepStats& traced, const SimulatedStepClasses& sim);

// Calibrating a system file to a trace (`simulate --compare-trace DB --trace-fit-out FILE`): the
// factors that scale the system's kernel efficiencies so that each class's simulated time per
// step equals the traced one — matmul (every matmul_by_dtype entry too) by simulated / traced GEMM
// time, attention (every attention_implementations entry too) by simulated / traced attention
// time, memory_bound by simulated / traced memory-bound time (elementwise + other kernels against
// memory-bound ops and the optimizer). A class the trace or the simulation has no time for keeps
// factor 1 (and is named in `unfitted`). The in-situ speed of the kernels of one real step, not of
// isolated benchmarks: what one profiled step says about the same system running other layouts.
// The fixed part of each roofline GEMM kernel (efficiency.gemm_fixed_us) is not an efficiency and
// is not scaled, so the refitted GEMM time lands within that part's share of the traced one.
struct TraceFit {
  double matmul = 1, attention = 1, memory = 1;
  std::vector<std::string> unfitted;  // "GEMM", "attention", "memory-bound"
};
TraceFit fit_to_trace(const TraceStepStats& traced, const SimulatedStepClasses& sim);
// `system_doc` (a system file) with the factors applied to efficiency.matmul, matmul_by_dtype,
// attention, attention_implementations.*.attention and memory_bound: capped at 1, 4 decimals; the
// other fields as they were. Names the efficiencies the cap cut in `capped` (when given).
nlohmann::ordered_json apply_trace_fit(nlohmann::ordered_json system_doc, const TraceFit& fit,
                                       std::vector<std::string>* capped = nullptr);

}  // namespace calisim::calibration
