// Multi-token prediction (DeepSeek-V3, Megatron's --mtp-num-layers): hand-derived parameter
// counts, the ops of one MTP depth, and where the extra work and memory land in the pipeline.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/model_costs.h"
#include "simulator/model_stats.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::gpt_model;
using testing_support::find_op;
using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

// Differences of sums of times: equal up to rounding.
void expect_close(double a, double b) { EXPECT_NEAR(a, b, 1e-9 * std::max(std::abs(a), std::abs(b))) << a << " vs " << b; }

ModelConfig with_mtp(ModelConfig m, int depths) {
  m.mtp_num_layers = depths;
  return m;
}

// DeepSeek-V3 with one MTP depth. By hand (h 7168, MLA, 256 experts of 2048, top-8, one shared
// expert of 2048, RMSNorm, V 129280):
//   MLA attention: h·1536 + 1536·128·192 + h·576 + 512·128·256 + 128·128·h + (1536 + 512) = 187,107,328
//   routed experts 256 · 3·h·2048 = 11,274,289,152; shared 3·h·2048 = 44,040,192; router h·256 = 1,835,008
//   layer norms 2h = 14,336                                   → one MoE layer 11,507,286,016
//   eh_proj 2h·h = 102,760,448, enorm + hnorm + final norm 3h = 21,504
//   → one MTP depth = 11,610,067,968 parameters (embedding and LM head shared with the main model).
// DeepSeek reports 671B main model + 14B MTP module (685B checkpoint); that 14B counts the copies of
// the embedding and output head the checkpoint stores with the MTP layer: 11.61 + 2·V·h = 13.46B.
TEST(MtpParams, DeepSeekV3OneDepthMatchesHandCount) {
  const ModelConfig base = shipped_model("deepseek-v3");
  EXPECT_EQ(base.mtp_num_layers, 0);  // the shipped model is the 671B main model
  const ModelStats s0 = model_stats(base, 4096);
  const ModelStats s1 = model_stats(with_mtp(base, 1), 4096);
  const double h = 7168, V = 129280;
  const double attention = h * 1536 + 1536.0 * 128 * 192 + h * 576 + 512.0 * 128 * 256 + 128.0 * 128 * h + 2048;
  EXPECT_DOUBLE_EQ(attention, 187107328.0);
  const double expert = 3 * h * 2048;
  const double moe_layer = attention + 256 * expert + expert + h * 256 + 2 * h;
  EXPECT_DOUBLE_EQ(moe_layer, 11507286016.0);
  const double depth = moe_layer + 2 * h * h + 3 * h;
  EXPECT_DOUBLE_EQ(depth, 11610067968.0);
  EXPECT_DOUBLE_EQ(s1.mtp_depth_params, depth);
  EXPECT_DOUBLE_EQ(s1.mtp_params, depth);
  EXPECT_DOUBLE_EQ(s1.total_params - s0.total_params, depth);
  EXPECT_NEAR(s1.total_params / 1e9, 671.0 + 11.61, 0.5);
  EXPECT_NEAR((depth + 2 * V * h) / 1e9, 14.0, 0.6);  // DeepSeek's "14B MTP module"
  // Active: 8 routed + shared expert, router, attention, norms, projection.
  const double active = attention + 8 * expert + expert + h * 256 + 2 * h + 2 * h * h + 3 * h;
  EXPECT_DOUBLE_EQ(active, 688100352.0);
  EXPECT_DOUBLE_EQ(s1.active_params - s0.active_params, active);
  EXPECT_DOUBLE_EQ(s1.mtp_active_params, active);
  // Model FLOPs keep Megatron's MFU convention (no MTP); the executed MTP work per token is
  // 6·(layer matmuls + eh_proj + LM head) + 6·s·a·(d_qk + d_v) for its one attention.
  EXPECT_DOUBLE_EQ(s1.model_flops_per_token, s0.model_flops_per_token);
  EXPECT_DOUBLE_EQ(s1.flops_6n_per_token, s0.flops_6n_per_token);
  const double matmul = (attention - 2048) + h * 256 + 8 * expert + expert + 2 * h * h;
  EXPECT_DOUBLE_EQ(matmul, 688062464.0);
  EXPECT_DOUBLE_EQ(s1.mtp_flops_per_token, 6 * (matmul + V * h) + 6.0 * 4096 * 128 * (192 + 128));
  EXPECT_DOUBLE_EQ(s1.mtp_flops_per_token, 10695081984.0);
  // Two depths: twice the module.
  EXPECT_DOUBLE_EQ(model_stats(with_mtp(base, 2), 4096).total_params - s0.total_params, 2 * depth);
}

TEST(MtpConfig, FieldParsesAndIsValidated) {
  const std::string path = std::string(CALISIM_CONFIG_DIR) + "/models/deepseek-v3.json";
  nlohmann::json doc = read_json_file(path);
  EXPECT_EQ(parse_model(doc, path, nullptr).mtp_num_layers, 0);
  doc["mtp_num_layers"] = 1;
  EXPECT_EQ(parse_model(doc, path, nullptr).mtp_num_layers, 1);
  doc["mtp_num_layers"] = -1;
  try {
    parse_model(doc, path, nullptr);
    ADD_FAILURE() << "negative mtp_num_layers accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "mtp_num_layers");
  }
  // Dense models take MTP too.
  nlohmann::json dense = read_json_file(std::string(CALISIM_CONFIG_DIR) + "/models/llama3-8b.json");
  dense["mtp_num_layers"] = 2;
  const ModelConfig m = parse_model(dense, "llama", nullptr);
  EXPECT_EQ(m.mtp_num_layers, 2);
  EXPECT_FALSE(m.mtp_layer_is_moe());
}

// Dense GPT (h 1024, 16 heads, 4h GeLU), s 1024, b 1, tp 2 with SP: one MTP depth's ops.
TEST(MtpOps, HandDerivedProjectionGatherLayerAndHead) {
  const ModelConfig m = with_mtp(gpt_model(1024, 16, 4, 32000), 1);
  const StrategyConfig st = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 2, "tp_size": 2, "enable_sequence_parallel": true})",
      m);
  ASSERT_TRUE(st.sequence_parallel);
  const ModelOps ops = build_model_ops(m, st, 8);
  const double T = 1024, h = 1024, t = 2, e = 2;
  ASSERT_EQ(ops.mtp_embedding.size(), 1u);
  EXPECT_STREQ(ops.mtp_embedding[0].name, "embedding");
  // Projection: [T, 2h] · [2h, h/t], input all-gathered from the SP shard, keeps the shard.
  const LayerOp* proj = find_op(ops.mtp_layer, "mtp_eh_proj");
  ASSERT_NE(proj, nullptr);
  EXPECT_DOUBLE_EQ(proj->fwd_flops(), 2 * T * 2 * h * (h / t));
  EXPECT_DOUBLE_EQ(proj->bwd_flops(), 2 * proj->fwd_flops());
  EXPECT_DOUBLE_EQ(proj->act_bytes, T / t * 2 * h * e);
  ASSERT_TRUE(proj->fwd_comm);
  EXPECT_EQ(proj->fwd_comm->op, CollectiveOp::all_gather);
  EXPECT_EQ(proj->fwd_comm->bytes, static_cast<std::int64_t>(T * 2 * h * e));
  // Its h/t-wide output is gathered over TP; under SP the scatter's backward all-gathers again.
  const LayerOp* gather = find_op(ops.mtp_layer, "mtp_eh_gather");
  ASSERT_NE(gather, nullptr);
  ASSERT_TRUE(gather->fwd_comm && gather->bwd_comm);
  EXPECT_EQ(gather->fwd_comm->op, CollectiveOp::all_gather);
  EXPECT_EQ(gather->fwd_comm->bytes, static_cast<std::int64_t>(T * h * e));
  EXPECT_EQ(gather->bwd_comm->bytes, static_cast<std::int64_t>(T * h * e));
  // Norms on the two SP shards, the concat keeps nothing, one full dense layer, the depth's norm.
  EXPECT_DOUBLE_EQ(find_op(ops.mtp_layer, "mtp_enorm")->act_bytes, T / t * h * e);
  EXPECT_DOUBLE_EQ(find_op(ops.mtp_layer, "mtp_hnorm")->act_bytes, T / t * h * e);
  EXPECT_DOUBLE_EQ(find_op(ops.mtp_layer, "mtp_concat")->act_bytes, 0.0);
  EXPECT_EQ(ops.mtp_layer.size(), ops.layer.size() + 6);
  EXPECT_STREQ(ops.mtp_layer.back().name, "mtp_final_norm");
  double layer_flops = 0, mtp_layer_flops = 0;
  for (const LayerOp& op : ops.layer) layer_flops += op.fwd_flops();
  for (const LayerOp& op : ops.mtp_layer) mtp_layer_flops += op.fwd_flops();
  EXPECT_DOUBLE_EQ(mtp_layer_flops - layer_flops, proj->fwd_flops());
  // The shared LM head and a second cross-entropy, as on the main head.
  ASSERT_EQ(ops.mtp_head.size(), 2u);
  EXPECT_DOUBLE_EQ(ops.mtp_head[0].fwd_flops(), ops.head[1].fwd_flops());
  EXPECT_DOUBLE_EQ(ops.mtp_head[1].act_bytes, ops.head[2].act_bytes);
  // Without MTP there is nothing.
  const ModelOps none = build_model_ops(gpt_model(1024, 16, 4, 32000), st, 8);
  EXPECT_TRUE(none.mtp_embedding.empty() && none.mtp_layer.empty() && none.mtp_head.empty());
}


TEST(MtpOps, LayerKindFollowsTheModel) {
  const ModelConfig moe = with_mtp(testing_support::small_moe(), 1);
  const StrategyConfig st =
      strategy_from_json(R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 2, "ep_size": 2})", moe);
  EXPECT_NE(find_op(build_model_ops(moe, st, 8).mtp_layer, "router"), nullptr);
  ModelConfig all_dense = moe;
  all_dense.dense_layers = all_dense.layer_num;
  EXPECT_FALSE(all_dense.mtp_layer_is_moe());
  const ModelOps ops = build_model_ops(all_dense, st, 8);
  EXPECT_EQ(find_op(ops.mtp_layer, "router"), nullptr);
  EXPECT_NE(find_op(ops.mtp_layer, "fc1"), nullptr);
}

// pp 4: the MTP depth lands on the last stage only. First stage: same times and memory (its DP
// communication gains the all-reduce of the shared embedding's gradient with the last stage).
TEST(MtpSimulate, LastStageGrowsFirstStageUnchanged) {
  const ModelConfig m0 = testing_support::small_moe();
  const ModelConfig m1 = with_mtp(m0, 1);
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const char* json = R"({"seq_len": 1024, "micro_batch_num": 8, "world_size": 8, "pp_size": 4, "ep_size": 2})";
  const StrategyConfig st = strategy_from_json(json, m0);
  const SimulationResult r0 = simulate(m0, st, sys, eff);
  const SimulationResult r1 = simulate(m1, st, sys, eff);
  const ModelCosts mc = cost_model(m1, st, sys, eff, false);
  ASSERT_GT(mc.mtp.fwd_s, 0);

  const StageReport &f0 = r0.stages.front(), &f1 = r1.stages.front();
  EXPECT_EQ(f1.mtp_layers, 0);
  EXPECT_DOUBLE_EQ(f1.fwd_s_per_micro_batch, f0.fwd_s_per_micro_batch);
  EXPECT_DOUBLE_EQ(f1.bwd_s_per_micro_batch, f0.bwd_s_per_micro_batch);
  EXPECT_DOUBLE_EQ(f1.params, f0.params);
  EXPECT_DOUBLE_EQ(f1.peak_mem_bytes, f0.peak_mem_bytes);
  EXPECT_GT(f1.dp_comm_s, f0.dp_comm_s);  // embedding-gradient all-reduce with the last stage

  const StageReport &l0 = r0.stages.back(), &l1 = r1.stages.back();
  EXPECT_EQ(l1.mtp_layers, 1);
  expect_close(l1.fwd_s_per_micro_batch - l0.fwd_s_per_micro_batch, mc.mtp.fwd_s);
  expect_close(l1.bwd_s_per_micro_batch - l0.bwd_s_per_micro_batch, mc.mtp.bwd_s);
  expect_close(l1.fwd_activation_cache_per_micro_batch_bytes - l0.fwd_activation_cache_per_micro_batch_bytes,
               mc.mtp.act_bytes);
  // Parameters on the last stage (tp 1, ep 2): one MoE layer (4 local experts), eh_proj 2h·h,
  // three norms, and the copy of the word embedding (V = 32000 is already a multiple of 128).
  const double h = 1024, attn = h * (8 + 16) * 128 + 8 * 128 * h;
  const double moe_layer = attn + 2 * h + h * 8 + 4 * 3 * h * 512;
  EXPECT_DOUBLE_EQ(l1.params - l0.params, moe_layer + 2 * h * h + 3 * h + 32000 * h);
  EXPECT_DOUBLE_EQ(l1.expert_params - l0.expert_params, 4 * 3 * h * 512);
  EXPECT_GT(l1.model_mem_bytes, l0.model_mem_bytes);
  EXPECT_GT(l1.peak_mem_bytes, l0.peak_mem_bytes);
  EXPECT_GT(r1.duration_time_per_iter_s, r0.duration_time_per_iter_s);
  // MFU keeps the model-FLOP convention; HFU adds the executed MTP FLOPs (no recompute here).
  EXPECT_DOUBLE_EQ(r1.stats.model_flops_per_token, r0.stats.model_flops_per_token);
  EXPECT_NEAR(r1.hfu / r1.mfu, (r1.stats.model_flops_per_token + r1.stats.mtp_flops_per_token) /
                                   r1.stats.model_flops_per_token, 1e-12);
}

// pp 1: everything on one stage, no embedding copy, no embedding all-reduce; D depths add D times
// the block. Full recompute checkpoints the MTP core too.
TEST(MtpSimulate, SingleStageAndRecompute) {
  const ModelConfig m0 = gpt_model(1024, 16, 4, 32000);
  const ModelConfig m2 = with_mtp(m0, 2);
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const StrategyConfig st = strategy_from_json(R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 1})", m0);
  const SimulationResult r0 = simulate(m0, st, sys, eff);
  const SimulationResult r2 = simulate(m2, st, sys, eff);
  const ModelCosts mc = cost_model(m2, st, sys, eff, false);
  ASSERT_EQ(r2.stages.size(), 1u);
  EXPECT_EQ(r2.stages[0].mtp_layers, 2);
  expect_close(r2.stages[0].fwd_s_per_micro_batch - r0.stages[0].fwd_s_per_micro_batch, 2 * mc.mtp.fwd_s);
  // GPT: LayerNorm (2h per norm), biases; tp 1. Per depth: dense layer + 2h·h + 3 LayerNorms.
  const double h = 1024;
  const double layer = 4 * h * h + 4 * h + 8 * h * h + 5 * h + 2 * 2 * h;
  EXPECT_DOUBLE_EQ(r2.stages[0].params - r0.stages[0].params, 2 * (layer + 2 * h * h + 3 * 2 * h));
  EXPECT_DOUBLE_EQ(r2.stats.total_params - r0.stats.total_params, 2 * (layer + 2 * h * h + 3 * 2 * h));
  EXPECT_DOUBLE_EQ(r2.stages[0].dp_comm_s, r0.stages[0].dp_comm_s);
  EXPECT_GT(r2.duration_time_per_iter_s, r0.duration_time_per_iter_s);

  const StrategyConfig rc = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 1, "enable_recompute": true,
          "recompute_granularity": "full_block", "recompute_layer_num": 1})",
      m0);
  const ModelCosts mrc = cost_model(m2, rc, sys, eff, false);
  EXPECT_GT(mrc.mtp.recompute_fwd_s, 0);
  EXPECT_LT(mrc.mtp.act_bytes_recomputed, mrc.mtp.act_bytes);
  const SimulationResult q0 = simulate(m0, rc, sys, eff);
  const SimulationResult q2 = simulate(m2, rc, sys, eff);
  expect_close(q2.stages[0].recompute_s_per_micro_batch - q0.stages[0].recompute_s_per_micro_batch,
               2 * mrc.mtp.recompute_fwd_s);
  expect_close(q2.stages[0].fwd_activation_cache_per_micro_batch_bytes -
                   q0.stages[0].fwd_activation_cache_per_micro_batch_bytes,
               2 * mrc.mtp.act_bytes_recomputed);
}

}  // namespace
}  // namespace calisim
