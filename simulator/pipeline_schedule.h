// Event-driven simulation of Megatron's pipeline schedules: 1F1B (v = 1) and interleaved 1F1B
// (v > 1, Megatron-Core's schedule table: each chunk runs a group of g micro-batches in a row,
// g = microbatch_group_size_per_vp_stage, p by default; the last group holds the remainder).
//
// Virtual stage j = chunk·p + rank holds model chunk `chunk` of pipeline rank `rank`. Each rank
// runs its fixed order of forward/backward units; a unit starts when its rank is free and its
// input has arrived: F(j, mb) after F(j−1, mb) + one p2p hop; B(j, mb) after B(j+1, mb) + one hop
// (the last virtual stage's backward follows its own forward). Closed forms serve as test oracles:
// with equal stages, no p2p cost and v = 1 the makespan is (m + p − 1)(F + B).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace calisim {

struct PipelineSpec {
  int p = 1;  // pipeline ranks
  int v = 1;  // chunks per rank
  int m = 1;  // micro-batches; with v > 1 at least p (Megatron's rules: config_loader.cc)
  std::span<const double> fwd_s;      // per virtual stage: one micro-batch forward
  std::span<const double> bwd_s;      // per virtual stage: one micro-batch backward (incl. recompute)
  std::span<const double> act_bytes;  // per virtual stage: activations kept per micro-batch (may be empty)
  double p2p_s = 0;                   // one hop between adjacent virtual stages, per micro-batch
  // When the schedule's lower bound exceeds cutoff_s the event loop is skipped and the result
  // holds the bounds (bounded = true). Activation peaks are always exact.
  double cutoff_s = std::numeric_limits<double>::infinity();
  // v > 1 only: micro-batches a chunk runs in a row (Megatron's microbatch_group_size_per_vp_stage,
  // p ≤ group ≤ m); 0 means p.
  int group = 0;
  // Forwards added to every rank's warm-up, with v > 1 or p = 1 (Megatron adds one under
  // overlap_moe_expert_parallel_comm, so that each steady-state forward/backward pair is
  // independent; without a pipeline its combined schedule runs the first forward alone).
  int extra_warmup = 0;
  // Per virtual stage, added to a forward (backward) that runs outside a steady-state 1F1B pair —
  // warm-up forwards and cool-down backwards — where the EP all-to-all overlap has no other
  // micro-batch to hide behind (may be empty: none).
  std::span<const double> fwd_unpaired_extra_s = {};
  std::span<const double> bwd_unpaired_extra_s = {};
};

struct PipelineEvent {
  int rank, chunk, micro_batch;
  bool forward;
  double start_s, end_s;
};

struct PipelineResult {
  double makespan_s = 0;
  std::vector<double> rank_finish_s;      // when each rank's last backward ends
  std::vector<double> rank_busy_s;        // compute time of each rank
  std::vector<double> rank_p2p_wait_s;    // idle time spent waiting on send/recv transfers
  std::vector<double> rank_unpaired_extra_s;  // the unpaired extras in rank_busy_s (0 when bounded)
  std::vector<int> max_in_flight;         // most micro-batch chunks whose activations are held at once
  std::vector<double> peak_act_bytes;     // max over time of the held activation bytes, per rank
  std::vector<PipelineEvent> events;      // filled only when requested
  bool bounded = false;                   // times are lower bounds (cutoff exceeded), not simulated
};

// A lower bound on the makespan that needs no simulation: for each rank r, micro-batch 0 must
// cross the r stages before it, r runs m·Σ(F+B) of its own work, and after its last backward the
// r stages before it still run theirs: max_r [Σ_{j<r}(F_j + hop) + busy_r + Σ_{j<r}(B_j + hop)],
// j over chunk-0 stages. Exact for equal stages without transfer cost.
double pipeline_lower_bound_s(const PipelineSpec& spec);

// Size of the interleaved schedule's last micro-batch group (Megatron's get_schedule_table: the
// first group whose end reaches m holds what is left, 1..group micro-batches).
inline int last_micro_batch_group(int m, int group) { return m - ((m - 1) / group) * group; }

// Per-rank unit order of Megatron's schedule: forward units then backward units as (chunk, mb).
// group and extra_warmup as in PipelineSpec.
struct ScheduleUnit {
  int chunk;
  int micro_batch;
  bool forward;
};
std::vector<ScheduleUnit> schedule_order(int rank, int p, int v, int m, int group = 0, int extra_warmup = 0);

// Throws std::logic_error if the schedule deadlocks (a bug, never a user error).
PipelineResult simulate_pipeline(const PipelineSpec& spec, bool record_events);

}  // namespace calisim
