// Exhaustive strategy search: simulate every legal layout of a space, keep the best K by an
// objective, optionally every feasible candidate, and explain infeasibility.
//
// Speed: layer costs (cost_model) are computed once per distinct LayerCostKey and shared by all
// threads. Phase A takes every candidate through legality, exact memory and a lower bound on its
// step time (the schedule bound, no event simulation). Phase B simulates the feasible ones exactly
// in order of their bound and stops when the next bound exceeds the K-th best step time found:
// every remaining candidate is then provably worse, so the result is the exact top K and
// feasibility is never guessed. With `keep_all` every feasible candidate is simulated.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/efficiency_model.h"
#include "simulator/model_config.h"
#include "simulator/rank_placement.h"
#include "simulator/result.h"
#include "simulator/search_space.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

enum class SearchObjective : std::uint8_t { mfu, tokens };  // both rank by step time for a fixed batch

struct SearchOptions {
  SearchObjective objective = SearchObjective::mfu;
  int top_k = 10;
  int threads = 0;                  // 0 = hardware concurrency
  double memory_margin_gb = 0;      // per-GPU headroom a layout must leave (SimuMax's gmi_error)
  bool use_reserved_memory = true;  // compare peak with reserved (peak / mem_factor), else allocated
  bool keep_all = false;            // return every feasible candidate (disables pruning)
  int shard_index = 0, shard_count = 1;
  // Called now and then from worker threads with (done, total); must be thread-safe and cheap.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

struct CandidateResult {
  Candidate candidate;
  int dp = 1;
  std::int64_t micro_batch_num = 0;
  int first_stage_layers = 0, middle_stage_layers = 0, last_stage_layers = 0;  // all chunks of the stage
  double step_time_s = 0;
  double mfu = 0;
  double tokens_per_s_per_gpu = 0;
  double bubble_fraction = 0;
  double tp_comm_s = 0, pp_comm_s = 0, dp_comm_s = 0, recompute_s = 0;
  double compute_s = 0, bubble_s = 0, optimizer_s = 0;  // the rest of the critical stage's breakdown
  double first_stage_peak_gb = 0, last_stage_peak_gb = 0, max_peak_gb = 0;  // with reserved if requested
  RankPlacement placement;  // ranks of each group per scale-up domain under candidate.order
  std::uint64_t index = 0;  // position in the space (for merging shards deterministically)
};

struct SearchResult {
  std::vector<CandidateResult> top;       // best first
  std::vector<CandidateResult> feasible;  // all feasible (keep_all), best first
  std::uint64_t space_size = 0;           // indices in this shard
  std::uint64_t illegal = 0;              // failed divisibility / batch rules
  std::uint64_t too_big = 0;              // legal but over memory
  std::uint64_t equivalent = 0;           // legal, but an earlier order places every group the same way
  std::uint64_t simulated = 0;            // full event simulation
  std::uint64_t pruned = 0;               // skipped by the lower bound
  std::uint64_t feasible_count = 0;         // fit in memory and not dominated
  // Feasible, but recomputing without saving memory: the same layout without recompute fits in no
  // more memory and is faster (its bound no higher). Not simulated, not in top / feasible.
  std::uint64_t dominated = 0;
  double elapsed_s = 0;
  // The legal layout that needs the least memory, for "nothing fits" explanations.
  bool have_smallest = false;
  CandidateResult smallest;
  std::string explanation;                // empty when something fits
};

// Requires a base strategy whose non-layout fields (seq_len, dtype, kernels, mem_factor, …) are
// set; its layout fields are replaced per candidate. Throws InputError for an empty space, a bad
// shard, or a model the simulator cannot cost.
SearchResult run_search(const ModelConfig& model, const StrategyConfig& base, const SystemConfig& system,
                        const EfficiencyModel& efficiency, const SearchSpace& space, const SearchOptions& options);

// Merges several result lists (shards) into the best `top_k`, ties broken by space index.
std::vector<CandidateResult> merge_top(std::vector<CandidateResult> all, int top_k);

// The summary of one simulated layout (peaks with reserved memory when `reserved`).
CandidateResult summarize(const SimulationResult& r, const Candidate& c, std::uint64_t index, bool reserved);

// True when a is better than b (shorter step; then lower index).
bool better(const CandidateResult& a, const CandidateResult& b);

}  // namespace calisim
