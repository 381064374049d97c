// Hybrid sharding (strategy.dp_replicate_size): the data-parallel group splits into replicas of
// consecutive ranks, each sharding the ZeRO state; gradients reduce-scatter inside a replica and
// the shard all-reduces across replicas; the sizes must divide, and a replicated state refuses it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/data_parallel.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::simulate_roofline;
using testing_support::small_moe;
using testing_support::strategy_from_json;

std::string strategy(int world, int zero, int replicas, const std::string& extra = "") {
  return R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 2, "world_size": )" + std::to_string(world) +
         R"(, "zero_state": )" + std::to_string(zero) + R"(, "dp_replicate_size": )" + std::to_string(replicas) +
         extra + "}";
}

TEST(HybridSharding, GroupsSplitIntoReplicasOfConsecutiveRanks) {
  const ModelConfig m = shipped_model("llama3-8b");
  // 2048 data-parallel ranks on 8-GPU domains, 16 replicas: shards of 128 ranks (8 per domain),
  // and the 16 ranks holding one shard each in another domain.
  DpGroups g = dp_groups(strategy_from_json(strategy(2048, 3, 16), m), 8);
  EXPECT_EQ(g.dense_ranks, 128);
  EXPECT_EQ(g.dense_per_domain, 8);
  EXPECT_EQ(g.dense_replicas, 16);
  EXPECT_EQ(g.dense_replicas_per_domain, 1);
  // 16 ranks in 4 replicas on 8-GPU domains: a shard of 4 ranks fits a domain with the next one.
  g = dp_groups(strategy_from_json(strategy(16, 1, 4), m), 8);
  EXPECT_EQ(g.dense_ranks, 4);
  EXPECT_EQ(g.dense_per_domain, 4);
  EXPECT_EQ(g.dense_replicas, 4);
  EXPECT_EQ(g.dense_replicas_per_domain, 2);
  // Without replicas the group is whole; a dense model's expert group stays one rank.
  g = dp_groups(strategy_from_json(strategy(16, 1, 1), m), 8);
  EXPECT_EQ(g.dense_ranks, 16);
  EXPECT_EQ(g.dense_replicas, 1);
  EXPECT_EQ(g.expert_ranks, 1);
  EXPECT_EQ(g.expert_replicas, 1);
}

TEST(HybridSharding, StateShardsOverOneReplicaAndTheShardAllReducesAcross) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult whole = simulate_roofline(m, strategy(64, 3, 1), sys);
  const SimulationResult hybrid = simulate_roofline(m, strategy(64, 3, 4), sys);
  // Adam state and master: 12 bytes per parameter over 64 ranks, then over 16.
  const double params = whole.stages[0].params;
  EXPECT_NEAR(whole.stages[0].optimizer_bytes, 12.0 * params / 64, 1.0);
  EXPECT_NEAR(hybrid.stages[0].optimizer_bytes, 12.0 * params / 16, 1.0);
  EXPECT_GT(hybrid.stages[0].model_mem_bytes, whole.stages[0].model_mem_bytes);
  // The header says which group the state is sharded over.
  const DefaultEfficiencyModel defaults(sys);
  EXPECT_EQ(simulate(m, strategy_from_json(strategy(64, 3, 4), m), sys, defaults, {}).sharding,
            "ZeRO-3 over 16 ranks x 4 replicas (hybrid sharding)");
  EXPECT_EQ(simulate(m, strategy_from_json(strategy(64, 1, 1), m), sys, defaults, {}).sharding, "ZeRO-1 over 64 ranks");

  // The DP collectives: gradients reduce-scatter over the 16 ranks of a replica and the reduced
  // shard (fp32, a sixteenth) all-reduces over the 4 replicas; parameters gather inside the replica.
  const StrategyConfig st = strategy_from_json(strategy(64, 1, 4), m);
  const DpGroups g = dp_groups(st, sys.scale_up_domain_size);
  const RankParams p{1e9, 0.0};
  const DefaultEfficiencyModel eff(sys);
  const OpCoster coster(sys, eff);
  const double e = st.use_fp32_accum_grad ? 4.0 : 2.0;
  const double rs = coster.collective_s({CollectiveOp::reduce_scatter, static_cast<std::int64_t>(1e9 * e), 16, 8,
                                         st.dtype},
                                        nullptr);
  const double ar = coster.collective_s({CollectiveOp::all_reduce, static_cast<std::int64_t>(1e9 / 16 * e), 4, 1,
                                         st.dtype},
                                        nullptr);
  EXPECT_NEAR(grad_reduce_s(p, st, g, coster, nullptr), rs + ar, 1e-12);
  const double ag = coster.collective_s({CollectiveOp::all_gather, static_cast<std::int64_t>(1e9 * 2.0), 16, 8,
                                         st.dtype},
                                        nullptr);
  EXPECT_NEAR(param_gather_s(p, {}, st, g, coster, nullptr), ag, 1e-12);
}

TEST(HybridSharding, ExpertGroupsSplitToo) {
  const ModelConfig m = small_moe();
  // 16 GPUs, ep 4: expert-data-parallel 4, split into 2 replicas of 2.
  const StrategyConfig st = strategy_from_json(strategy(16, 1, 2, R"(, "ep_size": 4)"), m);
  const DpGroups g = dp_groups(st, 8);
  EXPECT_EQ(g.dense_ranks, 8);
  EXPECT_EQ(g.expert_ranks, 2);
  EXPECT_EQ(g.expert_replicas, 2);
  const RankParams p{1e8, 4e8};
  EXPECT_DOUBLE_EQ(optimizer_shard_params(p, st, g), 1e8 / 8 + 4e8 / 2);
}

TEST(HybridSharding, SizesMustDivideAndTheStateMustBeSharded) {
  const ModelConfig m = shipped_model("llama3-8b");
  auto problem = [&](const std::string& json) {
    try {
      strategy_from_json(json, m);
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "dp_replicate_size") << e.what();
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted: " << json;
    return std::string();
  };
  EXPECT_NE(problem(strategy(16, 0, 2)).find("need zero_state 1, 2 or 3"), std::string::npos);
  // The file alone says so (`configs show`, no model to lay it out on) ...
  try {
    parse_strategy(nlohmann::json::parse(strategy(16, 0, 2)), "s.json");
    ADD_FAILURE() << "replicas at ZeRO-0 parsed";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "dp_replicate_size");
  }
  // ... and the layout check again, for a ZeRO stage changed after parsing (a search candidate).
  StrategyConfig changed = parse_strategy(nlohmann::json::parse(strategy(16, 1, 2)), "s.json");
  changed.zero_state = 0;
  try {
    validate_layout(m, changed, "s.json", "model");
    ADD_FAILURE() << "replicas at ZeRO-0 passed the layout check";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "dp_replicate_size");
  }
  EXPECT_NE(problem(strategy(12, 1, 8)).find("dp_size*cp_size = 12"), std::string::npos);
  EXPECT_NE(problem(strategy(16, 1, 0)).find("dp_replicate_size"), std::string::npos);
  // A MoE model's expert-data-parallel group must split as well: 16 GPUs at ep 8 leave edp 2.
  try {
    strategy_from_json(strategy(16, 1, 4, R"(, "ep_size": 8)"), small_moe());
    ADD_FAILURE() << "edp 2 split into 4 replicas was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "dp_replicate_size");
    EXPECT_NE(std::string(e.what()).find("expert-data-parallel size (2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace calisim
