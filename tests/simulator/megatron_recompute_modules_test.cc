// Megatron-Core's recompute_modules on its TransformerEngine layer spec (layer_ops.h
// recompute_plan): which ops rerun and what they keep. "layernorm", "mla_up_proj" and "moe_act"
// discard their outputs (CheckpointWithoutOutput), so the ops that saved those outputs keep
// nothing of them; "layernorm" reaches only the norms that are modules of their own; "mlp"
// checkpoints a dense layer's MLP with its fused pre-MLP norm.
#include <gtest/gtest.h>

#include <string>

#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::strategy_from_json;

// ep 8 and grouped GEMMs for the MoE models; "" for the dense ones.
std::string strategy(const std::string& modules,
                     const std::string& extra = R"(, "ep_size": 8, "moe_grouped_gemm": true)") {
  return R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8,
             "recompute_granularity": "selective_recompute", "recompute_layer_num": 1,
             "megatron_recompute": true, "megatron_recompute_modules": )" +
         modules + extra + "}";
}

std::size_t index_of(const std::vector<LayerOp>& layer, const std::string& name) {
  for (std::size_t i = 0; i < layer.size(); ++i) {
    if (name == layer[i].name) return i;
  }
  ADD_FAILURE() << "no op " << name;
  return 0;
}

// The names of the ops a plan reruns.
std::string rerun_ops(const std::vector<LayerOp>& layer, const RecomputePlan& plan) {
  std::string out;
  for (std::size_t i = 0; i < layer.size(); ++i) {
    if (plan.rerun[i] > 0) out += std::string(out.empty() ? "" : ",") + layer[i].name;
  }
  return out;
}

TEST(MegatronRecomputeModules, LayernormReachesOnlyTheMoeLayersOwnPreMlpNorm) {
  const ModelConfig m = shipped_model("qwen3-30b-a3b");
  const StrategyConfig st = strategy_from_json(strategy(R"(["layernorm"])"), m);
  const ModelOps ops = build_model_ops(m, st, 8);
  const RecomputePlan plan = recompute_plan(ops.moe_layer, st);
  // The input norm is fused into the QKV projection (LayerNormLinear): not recomputed.
  EXPECT_EQ(rerun_ops(ops.moe_layer, plan), "post_attn_norm");
  const std::size_t norm = index_of(ops.moe_layer, "post_attn_norm");
  const std::size_t router = index_of(ops.moe_layer, "router");
  EXPECT_DOUBLE_EQ(plan.kept_bytes[norm], ops.moe_layer[norm].act_bytes);  // its input, the checkpoint's
  ASSERT_GT(ops.moe_layer[router].act_bytes, 0.0);
  EXPECT_DOUBLE_EQ(plan.kept_bytes[router], 0.0);  // the norm's output, discarded
  for (std::size_t i = 0; i < ops.moe_layer.size(); ++i) {
    if (i == router) continue;
    EXPECT_DOUBLE_EQ(plan.kept_bytes[i], ops.moe_layer[i].act_bytes) << ops.moe_layer[i].name;
  }
  // A dense GQA layer's norms are both fused: the module recomputes nothing there, which
  // Megatron accepts and simulate says.
  const ModelConfig dense = shipped_model("llama3-8b");
  const StrategyConfig dst = strategy_from_json(strategy(R"(["layernorm"])", ""), dense);
  const ModelOps dops = build_model_ops(dense, dst, 8);
  const RecomputePlan dplan = recompute_plan(dops.layer, dst);
  EXPECT_EQ(rerun_ops(dops.layer, dplan), "");
  for (std::size_t i = 0; i < dops.layer.size(); ++i) EXPECT_DOUBLE_EQ(dplan.kept_bytes[i], dops.layer[i].act_bytes);
  const SimulationResult res = testing_support::simulate_roofline(
      dense, strategy(R"(["layernorm"])", ""), testing_support::shipped_system("h100-sxm"));
  bool warned = false;
  for (const std::string& w : res.warnings) warned = warned || w.find("\"layernorm\" recomputes nothing") != std::string::npos;
  EXPECT_TRUE(warned);
}

// Megatron-Core's TransformerConfig refuses mla_up_proj without MLA and moe_act without grouped
// GEMMs; calisim does too. Modules that merely do nothing for a model are warnings.
TEST(MegatronRecomputeModules, WhatMegatronRefusesIsRefused) {
  const ModelConfig gqa_moe = shipped_model("qwen3-30b-a3b");
  const ModelConfig mla = shipped_model("deepseek-v3");
  const std::string up = testing_support::strategy_refusal(gqa_moe, strategy(R"(["mla_up_proj"])"));
  EXPECT_NE(up.find("needs MLA attention"), std::string::npos) << up;
  const std::string act = testing_support::strategy_refusal(
      gqa_moe, strategy(R"(["moe_act"])", R"(, "ep_size": 8, "moe_grouped_gemm": false)"));
  EXPECT_NE(act.find("moe_grouped_gemm"), std::string::npos) << act;
  EXPECT_EQ(testing_support::strategy_refusal(mla, strategy(R"(["mla_up_proj", "mlp", "layernorm", "moe_act"])")),
            "(accepted)");
  const SimulationResult res = testing_support::simulate_roofline(
      gqa_moe, strategy(R"(["mlp", "moe_act"])"), testing_support::shipped_system("h100-sxm"));
  bool warned = false;
  for (const std::string& w : res.warnings) warned = warned || w.find("\"mlp\" recomputes nothing") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(MegatronRecomputeModules, MoeActFreesTheSecondExpertGemmsInputAlsoUnderFp8) {
  const ModelConfig m = shipped_model("qwen3-30b-a3b");
  for (const char* extra : {"", R"(, "fp8": true)"}) {
    const StrategyConfig st = strategy_from_json(strategy(R"(["moe_act"])", std::string(R"(, "ep_size": 8, "moe_grouped_gemm": true)") + extra), m);
    const ModelOps ops = build_model_ops(m, st, 8);
    const RecomputePlan plan = recompute_plan(ops.moe_layer, st);
    EXPECT_EQ(rerun_ops(ops.moe_layer, plan), "expert_activation") << extra;
    const std::size_t act = index_of(ops.moe_layer, "expert_activation");
    const std::size_t fc2 = index_of(ops.moe_layer, "expert_fc2");
    EXPECT_DOUBLE_EQ(plan.kept_bytes[act], ops.moe_layer[act].act_bytes) << extra;  // FC1's output
    ASSERT_GT(ops.moe_layer[fc2].act_bytes, 0.0);
    EXPECT_DOUBLE_EQ(plan.kept_bytes[fc2], 0.0) << extra;
  }
}

TEST(MegatronRecomputeModules, MlaUpProjFreesTheAttentionsQkvAndKeepsTheCompressedInputs) {
  const ModelConfig m = shipped_model("deepseek-v3");
  const StrategyConfig st = strategy_from_json(strategy(R"(["mla_up_proj"])"), m);
  const ModelOps ops = build_model_ops(m, st, 8);
  for (const std::vector<LayerOp>* layer : {&ops.layer, &ops.moe_layer}) {
    const RecomputePlan plan = recompute_plan(*layer, st);
    EXPECT_EQ(rerun_ops(*layer, plan), "q_norm,kv_norm,q_up_proj,kv_up_proj,rope");
    for (const char* name : {"q_norm", "kv_norm"}) {
      const std::size_t i = index_of(*layer, name);
      EXPECT_GT(plan.kept_bytes[i], 0.0);
      EXPECT_DOUBLE_EQ(plan.kept_bytes[i], (*layer)[i].act_bytes) << name;
    }
    for (const char* name : {"q_up_proj", "kv_up_proj", "rope"}) EXPECT_DOUBLE_EQ(plan.kept_bytes[index_of(*layer, name)], 0.0);
    // Core attention keeps only its fp32 softmax statistics: T x local heads x 4 bytes.
    const std::size_t core = index_of(*layer, "core_attention");
    const double stats = 4096.0 * m.head_num * 4.0;
    EXPECT_DOUBLE_EQ(plan.kept_bytes[core], stats);
    EXPECT_GT((*layer)[core].act_bytes, 100 * stats);
  }
}

TEST(MegatronRecomputeModules, MlaLayernormReachesTheInputNormAndFreesTheDownProjectionsInputs) {
  const ModelConfig m = shipped_model("deepseek-v3");
  const StrategyConfig st = strategy_from_json(strategy(R"(["layernorm"])"), m);
  const ModelOps ops = build_model_ops(m, st, 8);
  const RecomputePlan dense = recompute_plan(ops.layer, st);
  EXPECT_EQ(rerun_ops(ops.layer, dense), "input_norm");  // the dense MLP's norm is fused into FC1
  const RecomputePlan moe = recompute_plan(ops.moe_layer, st);
  EXPECT_EQ(rerun_ops(ops.moe_layer, moe), "input_norm,post_attn_norm");
  for (const char* name : {"q_down_proj", "kv_down_proj", "router", "shared_fc1"}) {
    EXPECT_DOUBLE_EQ(moe.kept_bytes[index_of(ops.moe_layer, name)], 0.0) << name;
  }
}

TEST(MegatronRecomputeModules, MlpCheckpointsTheDenseMlpWithItsFusedNorm) {
  const ModelConfig m = shipped_model("llama3-8b");
  const StrategyConfig st = strategy_from_json(strategy(R"(["mlp"])", ""), m);
  const ModelOps ops = build_model_ops(m, st, 8);
  const RecomputePlan plan = recompute_plan(ops.layer, st);
  EXPECT_EQ(rerun_ops(ops.layer, plan), "post_attn_norm,fc1,activation,fc2");
  // The checkpoint keeps its input, the residual stream the norm reads; FC1's input (the norm's
  // output) and the activation's are not kept.
  const std::size_t norm = index_of(ops.layer, "post_attn_norm");
  EXPECT_DOUBLE_EQ(plan.kept_bytes[norm], ops.layer[norm].act_bytes);
  for (const char* name : {"fc1", "activation", "fc2"}) EXPECT_DOUBLE_EQ(plan.kept_bytes[index_of(ops.layer, name)], 0.0);
}

// The per-op report says what each op keeps in the recomputed layers, and the stage's activation
// memory is the sum of those: the router keeps nothing under "layernorm".
TEST(MegatronRecomputeModules, PerOpReportCarriesTheKeptBytes) {
  const ModelConfig m = shipped_model("qwen3-30b-a3b");
  const std::string js =
      R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8, "ep_size": 8,
          "moe_grouped_gemm": true, "recompute_granularity": "selective_recompute", "recompute_layer_num": 48, "megatron_recompute": true,
          "megatron_recompute_modules": ["layernorm", "moe_act"]})";
  const StrategyConfig st = strategy_from_json(js, m);
  const SystemConfig sys = testing_support::shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const SimulationResult res = simulate(m, st, sys, eff);
  const OpReport* router = nullptr;
  const OpReport* fc2 = nullptr;
  for (const OpReport& o : res.ops) {
    if (o.scope == "moe_layer" && o.name == "router") router = &o;
    if (o.scope == "moe_layer" && o.name == "expert_fc2") fc2 = &o;
  }
  ASSERT_NE(router, nullptr);
  ASSERT_NE(fc2, nullptr);
  EXPECT_GT(router->act_bytes, 0.0);
  EXPECT_DOUBLE_EQ(router->act_bytes_recomputed, 0.0);
  EXPECT_FALSE(router->recomputed);  // nothing of it reruns; its saved input is what goes
  EXPECT_DOUBLE_EQ(fc2->act_bytes_recomputed, 0.0);
  // Every layer recomputes: the stage's activations shrink by exactly those copies per layer.
  const StrategyConfig none = strategy_from_json(
      R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8, "ep_size": 8,
          "moe_grouped_gemm": true})", m);
  const SimulationResult base = simulate(m, none, sys, eff);
  const double freed = (router->act_bytes + fc2->act_bytes) * m.layer_num;
  EXPECT_NEAR(base.stages[0].fwd_activation_cache_per_micro_batch_bytes -
                  res.stages[0].fwd_activation_cache_per_micro_batch_bytes,
              freed, 1e-6 * freed);
}

TEST(MegatronRecomputeModules, SimuMaxSwitchesAreRefusedBesideTheModules) {
  const ModelConfig m = shipped_model("qwen3-30b-a3b");
  EXPECT_NE(testing_support::strategy_refusal(m, strategy(R"(["moe_act"])", R"(, "ep_size": 8, "moe_grouped_gemm": true, "recompute_variance": true)"))
                .find("recompute_variance"),
            std::string::npos);
}

}  // namespace
}  // namespace calisim
