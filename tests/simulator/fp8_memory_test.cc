// FP8 parameters (fp8_param_gather), training-dtype first/last layers (first_last_layers_bf16),
// torchao's Float8Linear, the unfused cross-entropy variants and the precision-aware optimizer's
// state dtypes: bytes derived by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/layer_placement.h"
#include "simulator/rank_params.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::find_op;
using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::simulate_roofline;
using testing_support::small_moe;
using testing_support::strategy_from_json;

constexpr const char* kBase = R"({"seq_len": 4096, "micro_batch_num": 8, "world_size": 8)";
std::string with(const std::string& extra) { return std::string(kBase) + extra + "}"; }

// Llama-3-8B on 8 GPUs (tp 1, pp 1, dp 8, ZeRO-1): P parameters per rank, of which F = 32 layers
// run FP8. bf16: 2P bytes of weights. TE FP8: 2P + 2F (row- and column-wise FP8 copies of the FP8
// layers only: the embedding and LM head stay bf16). FP8 parameters: 2(P - F) + F + F = 2P.
TEST(Fp8Params, WeightsHoldFp8CopiesOfFp8LayersOnly) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult bf = simulate_roofline(m, with(""), sys);
  const SimulationResult te = simulate_roofline(m, with(R"(, "fp8": true, "fp8_recipe": "tensorwise")"), sys);
  const SimulationResult fp = simulate_roofline(
      m, with(R"(, "fp8": true, "fp8_recipe": "tensorwise", "fp8_param_gather": true)"), sys);
  const StrategyConfig st = strategy_from_json(with(""), m);
  const double F = 32 * dense_layer_params_per_rank(m, st).total();
  ASSERT_GT(bf.stages[0].params, F * 1.05);  // embedding and LM head are not FP8 layers
  EXPECT_NEAR(te.stages[0].weight_bytes - bf.stages[0].weight_bytes, 2 * F, 1e-6 * F);
  EXPECT_NEAR(fp.stages[0].weight_bytes, bf.stages[0].weight_bytes, 1e-9 * F);
  EXPECT_LT(fp.stages[0].peak_mem_bytes, te.stages[0].peak_mem_bytes);
}

// The DP parameter all-gather moves the FP8 layers' weights in one byte: without overlap its
// whole time shows, so FP8 parameters shorten the exposed DP communication.
TEST(Fp8Params, ParameterAllGatherMovesFp8Bytes) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const std::string fp8 = R"(, "fp8": true, "fp8_recipe": "delayed", "overlap_param_gather": false)";
  const SimulationResult te = simulate_roofline(m, with(fp8), sys);
  const SimulationResult fp = simulate_roofline(m, with(fp8 + R"(, "fp8_param_gather": true)"), sys);
  EXPECT_LT(fp.stages[0].dp_comm_s, te.stages[0].dp_comm_s);
  EXPECT_GT(fp.stages[0].dp_comm_s, 0.5 * te.stages[0].dp_comm_s);  // the gradient reduce-scatter is unchanged
}

TEST(Fp8Params, LoaderRefusesItWithoutTransformerEngineFp8) {
  const ModelConfig m = shipped_model("llama3-8b");
  EXPECT_THROW(strategy_from_json(with(R"(, "fp8_param_gather": true)"), m), InputError);
  EXPECT_THROW(strategy_from_json(with(R"(, "fp8": true, "fp8_recipe": "tensorwise", "fp8_implementation": "torchao",
                                          "fp8_param_gather": true)"),
                                  m),
               InputError);
}

// Every layer kept in bf16 under FP8 is the bf16 run: same step time, same memory.
TEST(Bf16Layers, AllLayersInBf16EqualsTheBf16Run) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult bf = simulate_roofline(m, with(""), sys);
  const SimulationResult all = simulate_roofline(
      m, with(R"(, "fp8": true, "fp8_recipe": "tensorwise", "first_last_layers_bf16": true,
              "num_layers_at_start_in_bf16": 16, "num_layers_at_end_in_bf16": 16)"), sys);
  EXPECT_NEAR(all.duration_time_per_iter_s, bf.duration_time_per_iter_s, 1e-12 * bf.duration_time_per_iter_s);
  EXPECT_NEAR(all.stages[0].peak_mem_bytes, bf.stages[0].peak_mem_bytes, 1e-9 * bf.stages[0].peak_mem_bytes);
}

// Megatron's defaults (one layer at each end): slower than all-FP8, faster than bf16; under a
// pipeline only the stages holding layer 0 and the last layer change.
TEST(Bf16Layers, FirstAndLastLayerSlowOnlyTheirStages) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const std::string fp8 = R"(, "fp8": true, "fp8_recipe": "tensorwise")";
  const SimulationResult bf = simulate_roofline(m, with(""), sys);
  const SimulationResult all8 = simulate_roofline(m, with(fp8), sys);
  const SimulationResult ends = simulate_roofline(m, with(fp8 + R"(, "first_last_layers_bf16": true)"), sys);
  EXPECT_GT(ends.duration_time_per_iter_s, all8.duration_time_per_iter_s);
  EXPECT_LT(ends.duration_time_per_iter_s, bf.duration_time_per_iter_s);

  const std::string pp = R"(, "pp_size": 4, "world_size": 8)";
  const SimulationResult p8 = simulate_roofline(m, with(fp8 + pp), sys);
  const SimulationResult pe = simulate_roofline(m, with(fp8 + pp + R"(, "first_last_layers_bf16": true)"), sys);
  ASSERT_EQ(pe.stages.size(), 4u);
  EXPECT_GT(pe.stages[0].fwd_s_per_micro_batch, p8.stages[0].fwd_s_per_micro_batch);
  EXPECT_DOUBLE_EQ(pe.stages[1].fwd_s_per_micro_batch, p8.stages[1].fwd_s_per_micro_batch);
  EXPECT_DOUBLE_EQ(pe.stages[2].fwd_s_per_micro_batch, p8.stages[2].fwd_s_per_micro_batch);
  EXPECT_GT(pe.stages[3].fwd_s_per_micro_batch, p8.stages[3].fwd_s_per_micro_batch);
  // A bf16 layer keeps no FP8 weight copies: stage 0 loses 2 bytes per parameter of one layer.
  const double layer = dense_layer_params_per_rank(m, strategy_from_json(with(pp), m)).total();
  EXPECT_NEAR(p8.stages[0].weight_bytes - pe.stages[0].weight_bytes, 2 * layer, 1e-6 * layer);
}

// Small MoE: 8 layers, the first 3 dense. bf16 layers 0 and 6, 7.
TEST(Bf16Layers, ChunkCountsSplitByKindAndPrecision) {
  const ModelConfig m = small_moe();
  StrategyConfig st;
  st.fp8 = Fp8Recipe::tensorwise;
  st.num_layers_at_start_in_bf16 = 1;
  st.num_layers_at_end_in_bf16 = 2;
  const ChunkLayers all{0, 3, 5};
  const ChunkPrecision p = chunk_precision(all, m, st);
  EXPECT_EQ(p.dense_bf16, 1);
  EXPECT_EQ(p.moe_bf16, 2);
  const LayerCounts rc = recomputed_layer_counts(all, p, 4, m, st);  // layers 0..3
  EXPECT_EQ(rc.dense_bf16, 1);
  EXPECT_EQ(rc.dense, 2);
  EXPECT_EQ(rc.moe, 1);
  EXPECT_EQ(rc.moe_bf16, 0);
  const LayerCounts every = recomputed_layer_counts(all, p, 99, m, st);
  EXPECT_EQ(every.dense + every.dense_bf16 + every.moe + every.moe_bf16, 8);
  EXPECT_EQ(every.moe_bf16, 2);
  const ChunkLayers tail{4, 0, 4};  // layers 4..7 of a second chunk
  EXPECT_EQ(chunk_precision(tail, m, st).moe_bf16, 2);
  EXPECT_EQ(chunk_precision(tail, m, st).dense_bf16, 0);
}

TEST(Bf16Layers, LoaderChecksTheSwitchAndItsCounts) {
  const ModelConfig m = shipped_model("llama3-8b");
  // Megatron asserts against delayed scaling; the counts need the switch; they must fit the model.
  EXPECT_THROW(strategy_from_json(with(R"(, "fp8": true, "first_last_layers_bf16": true)"), m), InputError);
  EXPECT_THROW(strategy_from_json(with(R"(, "first_last_layers_bf16": true)"), m), InputError);
  EXPECT_THROW(strategy_from_json(with(R"(, "fp8": true, "fp8_recipe": "tensorwise", "num_layers_at_start_in_bf16": 2)"), m),
               InputError);
  EXPECT_THROW(strategy_from_json(with(R"(, "fp8": true, "fp8_recipe": "tensorwise", "first_last_layers_bf16": true,
                                          "num_layers_at_start_in_bf16": 20, "num_layers_at_end_in_bf16": 13)"),
                                  m),
               InputError);
  const StrategyConfig st = strategy_from_json(
      with(R"(, "fp8": true, "fp8_recipe": "mxfp8", "first_last_layers_bf16": true, "num_layers_at_end_in_bf16": 3)"), m);
  EXPECT_EQ(st.num_layers_at_start_in_bf16, 1);  // Megatron's default
  EXPECT_EQ(st.num_layers_at_end_in_bf16, 3);
  EXPECT_TRUE(st.fp8_layer(1, 32));
  EXPECT_FALSE(st.fp8_layer(0, 32));
  EXPECT_FALSE(st.fp8_layer(29, 32));
}

// torchao's Float8Linear keeps the bf16 input for backward, casts the weight every call and in
// backward again, and caches no FP8 weights.
TEST(Torchao, KeepsHighPrecisionInputsAndNoWeightCache) {
  const ModelConfig m = shipped_model("llama3-8b");
  const std::string ao = R"(, "fp8": true, "fp8_recipe": "tensorwise", "fp8_implementation": "torchao")";
  const StrategyConfig st = strategy_from_json(with(ao), m);
  const ModelOps ops = build_model_ops(m, st, 8);
  const LayerOp* fc1 = find_op(ops.layer, "fc1");
  EXPECT_EQ(fc1->gemm_fwd.dtype, DType::fp8_e4m3);
  EXPECT_DOUBLE_EQ(fc1->act_bytes, 4096.0 * 4096 * 2);
  const LayerOp* cast = find_op(ops.layer, "fc1_fp8_cast");
  const double x = 4096.0 * 4096, w = 4096.0 * 2 * 14336, dy = 4096.0 * 2 * 14336, per = 2 * 2 + 2;
  EXPECT_EQ(cast->mem_fwd.bytes, static_cast<std::int64_t>((x + w) * per));
  EXPECT_EQ(cast->mem_bwd.bytes, static_cast<std::int64_t>((dy + x + w) * per));

  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult bf = simulate_roofline(m, with(""), sys);
  const SimulationResult r = simulate_roofline(m, with(ao), sys);
  EXPECT_DOUBLE_EQ(r.stages[0].weight_bytes, bf.stages[0].weight_bytes);
  EXPECT_THROW(strategy_from_json(with(R"(, "fp8": true, "fp8_implementation": "torchao")"), m), InputError);  // delayed
  EXPECT_THROW(strategy_from_json(with(R"(, "fp8_implementation": "torchao")"), m), InputError);
  EXPECT_THROW(strategy_from_json(with(R"(, "fp8": true, "fp8_implementation": "te")"), m), InputError);
}

// RoPE over the query and key elements x = T·(a + g)·d (e = 2 bytes): the fused kernel reads and
// writes each once (2·e·x each way); the eager chain (use_fused_rope false) makes five such passes.
// MLA's rope part (q's rope dims and the shared key) follows the same switch.
TEST(Rope, UnfusedChainMovesFiveTimesTheFusedBytes) {
  const ModelConfig m = shipped_model("llama3-8b");
  const double x = 4096.0 * (m.head_num + m.kv_head_num) * m.head_size;
  // The layer's rope op with the default strategy plus `extra` (ops kept alive by the caller).
  std::vector<ModelOps> keep;
  const auto rope_of = [&](const ModelConfig& model, const std::string& extra) {
    keep.push_back(build_model_ops(model, strategy_from_json(with(extra), model), 8));
    return find_op(keep.back().layer, "rope");
  };
  keep.reserve(4);
  const LayerOp* a = rope_of(m, "");
  const LayerOp* b = rope_of(m, R"(, "use_fused_rope": false)");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_DOUBLE_EQ(a->mem_fwd.bytes, 2 * 2 * x);
  EXPECT_DOUBLE_EQ(a->mem_bwd.bytes, 2 * 2 * x);
  EXPECT_DOUBLE_EQ(b->mem_fwd.bytes, 5 * a->mem_fwd.bytes);
  EXPECT_DOUBLE_EQ(b->mem_bwd.bytes, 5 * a->mem_bwd.bytes);
  EXPECT_DOUBLE_EQ(b->act_bytes, 0.0);
  // The whole step prices the extra traffic.
  const SystemConfig sys = shipped_system("h100-sxm");
  EXPECT_GT(simulate_roofline(m, with(R"(, "use_fused_rope": false)"), sys).duration_time_per_iter_s,
            simulate_roofline(m, with(""), sys).duration_time_per_iter_s);

  const ModelConfig mla = shipped_model("deepseek-v2");
  const LayerOp* c = rope_of(mla, "");
  const LayerOp* d = rope_of(mla, R"(, "use_fused_rope": false)");
  ASSERT_NE(c, nullptr);
  ASSERT_NE(d, nullptr);
  EXPECT_DOUBLE_EQ(d->mem_fwd.bytes, 5 * c->mem_fwd.bytes);
}

// Unfused cross-entropy over n = T·V logits (e = 2): both hold the logits and an fp32 copy in
// forward (6n) and keep an fp32 tensor (4n). Backward: Megatron turns the kept softmax into the
// gradient in place and adds only the bf16 cast (2n); PyTorch's log-softmax backward holds the
// incoming fp32 gradient and a new one (8n).
TEST(CrossEntropy, UnfusedVariantsHoldDifferentBackwardBytes) {
  const ModelConfig m = shipped_model("llama3-8b");
  const double n = 4096.0 * m.padded_vocab(1);
  const ModelOps meg = build_model_ops(m, strategy_from_json(with(""), m), 8);
  const ModelOps pt = build_model_ops(m, strategy_from_json(with(R"(, "cross_entropy_implementation": "pytorch")"), m), 8);
  const LayerOp* a = find_op(meg.head, "cross_entropy");
  const LayerOp* b = find_op(pt.head, "cross_entropy");
  EXPECT_DOUBLE_EQ(a->transient_bytes, 6 * n);
  EXPECT_DOUBLE_EQ(b->transient_bytes, 6 * n);
  EXPECT_DOUBLE_EQ(a->act_bytes, 4 * n);
  EXPECT_DOUBLE_EQ(b->act_bytes, 4 * n);
  EXPECT_DOUBLE_EQ(a->bwd_transient_bytes, 2 * n);
  EXPECT_DOUBLE_EQ(b->bwd_transient_bytes, 8 * n);

  // With TP the PyTorch loss runs as loss_parallel over vocabulary shards (n per rank): the
  // log-softmax decomposition holds logits, copy, shifted and exp (10n beside the kept 4n), and
  // its fused backward three fp32 tensors (12n).
  const ModelOps par = build_model_ops(
      m, strategy_from_json(with(R"(, "tp_size": 2, "cross_entropy_implementation": "pytorch")"), m), 8);
  const LayerOp* c = find_op(par.head, "cross_entropy");
  const double n2 = 4096.0 * m.padded_vocab(2) / 2;
  EXPECT_DOUBLE_EQ(c->act_bytes, 4 * n2);
  EXPECT_DOUBLE_EQ(c->transient_bytes, 10 * n2);
  EXPECT_DOUBLE_EQ(c->bwd_transient_bytes, 12 * n2);
  ASSERT_TRUE(c->fwd_comm);  // max, sum and target-logit all-reduces

  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult ra = simulate_roofline(m, with(""), sys);
  const SimulationResult rb = simulate_roofline(m, with(R"(, "cross_entropy_implementation": "pytorch")"), sys);
  EXPECT_GT(rb.stages[0].peak_mem_bytes, ra.stages[0].peak_mem_bytes);
  EXPECT_THROW(strategy_from_json(with(R"(, "cross_entropy_implementation": "triton")"), m), InputError);
  EXPECT_THROW(strategy_from_json(with(R"(, "cross_entropy_loss_fusion": true, "cross_entropy_implementation": "pytorch")"), m),
               InputError);
}

// Fused cross-entropy over n logits (e = 2): TransformerEngine's kernel writes the gradient into the
// logits (2n kept, 2n read + written each way); Megatron-Core's native one keeps the fp32 softmax
// (4n) and streams fp32 copies (2 + 24 bytes per logit forward, 12 + 2 backward), so it is slower
// and holds more on the last stage.
TEST(CrossEntropy, FusedImplementationsDifferInKeptBytesAndTraffic) {
  const ModelConfig m = shipped_model("llama3-8b");
  const double n = 4096.0 * m.padded_vocab(1);
  const std::string fused = R"(, "cross_entropy_loss_fusion": true)";
  const ModelOps te = build_model_ops(m, strategy_from_json(with(fused), m), 8);
  const ModelOps native =
      build_model_ops(m, strategy_from_json(with(fused + R"(, "cross_entropy_fusion_impl": "native")"), m), 8);
  const LayerOp* a = find_op(te.head, "cross_entropy");
  const LayerOp* b = find_op(native.head, "cross_entropy");
  EXPECT_DOUBLE_EQ(a->act_bytes, 2 * n);
  EXPECT_DOUBLE_EQ(a->bwd_transient_bytes, 0.0);  // the gradient is scaled in place in the kept logits
  EXPECT_DOUBLE_EQ(b->act_bytes, 4 * n);
  EXPECT_DOUBLE_EQ(b->transient_bytes, 2 * n);
  EXPECT_DOUBLE_EQ(b->bwd_transient_bytes, 2 * n);
  EXPECT_EQ(a->mem_fwd.kind, "ce_fused_fwd");
  EXPECT_EQ(b->mem_fwd.kind, "ce_fwd");
  EXPECT_EQ(b->mem_fwd.bytes, static_cast<std::int64_t>(26 * n));
  EXPECT_EQ(b->mem_bwd.bytes, static_cast<std::int64_t>(14 * n));

  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult ra = simulate_roofline(m, with(fused), sys);
  const SimulationResult rb = simulate_roofline(m, with(fused + R"(, "cross_entropy_fusion_impl": "native")"), sys);
  EXPECT_GT(rb.stages[0].peak_mem_bytes, ra.stages[0].peak_mem_bytes);
  EXPECT_GT(rb.duration_time_per_iter_s, ra.duration_time_per_iter_s);
  DefaultEfficiencyModel eff(sys);
  EXPECT_EQ(simulate(m, strategy_from_json(with(fused), m), sys, eff).loss, "fused cross-entropy (TransformerEngine)");
  EXPECT_EQ(simulate(m, strategy_from_json(with(fused + R"(, "cross_entropy_fusion_impl": "native")"), m), sys, eff).loss,
            "fused cross-entropy (Megatron native)");
  // "te" is the default; naming it changes nothing.
  EXPECT_DOUBLE_EQ(simulate_roofline(m, with(fused + R"(, "cross_entropy_fusion_impl": "te")"), sys)
                       .duration_time_per_iter_s,
                   ra.duration_time_per_iter_s);
  EXPECT_THROW(strategy_from_json(with(fused + R"(, "cross_entropy_fusion_impl": "triton")"), m), InputError);
  // Without the fusion switch the field does nothing, and the result says so.
  const SimulationResult unfused = simulate_roofline(m, with(R"(, "cross_entropy_fusion_impl": "native")"), sys);
  const SimulationResult plain = simulate_roofline(m, with(""), sys);
  ASSERT_EQ(unfused.warnings.size(), plain.warnings.size() + 1);
  EXPECT_EQ(unfused.warnings[0], "cross_entropy_fusion_impl \"native\" has no effect without cross_entropy_loss_fusion "
                                 "(the unfused loss runs; cross_entropy_implementation picks which)");
  EXPECT_DOUBLE_EQ(unfused.duration_time_per_iter_s, plain.duration_time_per_iter_s);
}

// Optimizer state per parameter of the ZeRO-1 shard (Llama-3-8B, dp 8): 12 bytes by default;
// precision-aware: bf16 remainders 2 + fp32 moments 8 = 10; bf16 moments 2 + 2 + 2 = 6; without
// remainders 12 again; fp16 master weights 2 + 8 = 10.
TEST(PrecisionAwareOptimizer, StateBytesFollowTheDtypes) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult base = simulate_roofline(m, with(""), sys);
  const double shard = base.stages[0].params / 8;
  EXPECT_NEAR(base.stages[0].optimizer_bytes, 12 * shard, 1e-6 * shard);
  const std::string pa = R"(, "use_precision_aware_optimizer": true)";
  EXPECT_NEAR(simulate_roofline(m, with(pa), sys).stages[0].optimizer_bytes, 10 * shard, 1e-6 * shard);
  EXPECT_NEAR(simulate_roofline(m, with(pa + R"(, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16")"), sys)
                  .stages[0].optimizer_bytes,
              6 * shard, 1e-6 * shard);
  EXPECT_NEAR(simulate_roofline(m, with(pa + R"(, "store_param_remainders": false)"), sys).stages[0].optimizer_bytes,
              12 * shard, 1e-6 * shard);
  EXPECT_NEAR(simulate_roofline(m, with(pa + R"(, "main_params_dtype": "fp16", "exp_avg_dtype": "fp8")"), sys)
                  .stages[0].optimizer_bytes,
              7 * shard, 1e-6 * shard);
  // The fused step moves fewer bytes than the unfused update and copy.
  EXPECT_LT(simulate_roofline(m, with(pa), sys).stages[0].optimizer_s, base.stages[0].optimizer_s);
  EXPECT_THROW(strategy_from_json(with(R"(, "exp_avg_dtype": "bf16")"), m), InputError);  // needs the switch
  EXPECT_THROW(strategy_from_json(with(pa + R"(, "exp_avg_dtype": "int8")"), m), InputError);
  EXPECT_THROW(strategy_from_json(with(pa + R"(, "main_params_dtype": "bf16")"), m), InputError);
  EXPECT_THROW(strategy_from_json(with(R"(, "store_param_remainders": true)"), m), InputError);
  // main_grads_dtype: bf16 needs the switch; with a bf16 gradient buffer it saves the step's cast.
  EXPECT_THROW(strategy_from_json(with(R"(, "main_grads_dtype": "bf16")"), m), InputError);
  const std::string bf16_buffer = pa + R"(, "use_fp32_accum_grad": false, "grad_reduce_in_bf16": true)";
  EXPECT_LT(simulate_roofline(m, with(bf16_buffer + R"(, "main_grads_dtype": "bf16")"), sys).stages[0].optimizer_s,
            simulate_roofline(m, with(bf16_buffer), sys).stages[0].optimizer_s);
  // Megatron offloads the optimizer with the precision-aware optimizer (HybridDeviceOptimizer).
  EXPECT_NO_THROW(strategy_from_json(with(pa + R"(, "optimizer_cpu_offload": true)"), m));
}

// The result names the numerics it simulated (text header and JSON layout).
TEST(PrecisionAwareOptimizer, ResultDescribesPrecisionStateAndLoss) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const SimulationResult r = simulate(
      m,
      strategy_from_json(with(R"(, "fp8": true, "fp8_recipe": "tensorwise", "fp8_param_gather": true,
                                "first_last_layers_bf16": true, "num_layers_at_end_in_bf16": 2,
                                "use_precision_aware_optimizer": true, "cross_entropy_implementation": "pytorch")"),
                         m),
      sys, eff);
  EXPECT_EQ(r.precision, "bf16 + fp8 tensorwise (TransformerEngine, fp8 params, layer 0 and layers 30-31 in bf16)");
  EXPECT_EQ(r.optimizer_state, "10 B/param (precision-aware: master fp32 as bf16 remainders, moments fp32/fp32)");
  EXPECT_EQ(r.loss, "PyTorch cross-entropy (fp32 copy)");
  const SimulationResult plain = simulate(m, strategy_from_json(with(""), m), sys, eff);
  EXPECT_EQ(plain.precision, "bf16");
  EXPECT_EQ(plain.optimizer_state, "12 B/param (fp32 master and moments)");
}

}  // namespace
}  // namespace calisim
