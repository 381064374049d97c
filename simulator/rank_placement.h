// Rank placement: how many ranks of each process group share one scale-up domain (or one node),
// given the strategy's rank order (Megatron's `order`) and group sizes. Pure; the one place the
// simulator answers "is this group inside NVLink?" (op builders, DP, MoE, pipeline p2p).
//
// Ranks are numbered in mixed radix over the order, fastest dimension first; a domain of D GPUs
// holds D consecutive ranks. For a group spanning a set of dimensions, walk the order from the
// fastest: every dimension before the group's consumes capacity (D / its size, floored), the
// group's own dimensions take min(size, remaining capacity). For one dimension with stride s this
// is min(n, max(1, ⌊D/s⌋)), the classic "TP inside, DP across" count; for NVL72 (D = 72, not a
// power of two) it is the occupancy of the first domain, floored at each level.
//
// Dense layers use sizes (tp, cp, ep = 1, dp, pp); expert layers (etp, cp = 1, ep, edp, pp), as
// Megatron's decoder and expert rank generators do with the same order string.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "simulator/strategy_config.h"

namespace calisim {

const char* to_string(ParallelDim d);
// "tp-cp-ep-dp-pp".
std::string to_string(const RankOrder& order);
// Parses Megatron's order string: the five names tp, cp, ep, dp, pp joined by '-', each exactly
// once. nullopt with a message in *error (naming what is missing, repeated or unknown) otherwise.
std::optional<RankOrder> parse_rank_order(const std::string& text, std::string* error);
// All 120 orders, Megatron's first, then lexicographic by dimension index.
std::vector<RankOrder> all_rank_orders();

// Ranks of a group that share one block of `block_size` consecutive ranks. sizes[d] = the size of
// dimension d (indexed by ParallelDim); group_mask has bit d set for the group's dimensions.
int ranks_per_block(const RankOrder& order, const std::array<int, kParallelDimCount>& sizes, unsigned group_mask,
                    int block_size);
// Rank `rank`'s index along dimension d (ranks numbered in mixed radix over `order`, fastest first,
// as this file's header says): e.g. its pipeline stage with d = pp and the dense sizes.
int rank_coordinate(const RankOrder& order, const std::array<int, kParallelDimCount>& sizes, ParallelDim d, int rank);
// Two ranks `stride` apart (a pipeline send/recv pair): 2 when both sit in one block, else 1.
int pair_per_block(int stride, int block_size);

// Ranks per block (domain or node) of every group the simulator communicates over. Equal
// placements give equal simulations, so the search treats orders with equal placements as one.
struct RankPlacement {
  int tp = 1;          // tensor-parallel group
  int cp = 1;          // context-parallel group
  int dense_dp = 1;    // dp·cp group reducing dense gradients
  int ep = 1;          // expert-parallel group (all-to-all)
  int etp = 1;         // expert tensor-parallel group
  int expert_dp = 1;   // expert-data-parallel group (edp)
  int pp = 1;          // pipeline stages in one block (dense view)
  int pp_next = 1;     // a stage and the next (send/recv)
  int pp_ends = 1;     // the first and the last stage (tied-embedding gradient all-reduce)
  bool operator==(const RankPlacement&) const = default;
};

// Requires the derived sizes (dp_size, edp_size) that validate_layout fills.
RankPlacement place_ranks(const StrategyConfig& strategy, int block_size);

// 2D tensor parallelism: a domain holding tp_per_domain consecutive TP indices (index i·cols + j
// for grid row i, column j) holds min(cols, tp_per_domain) ranks of a row group (contiguous) and
// min(rows, max(1, ⌊tp_per_domain / cols⌋)) of a column group (stride cols), the same floored
// occupancy rule as ranks_per_block applied inside the TP group.
struct Tp2dPlacement {
  int row = 1, col = 1;
  bool operator==(const Tp2dPlacement&) const = default;
};
Tp2dPlacement place_tp_grid(int tp_per_domain, int rows, int cols);
// 2D context parallelism: the same rule inside the CP group, with the head all-to-all group
// fastest as in Megatron's hierarchical CP (`a2a+p2p`): grid rank (i, j) is CP index j·rows + i,
// so a column group (rows ranks, the all-to-all) is contiguous and a row group (cols ranks, the
// K/V ring) strided by rows. Returns row = ring ranks per domain, col = all-to-all ranks per domain.
Tp2dPlacement place_cp_grid(int cp_per_domain, int rows, int cols);

// Strides (in ranks) of the groups the layer ops communicate over: with the group's size they fix
// its domain occupancy for any domain size (⌊⌊D/a⌋/b⌋ = ⌊D/ab⌋), so they key the layer-cost cache.
struct LayerGroupStrides {
  int tp = 1, cp = 1, ep = 1, etp = 1;
  bool operator==(const LayerGroupStrides&) const = default;
};
LayerGroupStrides layer_group_strides(const StrategyConfig& strategy);

// Stride (in ranks) between adjacent pipeline stages: the product of the dense sizes ordered
// before pp.
int pipeline_stride(const StrategyConfig& strategy);
// The same seen by the expert layers; Megatron requires both to match (one set of PP groups).
int expert_pipeline_stride(const StrategyConfig& strategy);

// What sits inside one domain, fastest first: "tp8", "tp4+dp2", "tp2+ep4" ("-" when nothing is
// grouped). dp counts the data-parallel replicas alone (dense_dp / cp); ep the expert ranks.
std::string domain_summary(const RankPlacement& placement, const RankOrder& order);

}  // namespace calisim
