// The space of parallel layouts a strategy search walks, and its enumeration.
//
// A candidate fixes tp, pp, vpp, cp, ep, micro-batch size, recompute choice, ZeRO stage and rank
// order (which groups share the scale-up domain), and where the space lists them the 2D grids, expert
// TP, CP communication, MoE dispatcher and hybrid-sharding replicas; the remaining strategy fields come from a base
// strategy. Candidates are numbered in one fixed order
// (nested loops over the lists as given), so `--shard i/n` takes every index ≡ i (mod n): shards
// are disjoint, cover the space, and are balanced across list positions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "simulator/model_config.h"
#include "simulator/strategy_config.h"

namespace calisim {

// A recompute choice a search can try (names as on the command line): a kind, and for `modules`
// the Megatron recompute_modules it names (kRecompute* bits, strategy_config.h).
struct RecomputeChoice {
  enum class Kind : std::uint8_t {
    none,       // no recompute
    selective,  // Megatron's selective recompute: core attention (sdp_only)
    attn,       // SimuMax selective: attn_recompute (QKV projection, RoPE, core attention)
    mlp,        // SimuMax selective: mlp_recompute
    attn_mlp,   // SimuMax selective: both
    full,       // full_block, every layer of each chunk
    modules     // Megatron-Core's --recompute-modules (megatron_recompute_modules), every layer
  };
  Kind kind = Kind::none;
  std::uint8_t modules = 0;  // Kind::modules only
  bool operator==(const RecomputeChoice&) const = default;

  static const RecomputeChoice none, selective, attn, mlp, attn_mlp, full;
};
inline constexpr RecomputeChoice RecomputeChoice::none{RecomputeChoice::Kind::none, 0};
inline constexpr RecomputeChoice RecomputeChoice::selective{RecomputeChoice::Kind::selective, 0};
inline constexpr RecomputeChoice RecomputeChoice::attn{RecomputeChoice::Kind::attn, 0};
inline constexpr RecomputeChoice RecomputeChoice::mlp{RecomputeChoice::Kind::mlp, 0};
inline constexpr RecomputeChoice RecomputeChoice::attn_mlp{RecomputeChoice::Kind::attn_mlp, 0};
inline constexpr RecomputeChoice RecomputeChoice::full{RecomputeChoice::Kind::full, 0};

// "none", "selective", "attn", "mlp", "attn+mlp", "full", or "modules:" and Megatron module names
// joined by '+' in Megatron's order (e.g. "modules:layernorm+moe_act").
std::string to_string(RecomputeChoice c);
// Parses those names (and SimuMax's no_recompute, selective_recompute, full_block); a modules
// choice lists one or more of layernorm, mla_up_proj, moe_act, mlp, moe, each once. Throws
// std::invalid_argument naming what was expected.
RecomputeChoice parse_recompute_choice(const std::string& name);

struct SearchSpace {
  int world_size = 0;
  std::int64_t global_batch_size = 0;
  std::vector<int> tp, pp, vpp, cp, ep, zero;
  std::vector<std::int64_t> mbs;
  std::vector<RecomputeChoice> recompute;
  std::vector<RankOrder> orders;  // rank orders (placements); orders equivalent for a layout count once
  // Tensor-parallel kinds: 0 = 1D (Megatron), r > 1 = a 2D SUMMA grid of r rows × tp/r columns
  // (tried for every tp that r divides). Empty = {0}; the outermost list,
  // so a 1D-only space numbers its candidates as before.
  std::vector<int> tp_2d_rows;
  // Context-parallel kinds: 0 = 1D (the base strategy's cp_comm_type), r > 1 = a 2D CP grid of
  // r rows (head all-to-all) × cp/r columns (K/V ring), tried for every cp that r divides. Empty
  // = {0}; outermost of all, so spaces without it number their candidates as before.
  std::vector<int> cp_2d_rows;
  // Expert tensor-parallel sizes (Megatron --expert-tensor-parallel-size). Empty = the base
  // strategy's etp_size, not varied; outermost of all, so spaces without it number their
  // candidates as before.
  std::vector<int> etp;
  // Context-parallel communication types (cp_comm_type) to try; empty = the base strategy's.
  // Outermost after etp. At cp 1, and on 2D CP grids (which fix the ring), only the first entry
  // is legal: the others would simulate the same layout again.
  std::vector<CpCommType> cp_comm;
  // MoE token dispatchers to try (the flex one with the base strategy's backend); empty = the
  // base strategy's. Outermost of all. For a dense model, or at ep 1, only the first entry is
  // legal: the others would simulate the same layout again.
  std::vector<MoeDispatcher> dispatchers;
  // Hybrid-sharding replica counts (dp_replicate_size: the data-parallel ranks split into this many
  // replicas, each sharding the ZeRO state over its own ranks) to try; empty = the base
  // strategy's. Outermost of all, so spaces without it number their candidates as before. A count
  // above 1 needs ZeRO 1-3 and must divide the dp·cp group (and a MoE model's expert-data-parallel
  // group); other candidates are illegal with the reason.
  std::vector<int> dp_replicate;
};

// A search list given by name (CP communication types, MoE dispatchers): each name parsed by
// `parse`, kept once in first-seen order. An unknown name throws InputError(file, where,
// "expected <expected>, got '<name>'").
template <class T>
std::vector<T> parse_named_list(const std::vector<std::string>& names, bool (*parse)(const std::string&, T*),
                                const char* expected, const std::string& file, const std::string& where) {
  std::vector<T> out;
  for (const std::string& name : names) {
    T v;
    if (!parse(name, &v)) throw InputError(file, where, std::string("expected ") + expected + ", got '" + name + "'");
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

// Rank-order lists a search can use. megatron: "tp-cp-ep-dp-pp" alone (the pre-placement
// search); tp_first (default): the 24 orders with TP fastest (TP inside the domain, then any of
// CP, EP, DP, PP next); all: all 120 orders (TP may leave the domain).
std::vector<RankOrder> rank_order_list(const std::string& name);  // throws std::invalid_argument

// Defaults for lists the user left empty: tp powers of two up to the scale-up domain (max 8),
// pp every divisor of the world size that splits the layers (evenly or not), vpp 1..8 dividing layers per stage, cp 1,
// ep 1 for dense models and, for MoE models, also every power of two dividing the expert count up to the world size,
// mbs 1, 2, 4, 8, recompute none / selective / full, ZeRO 1, orders tp_first.
void fill_default_lists(SearchSpace& space, const ModelConfig& model, int scale_up_domain_size);

struct Candidate {
  int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, zero = 1;
  std::int64_t mbs = 1;
  RecomputeChoice recompute = RecomputeChoice::none;
  RankOrder order = kMegatronRankOrder;
  int tp_2d_rows = 0;  // 0 = 1D tensor parallelism; else the 2D grid's rows (columns = tp / rows)
  int cp_2d_rows = 0;  // 0 = 1D context parallelism; else the 2D CP grid's rows (columns = cp / rows)
  // Expert TP size; 0 = the base strategy's. Search results carry the effective value.
  int etp = 0;
  // CP communication type as CpCommType, or -1 = the base strategy's. Search results carry the
  // effective one.
  int cp_comm = -1;
  // MoE token dispatcher as MoeDispatcher, or -1 = the base strategy's. Search results carry the
  // effective one.
  int dispatcher = -1;
  // Hybrid-sharding replicas (dp_replicate_size), or 0 = the base strategy's. Search results carry
  // the effective count.
  int dp_replicate = 0;
};

// How `pp` stages split `layers`: evenly (first = last = 0), or, when pp does not divide them,
// middle stages of ceil(L/pp) layers with the first and last sharing the rest (last ≤ first).
// False when no such split exists.
bool pipeline_split(int layers, int pp, int* first, int* last);

std::uint64_t space_size(const SearchSpace& space);  // product of the list lengths
Candidate candidate_at(const SearchSpace& space, std::uint64_t index);

// Applies a candidate to a copy of `base` (the fields it fixes plus world size and global batch)
// and validates it against `model`. Returns false with a one-line reason when the layout is not
// legal (divisibility, batch arithmetic, interleaving rules); never throws for illegal layouts.
bool make_strategy(const StrategyConfig& base, const ModelConfig& model, const SearchSpace& space,
                   const Candidate& c, StrategyConfig& out, std::string* reason);

// Megatron's one-set-of-pipeline-groups rule: for a MoE model the dense and expert views of the
// order must put adjacent pipeline stages equally far apart (validate_layout enforces it).
bool order_keeps_pipeline_groups(const ModelConfig& model, const StrategyConfig& strategy);

// What the search does with each order of space.orders for one layout (a strategy that
// make_strategy accepted; its own rank_order is ignored): keep the first order of each class of
// orders that place every group alike in domains of `domain_size` (they simulate identically),
// skip the others as equivalent, and reject orders that break the pipeline-group rule.
enum class OrderStatus : std::uint8_t { keep, equivalent, illegal };
void classify_orders(const ModelConfig& model, const SearchSpace& space, const StrategyConfig& strategy,
                     int domain_size, std::vector<OrderStatus>& out);

// True when an earlier order of space.orders places every group of `strategy` (made from `c`)
// the same way as c.order: the search skips c as equivalent.
bool equivalent_to_earlier_order(const ModelConfig& model, const SearchSpace& space, const Candidate& c,
                                 const StrategyConfig& strategy, int domain_size);

// "tp 8 pp 4 vpp 5 cp 1 ep 1 mbs 1 dp 2 zero 1 recompute none order tp-cp-ep-dp-pp" (+ " tp2d 2x4",
// + " cp2d 2x2", + " replicas 2")
std::string describe(const Candidate& c, int dp);

}  // namespace calisim
