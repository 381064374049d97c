#include "simulator/simulate.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;

StrategyConfig shipped_strategy(const std::string& name, const ModelConfig& m) {
  const std::string path = std::string(CALISIM_CONFIG_DIR) + "/strategies/" + name + ".json";
  StrategyConfig s = parse_strategy(read_json_file(path), path);
  validate_layout(m, s, path, "model");
  return s;
}

SimulationResult run(const ModelConfig& m, const StrategyConfig& s, const SystemConfig& sys, bool trace = false) {
  DefaultEfficiencyModel eff(sys);
  SimulateOptions o;
  o.trace = trace;
  return simulate(m, s, sys, eff, o);
}

TEST(Simulate, FlagshipIsSaneAndFits) {
  const ModelConfig m = shipped_model("llama3-70b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult r = run(m, shipped_strategy("llama3-70b-64gpu", m), sys);
  EXPECT_GT(r.duration_time_per_iter_s, 0);
  EXPECT_GT(r.mfu, 0.2);
  EXPECT_LT(r.mfu, sys.matmul_efficiency);  // cannot beat the GEMM efficiency it is built from
  EXPECT_TRUE(r.fits_in_memory);
  EXPECT_EQ(r.stages.size(), 4u);
  EXPECT_EQ(r.kernels_per_source[static_cast<int>(EfficiencySource::measured)], 0);
  EXPECT_GT(r.kernels_per_source[static_cast<int>(EfficiencySource::roofline)], 0);
  EXPECT_FALSE(r.roofline_keys.empty());
  // The pieces of the critical stage add up to the step time.
  const double sum = r.compute_s + r.recompute_s + r.tp_comm_exposed_s + r.cp_comm_exposed_s + r.ep_comm_exposed_s +
                     r.offload_exposed_s + r.bubble_s + r.pp_comm_exposed_s + r.dp_comm_exposed_s + r.optimizer_s +
                     r.straggler_s;
  EXPECT_NEAR(sum, r.duration_time_per_iter_s, 1e-9 * r.duration_time_per_iter_s);
  EXPECT_NEAR(r.tokens_per_s_per_gpu, 128.0 * 8192 / r.duration_time_per_iter_s / 64, 1e-6);
}

TEST(Simulate, ZeroOneStaticMemoryIsSixPlusTwelveOverDpBytesPerParam) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  for (int dp : {1, 2, 8}) {
    StrategyConfig s = testing_support::strategy_from_json(
        nlohmann::json({{"seq_len", 4096}, {"micro_batch_num", 4}, {"world_size", 2 * dp}, {"tp_size", 2},
                        {"zero_state", 1}})
            .dump(),
        m);
    const SimulationResult r = run(m, s, sys);
    EXPECT_NEAR(r.stages[0].model_mem_bytes / r.stages[0].params, 6.0 + 12.0 / dp, 1e-9);
  }
  StrategyConfig s0 = testing_support::strategy_from_json(
      R"({"seq_len": 4096, "micro_batch_num": 4, "world_size": 8, "zero_state": 0})", m);
  const SimulationResult r0 = run(m, s0, sys);
  EXPECT_NEAR(r0.stages[0].model_mem_bytes / r0.stages[0].params, 18.0, 1e-9);
}

TEST(Simulate, RecomputeTradesTimeForMemory) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const char* base = R"({"seq_len": 8192, "micro_batch_num": 8, "world_size": 8, "tp_size": 2, "pp_size": 2)";
  const StrategyConfig none = testing_support::strategy_from_json(std::string(base) + "}", m);
  const StrategyConfig sel = testing_support::strategy_from_json(
      std::string(base) + R"(, "recompute_granularity": "selective_recompute", "recompute_layer_num": 16,
                           "mlp_recompute": true})",
      m);
  const StrategyConfig full = testing_support::strategy_from_json(
      std::string(base) + R"(, "recompute_granularity": "full_block", "recompute_layer_num": 16})", m);
  const SimulationResult a = run(m, none, sys), b = run(m, sel, sys), c = run(m, full, sys);
  EXPECT_LT(a.duration_time_per_iter_s, b.duration_time_per_iter_s);
  EXPECT_LT(b.duration_time_per_iter_s, c.duration_time_per_iter_s);
  EXPECT_GT(a.stages[0].peak_activation_mem_in_1F1B_bytes, b.stages[0].peak_activation_mem_in_1F1B_bytes);
  EXPECT_GT(b.stages[0].peak_activation_mem_in_1F1B_bytes, c.stages[0].peak_activation_mem_in_1F1B_bytes);
  EXPECT_NEAR(a.mfu, c.mfu * c.duration_time_per_iter_s / a.duration_time_per_iter_s, 1e-12);
  EXPECT_GT(c.hfu, c.mfu);
  EXPECT_GT(c.recompute_s, 0);
  EXPECT_EQ(a.recompute_s, 0);
}

TEST(Simulate, InterleavingShrinksTheBubble) {
  const ModelConfig m = shipped_model("llama3-70b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const char* base = R"({"seq_len": 4096, "global_batch_size": 64, "world_size": 64, "tp_size": 8, "pp_size": 8)";
  const StrategyConfig v1 = testing_support::strategy_from_json(std::string(base) + "}", m);
  const StrategyConfig v5 = testing_support::strategy_from_json(std::string(base) + R"(, "interleaving_size": 5})", m);
  const SimulationResult a = run(m, v1, sys), b = run(m, v5, sys);
  EXPECT_LT(b.bubble_s, a.bubble_s);
  EXPECT_LT(b.duration_time_per_iter_s, a.duration_time_per_iter_s);
  // Interleaving holds more activations on the first stage.
  EXPECT_GT(b.stages[0].peak_activation_mem_in_1F1B_bytes, a.stages[0].peak_activation_mem_in_1F1B_bytes);
}

TEST(Simulate, UnevenStagesShowInStageTimes) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const StrategyConfig s = testing_support::strategy_from_json(
      R"({"seq_len": 4096, "micro_batch_num": 8, "world_size": 4, "pp_size": 4,
          "num_layers_in_first_pipeline_stage": 6, "num_layers_in_last_pipeline_stage": 6})",
      m);
  const SimulationResult r = run(m, s, sys);
  ASSERT_EQ(r.stages.size(), 4u);
  EXPECT_EQ(r.stages[0].layers, 6);
  EXPECT_EQ(r.stages[1].layers, 10);
  EXPECT_EQ(r.stages[3].layers, 6);
  EXPECT_LT(r.stages[0].fwd_s_per_micro_batch, r.stages[1].fwd_s_per_micro_batch);
  EXPECT_TRUE(r.stages[0].has_embedding);
  EXPECT_TRUE(r.stages[3].has_head);
}

TEST(Simulate, NoTensorParallelMeansNoTpCommunication) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const StrategyConfig s =
      testing_support::strategy_from_json(R"({"seq_len": 4096, "micro_batch_num": 4, "world_size": 8})", m);
  const SimulationResult r = run(m, s, sys);
  EXPECT_EQ(r.tp_comm_exposed_s, 0);
  EXPECT_GT(r.dp_comm_exposed_s, 0);
  EXPECT_EQ(r.pp_comm_exposed_s, 0);
}

TEST(Simulate, TraceHasOneEventPerUnit) {
  const ModelConfig m = shipped_model("llama3-70b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const StrategyConfig s = shipped_strategy("llama3-70b-64gpu", m);
  const SimulationResult r = run(m, s, sys, true);
  EXPECT_EQ(r.events.size(), static_cast<std::size_t>(2 * s.pp_size * s.interleaving_size * s.micro_batch_num));
}

}  // namespace
}  // namespace calisim
