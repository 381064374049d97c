// The optimizer step's HBM passes and Megatron's doubled MoE parameter all-gather
// (simulator/data_parallel.h): hand byte counts for the pure functions, and through simulate()
// that the all-gather flag adds exactly one more gather where it applies and nothing (with a
// warning) where it does not. Also the unfused cross-entropy's per-logit bytes (layer_ops.cc).
#include <gtest/gtest.h>

#include <string>

#include "simulator/data_parallel.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::small_moe;
using testing_support::strategy_from_json;

SimulationResult run(const ModelConfig& m, const std::string& json, const SystemConfig& sys) {
  return testing_support::simulate_roofline(m, json, sys);
}

bool has_warning(const SimulationResult& r, const std::string& part) {
  for (const auto& w : r.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

TEST(OptimizerStep, BytesPerPass) {
  StrategyConfig st;
  st.dtype = DType::bf16;
  st.dp_size = 8;
  st.cp_size = 1;
  // Shard: Adam 16 read + 12 written, norm 4, master-to-model copy 4 + 2 = 38 B per parameter.
  // Buffer (4 GB of fp32 grads): memset 1 + NaN-check norm 1 + 1/dp scaling 2 passes.
  OptimizerStepBytes b = optimizer_step_bytes(1e9, 4e9, st);
  EXPECT_DOUBLE_EQ(b.adam_bytes, 38e9);
  EXPECT_DOUBLE_EQ(b.grad_buffer_bytes, 16e9);
  // No data parallelism: Megatron does not scale, so only the memset and the NaN check remain.
  st.dp_size = 1;
  b = optimizer_step_bytes(1e9, 4e9, st);
  EXPECT_DOUBLE_EQ(b.grad_buffer_bytes, 8e9);
  st.cp_size = 2;  // the gradient scaling factor covers dp·cp
  EXPECT_DOUBLE_EQ(optimizer_step_bytes(1e9, 4e9, st).grad_buffer_bytes, 16e9);
}

TEST(OptimizerStep, ParamGatherPasses) {
  StrategyConfig st;
  st.zero_state = 1;
  const RankParams moe{1e9, 2e9}, dense{1e9, 0};
  EXPECT_EQ(param_gather_passes(moe, st), 1);  // off by default
  st.moe_double_param_gather = true;
  EXPECT_EQ(param_gather_passes(moe, st), 2);
  EXPECT_EQ(param_gather_passes(dense, st), 1);  // no expert optimizer, no chain
  st.overlap_param_gather = true;                // gathered in the forward pre-hooks, once
  EXPECT_EQ(param_gather_passes(moe, st), 1);
  st.overlap_param_gather = false;
  for (int z : {0, 3}) {
    st.zero_state = z;
    EXPECT_EQ(param_gather_passes(moe, st), 1);
  }
}

TEST(OptimizerStep, DoubleGatherAddsOneGatherOnMoeOnly) {
  const ModelConfig m = small_moe();
  const SystemConfig sys = shipped_system("h100-sxm");
  const std::string base = R"({"seq_len": 2048, "micro_batch_num": 4, "world_size": 8, "ep_size": 4, "zero_state": 1)";
  const SimulationResult once = run(m, base + "}", sys);
  const SimulationResult twice = run(m, base + R"(, "moe_double_param_gather": true})", sys);
  const double extra = twice.dp_comm_exposed_s - once.dp_comm_exposed_s;
  EXPECT_GT(extra, 0.0);
  // One more all-gather of 2-byte weights: cheaper than the 4-byte reduce-scatter plus the gather.
  EXPECT_LT(extra, once.dp_comm_exposed_s);
  EXPECT_NEAR(twice.duration_time_per_iter_s - once.duration_time_per_iter_s, extra, 1e-12);
  EXPECT_FALSE(has_warning(twice, "moe_double_param_gather"));

  // Overlapped gathers run in the forward pre-hooks, once: no effect, and the run says so.
  const SimulationResult ov = run(m, base + R"(, "overlap_param_gather": true, "moe_double_param_gather": true})", sys);
  const SimulationResult ov_ref = run(m, base + R"(, "overlap_param_gather": true})", sys);
  EXPECT_DOUBLE_EQ(ov.duration_time_per_iter_s, ov_ref.duration_time_per_iter_s);
  EXPECT_TRUE(has_warning(ov, "moe_double_param_gather has no effect"));

  const ModelConfig d = shipped_model("llama3-8b");
  const SimulationResult dn = run(d, R"({"seq_len": 2048, "micro_batch_num": 4, "world_size": 8, "zero_state": 1, "moe_double_param_gather": true})", sys);
  EXPECT_TRUE(has_warning(dn, "moe_double_param_gather has no effect"));
}

TEST(OptimizerStep, GradBufferPassesScaleWithLocalGradients) {
  // Same model, dp 8 vs dp 1 × tp 8: dp 8 holds 8× the local gradients but a shard of the state.
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult a =
      run(m, R"({"seq_len": 4096, "micro_batch_num": 1, "world_size": 8, "zero_state": 1})", sys);
  const SimulationResult b =
      run(m, R"({"seq_len": 4096, "micro_batch_num": 1, "world_size": 8, "tp_size": 8, "zero_state": 1})", sys);
  // Both shards hold ~P/8 parameters of Adam work; dp 8 adds 4 passes over 4·P bytes of
  // gradients, tp 8 (dp 1) 2 passes over 4·P/8: the dp 8 step's optimizer is the slower.
  EXPECT_GT(a.optimizer_s, b.optimizer_s);
  EXPECT_GT(a.optimizer_s, 0.0);
}

TEST(CrossEntropy, UnfusedBytesPerLogitFollowMegatronsKernels) {
  const ModelConfig m = shipped_model("llama3-8b");
  for (int tp : {1, 2}) {
    const std::string js = R"({"seq_len": 4096, "micro_batch_num": 1, "world_size": )" + std::to_string(tp) +
                           R"(, "tp_size": )" + std::to_string(tp) + R"(, "cross_entropy_loss_fusion": false})";
    const StrategyConfig st = strategy_from_json(js, m);
    const ModelOps ops = build_model_ops(m, st, 8);
    const LayerOp* ce = nullptr;
    for (const auto& op : ops.head)
      if (std::string(op.name) == "cross_entropy") ce = &op;
    ASSERT_NE(ce, nullptr);
    const double n = 4096.0 * m.padded_vocab(tp) / tp;  // logits per rank
    // Forward: .float() 2 + 4, max 4, -= max 8, exp 8, sum 4, /= sum 8; backward: *= grad 8,
    // cast back 4 + 2.
    EXPECT_EQ(ce->mem_fwd.bytes, static_cast<std::int64_t>(n * 38));
    EXPECT_EQ(ce->mem_bwd.bytes, static_cast<std::int64_t>(n * 14));
  }
}

}  // namespace
}  // namespace calisim
