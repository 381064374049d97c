// Activation bytes per layer against Korthikanti et al. 2022 ("Reducing Activation Recomputation
// in Large Transformer Models"), eqs. for tensor + sequence parallelism: 34·s·b·h/t with SP
// (+5·a·s²·b/t when attention scores are materialised), and s·b·h·(10 + 24/t + 5·a·s/(h·t))
// without SP. Their count assumes MHA, a 4h MLP, fp16 and dropout.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <string>

#include "simulator/layer_ops.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::gpt_model;
using testing_support::strategy_from_json;

double layer_act(const ModelOps& ops) {
  double sum = 0;
  for (const auto& op : ops.layer) sum += op.act_bytes;
  return sum;
}

StrategyConfig korthikanti_strategy(const ModelConfig& m, int tp, bool sp, bool flash) {
  return strategy_from_json(
      nlohmann::json({{"seq_len", 2048}, {"micro_batch_size", 2}, {"micro_batch_num", 1}, {"world_size", tp},
                      {"tp_size", tp}, {"dtype", "fp16"}, {"enable_sequence_parallel", sp}, {"enable_dropout", true},
                      {"use_flash_sdp", flash}})
          .dump(),
      m);
}

TEST(ActivationMemory, SequenceParallelFlashIs34sbhOverT) {
  const ModelConfig m = gpt_model(6144, 64, 48, 51200);
  for (int t : {1, 2, 8}) {
    const StrategyConfig s = korthikanti_strategy(m, t, true, true);
    const double sbh = 2048.0 * 2 * 6144;
    EXPECT_NEAR(layer_act(build_model_ops(m, s, 8)) / (34.0 * sbh / t), 1.0, 0.02) << "tp " << t;
  }
}

TEST(ActivationMemory, MaterialisedScoresAdd5as2bOverT) {
  const ModelConfig m = gpt_model(6144, 64, 48, 51200);
  const int t = 8;
  const StrategyConfig s = korthikanti_strategy(m, t, true, false);
  const double sbh = 2048.0 * 2 * 6144;
  const double expected = 34.0 * sbh / t + 5.0 * 64 * 2048.0 * 2048 * 2 / t;
  EXPECT_NEAR(layer_act(build_model_ops(m, s, 8)) / expected, 1.0, 0.02);
}

TEST(ActivationMemory, WithoutSequenceParallel) {
  const ModelConfig m = gpt_model(6144, 64, 48, 51200);
  const int t = 8;
  const StrategyConfig s = korthikanti_strategy(m, t, false, false);
  const double sbh = 2048.0 * 2 * 6144;
  const double expected = sbh * (10.0 + 24.0 / t + 5.0 * 64 * 2048 / (6144.0 * t));
  EXPECT_NEAR(layer_act(build_model_ops(m, s, 8)) / expected, 1.0, 0.02);
}

TEST(ActivationMemory, FullRecomputeKeepsOnlyTheLayerInput) {
  const ModelConfig m = gpt_model(4096, 32, 8, 51200);
  StrategyConfig s = korthikanti_strategy(m, 4, true, true);
  s.recompute_granularity = RecomputeGranularity::full_block;
  s.recompute_layer_num = 8;
  const ModelOps ops = build_model_ops(m, s, 8);
  const RecomputePlan plan = recompute_plan(ops.layer, s);
  const double kept = std::accumulate(plan.kept_bytes.begin(), plan.kept_bytes.end(), 0.0);
  EXPECT_DOUBLE_EQ(kept, 2048.0 * 2 * 4096 * 2 / 4);  // 2·s·b·h/t bytes
  EXPECT_DOUBLE_EQ(kept, ops.layer_input_bytes);
}

TEST(ActivationMemory, SelectiveAttentionRecomputeDropsScoresOnly) {
  // Korthikanti's selective recompute of the attention core removes exactly the 5·a·s²·b/t term
  // (Megatron's `--recompute-granularity selective`, our "sdp_only").
  const ModelConfig m = gpt_model(6144, 64, 48, 51200);
  StrategyConfig s = korthikanti_strategy(m, 8, true, false);
  s.recompute_granularity = RecomputeGranularity::sdp_only;
  s.recompute_layer_num = 48;
  const ModelOps ops = build_model_ops(m, s, 8);
  const RecomputePlan plan = recompute_plan(ops.layer, s);
  const double kept = std::accumulate(plan.kept_bytes.begin(), plan.kept_bytes.end(), 0.0);
  const double sbh = 2048.0 * 2 * 6144;
  EXPECT_NEAR(kept / (34.0 * sbh / 8), 1.0, 0.02);
}

// torchtitan's op-level selective checkpointing (selective_op) on a Llama block (GQA 32/8 heads,
// SwiGLU): matmuls q, k, v, o, w1, w3, w2 in that order, the 1st, 3rd, 5th and 7th outputs saved.
TEST(ActivationMemory, SelectiveOpKeepsTheSavedOutputsAndRerunsTheRest) {
  ModelConfig m = gpt_model(4096, 32, 4, 32000);
  m.use_swiglu = true;
  m.intermediate_size = 14336;
  m.kv_head_num = 8;
  m.attention_type = AttentionType::gqa;
  StrategyConfig s = korthikanti_strategy(m, 1, false, true);
  s.enable_dropout = false;
  s.recompute_granularity = RecomputeGranularity::selective_op;
  s.recompute_layer_num = 4;
  const ModelOps ops = build_model_ops(m, s, 8);
  const RecomputePlan plan = recompute_plan(ops.layer, s);
  ASSERT_EQ(plan.rerun.size(), ops.layer.size());
  const double T = 2048.0 * 2, e = 2;  // tokens, fp16 bytes
  double kept = 0;
  int gemms = 0;
  for (std::size_t i = 0; i < ops.layer.size(); ++i) {
    const LayerOp& op = ops.layer[i];
    const std::string name = op.name;
    kept += plan.kept_bytes[i];
    if (op.kind == OpKind::attention) {
      EXPECT_EQ(plan.rerun[i], 0.0);
      EXPECT_DOUBLE_EQ(plan.kept_bytes[i], T * 32 * 128 * e + T * 32 * 4.0);  // output and log-sum-exp
    } else if (op.kind == OpKind::gemm) {
      ++gemms;
      if (name == "qkv_proj") {
        EXPECT_DOUBLE_EQ(plan.rerun[i], 8.0 / 48.0) << "k of q|k|v = 32|8|8 heads";
      } else if (name == "out_proj") {
        EXPECT_EQ(plan.rerun[i], 1.0);
      } else if (op.unit == OpUnit::mlp && op.gemm_fwd.n == 2 * 14336) {
        EXPECT_EQ(plan.rerun[i], 0.5) << "w3 of w1|w3";
      } else if (op.unit == OpUnit::mlp) {
        EXPECT_EQ(plan.rerun[i], 0.0) << "w2, the 7th matmul";
      } else {
        ADD_FAILURE() << "unexpected GEMM " << name;
      }
    } else {
      EXPECT_EQ(plan.rerun[i], 1.0) << name << ": element-wise ops are rerun";
    }
    EXPECT_EQ(plan.recomputed[i], plan.rerun[i] > 0) << name;
  }
  EXPECT_EQ(gemms, 4);
  // Kept per token: the block input (its norm's saved input, h plus the fp32 rstd), q and v
  // (4096 + 1024), the attention output and log-sum-exp, w1's output (14336) and w2's (4096).
  const double expected = ops.layer.front().act_bytes + T * e * (4096 + 1024) + T * (32 * 128 * e + 32 * 4.0) +
                          T * e * 14336 + T * e * 4096;
  EXPECT_DOUBLE_EQ(kept, expected);
  // Between no recompute and full recompute.
  EXPECT_LT(kept, layer_act(ops));
  EXPECT_GT(kept, ops.layer_input_bytes);

  // torchao Float8 linears reach the policy as aten.mm (the dispatch mode runs before the
  // Float8Tensor subclass): the same outputs are saved, in bf16, and the same shares rerun.
  s.fp8 = Fp8Recipe::tensorwise;
  s.fp8_impl = Fp8Implementation::torchao;
  const ModelOps f8 = build_model_ops(m, s, 8);
  const RecomputePlan p8 = recompute_plan(f8.layer, s);
  double kept8 = 0;
  for (std::size_t i = 0; i < f8.layer.size(); ++i) {
    kept8 += p8.kept_bytes[i];
    if (f8.layer[i].kind == OpKind::gemm) {
      const auto same = std::find_if(ops.layer.begin(), ops.layer.end(),
                                     [&](const LayerOp& o) { return std::string(o.name) == f8.layer[i].name; });
      ASSERT_NE(same, ops.layer.end());
      EXPECT_DOUBLE_EQ(p8.rerun[i], plan.rerun[static_cast<std::size_t>(same - ops.layer.begin())]) << f8.layer[i].name;
    }
  }
  EXPECT_DOUBLE_EQ(kept8, expected);
}

TEST(ActivationMemory, SwiGluAndGqaChangeTheCount) {
  ModelConfig m = gpt_model(4096, 32, 4, 32000);
  ModelConfig llama = m;
  llama.use_swiglu = true;
  llama.intermediate_size = 11008;
  llama.kv_head_num = 8;
  const StrategyConfig s1 = korthikanti_strategy(m, 1, false, true);
  const StrategyConfig s2 = korthikanti_strategy(llama, 1, false, true);
  const double sbh = 2048.0 * 2 * 4096;
  // Per token, in s·b·h units: norms 2+2, QKV input 2, Q 2, K+V 2·2·(8/32) = 1, O 2, FC1 input 2,
  // dropout masks 1+1 = 15; SwiGLU keeps its 2f-wide input (4 bytes·f) and FC2 its f-wide input.
  const double T = 2048.0 * 2;
  const double expected = 15.0 * sbh + T * (4.0 * 11008 + 2.0 * 11008);
  EXPECT_NEAR(layer_act(build_model_ops(llama, s2, 8)) / expected, 1.0, 0.02);
  EXPECT_NE(layer_act(build_model_ops(m, s1, 8)), layer_act(build_model_ops(llama, s2, 8)));
}

}  // namespace
}  // namespace calisim
