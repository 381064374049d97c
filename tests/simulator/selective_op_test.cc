// recompute_granularity "selective_op" (torchtitan's op-level selective checkpointing) and
// "save_qkv_proj" (MaxText's remat policy) end to end: each costs more time than no recompute and
// less than full recompute, keeps memory between the two, and is refused for layer kinds it does
// not describe.
#include <gtest/gtest.h>

#include <string>

#include "simulator/layer_ops.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::simulate_roofline;
using testing_support::small_moe;
using testing_support::strategy_from_json;
using testing_support::strategy_refusal;

std::string fsdp8(const std::string& granularity) {
  std::string s = R"({"seq_len": 8192, "micro_batch_size": 2, "micro_batch_num": 1, "world_size": 8,
                      "zero_state": 3, "recompute_layer_num": 32)";
  if (!granularity.empty()) s += R"(, "recompute_granularity": ")" + granularity + "\"";
  return s + "}";
}

TEST(SelectiveOp, SitsBetweenNoAndFullRecomputeInTimeAndMemory) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult none = simulate_roofline(m, fsdp8(""), sys);
  const SimulationResult op = simulate_roofline(m, fsdp8("selective_op"), sys);
  const SimulationResult full = simulate_roofline(m, fsdp8("full_block"), sys);
  EXPECT_GT(op.duration_time_per_iter_s, none.duration_time_per_iter_s);
  EXPECT_LT(op.duration_time_per_iter_s, full.duration_time_per_iter_s);
  // bf16: k, o and w3 rerun = (1024 + 4096 + 14336) / (4096 + 2*1024 + 4096 + 3*14336) of the
  // layers' matmul forward, about 36 %, against 100 % for full recompute; element-wise work
  // and attention make the two ratios differ a little from that.
  const double op_extra = op.duration_time_per_iter_s - none.duration_time_per_iter_s;
  const double full_extra = full.duration_time_per_iter_s - none.duration_time_per_iter_s;
  EXPECT_GT(op_extra / full_extra, 0.25);
  EXPECT_LT(op_extra / full_extra, 0.45);
  ASSERT_FALSE(op.stages.empty());
  EXPECT_LT(op.stages[0].peak_mem_bytes, none.stages[0].peak_mem_bytes);
  EXPECT_GT(op.stages[0].peak_mem_bytes, full.stages[0].peak_mem_bytes);
}

// torchao's FP8 linears go through aten.mm too: the policy saves the same outputs (in bf16), so
// a Float8 block keeps exactly the bf16 block's activations (torchtitan's Float8 and bf16 runs
// of Llama 3.1 8B peak within 0.3 %), while its linears run faster.
TEST(SelectiveOp, Float8LinearsSaveTheSameOutputsAsBf16) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  std::string fp8 = fsdp8("selective_op");
  fp8.insert(fp8.size() - 1, R"(, "fp8": true, "fp8_recipe": "tensorwise", "fp8_implementation": "torchao")");
  const SimulationResult bf = simulate_roofline(m, fsdp8("selective_op"), sys);
  const SimulationResult f8 = simulate_roofline(m, fp8, sys);
  ASSERT_FALSE(f8.stages.empty());
  EXPECT_DOUBLE_EQ(f8.stages[0].fwd_activation_cache_per_micro_batch_bytes,
                   bf.stages[0].fwd_activation_cache_per_micro_batch_bytes);
  EXPECT_LT(f8.duration_time_per_iter_s, bf.duration_time_per_iter_s);
}

TEST(SelectiveOp, RefusedForMoeLayersWithTheReason) {
  const std::string why = strategy_refusal(small_moe(), R"({"seq_len": 1024, "micro_batch_num": 1, "world_size": 8,
      "ep_size": 8, "recompute_granularity": "selective_op", "recompute_layer_num": 8})");
  EXPECT_EQ(why.rfind("recompute_granularity: ", 0), 0u) << why;
  EXPECT_NE(why.find("MoE"), std::string::npos) << why;
}

// MaxText's save_qkv_proj: the block reruns except the Q, K, V projections, whose outputs stay.
// Against full recompute it keeps T·(a + 2g)·d bf16 elements more per layer and skips the QKV
// GEMM's rerun; JAX's remat also drops what backward does not read, the down projection and the
// residual add after it; everything else is rerun as under full recompute.
TEST(SaveQkvProj, RerunsAllButTheProjectionsAndKeepsTheirOutputs) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const StrategyConfig st = strategy_from_json(fsdp8("save_qkv_proj"), m);
  const ModelOps ops = build_model_ops(m, st, 8);
  const RecomputePlan plan = recompute_plan(ops.layer, st);
  const double tokens = 8192.0 * 2;
  const double qkv_out_bytes = tokens * (m.head_num + 2 * m.kv_head_num) * m.head_size * 2;
  double kept = 0;
  for (std::size_t i = 0; i < ops.layer.size(); ++i) {
    const LayerOp& op = ops.layer[i];
    const bool projection = op.unit == OpUnit::qkv && op.kind == OpKind::gemm;
    const bool tail = i + 2 >= ops.layer.size();  // fc2, mlp_residual
    EXPECT_EQ(plan.rerun[i], projection || tail ? 0.0 : 1.0) << op.name;
    kept += plan.kept_bytes[i];
  }
  EXPECT_DOUBLE_EQ(kept, ops.layer.front().act_bytes + qkv_out_bytes);

  const SimulationResult none = simulate_roofline(m, fsdp8(""), sys);
  const SimulationResult qkv = simulate_roofline(m, fsdp8("save_qkv_proj"), sys);
  const SimulationResult full = simulate_roofline(m, fsdp8("full_block"), sys);
  EXPECT_GT(qkv.duration_time_per_iter_s, none.duration_time_per_iter_s);
  EXPECT_LT(qkv.duration_time_per_iter_s, full.duration_time_per_iter_s);
  ASSERT_FALSE(qkv.stages.empty());
  EXPECT_NEAR(qkv.stages[0].fwd_activation_cache_per_micro_batch_bytes -
                  full.stages[0].fwd_activation_cache_per_micro_batch_bytes,
              m.layer_num * qkv_out_bytes, 1.0);
  EXPECT_NE(qkv.recompute.find("save_qkv_proj"), std::string::npos) << qkv.recompute;
}

TEST(SaveQkvProj, RefusedForMlaWithTheReason) {
  const std::string json = R"({"seq_len": 4096, "micro_batch_num": 1, "world_size": 8, "ep_size": 8,
      "recompute_granularity": "save_qkv_proj", "recompute_layer_num": 8})";
  const std::string why = strategy_refusal(shipped_model("deepseek-v2"), json);
  EXPECT_EQ(why.rfind("recompute_granularity: ", 0), 0u) << why;
  EXPECT_NE(why.find("MLA"), std::string::npos) << why;
  EXPECT_EQ(strategy_refusal(small_moe(), json), "(accepted)");  // MoE layers with GQA attention are fine
}

}  // namespace
}  // namespace calisim
