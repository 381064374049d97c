// calibration/run_mapping.cc on the shipped Megatron-Bridge rows: DeepSeek-V3's recipe pipeline
// layouts and Qwen3-235B's expert TP, both printed as inferred with their source.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "calibration/measured_runs.h"
#include "calibration/run_mapping.h"
#include "core/error.h"
#include "simulator/config_loader.h"

namespace calisim::calibration {
namespace {

const ModelLoader kNoModels = [](const std::string& name) -> nlohmann::json {
  throw InputError(name, "", "no shipped models in this test");
};

MeasuredRun shipped_row(const std::string& id, const std::string& file = "measured_runs.csv") {
  const auto runs = read_measured_runs(std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/" + file);
  const auto it = std::find_if(runs.begin(), runs.end(), [&](const MeasuredRun& r) { return r.run_id == id; });
  if (it == runs.end()) throw std::runtime_error("no row " + id);
  return *it;
}

bool contains(const std::vector<std::string>& v, const std::string& needle) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

// The mapped documents load: the layout passes the loader's checks against the mapped model.
StrategyConfig load(const MappedRun& m) {
  const ModelConfig model = parse_model(m.model, "model", nullptr);
  StrategyConfig st = parse_strategy(m.strategy, "strategy");
  validate_layout(model, st, "strategy", "model");
  return st;
}

// R0144: B200, pp 16 without interleaving, with MTP: the recipe's (16, 1) layout with "m".
TEST(RunMappingLayout, DeepSeekV3WithMtpUsesTheRecipeLayout) {
  const MappedRun m = map_run(shipped_row("R0144"), kNoModels);
  ASSERT_TRUE(m.ok) << m.reason;
  EXPECT_EQ(m.strategy.at("pipeline_layout"), "Et*4|(t*4|)*14tmL");
  EXPECT_EQ(m.model.at("mtp_num_layers"), 1);
  EXPECT_TRUE(contains(m.inferred, "deepseek_v3.py recipe layout_map"));
  EXPECT_FALSE(m.strategy.contains("account_for_loss_in_pipeline_split"));
  const StrategyConfig st = load(m);
  ASSERT_EQ(st.layers_per_chunk.size(), 16u);
  EXPECT_EQ(st.layers_per_chunk.front(), 4);
  EXPECT_EQ(st.layers_per_chunk.back(), 1);
}

// R0135: GB200, pp 4 · vpp 4, without MTP: the recipe's (4, 4) layout, no "m".
TEST(RunMappingLayout, DeepSeekV3WithoutMtpDropsTheMtpLayer) {
  const MappedRun m = map_run(shipped_row("R0135"), kNoModels);
  ASSERT_TRUE(m.ok) << m.reason;
  EXPECT_EQ(m.strategy.at("pipeline_layout"), "Et*4|(t*4|)*14tL");
  EXPECT_FALSE(m.model.contains("mtp_num_layers"));
  EXPECT_EQ(load(m).layers_per_chunk.size(), 16u);
}

// R0126: GB300, pp 2 · vpp 4: no published layout, so not simulated, with the reason.
TEST(RunMappingLayout, UncoveredPipelineStaysNotSimulated) {
  const MappedRun m = map_run(shipped_row("R0126"), kNoModels);
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.reason.find("pp 2 · vpp 4"), std::string::npos) << m.reason;
  EXPECT_NE(m.reason.find("no pipeline layout"), std::string::npos) << m.reason;
}

// B0015 (Megatron-Bridge 26.02, GB300, pp 2 · vpp 8): the GB300 preset's own pp_layout, the same 16
// chunks of four layers as (16, 1); a row without MTP drops the "m".
TEST(RunMappingLayout, DeepSeekV3Pp2Vpp8TakesTheGb300PresetLayout) {
  const MappedRun m = map_run(shipped_row("B0015", "megatron_bridge_archive.csv"), kNoModels);
  ASSERT_TRUE(m.ok) << m.reason;
  EXPECT_EQ(m.strategy.at("pipeline_layout"), "Et*4|(t*4|)*14tL");
  EXPECT_TRUE(contains(m.inferred, "GB300 preset"));
  EXPECT_EQ(load(m).layers_per_chunk.size(), 16u);
}

// R0153: Qwen3-235B on 256 H100s, tp 2 pp 8 ep 32 with etp unstated: Megatron's default etp = tp
// needs ep·etp·pp = 512 GPUs; Bridge's performance config sets expert_tensor_parallel_size 1.
TEST(RunMappingLayout, Qwen3BridgeRowTakesTheConfigsExpertTp) {
  const MappedRun m = map_run(shipped_row("R0153"), kNoModels);
  ASSERT_TRUE(m.ok) << m.reason;
  EXPECT_EQ(m.strategy.at("etp_size"), 1);
  EXPECT_TRUE(contains(m.inferred, "etp 1 (Megatron-Bridge performance config"));
  const StrategyConfig st = load(m);
  EXPECT_EQ(st.edp_size, 256 / (32 * 1 * 8));
}

// DeepSeek-V3 rows whose layout is a Bridge performance preset's take what it recomputes (and its
// CUDA-graph scopes); a row no preset matches (R0136: GB200 FP8-MX pp 8 vpp 4 ep 32) keeps none.
TEST(RunMappingLayout, DeepSeekV3RowsTakeTheirPresetsRecompute) {
  const MappedRun gb200 = map_run(shipped_row("R0135"), kNoModels);  // GB200 BF16 pp 4 vpp 4 ep 64
  ASSERT_TRUE(gb200.ok) << gb200.reason;
  EXPECT_EQ(gb200.strategy.at("megatron_recompute_modules"), nlohmann::json::array({"mla_up_proj"}));
  EXPECT_EQ(gb200.strategy.at("cuda_graph_scope"), nlohmann::json::array({"attn", "moe_router", "moe_preprocess"}));
  EXPECT_TRUE(contains(gb200.inferred, "recompute of mla_up_proj, CUDA graphs on attn"));
  EXPECT_EQ(load(gb200).megatron_recompute_modules, kRecomputeMlaUpProj);
  const MappedRun b200 = map_run(shipped_row("R0144"), kNoModels);  // B200 pp 16 ep 8
  ASSERT_TRUE(b200.ok) << b200.reason;
  EXPECT_EQ(b200.strategy.at("megatron_recompute_modules"), nlohmann::json::array({"mla_up_proj"}));
  EXPECT_FALSE(b200.strategy.contains("cuda_graph_scope"));
  const MappedRun other = map_run(shipped_row("R0136"), kNoModels);
  ASSERT_TRUE(other.ok) << other.reason;
  EXPECT_FALSE(other.strategy.contains("megatron_recompute"));
}

// The presets' token dispatcher: GB200 HybridEP (R0135), H100 1024 GPUs DeepEP with its recompute
// of mla_up_proj and the dense MLP (B0058), B200 and token-dropping rows the all-to-all dispatcher
// (R0144; B0050), each said in the inferred settings, and the mapped strategies load.
TEST(RunMappingLayout, DeepSeekV3PresetsFlexDispatcher) {
  const MappedRun gb200 = map_run(shipped_row("R0135"), kNoModels);
  ASSERT_TRUE(gb200.ok) << gb200.reason;
  EXPECT_EQ(gb200.strategy.at("moe_token_dispatcher_type"), "flex");
  EXPECT_EQ(gb200.strategy.at("moe_flex_dispatcher_backend"), "hybridep");
  EXPECT_TRUE(contains(gb200.inferred, "flex dispatcher over HybridEP"));
  EXPECT_EQ(load(gb200).flex_backend, FlexBackend::hybridep);
  const MappedRun h100 = map_run(shipped_row("B0058", "megatron_bridge_archive.csv"), kNoModels);
  ASSERT_TRUE(h100.ok) << h100.reason;
  EXPECT_EQ(h100.strategy.at("moe_flex_dispatcher_backend"), "deepep");
  EXPECT_EQ(h100.strategy.at("megatron_recompute_modules"), nlohmann::json::array({"mla_up_proj", "mlp"}));
  EXPECT_TRUE(contains(h100.inferred, "flex dispatcher over DeepEP"));
  const StrategyConfig st = load(h100);
  EXPECT_EQ(st.moe_dispatcher, MoeDispatcher::flex);
  EXPECT_EQ(st.megatron_recompute_modules, kRecomputeMlaUpProj | kRecomputeMlp);
  const MappedRun b200 = map_run(shipped_row("R0144"), kNoModels);
  ASSERT_TRUE(b200.ok) << b200.reason;
  EXPECT_FALSE(b200.strategy.contains("moe_token_dispatcher_type"));
  EXPECT_TRUE(contains(b200.inferred, "applied on GB200 only by the first Bridge helper versions"));
  const MappedRun drop = map_run(shipped_row("B0050", "megatron_bridge_archive.csv"), kNoModels);
  ASSERT_TRUE(drop.ok) << drop.reason;
  EXPECT_FALSE(drop.strategy.contains("moe_token_dispatcher_type"));
}

// B0038 (Llama 3.1 405B, GB200, FP8-CS, tp 2, Megatron-FSDP over 128 GPUs): the Bridge preset of
// that layout offloads 92 layers' activations, which makes the row fit; a 405B row at another
// layout (B0010: tp 2 pp 8 cp 2 on GB300) takes no offload.
TEST(RunMappingLayout, Llama405bFsdpPresetOffloads) {
  const MappedRun m = map_run(shipped_row("B0038", "megatron_bridge_archive.csv"), kNoModels);
  ASSERT_TRUE(m.ok) << m.reason;
  EXPECT_EQ(m.strategy.value("cpu_offloading_num_layers", 0), 92);
  EXPECT_TRUE(contains(m.inferred, "Megatron-Bridge Llama 3.1 405B gb200 preset"));
  EXPECT_EQ(load(m).cpu_offloading_num_layers, 92);
  const MappedRun other = map_run(shipped_row("B0010", "megatron_bridge_archive.csv"), kNoModels);
  ASSERT_TRUE(other.ok) << other.reason;
  EXPECT_FALSE(other.strategy.contains("cpu_offloading_num_layers"));
}

// Qwen3-235B on H100 (R0153): the Bridge preset of that exact layout overlaps the EP all-to-all.
TEST(RunMappingLayout, Qwen3H100RowOverlapsTheExpertAllToAll) {
  const MappedRun m = map_run(shipped_row("R0153"), kNoModels);
  ASSERT_TRUE(m.ok) << m.reason;
  EXPECT_EQ(m.strategy.at("overlap_moe_expert_parallel_comm"), true);
  EXPECT_TRUE(contains(m.inferred, "moe_a2a_overlap=True"));
  EXPECT_TRUE(load(m).overlap_moe_expert_parallel_comm);
  const MappedRun b200 = map_run(shipped_row("R0147"), kNoModels);  // B200 presets: moe_a2a_overlap=False
  ASSERT_TRUE(b200.ok) << b200.reason;
  EXPECT_FALSE(b200.strategy.contains("overlap_moe_expert_parallel_comm"));
}

// GPT-OSS 120B: the Bridge presets recompute the norms and the experts' activation on H100, B200
// and GB200 (recompute_modules ["layernorm", "moe_act"]); the GB300 ones use CUDA graphs instead.
TEST(RunMappingLayout, GptOssBridgeRowsRecomputeAsThePresetsDo) {
  for (const char* id : {"R0151", "R0145", "R0137"}) {  // H100, B200, GB200
    const MappedRun m = map_run(shipped_row(id), kNoModels);
    ASSERT_TRUE(m.ok) << id << ": " << m.reason;
    EXPECT_EQ(m.strategy.at("megatron_recompute"), true) << id;
    EXPECT_EQ(m.strategy.at("megatron_recompute_modules"), nlohmann::json::array({"layernorm", "moe_act"})) << id;
    EXPECT_TRUE(contains(m.inferred, "recompute of layernorm and moe_act")) << id;
    const StrategyConfig st = load(m);
    EXPECT_EQ(st.megatron_recompute_modules, kRecomputeLayernorm | kRecomputeMoeAct) << id;
  }
  const MappedRun gb300 = map_run(shipped_row("R0128"), kNoModels);
  ASSERT_TRUE(gb300.ok) << gb300.reason;
  EXPECT_FALSE(gb300.strategy.contains("megatron_recompute"));
  EXPECT_TRUE(contains(gb300.inferred, "no activation recompute"));
}

}  // namespace
}  // namespace calisim::calibration
