// 2D context parallelism (simulator/layer_ops_cp2d.h): the collective volumes of 2 × 2 and 2 × 4
// grids match the hand-derived formulas below; a 1 × n grid is today's ring CP and an n × 1 grid
// today's Ulysses CP; placement of the two grid groups; clear errors for bad grids; the search
// with grids matches brute force.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/rank_placement.h"
#include "simulator/search.h"
#include "simulator/simulate.h"
#include "search_brute_force.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::gpt_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

nlohmann::json base_strategy(int cp) {
  return {{"seq_len", 2048}, {"micro_batch_size", 1}, {"micro_batch_num", 4}, {"world_size", cp}, {"cp_size", cp}};
}

nlohmann::json grid_json(int rows, int cols) {
  nlohmann::json j = base_strategy(rows * cols);
  j["context_parallel_mode"] = "2d";
  j["cp_2d_rows"] = rows;
  j["cp_2d_cols"] = cols;
  return j;
}

// The InputError message a strategy gets, "" when it is accepted.
std::string strategy_error(const nlohmann::json& j, const ModelConfig& m) {
  try {
    strategy_from_json(j.dump(), m);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

SimulationResult run(const ModelConfig& m, const StrategyConfig& s) {
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  return simulate(m, s, sys, eff, SimulateOptions{});
}

struct Coll {
  CollectiveOp op;
  double bytes;
  int ranks;
  bool operator==(const Coll&) const = default;
};
using CollMap = std::map<std::string, Coll>;  // "op_name/slot"

CollMap collectives(const std::vector<LayerOp>& ops) {
  CollMap out;
  auto put = [&](const LayerOp& op, const char* slot, const std::optional<CollectiveKey>& k) {
    if (k && k->ranks > 1) out[std::string(op.name) + "/" + slot] = Coll{k->op, static_cast<double>(k->bytes), k->ranks};
  };
  for (const LayerOp& op : ops) {
    put(op, "fwd", op.fwd_comm);
    put(op, "bwd", op.bwd_comm);
    put(op, "bwd_dgrad", op.bwd_comm_with_dgrad);
    put(op, "bwd_wgrad", op.bwd_comm_with_wgrad);
  }
  return out;
}

// Hand-derived volumes for one GPT layer (MHA, a heads of h/a, bf16 e = 2, tp 1, b = 1) on an
// r × k CP grid, s tokens per sequence, T = s/(r·k) tokens per rank:
//   column group (r ranks), Ulysses: all-to-all of Q, K, V and the output, T·4h·e, forward; dO
//   and dQ, dK, dV, T·4h·e, backward.
//   row group (k ranks), the NERSC sequence group run as Megatron's ring: each of the k steps
//   sends the local K and V of the a/r heads this rank holds after the all-to-all (s/k tokens,
//   s/k·2h/r·e) to the ring neighbour, forward and beside the backward; dK, dV the same.
CollMap hand_derived(double h, double s, int r, int k) {
  const double e = 2, T = s / (r * k);
  CollMap x;
  if (r > 1) {
    x["cp_head_all_to_all/fwd"] = {CollectiveOp::all_to_all, T * 4 * h * e, r};
    x["cp_head_all_to_all/bwd"] = {CollectiveOp::all_to_all, T * 4 * h * e, r};
  }
  if (k > 1) {
    const double kv = s / k * 2 * h / r * e;
    x["core_attention/fwd"] = {CollectiveOp::send_recv, kv, 2};
    x["core_attention/bwd_dgrad"] = {CollectiveOp::send_recv, kv, 2};
    x["core_attention/bwd_wgrad"] = {CollectiveOp::send_recv, kv, 2};
  }
  return x;
}

TEST(Cp2d, GridVolumesMatchHandDerivedFormulas) {
  const ModelConfig m = gpt_model(1024, 16, 4, 32000);
  for (auto [r, k] : {std::pair{2, 2}, std::pair{2, 4}}) {
    const ModelOps ops = build_model_ops(m, strategy_from_json(grid_json(r, k).dump(), m), 8);
    const CollMap got = collectives(ops.layer);
    const CollMap want = hand_derived(1024, 2048, r, k);
    EXPECT_EQ(got.size(), want.size()) << r << "x" << k;
    for (const auto& [key, w] : want) {
      auto it = got.find(key);
      ASSERT_NE(it, got.end()) << key << " missing on " << r << "x" << k;
      EXPECT_EQ(it->second.op, w.op) << key;
      EXPECT_DOUBLE_EQ(it->second.bytes, w.bytes) << key << " on " << r << "x" << k;
      EXPECT_EQ(it->second.ranks, w.ranks) << key;
    }
    // 2 × 2: T = 512, all-to-all 512·4·1024·2 = 4 MiB; ring K/V per step 1024·2·1024/2·2 = 2 MiB.
    if (k == 2) {
      EXPECT_DOUBLE_EQ(want.at("cp_head_all_to_all/fwd").bytes, 4.0 * (1 << 20));
    }
    for (const LayerOp& op : ops.layer) {
      if (std::string(op.name) != "core_attention") continue;
      EXPECT_EQ(op.attn_fwd.heads_q, 16 / r);  // heads split along the column group
      EXPECT_EQ(op.attn_fwd.seq_q, 2048 / k);  // the row group's tokens
      EXPECT_EQ(op.attn_fwd.seq_kv, 2048);
      EXPECT_TRUE(op.fwd_comm_overlapped);     // the ring hides behind the attention
    }
  }
}

TEST(Cp2d, OneByNGridEqualsRingAndNByOneEqualsUlysses) {
  const ModelConfig m = gpt_model(2048, 16, 8, 32000);
  for (int n : {2, 4, 8}) {
    const StrategyConfig ring = strategy_from_json(base_strategy(n).dump(), m);
    nlohmann::json uj = base_strategy(n);
    uj["cp_comm_type"] = "a2a";
    const StrategyConfig ulysses = strategy_from_json(uj.dump(), m);
    for (const auto& [one_d, grid] : {std::pair{ring, strategy_from_json(grid_json(1, n).dump(), m)},
                                      std::pair{ulysses, strategy_from_json(grid_json(n, 1).dump(), m)}}) {
      const SimulationResult a = run(m, one_d), b = run(m, grid);
      EXPECT_GT(a.cp_comm_exposed_s, 0.0) << n;
      EXPECT_DOUBLE_EQ(a.duration_time_per_iter_s, b.duration_time_per_iter_s) << n;
      EXPECT_DOUBLE_EQ(a.cp_comm_exposed_s, b.cp_comm_exposed_s) << n;
      EXPECT_DOUBLE_EQ(a.stages[0].peak_mem_bytes, b.stages[0].peak_mem_bytes) << n;
    }
    EXPECT_EQ(collectives(build_model_ops(m, ring, 8).layer),
              collectives(build_model_ops(m, strategy_from_json(grid_json(1, n).dump(), m), 8).layer));
  }
}

TEST(Cp2d, ActivationsSplitOverTheWholeGrid) {
  // Every activation is a T = s/(r·k)-token shard, as under 1D CP of the same size.
  const ModelConfig m = gpt_model(2048, 16, 8, 1024);
  const SimulationResult one_d = run(m, strategy_from_json(base_strategy(4).dump(), m));
  const SimulationResult grid = run(m, strategy_from_json(grid_json(2, 2).dump(), m));
  EXPECT_DOUBLE_EQ(grid.stages[0].fwd_activation_cache_per_micro_batch_bytes,
                   one_d.stages[0].fwd_activation_cache_per_micro_batch_bytes);
  EXPECT_DOUBLE_EQ(grid.stages[0].model_mem_bytes, one_d.stages[0].model_mem_bytes);
}

TEST(Cp2d, AllToAllGroupsContiguousRingsStrided) {
  // {ring ranks per domain, all-to-all ranks per domain}; the all-to-all group is contiguous.
  EXPECT_EQ(place_cp_grid(8, 2, 4), (Tp2dPlacement{4, 2}));  // whole grid in one domain
  EXPECT_EQ(place_cp_grid(4, 2, 4), (Tp2dPlacement{2, 2}));  // two all-to-all pairs: half of each ring
  EXPECT_EQ(place_cp_grid(4, 4, 2), (Tp2dPlacement{1, 4}));  // one all-to-all group; rings cross domains
  EXPECT_EQ(place_cp_grid(2, 4, 2), (Tp2dPlacement{1, 2}));
  // Through the strategy: CP 8 as a 4 × 2 grid on 4-GPU domains.
  const ModelConfig m = gpt_model(1024, 16, 4, 32000);
  const ModelOps ops = build_model_ops(m, strategy_from_json(grid_json(4, 2).dump(), m), 4);
  int seen = 0;
  for (const LayerOp& op : ops.layer) {
    if (std::string(op.name) == "core_attention") {
      EXPECT_EQ(op.fwd_comm->ranks_per_node, 1);  // the 2-rank ring's ranks are 4 apart: across domains
      ++seen;
    }
    if (std::string(op.name) == "cp_head_all_to_all") {
      EXPECT_EQ(op.fwd_comm->ranks_per_node, 4);  // the 4-rank all-to-all inside the domain
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

TEST(Cp2d, BadGridsAreRejectedNamingTheField) {
  const ModelConfig m = gpt_model(1024, 16, 4, 32000);
  auto error_of = [&](const nlohmann::json& j) { return strategy_error(j, m); };
  nlohmann::json product = grid_json(2, 2);
  product["cp_size"] = 8, product["world_size"] = 8;
  EXPECT_NE(error_of(product).find("cp_2d_rows"), std::string::npos);
  nlohmann::json without_mode = base_strategy(4);
  without_mode["cp_2d_rows"] = 2;
  EXPECT_NE(error_of(without_mode).find("cp_2d_rows"), std::string::npos);
  nlohmann::json mode = base_strategy(4);
  mode["context_parallel_mode"] = "3d";
  EXPECT_NE(error_of(mode).find("context_parallel_mode"), std::string::npos);
  nlohmann::json missing = base_strategy(4);
  missing["context_parallel_mode"] = "2d", missing["cp_2d_rows"] = 2;
  EXPECT_NE(error_of(missing).find("cp_2d_cols"), std::string::npos);
  nlohmann::json heads = grid_json(2, 2);  // 16 heads / tp 4 = 4 heads; 8 rows cannot split them
  heads["cp_size"] = 16, heads["world_size"] = 64, heads["tp_size"] = 4, heads["cp_2d_rows"] = 8;
  EXPECT_NE(error_of(heads).find("cp_2d_rows"), std::string::npos);
  nlohmann::json a2a = grid_json(2, 2);
  a2a["cp_comm_type"] = "a2a";
  EXPECT_NE(error_of(a2a).find("cp_comm_type"), std::string::npos);
  nlohmann::json tp2d = grid_json(2, 2);
  tp2d["world_size"] = 16, tp2d["tp_size"] = 4, tp2d["tensor_parallel_mode"] = "2d", tp2d["tp_2d_rows"] = 2,
  tp2d["tp_2d_cols"] = 2;
  EXPECT_FALSE(error_of(tp2d).empty());
  EXPECT_EQ(error_of(grid_json(2, 2)), "");  // the good grid loads
}

TEST(Cp2d, MegatronHierarchicalCpIsTheSameGrid) {
  // Megatron spells the grid --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 4.
  const ModelConfig m = gpt_model(1024, 16, 4, 32000);
  nlohmann::json megatron = base_strategy(8);
  megatron["cp_comm_type"] = "a2a+p2p";
  megatron["hierarchical_context_parallel_sizes"] = {2, 4};
  const StrategyConfig a = strategy_from_json(megatron.dump(), m);
  EXPECT_EQ(a.cp_mode, ContextParallelMode::two_d);
  EXPECT_EQ(a.cp_2d_rows, 2);
  EXPECT_EQ(a.cp_2d_cols, 4);
  const StrategyConfig b = strategy_from_json(grid_json(2, 4).dump(), m);
  EXPECT_DOUBLE_EQ(run(m, a).duration_time_per_iter_s, run(m, b).duration_time_per_iter_s);

  auto error_of = [&](const nlohmann::json& j) { return strategy_error(j, m); };
  nlohmann::json missing = megatron;
  missing.erase("hierarchical_context_parallel_sizes");
  EXPECT_NE(error_of(missing).find("hierarchical_context_parallel_sizes"), std::string::npos);
  nlohmann::json three = megatron;
  three["hierarchical_context_parallel_sizes"] = {2, 2, 2};
  EXPECT_NE(error_of(three).find("hierarchical_context_parallel_sizes"), std::string::npos);
  nlohmann::json product = megatron;
  product["hierarchical_context_parallel_sizes"] = {2, 2};
  EXPECT_NE(error_of(product).find("must equal cp_size"), std::string::npos);
  nlohmann::json twice = megatron;
  twice["cp_2d_rows"] = 2;
  EXPECT_NE(error_of(twice).find("cp_2d_rows"), std::string::npos);
  nlohmann::json without_type = base_strategy(8);
  without_type["hierarchical_context_parallel_sizes"] = {2, 4};
  EXPECT_NE(error_of(without_type).find("only valid with cp_comm_type"), std::string::npos);
}

TEST(Cp2d, SearchTriesGridsAndMatchesBruteForce) {
  const ModelConfig m = testing_support::shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const StrategyConfig base =
      parse_strategy(nlohmann::json::parse(R"({"seq_len": 16384, "global_batch_size": 8})"), "base");
  SearchSpace space;
  space.world_size = 16;
  space.global_batch_size = 8;
  space.tp = {1, 2};
  space.pp = {1, 2};
  space.vpp = {1};
  space.cp = {1, 2, 4, 8};
  space.ep = {1};
  space.mbs = {1};
  space.recompute = {RecomputeChoice::full};
  space.zero = {1};
  space.orders = {kMegatronRankOrder};
  const SearchSpace one_d = space;
  space.cp_2d_rows = {0, 2, 4};
  ASSERT_EQ(space_size(space), 3 * space_size(one_d));
  for (std::uint64_t i = 0; i < space_size(one_d); ++i) {  // the 1D part keeps its indices
    const Candidate a = candidate_at(one_d, i), b = candidate_at(space, i);
    EXPECT_EQ(a.cp, b.cp);
    EXPECT_EQ(b.cp_2d_rows, 0);
  }
  // Brute force: every legal candidate simulated.
  const auto reference = testing_support::brute_force_feasible(
      m, base, sys, eff, space,
      [](const Candidate& c, const StrategyConfig& st) { EXPECT_EQ(st.cp_mode == ContextParallelMode::two_d, c.cp_2d_rows != 0); });
  int grids = 0;
  for (const auto& [time_s, index] : reference) grids += candidate_at(space, index).cp_2d_rows != 0;
  EXPECT_GT(grids, 0);
  testing_support::expect_search_equals_brute_force(m, base, sys, eff, space, reference);
  StrategyConfig st;
  Candidate bad = candidate_at(space, 0);
  bad.cp = 2, bad.cp_2d_rows = 4;
  std::string why;
  EXPECT_FALSE(make_strategy(base, m, space, bad, st, &why));
  EXPECT_NE(why.find("2d CP grid rows"), std::string::npos);
}

}  // namespace
}  // namespace calisim
