// 2D (SUMMA) tensor parallelism: a 1 × t grid is 1D TP with sequence parallelism; the collective
// volumes of 2 × 2 and 2 × 4 grids match the hand-derived formulas below; placement of row and
// column groups; clear errors for bad grids.
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
#include "simulator/op_cost.h"
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

nlohmann::json base_strategy(int tp) {
  return {{"seq_len", 2048}, {"micro_batch_size", 1}, {"micro_batch_num", 4}, {"world_size", tp}, {"tp_size", tp}};
}

StrategyConfig grid_strategy(const ModelConfig& m, int rows, int cols) {
  nlohmann::json j = base_strategy(rows * cols);
  j["tensor_parallel_mode"] = "2d";
  j["tp_2d_rows"] = rows;
  j["tp_2d_cols"] = cols;
  return strategy_from_json(j.dump(), m);
}

SimulationResult run(const ModelConfig& m, const StrategyConfig& s) {
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  return simulate(m, s, sys, eff, SimulateOptions{});
}

// One collective as the test writes it: op name, slot, kind, bytes, ranks.
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
    if (k && k->ranks > 1) {
      out[std::string(op.name) + "/" + slot] = Coll{k->op, static_cast<double>(k->bytes), k->ranks};
    }
  };
  for (const LayerOp& op : ops) {
    put(op, "fwd", op.fwd_comm);
    put(op, "bwd", op.bwd_comm);
    put(op, "bwd_dgrad", op.bwd_comm_with_dgrad);
    put(op, "bwd_wgrad", op.bwd_comm_with_wgrad);
    put(op, "w_fwd", op.fwd_weight_comm);
    put(op, "w_dgrad", op.bwd_weight_comm_with_dgrad);
    put(op, "w_wgrad", op.bwd_weight_comm_with_wgrad);
  }
  return out;
}

// Hand-derived SUMMA volumes for one GPT layer (MHA, 4h GeLU MLP, bf16 e = 2) on an r × c grid,
// m = b·s tokens. Row group (c ranks), activations of the m/r tokens this row holds:
//   QKV, FC1 (column-parallel): all-gather m/r·h·e forward, again beside dgrad, input-gradient
//   reduce-scatter m/r·h·e beside wgrad; out-proj, FC2 (row-parallel): reduce-scatter m/r·h·e
//   forward, output-gradient all-gather m/r·h·e backward.
// Column group (r ranks), weight panels k × n/c (column-parallel) or k/c × n (row-parallel):
//   QKV h·3h/c·e, out-proj h/c·h·e, FC1 h·4h/c·e, FC2 4h/c·h·e: all-gather forward, again beside
//   dgrad, gradient reduce-scatter beside wgrad.
// Attention: K and V of all m tokens for the row's h/c features, m·2h/c·e, all-gathered along the
//   column group forward and beside the backward, dK/dV reduce-scattered.
CollMap hand_derived(double h, double m, int r, int c) {
  const double e = 2, act = m / r * h * e;
  const auto AG = CollectiveOp::all_gather, RS = CollectiveOp::reduce_scatter;
  CollMap x;
  for (const char* col : {"qkv_proj", "fc1"}) {
    x[std::string(col) + "/fwd"] = {AG, act, c};
    x[std::string(col) + "/bwd_dgrad"] = {AG, act, c};
    x[std::string(col) + "/bwd_wgrad"] = {RS, act, c};
  }
  for (const char* row : {"out_proj", "fc2"}) {
    x[std::string(row) + "/fwd"] = {RS, act, c};
    x[std::string(row) + "/bwd"] = {AG, act, c};
  }
  if (r > 1) {
    const std::map<std::string, double> panel = {
        {"qkv_proj", h * 3 * h / c * e},
        {"out_proj", h / c * h * e},
        {"fc1", h * 4 * h / c * e},
        {"fc2", 4 * h / c * h * e}};
    for (const auto& [name, bytes] : panel) {
      x[name + "/w_fwd"] = {AG, bytes, r};
      x[name + "/w_dgrad"] = {AG, bytes, r};
      x[name + "/w_wgrad"] = {RS, bytes, r};
    }
    const double kv = m * 2 * h / c * e;
    x["core_attention/fwd"] = {AG, kv, r};
    x["core_attention/bwd_dgrad"] = {AG, kv, r};
    x["core_attention/bwd_wgrad"] = {RS, kv, r};
  }
  return x;
}

TEST(Tp2d, GridVolumesMatchHandDerivedFormulas) {
  const ModelConfig m = gpt_model(1024, 16, 4, 32000);
  for (auto [r, c] : {std::pair{2, 2}, std::pair{2, 4}}) {
    const ModelOps ops = build_model_ops(m, grid_strategy(m, r, c), 8);
    const CollMap got = collectives(ops.layer);
    const CollMap want = hand_derived(1024, 2048, r, c);
    EXPECT_EQ(got.size(), want.size()) << r << "x" << c;
    for (const auto& [key, w] : want) {
      auto it = got.find(key);
      ASSERT_NE(it, got.end()) << key << " missing on " << r << "x" << c;
      EXPECT_EQ(it->second.op, w.op) << key;
      EXPECT_DOUBLE_EQ(it->second.bytes, w.bytes) << key << " on " << r << "x" << c;
      EXPECT_EQ(it->second.ranks, w.ranks) << key;
    }
  }
}

TEST(Tp2d, GemmShapesAndWeightOverlapSteps) {
  const ModelConfig m = gpt_model(1024, 16, 4, 32000);
  const ModelOps ops = build_model_ops(m, grid_strategy(m, 2, 4), 8);
  for (const LayerOp& op : ops.layer) {
    if (std::string(op.name) == "fc1") {
      EXPECT_EQ(op.gemm_fwd.m, 2048 / 2);  // m/r tokens
      EXPECT_EQ(op.gemm_fwd.n, 4 * 1024 / 4);  // 4h/c outputs
      EXPECT_EQ(op.gemm_fwd.k, 1024);
      EXPECT_EQ(op.weight_comm_steps, 2);
    }
    if (std::string(op.name) == "core_attention") {
      EXPECT_EQ(op.attn_fwd.heads_q, 16 / 4);
      EXPECT_EQ(op.attn_fwd.seq_q, 2048 / 2);
      EXPECT_EQ(op.attn_fwd.seq_kv, 2048);
    }
  }
}

TEST(Tp2d, OneByTGridEqualsOneDimensionalSequenceParallelTp) {
  const ModelConfig m = gpt_model(2048, 16, 8, 32000);
  for (int t : {2, 4, 8}) {
    const StrategyConfig one_d = strategy_from_json(base_strategy(t).dump(), m);
    const StrategyConfig grid = grid_strategy(m, 1, t);
    ASSERT_TRUE(one_d.sequence_parallel);
    EXPECT_EQ(collectives(build_model_ops(m, one_d, 8).layer), collectives(build_model_ops(m, grid, 8).layer));
    const SimulationResult a = run(m, one_d), b = run(m, grid);
    EXPECT_DOUBLE_EQ(a.duration_time_per_iter_s, b.duration_time_per_iter_s) << t;
    EXPECT_DOUBLE_EQ(a.tp_comm_exposed_s, b.tp_comm_exposed_s) << t;
    EXPECT_DOUBLE_EQ(a.stages[0].peak_mem_bytes, b.stages[0].peak_mem_bytes) << t;
  }
}

TEST(Tp2d, MemoryUnderTheGrid) {
  // Weights, grads and optimizer state split r·c ways as in 1D; the activation cache too (every
  // activation is an (m/r) × (x/c) block); the gathered weight panel adds transient memory (a
  // small vocabulary keeps the logits from setting the peak).
  const ModelConfig m = gpt_model(2048, 16, 8, 1024);
  const SimulationResult one_d = run(m, strategy_from_json(base_strategy(4).dump(), m));
  const SimulationResult grid = run(m, grid_strategy(m, 2, 2));
  EXPECT_DOUBLE_EQ(grid.stages[0].model_mem_bytes, one_d.stages[0].model_mem_bytes);
  EXPECT_NEAR(grid.stages[0].fwd_activation_cache_per_micro_batch_bytes,
              one_d.stages[0].fwd_activation_cache_per_micro_batch_bytes,
              1e-9 * one_d.stages[0].fwd_activation_cache_per_micro_batch_bytes);
  EXPECT_GT(grid.stages[0].peak_mem_bytes, one_d.stages[0].peak_mem_bytes);
}

TEST(Tp2d, WeightPanelsOverlapTheGemmExceptOnePanel) {
  // SUMMA pipelines the r weight blocks behind the GEMM: exposed = max(panel/r, panel − GEMM)
  // plus the SM-sharing slowdown on the hidden part; checked on each GEMM of a 2 × 4 grid against
  // the formula evaluated from the collective and GEMM times alone, on slow (PCIe) and fast links.
  const ModelConfig m = gpt_model(4096, 32, 4, 32000);
  for (const char* system : {"h100-sxm", "h100-pcie"}) {
    const SystemConfig sys = shipped_system(system);
    DefaultEfficiencyModel eff(sys);
    const OpCoster coster(sys, eff);
    const double slow = sys.comm_compute_slowdown;
    int checked = 0;
    for (const LayerOp& op : build_model_ops(m, grid_strategy(m, 2, 4), sys.scale_up_domain_size).layer) {
      if (!op.fwd_weight_comm) continue;
      ++checked;
      const double w = coster.collective_s(*op.fwd_weight_comm, nullptr);
      const double gemm = coster.gemm_s(op.gemm_fwd, nullptr);
      const double act = op.fwd_comm ? coster.collective_s(*op.fwd_comm, nullptr) : 0.0;  // not overlapped
      const double exposed = std::clamp(std::max(w / 2, w - gemm), 0.0, w);
      const OpTiming t = coster.cost(op, nullptr);
      EXPECT_NEAR(t.fwd_comm_s, act + exposed + slow * (w - exposed), 1e-12) << system << " " << op.name;
      EXPECT_GE(t.fwd_comm_s - act, w / 2 - 1e-15);  // the first panel never hides
      EXPECT_LE(t.fwd_comm_s - act, w + 1e-15);
    }
    EXPECT_EQ(checked, 4);
  }
}

TEST(Tp2d, RowGroupsContiguousColumnGroupsStrided) {
  EXPECT_EQ(place_tp_grid(8, 2, 4), (Tp2dPlacement{4, 2}));  // whole grid in one domain
  EXPECT_EQ(place_tp_grid(4, 2, 4), (Tp2dPlacement{4, 1}));  // a row per domain: columns cross domains
  EXPECT_EQ(place_tp_grid(2, 4, 2), (Tp2dPlacement{2, 1}));
  EXPECT_EQ(place_tp_grid(4, 4, 2), (Tp2dPlacement{2, 2}));
  EXPECT_EQ(place_tp_grid(2, 2, 4), (Tp2dPlacement{2, 1}));  // half a row per domain
  // Through the strategy: TP 8 on 4-GPU domains puts each 4-wide row in one domain.
  const ModelConfig m = gpt_model(1024, 16, 4, 32000);
  const ModelOps ops = build_model_ops(m, grid_strategy(m, 2, 4), 4);
  for (const LayerOp& op : ops.layer) {
    if (std::string(op.name) == "fc1") {
      EXPECT_EQ(op.fwd_comm->ranks_per_node, 4);
      EXPECT_EQ(op.fwd_weight_comm->ranks_per_node, 1);
    }
  }
}

TEST(Tp2d, BadGridsAreRejectedNamingTheField) {
  const ModelConfig m = gpt_model(1024, 16, 4, 32000);
  auto error_of = [&](nlohmann::json j) -> std::string {
    try {
      strategy_from_json(j.dump(), m);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  nlohmann::json j = base_strategy(8);
  j["tensor_parallel_mode"] = "2d";
  j["tp_2d_rows"] = 2;
  j["tp_2d_cols"] = 2;
  EXPECT_NE(error_of(j).find("tp_2d_rows"), std::string::npos);
  nlohmann::json k = base_strategy(4);
  k["tp_2d_rows"] = 2;
  EXPECT_NE(error_of(k).find("tp_2d_rows"), std::string::npos);
  nlohmann::json mode = base_strategy(4);
  mode["tensor_parallel_mode"] = "3d";
  EXPECT_NE(error_of(mode).find("tensor_parallel_mode"), std::string::npos);
  nlohmann::json missing = base_strategy(4);
  missing["tensor_parallel_mode"] = "2d";
  EXPECT_NE(error_of(missing).find("tp_2d_rows"), std::string::npos);
  nlohmann::json cp = base_strategy(4);
  cp["world_size"] = 8, cp["cp_size"] = 2, cp["tensor_parallel_mode"] = "2d";
  cp["tp_2d_rows"] = 2, cp["tp_2d_cols"] = 2;
  EXPECT_NE(error_of(cp).find("cp_size"), std::string::npos);
  nlohmann::json nosp = base_strategy(4);
  nosp["enable_sequence_parallel"] = false, nosp["tensor_parallel_mode"] = "2d", nosp["tp_2d_rows"] = 2,
  nosp["tp_2d_cols"] = 2;
  EXPECT_NE(error_of(nosp).find("enable_sequence_parallel"), std::string::npos);
}

TEST(Tp2d, SearchTriesGridsAndMatchesBruteForce) {
  const ModelConfig m = testing_support::shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const StrategyConfig base =
      parse_strategy(nlohmann::json::parse(R"({"seq_len": 4096, "global_batch_size": 32})"), "base");
  SearchSpace space;
  space.world_size = 16;
  space.global_batch_size = 32;
  space.tp = {2, 4, 8};
  space.pp = {1, 2};
  space.vpp = {1};
  space.cp = {1};
  space.ep = {1};
  space.mbs = {1};
  space.recompute = {RecomputeChoice::none, RecomputeChoice::full};
  space.zero = {1};
  space.orders = {kMegatronRankOrder};
  const SearchSpace one_d = space;
  space.tp_2d_rows = {0, 2, 4};
  ASSERT_EQ(space_size(space), 3 * space_size(one_d));
  // The 1D part keeps its indices (tp_2d_rows is the outermost list).
  for (std::uint64_t i = 0; i < space_size(one_d); ++i) {
    const Candidate a = candidate_at(one_d, i), b = candidate_at(space, i);
    EXPECT_EQ(a.tp, b.tp);
    EXPECT_EQ(a.pp, b.pp);
    EXPECT_EQ(b.tp_2d_rows, 0);
  }
  // Brute force: every legal candidate simulated.
  const auto reference = testing_support::brute_force_feasible(
      m, base, sys, eff, space,
      [](const Candidate& c, const StrategyConfig& st) { EXPECT_EQ(st.tp_mode == TensorParallelMode::two_d, c.tp_2d_rows != 0); });
  int grids = 0;
  for (const auto& [time_s, index] : reference) grids += candidate_at(space, index).tp_2d_rows != 0;
  EXPECT_GT(grids, 0);
  testing_support::expect_search_equals_brute_force(m, base, sys, eff, space, reference);
  StrategyConfig st;
  // Grid rows that do not divide tp are illegal, with a reason.
  Candidate bad = candidate_at(space, 0);
  bad.tp = 2, bad.tp_2d_rows = 4;
  std::string why;
  EXPECT_FALSE(make_strategy(base, m, space, bad, st, &why));
  EXPECT_NE(why.find("2d grid rows"), std::string::npos);
}

}  // namespace
}  // namespace calisim
