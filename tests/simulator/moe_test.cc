// MoE: parameter counts of shipped models, hand-derived op FLOPs / bytes / collectives of one MoE
// layer, dense-layer placement on the pipeline, expert-data-parallel sharding, and the SimuMax
// MoE fixtures.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/layer_placement.h"
#include "simulator/model_stats.h"
#include "simulator/rank_params.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

const LayerOp& find_op(const std::vector<LayerOp>& ops, const std::string& name) {
  auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& o) { return name == o.name; });
  EXPECT_NE(it, ops.end()) << name;
  return *it;
}

// DeepSeek-V3 paper: 671B total, 37B activated per token (MTP module excluded);
// Mixtral paper: 46.7B total ("47B"), 12.9B active ("13B").
TEST(MoeParams, ShippedModelsMatchPublishedCounts) {
  const ModelStats v3 = model_stats(shipped_model("deepseek-v3"), 4096);
  EXPECT_NEAR(v3.total_params / 1e9, 671.0, 0.5);
  EXPECT_NEAR(v3.active_params / 1e9, 37.5, 0.6);
  const ModelStats mx = model_stats(shipped_model("mixtral-8x7b"), 4096);
  EXPECT_NEAR(mx.total_params / 1e9, 46.70, 0.05);
  EXPECT_NEAR(mx.active_params / 1e9, 12.88, 0.05);
}


TEST(MoeOps, HandDerivedFlopsBytesAndCollectives) {
  const ModelConfig m = testing_support::small_moe();
  const StrategyConfig st = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 4, "etp_size": 1})", m);
  const ModelOps ops = build_model_ops(m, st, 8);
  ASSERT_FALSE(ops.moe_layer.empty());
  const double T = 1024, R = T * 2, h = 1024, fe = 512, E = 8;
  EXPECT_DOUBLE_EQ(find_op(ops.moe_layer, "router").fwd_flops(), 2 * T * h * E);
  // Grouped GEMMs over E/ep = 2 local experts, R tokens (balanced): fc1 gate+up, fc2 down.
  const LayerOp& fc1 = find_op(ops.moe_layer, "expert_fc1");
  EXPECT_EQ(fc1.gemm_fwd.batch, 2);
  EXPECT_EQ(fc1.gemm_fwd.m, 1024);
  EXPECT_DOUBLE_EQ(fc1.fwd_flops(), 2 * R * h * 2 * fe);
  EXPECT_DOUBLE_EQ(fc1.bwd_flops(), 2 * fc1.fwd_flops());
  EXPECT_DOUBLE_EQ(find_op(ops.moe_layer, "expert_fc2").fwd_flops(), 2 * R * fe * h);
  // Dispatch all-to-all: S = R tokens × h × 2 bytes over the 4 EP ranks, forward and backward.
  const LayerOp& a2a = find_op(ops.moe_layer, "ep_dispatch");
  ASSERT_TRUE(a2a.fwd_comm && a2a.bwd_comm);
  EXPECT_EQ(a2a.fwd_comm->op, CollectiveOp::all_to_all);
  EXPECT_EQ(a2a.fwd_comm->bytes, static_cast<std::int64_t>(R * h * 2));
  EXPECT_EQ(a2a.fwd_comm->ranks, 4);
  EXPECT_EQ(a2a.comm_group, CommGroup::ep);
  // Un-permutation keeps the expert outputs for the probabilities' gradient.
  EXPECT_DOUBLE_EQ(find_op(ops.moe_layer, "unpermute").act_bytes, R * h * 2);
  // The dense layers keep the dense FFN.
  EXPECT_DOUBLE_EQ(find_op(ops.layer, "fc1").fwd_flops(), 2 * T * h * 2 * 2048);

  // Imbalance: the busiest rank receives 1.5× the tokens, in the collectives and the experts.
  const StrategyConfig hot = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 4, "moe_token_imbalance_factor": 1.5})", m);
  const ModelOps hot_ops = build_model_ops(m, hot, 8);
  EXPECT_DOUBLE_EQ(find_op(hot_ops.moe_layer, "expert_fc1").fwd_flops(), 1.5 * fc1.fwd_flops());
  EXPECT_EQ(find_op(hot_ops.moe_layer, "ep_dispatch").fwd_comm->bytes, static_cast<std::int64_t>(1.5 * R * h * 2));
  // Padding to capacity: every expert processes capacity × its balanced share.
  ModelConfig padded = m;
  padded.moe_pad_expert_input_to_capacity = true;
  padded.capacity = 1.25;
  EXPECT_DOUBLE_EQ(find_op(build_model_ops(padded, st, 8).moe_layer, "expert_fc1").fwd_flops(),
                   1.25 * fc1.fwd_flops());
}

// Megatron's all-to-all dispatcher regroups the received chunks by local expert after the
// dispatch and restores their order before the combine (sort_chunks_by_idxs): one read and one
// write of the received tokens each, forward and backward. One local expert needs no sort.
TEST(MoeOps, AllToAllDispatcherSortsChunksByLocalExpert) {
  const ModelConfig m = testing_support::small_moe();  // 8 experts, top-2, h 1024
  const StrategyConfig st = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 4, "etp_size": 1})", m);
  const ModelOps ops = build_model_ops(m, st, 8);
  const double R = 1024 * 2, h = 1024;
  for (const char* name : {"sort_chunks", "unsort_chunks"}) {
    const LayerOp& op = find_op(ops.moe_layer, name);
    EXPECT_EQ(op.kind, OpKind::memory);
    EXPECT_EQ(op.mem_fwd.kind, "permute_fwd");
    EXPECT_EQ(op.mem_bwd.kind, "permute_bwd");
    EXPECT_EQ(op.mem_fwd.bytes, static_cast<std::int64_t>(2 * R * h * 2));
    EXPECT_EQ(op.mem_bwd.bytes, static_cast<std::int64_t>(2 * R * h * 2));
  }
  // The sort sits between the dispatch and the experts, the restore between them and the combine.
  const auto at = [&](const char* name) {
    return std::find_if(ops.moe_layer.begin(), ops.moe_layer.end(),
                        [&](const LayerOp& o) { return std::string(name) == o.name; }) -
           ops.moe_layer.begin();
  };
  EXPECT_LT(at("ep_dispatch"), at("sort_chunks"));
  EXPECT_LT(at("sort_chunks"), at("expert_fc1"));
  EXPECT_LT(at("expert_fc2"), at("unsort_chunks"));
  EXPECT_LT(at("unsort_chunks"), at("ep_combine"));

  const StrategyConfig one_local = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 8, "etp_size": 1})", m);
  const ModelOps single = build_model_ops(m, one_local, 8);
  EXPECT_TRUE(std::none_of(single.moe_layer.begin(), single.moe_layer.end(),
                           [](const LayerOp& o) { return std::string("sort_chunks") == o.name; }));
}

TEST(MoeOps, ExpertTensorParallelGathersAndKeepsFlopsPerRank) {
  const ModelConfig m = testing_support::small_moe();
  const StrategyConfig st = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 2, "etp_size": 2})", m);
  const ModelOps ops = build_model_ops(m, st, 8);
  const double R = 1024 * 2, h = 1024, fe = 512;
  EXPECT_DOUBLE_EQ(find_op(ops.moe_layer, "expert_fc1").fwd_flops(), 2 * R * h * 2 * fe);  // 2R tokens × fe/2
  const LayerOp& gather = find_op(ops.moe_layer, "etp_gather");
  EXPECT_EQ(gather.fwd_comm->op, CollectiveOp::all_gather);
  EXPECT_EQ(gather.fwd_comm->bytes, static_cast<std::int64_t>(2 * R * h * 2));
  EXPECT_EQ(gather.fwd_comm->ranks, 2);
}

TEST(MoePlacement, DenseLayersSitOnTheFirstChunks) {
  const ModelConfig m = testing_support::small_moe();  // 8 layers, the first 3 dense
  StrategyConfig st = strategy_from_json(R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 4, "pp_size": 4})", m);
  std::vector<ChunkLayers> c = chunk_layers(m, st);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].dense, 2);
  EXPECT_EQ(c[0].moe, 0);
  EXPECT_EQ(c[1].first_layer, 2);
  EXPECT_EQ(c[1].dense, 1);
  EXPECT_EQ(c[1].moe, 1);
  EXPECT_EQ(c[3].dense, 0);
  EXPECT_EQ(c[3].moe, 2);
  // Interleaved: virtual stage j = chunk·p + rank follows the model order; rank 0 holds layers 0 and 4.
  st = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 4, "pp_size": 4, "interleaving_size": 2})", m);
  c = chunk_layers(m, st);
  EXPECT_EQ(c[4].first_layer, 4);
  EXPECT_EQ(c[4].moe, 1);
  EXPECT_EQ(c[2].dense, 1);  // layer 2
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const SimulationResult r = simulate(m, st, sys, eff);
  EXPECT_EQ(r.stages[0].moe_layers, 1);   // layers 0 (dense) and 4 (MoE)
  EXPECT_EQ(r.stages[3].moe_layers, 2);   // layers 3 and 7
  EXPECT_EQ(r.stages[0].first_layers, (std::vector<int>{0, 4}));
}

TEST(MoeMemory, ExpertStateShardsOverTheExpertDataParallelGroup) {
  const ModelConfig m = testing_support::small_moe();
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  // 16 GPUs, pp 1, ep 4: dp 16, edp 4.
  const StrategyConfig st = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 16, "ep_size": 4, "zero_state": 1})", m);
  ASSERT_EQ(st.edp_size, 4);
  const SimulationResult r = simulate(m, st, sys, eff);
  const StageReport& s = r.stages[0];
  // 5 MoE layers × 2 local experts × 3·h·fe.
  EXPECT_DOUBLE_EQ(s.expert_params, 5 * 2 * 3.0 * 1024 * 512);
  const double dense = s.params - s.expert_params;
  EXPECT_NEAR(s.optimizer_bytes, 12.0 * (dense / 16 + s.expert_params / 4), 1.0);
  EXPECT_NEAR(s.weight_bytes, 2.0 * s.params, 1.0);
  EXPECT_GT(r.ep_comm_exposed_s, 0);
}

// Every SimuMax strategy fixture simulates: the MoE ones with each MoE fixture model.
TEST(MoeFixtures, SimuMaxStrategiesSimulateWithMoeModels) {
  const std::string dir = std::string(CALISIM_TEST_DATA_DIR) + "/simumax";
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  SimulateOptions opt;
  opt.details = false;
  int simulated = 0;
  for (const char* model : {"deepseekv2.json", "deepseekv2-lite.json", "deepseekv3.json", "mixtral-8x7b.json",
                            "mixtral-8x1b.json", "deepseek-16b.json"}) {
    const std::string mpath = dir + "/models/" + model;
    const ModelConfig m = parse_model(read_json_file(mpath), mpath, nullptr);
    ASSERT_TRUE(m.is_moe) << model;
    for (const auto& entry : std::filesystem::directory_iterator(dir + "/strategy")) {
      const std::string spath = entry.path().string();
      SCOPED_TRACE(spath + " with " + model);
      StrategyConfig s = parse_strategy(read_json_file(spath), spath);
      if (s.ep_size == 1 && s.tp_size > 1) continue;  // dense layouts are covered by the dense tests
      try {
        validate_layout(m, s, spath, mpath);
      } catch (const InputError& e) {
        // Only divisibility of the model's shape may refuse a layout (e.g. 27 layers over pp 2).
        EXPECT_TRUE(e.where() == "pp_size" || e.where() == "ep_size" || e.where() == "interleaving_size") << e.what();
        continue;
      }
      const SimulationResult r = simulate(m, s, sys, eff, opt);
      EXPECT_GT(r.duration_time_per_iter_s, 0);
      EXPECT_TRUE(std::isfinite(r.duration_time_per_iter_s));
      EXPECT_GT(r.mfu, 0);
      if (s.ep_size > 1) {
        EXPECT_GT(r.ep_comm_exposed_s, 0);
      }
      ++simulated;
    }
  }
  EXPECT_GE(simulated, 24);
}

}  // namespace
}  // namespace calisim
