// recompute_early_stop: a checkpoint that reruns a block only as far as backward reads it
// (PyTorch's non-reentrant checkpoint with its default early stop, torch.compile's partitioner,
// JAX's remat) skips each recomputed run's trailing residual add and the GEMM before it. These
// tests pin which ops that is, and that the saving is exactly those ops' forward time.
#include <gtest/gtest.h>

#include <string>

#include "simulator/layer_ops.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::simulate_roofline;
using testing_support::strategy_from_json;

std::string strategy(const std::string& extra) {
  return R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8, "tp_size": 2,
             "enable_sequence_parallel": true, "recompute_layer_num": 32)" +
         extra + "}";
}

// The names of the ops a plan does not rerun although its run covers them.
std::string skipped(const std::vector<LayerOp>& layer, const RecomputePlan& plan) {
  std::string out;
  for (std::size_t i = 0; i < layer.size(); ++i) {
    if (plan.rerun[i] == 0) out += std::string(out.empty() ? "" : ",") + layer[i].name;
  }
  return out;
}

TEST(RecomputeEarlyStop, FullBlockSkipsTheLastGemmAndTheResidualAdd) {
  const ModelConfig m = shipped_model("llama3-8b");
  const StrategyConfig whole = strategy_from_json(strategy(R"(, "recompute_granularity": "full_block")"), m);
  const StrategyConfig early = strategy_from_json(
      strategy(R"(, "recompute_granularity": "full_block", "recompute_early_stop": true)"), m);
  const ModelOps ops = build_model_ops(m, early, 8);
  EXPECT_EQ(skipped(ops.layer, recompute_plan(ops.layer, whole)), "");
  const RecomputePlan plan = recompute_plan(ops.layer, early);
  EXPECT_EQ(skipped(ops.layer, plan), "fc2,mlp_residual");
  // The kept activations are the checkpoint's: early stop changes what reruns, not what is kept.
  const RecomputePlan base = recompute_plan(ops.layer, whole);
  EXPECT_EQ(plan.kept_bytes, base.kept_bytes);
  EXPECT_FALSE(plan.recomputed.back());
  EXPECT_TRUE(plan.recomputed.front());
}

// Under TransformerEngine FP8 the cast before FC2 writes the FP8 input the weight gradient reads,
// so it still reruns; a dropout-add regenerates its mask, so with dropout nothing is skipped.
TEST(RecomputeEarlyStop, StopsAtWhatBackwardReads) {
  const ModelConfig m = shipped_model("llama3-8b");
  const StrategyConfig fp8 = strategy_from_json(
      strategy(R"(, "recompute_granularity": "full_block", "recompute_early_stop": true, "fp8": true)"), m);
  const ModelOps f8 = build_model_ops(m, fp8, 8);
  const RecomputePlan p8 = recompute_plan(f8.layer, fp8);
  EXPECT_EQ(skipped(f8.layer, p8), "fc2,mlp_residual");
  bool cast_reruns = false;
  for (std::size_t i = 0; i < f8.layer.size(); ++i) {
    if (f8.layer[i].kind == OpKind::memory && f8.layer[i].mem_fwd.kind == "fp8_cast_fwd" && f8.layer[i].unit == OpUnit::mlp &&
        i + 3 == f8.layer.size()) {
      cast_reruns = p8.rerun[i] == 1.0;
    }
  }
  EXPECT_TRUE(cast_reruns);

  const StrategyConfig drop = strategy_from_json(
      strategy(R"(, "recompute_granularity": "full_block", "recompute_early_stop": true, "enable_dropout": true)"), m);
  const ModelOps d = build_model_ops(m, drop, 8);
  EXPECT_EQ(skipped(d.layer, recompute_plan(d.layer, drop)), "");
}

// A run that ends inside the block: an MLP-only checkpoint ends at FC2, which is skipped; the
// residual add is outside the run.
TEST(RecomputeEarlyStop, AppliesToEachRecomputedRun) {
  const ModelConfig m = shipped_model("llama3-8b");
  const StrategyConfig st = strategy_from_json(
      strategy(R"(, "recompute_granularity": "mlp_only", "recompute_early_stop": true)"), m);
  const ModelOps ops = build_model_ops(m, st, 8);
  const RecomputePlan plan = recompute_plan(ops.layer, st);
  std::string rerun;
  for (std::size_t i = 0; i < ops.layer.size(); ++i) {
    if (plan.rerun[i] > 0) rerun += std::string(rerun.empty() ? "" : ",") + ops.layer[i].name;
  }
  EXPECT_EQ(rerun, "fc1,activation");
}

// End to end the step saves FC2's forward (its TP reduce-scatter included) per recomputed layer,
// and nothing else: memory and model FLOPs are unchanged, and the recomputed FLOPs (HFU − MFU,
// times the step) drop by FC2's share of a layer's forward FLOPs.
TEST(RecomputeEarlyStop, SavesTheSkippedForwardAndKeepsMemory) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const std::string whole_json = strategy(R"(, "recompute_granularity": "full_block")");
  const std::string early_json = strategy(R"(, "recompute_granularity": "full_block", "recompute_early_stop": true)");
  const SimulationResult whole = simulate_roofline(m, whole_json, sys);
  const SimulationResult early = simulate_roofline(m, early_json, sys);
  EXPECT_LT(early.duration_time_per_iter_s, whole.duration_time_per_iter_s);
  // The result says so where it names the recompute (the simulate header's "recompute" field).
  EXPECT_NE(early.recompute.find("early stop"), std::string::npos) << early.recompute;
  EXPECT_EQ(whole.recompute.find("early stop"), std::string::npos) << whole.recompute;
  ASSERT_FALSE(early.stages.empty());
  EXPECT_DOUBLE_EQ(early.stages[0].peak_mem_bytes, whole.stages[0].peak_mem_bytes);
  EXPECT_NEAR(early.mfu * early.duration_time_per_iter_s, whole.mfu * whole.duration_time_per_iter_s,
              1e-9 * whole.mfu * whole.duration_time_per_iter_s);

  const StrategyConfig st = strategy_from_json(early_json, m);
  const ModelOps ops = build_model_ops(m, st, 8);
  double layer_flops = 0, fc2_flops = 0;
  for (const LayerOp& op : ops.layer) {
    layer_flops += op.fwd_flops();
    if (std::string(op.name) == "fc2") fc2_flops = op.fwd_flops();
  }
  const double rc_whole = (whole.hfu - whole.mfu) * whole.duration_time_per_iter_s;
  const double rc_early = (early.hfu - early.mfu) * early.duration_time_per_iter_s;
  EXPECT_NEAR(1 - rc_early / rc_whole, fc2_flops / layer_flops, 1e-9);
}

}  // namespace
}  // namespace calisim
