// Framework-version conventions of MoE rows (router probabilities sent with the tokens from
// Megatron-Core 0.14 on) and the check that a row's batch columns agree with each other.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "calibration/measured_runs.h"
#include "calibration/run_mapping.h"
#include "core/error.h"
#include "simulator/config_loader.h"

namespace calisim::calibration {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& needle) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

// A Qwen3-30B-A3B row (R0152's shape: 48 layers, 128 experts, top-8) on 16 H100s, tp 1 pp 2 ep 8,
// with the framework, its release and the gradient-accumulation column varied.
MappedRun map_any(const std::string& framework, const std::string& version, const std::string& grad_accum,
                  const std::string& precision = "BF16", const std::string& model = "Qwen3_30B_a3B",
                  const std::string& token_policy = "") {
  const std::string csv =
      "run_id,source,model,model_class,num_layers,hidden_size,ffn_hidden_size,num_attention_heads,num_kv_heads,"
      "head_dim,vocab_size,seq_len,activation,attention_type,moe_num_experts,moe_topk,moe_ffn_hidden_size,"
      "moe_shared_expert_ffn_hidden_size,moe_first_k_dense_layers,moe_token_policy,gpu_type,num_gpus,framework,"
      "framework_version,precision,tp,pp,vpp,cp,ep,fsdp,micro_batch_size,global_batch_size,grad_accum,"
      "tokens_per_sec_per_gpu,notes\n"
      "R1,perf summary," + model + ",moe,48,2048,,32,4,128,151936,4096,swiglu,gqa,128,8,768,0,0," + token_policy +
      ",H100-SXM5-80GB,16," + framework + "," + version + "," + precision + ",1,2,,1,8,0,2,512," + grad_accum +
      ",5000,\n";
  const auto runs = parse_measured_runs(csv, "t.csv");
  return map_run(runs.at(0), [](const std::string& name) -> nlohmann::json {
    throw InputError(name, "", "no shipped models in this test");
  });
}

MappedRun map_row(const std::string& framework, const std::string& version, const std::string& grad_accum) {
  MappedRun m = map_any(framework, version, grad_accum);
  EXPECT_TRUE(m.ok) << m.reason;
  return m;
}

bool probs_dispatched(const MappedRun& m) { return m.strategy.value("dispatch_probs", false); }

TEST(RunMapping, RouterProbabilitiesTravelWithTokensFromMegatronCore014) {
  const MappedRun bridge = map_row("Megatron-Bridge (Megatron-Core)", "25.11", "");
  EXPECT_TRUE(probs_dispatched(bridge));
  EXPECT_TRUE(contains(bridge.inferred, "Megatron-Core 0.14 and later"));
  EXPECT_TRUE(probs_dispatched(map_row("Megatron-Bridge (Megatron-Core)", "", "")));  // Bridge needs 0.14
  EXPECT_TRUE(probs_dispatched(map_row("NeMo (Megatron-Core)", "25.09", "")));
  EXPECT_FALSE(probs_dispatched(map_row("NeMo (Megatron-Core)", "25.04", "")));  // Megatron-Core 0.12
  EXPECT_FALSE(probs_dispatched(map_row("NeMo (Megatron-Core)", "v25.04.01", "")));
  EXPECT_FALSE(probs_dispatched(map_row("Megatron-LM", "2025", "")));  // no release to go by
  // The mapped strategy is one the loader accepts, and the un-permutation then keeps nothing.
  const StrategyConfig st = parse_strategy(bridge.strategy, "mapped");
  EXPECT_TRUE(st.dispatch_probs);
}

TEST(RunMapping, BatchColumnsThatDisagreeAreReported) {
  // dp = 16 / pp 2 = 8: 512 = 2 x 8 x 32 agrees; grad_accum 2 (as R0151 states) does not.
  EXPECT_TRUE(map_row("Megatron-Bridge (Megatron-Core)", "25.11", "32").warnings.empty());
  EXPECT_TRUE(map_row("Megatron-Bridge (Megatron-Core)", "25.11", "").warnings.empty());
  const MappedRun bad = map_row("Megatron-Bridge (Megatron-Core)", "25.11", "2");
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_NE(bad.warnings[0].find("global_batch_size 512 != micro_batch_size 2 x dp 8 x grad_accum 2 (= 32)"),
            std::string::npos)
      << bad.warnings[0];
  // The stated global batch is what is simulated, not a corrected one.
  EXPECT_EQ(bad.strategy.value("global_batch_size", 0), 512);
}

// Token dropping (Megatron-Bridge's "(tokendrop)" rows): capacity factor 1.0 and padded expert
// inputs, from the moe_token_policy column or the model name; dropless otherwise; an unknown
// policy is refused.
TEST(RunMapping, TokenDropRowsPadExpertsToCapacity) {
  const std::string fw = "Megatron-Bridge (Megatron-Core)";
  const MappedRun by_column = map_any(fw, "25.09", "", "BF16", "Qwen3_30B_a3B", "tokendrop");
  ASSERT_TRUE(by_column.ok) << by_column.reason;
  EXPECT_TRUE(by_column.model.value("moe_pad_expert_input_to_capacity", false));
  EXPECT_DOUBLE_EQ(by_column.model.value("capacity", 0.0), 1.0);
  EXPECT_TRUE(contains(by_column.inferred, "apply_moe_token_drop"));
  const MappedRun by_name = map_any(fw, "25.09", "", "BF16", "Qwen3_30B_a3B (tokendrop)");
  ASSERT_TRUE(by_name.ok) << by_name.reason;
  EXPECT_TRUE(by_name.model.value("moe_pad_expert_input_to_capacity", false));
  for (const char* dropless : {"", "dropless"}) {
    const MappedRun d = map_any(fw, "25.09", "", "BF16", "Qwen3_30B_a3B", dropless);
    ASSERT_TRUE(d.ok) << d.reason;
    EXPECT_FALSE(d.model.value("moe_pad_expert_input_to_capacity", false)) << dropless;
  }
  const MappedRun odd = map_any(fw, "25.09", "", "BF16", "Qwen3_30B_a3B", "capacity 1.25");
  EXPECT_FALSE(odd.ok);
  EXPECT_NE(odd.reason.find("moe_token_policy"), std::string::npos) << odd.reason;
}

// Precision words of the performance tables: FP4 is refused (not modelled), blockwise FP8 and
// Megatron-Bridge's bare "FP8" (per-tensor current scaling) map to their recipes.
TEST(RunMapping, PrecisionWordsOfPerformanceTables) {
  const std::string fw = "Megatron-Bridge (Megatron-Core)";
  const MappedRun fp4 = map_any(fw, "26.02", "", "NVFP4");
  EXPECT_FALSE(fp4.ok);
  EXPECT_NE(fp4.reason.find("FP4"), std::string::npos) << fp4.reason;
  const MappedRun bare = map_any(fw, "26.02", "", "FP8");
  ASSERT_TRUE(bare.ok) << bare.reason;
  EXPECT_EQ(bare.strategy.value("fp8_recipe", ""), "tensorwise");
  EXPECT_TRUE(contains(bare.inferred, "FP8 read as FP8-CS"));
  const MappedRun block = map_any(fw, "25.09", "", "FP8 blockwise (128x128 weights and 1x128 activations)");
  ASSERT_TRUE(block.ok) << block.reason;
  EXPECT_EQ(block.strategy.value("fp8_recipe", ""), "blockwise");
  // Outside Megatron-Bridge a bare FP8 stays the Megatron/TE default (delayed), said as inferred.
  const MappedRun nemo = map_any("NeMo (Megatron-Core)", "24.07", "", "FP8");
  ASSERT_TRUE(nemo.ok) << nemo.reason;
  EXPECT_EQ(nemo.strategy.value("fp8_recipe", ""), "delayed");
}

}  // namespace
}  // namespace calisim::calibration
