// Sliding-window attention with sinks (GPT-OSS): the model fields and their errors, the kernel's
// executed work at tile granularity, the model-FLOP count, how windowed and full layers mix in
// the layer cost, context-parallel refusals and an end-to-end GPT-OSS 120B simulation.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "simulator/attention_shape.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/model_costs.h"
#include "simulator/model_stats.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::simulate_roofline;
using testing_support::strategy_from_json;

const std::string kModelPath = std::string(CALISIM_CONFIG_DIR) + "/models/gpt-oss-120b.json";

const LayerOp& core_attention(const std::vector<LayerOp>& ops) {
  auto it = std::find_if(ops.begin(), ops.end(), [](const LayerOp& o) { return std::string(o.name) == "core_attention"; });
  EXPECT_NE(it, ops.end());
  return *it;
}

// The field path of the InputError parse_model throws for doc ("" when it accepts the file).
std::string error_field(const nlohmann::json& doc) {
  try {
    parse_model(doc, kModelPath, nullptr);
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), kModelPath);
    return e.where();
  }
  return "";
}

const std::string kStrategy = R"({"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 512,
  "world_size": 64, "tp_size": 1, "pp_size": 4, "ep_size": 8, "zero_state": 1, "use_flash_sdp": true})";

TEST(SlidingWindowConfig, GptOss120bAlternatesStartingWithAWindowedLayer) {
  const ModelConfig m = shipped_model("gpt-oss-120b");
  EXPECT_EQ(m.attention_window_tokens, 128);
  EXPECT_TRUE(m.attention_sinks);
  ASSERT_EQ(m.window_layers.size(), 36u);
  EXPECT_TRUE(m.window_layers[0]);   // Megatron layer_number 1: 1 % 2 != 0
  EXPECT_FALSE(m.window_layers[1]);  // layer_number 2: full attention
  EXPECT_TRUE(m.window_layers[34]);
  EXPECT_FALSE(m.window_layers[35]);
  EXPECT_EQ(m.windowed_layers_in(0, 36), 18);
  EXPECT_EQ(m.windowed_layers_in(0, 9), 5);  // a 9-layer pipeline stage holds 5 windowed layers
  EXPECT_TRUE(m.add_bias_linear && m.use_swiglu && m.is_moe);
  EXPECT_EQ(shipped_model("gpt-oss-20b").windowed_layers_in(0, 24), 12);
}

TEST(SlidingWindowConfig, ExplicitLayerListAndDefaults) {
  nlohmann::json doc = read_json_file(kModelPath);
  doc.erase("window_attn_skip_freq");
  doc["attention_layer_types"] = nlohmann::json::array();
  for (int l = 0; l < 36; ++l) doc["attention_layer_types"].push_back(l < 3 ? "full_attention" : "sliding_attention");
  const ModelConfig listed = parse_model(doc, kModelPath, nullptr);
  EXPECT_FALSE(listed.window_layers[2]);
  EXPECT_TRUE(listed.window_layers[3]);
  EXPECT_EQ(listed.windowed_layers_in(0, 36), 33);
  doc.erase("attention_layer_types");  // a window without a pattern: every layer (Megatron's None)
  EXPECT_EQ(parse_model(doc, kModelPath, nullptr).windowed_layers_in(0, 36), 36);
  // Every other shipped model keeps full attention without sinks.
  for (const auto& f : std::filesystem::directory_iterator(std::string(CALISIM_CONFIG_DIR) + "/models")) {
    const std::string name = f.path().stem().string();
    if (name.rfind("gpt-oss", 0) == 0) continue;
    const ModelConfig m = shipped_model(name);
    EXPECT_EQ(m.attention_window_tokens, 0) << name;
    EXPECT_FALSE(m.attention_sinks) << name;
    EXPECT_TRUE(m.window_layers.empty()) << name;
  }
}

TEST(SlidingWindowConfig, BadFieldsNameFileAndPath) {
  const nlohmann::json good = read_json_file(kModelPath);
  EXPECT_EQ(error_field(good), "");
  nlohmann::json d = good;
  d["window_attn_skip_freq"] = 0;
  EXPECT_EQ(error_field(d), "window_attn_skip_freq");
  d = good;
  d["attention_window_tokens"] = -1;
  EXPECT_EQ(error_field(d), "attention_window_tokens");
  d = good;
  d["attention_window_tokens"] = 0;  // a pattern without a window
  EXPECT_EQ(error_field(d), "window_attn_skip_freq");
  d = good;
  d["attention_layer_types"] = {"sliding_attention", "full_attention"};  // both patterns given
  EXPECT_EQ(error_field(d), "attention_layer_types");
  d.erase("window_attn_skip_freq");  // wrong length
  EXPECT_EQ(error_field(d), "attention_layer_types");
  d["attention_layer_types"] = nlohmann::json::array();
  for (int l = 0; l < 36; ++l) d["attention_layer_types"].push_back(l == 1 ? "local" : "full_attention");
  EXPECT_EQ(error_field(d), "attention_layer_types[1]");
  d = good;
  d["attention_sinks"] = "yes";
  EXPECT_EQ(error_field(d), "attention_sinks");
}

// By hand, tile 128. seq 4096, W 128: query block 0 computes its diagonal block only, blocks
// 1..31 the diagonal and the previous one -> 1 + 31*2 = 63 KV blocks, 63*128/32 = 252 keys per
// query block. seq 1024, W 300: blocks 0..3 start at key 0 (1, 2, 3, 4 blocks), blocks 4..7 at
// keys 212, 340, 468, 596 (blocks 1..4 up to the diagonal: 4 each) -> 26 blocks, 26*128/8 = 416.
TEST(SlidingWindowKernel, ExecutedBlocksAtTileGranularity) {
  const WindowTiles a = window_tiles(4096, 128, 128);
  EXPECT_EQ(a.query_blocks, 32);
  EXPECT_EQ(a.kv_blocks, 63);
  EXPECT_EQ(a.kv_tokens, 252);
  const WindowTiles b = window_tiles(1024, 300, 128);
  EXPECT_EQ(b.query_blocks, 8);
  EXPECT_EQ(b.kv_blocks, 26);
  EXPECT_EQ(b.kv_tokens, 416);
  // Megatron-Bridge's unmasked pairs: 128*129/2 + (4096 - 128)*128 = 8256 + 507904.
  EXPECT_DOUBLE_EQ(window_mask_pairs(4096, 128), 516160.0);
  EXPECT_DOUBLE_EQ(window_mask_pairs(100, 128), 5050.0);  // the window covers the causal prefix
}

// GPT-OSS 120B, tp 1, b 1, s 4096: 64 query heads of 64.
//   full causal forward  2*64*4096*4096*(64+64)/2        = 137,438,953,472 FLOPs
//   windowed forward     2*(32 query blocks)*64*128*252*128 = 16,911,433,728 FLOPs (252/2048 of it)
TEST(SlidingWindowKernel, WindowedLayerFlopsAgainstFullLayer) {
  const ModelConfig win = shipped_model("gpt-oss-120b");
  ModelConfig full = win;
  full.attention_window_tokens = 0;
  const StrategyConfig st = strategy_from_json(kStrategy, win);
  const ModelOps win_ops = build_model_ops(win, st, 8), full_ops = build_model_ops(full, st, 8);
  const LayerOp& w = core_attention(win_ops.moe_layer);
  const LayerOp& f = core_attention(full_ops.moe_layer);
  EXPECT_DOUBLE_EQ(f.fwd_flops(), 137438953472.0);
  EXPECT_DOUBLE_EQ(w.fwd_flops(), 16911433728.0);
  EXPECT_DOUBLE_EQ(w.bwd_flops(), 2.5 * 16911433728.0);
  EXPECT_EQ(w.attn_fwd.batch, 32);
  EXPECT_EQ(w.attn_fwd.seq_q, 128);
  EXPECT_EQ(w.attn_fwd.seq_kv, 252);
  EXPECT_FALSE(w.attn_fwd.causal);
  EXPECT_EQ(w.attn_fwd.heads_kv, 8);
  // The window does not shrink what training keeps for the backward pass.
  EXPECT_DOUBLE_EQ(w.act_bytes, f.act_bytes);
  // Short KV loops run below the reference efficiency (curves clamped at 512, head dim 64).
  EXPECT_LT(attention_shape_factor(w.attn_fwd), attention_shape_factor(f.attn_fwd) / 0.89 + 1e-12);
}

// Model FLOPs per token, attention term (non-causal convention), s 4096, a 64, d_qk + d_v 128:
//   full layer     6*4096*64*128                    = 201,326,592
//   windowed layer 6*64*128*2*516160/4096           =  12,387,840
//   18 of each: 18*(201,326,592 + 12,387,840)       = 3,846,859,776
TEST(SlidingWindowFlops, ModelFlopsCountUnmaskedPairs) {
  const ModelStats s = model_stats(shipped_model("gpt-oss-120b"), 4096);
  EXPECT_DOUBLE_EQ(s.model_flops_per_token - s.flops_6n_per_token, 3846859776.0);
  EXPECT_DOUBLE_EQ(s.model_flops_per_token_causal - s.flops_6n_per_token, 3846859776.0 / 2);
}

TEST(SlidingWindowCost, LayerCostIsTheMeanOfWindowedAndFullLayers) {
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const ModelConfig mixed = shipped_model("gpt-oss-120b");
  ModelConfig all = mixed, none = mixed;
  all.window_layers.assign(36, true);
  none.attention_window_tokens = 0;
  const StrategyConfig st = strategy_from_json(kStrategy, mixed);
  const ModelCosts m = cost_model(mixed, st, sys, eff, true);
  const ModelCosts a = cost_model(all, st, sys, eff, false);
  const ModelCosts n = cost_model(none, st, sys, eff, false);
  EXPECT_LT(a.moe_layer.fwd_s, n.moe_layer.fwd_s);
  EXPECT_NEAR(m.moe_layer.fwd_s, 0.5 * (a.moe_layer.fwd_s + n.moe_layer.fwd_s), 1e-12);
  EXPECT_NEAR(m.moe_layer.bwd_s, 0.5 * (a.moe_layer.bwd_s + n.moe_layer.bwd_s), 1e-12);
  EXPECT_NEAR(m.moe_layer.fwd_flops, 0.5 * (a.moe_layer.fwd_flops + n.moe_layer.fwd_flops), 1.0);
  EXPECT_DOUBLE_EQ(m.moe_layer.act_bytes, n.moe_layer.act_bytes);
  // The per-op report shows the windowed kernel under its own scope.
  EXPECT_TRUE(std::any_of(m.ops.begin(), m.ops.end(), [](const OpReport& o) {
    return o.scope == "moe_layer_window" && o.name == "core_attention";
  }));
}

TEST(SlidingWindowCost, RingContextParallelIsRefusedUlyssesIsNot) {
  const ModelConfig m = shipped_model("gpt-oss-120b");
  const std::string base = R"({"seq_len": 8192, "micro_batch_size": 1, "global_batch_size": 64, "world_size": 64,
    "tp_size": 1, "pp_size": 1, "ep_size": 8, "cp_size": 2, "use_flash_sdp": true, "cp_comm_type": )";
  try {
    strategy_from_json(base + "\"p2p\"}", m);
    ADD_FAILURE() << "ring CP with a window accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "cp_comm_type");
  }
  const StrategyConfig a2a = strategy_from_json(base + "\"a2a\"}", m);
  const ModelOps ops = build_model_ops(m, a2a, 8);
  const LayerOp& core = core_attention(ops.moe_layer);
  EXPECT_EQ(core.attn_fwd.heads_q, 32);                // Ulysses: a/c heads ...
  EXPECT_EQ(core.attn_fwd.batch, 8192 / 128);          // ... over the whole sequence's query blocks
}

TEST(SlidingWindowSimulate, GptOss120bFitsOn64H100sNotOn8) {
  const ModelConfig m = shipped_model("gpt-oss-120b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult r = simulate_roofline(m, kStrategy, sys);
  EXPECT_TRUE(r.fits_in_memory);
  ModelConfig full = m;
  full.attention_window_tokens = 0;
  EXPECT_LT(r.duration_time_per_iter_s, simulate_roofline(full, kStrategy, sys).duration_time_per_iter_s);
  const SimulationResult eight = simulate_roofline(m, R"({"seq_len": 4096, "micro_batch_size": 1,
    "global_batch_size": 64, "world_size": 8, "tp_size": 1, "pp_size": 1, "ep_size": 8, "zero_state": 1,
    "use_flash_sdp": true})", sys);
  EXPECT_FALSE(eight.fits_in_memory);  // 117 B parameters with Adam state on 8 x 80 GB
}

}  // namespace
}  // namespace calisim
