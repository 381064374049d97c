// Mapping of a published GPT-OSS row (alternating sliding-window / full attention with sinks)
// onto the model fields of docs/configs.md, and that the mapped model loads and simulates.
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

// Row R0151 of calibration/data/measured_runs.csv (Megatron-Bridge 25.11, GPT OSS 120B, 64 H100),
// cut to the columns the mapping reads.
const std::string kRow =
    "run_id,source,model,model_class,num_layers,hidden_size,ffn_hidden_size,num_attention_heads,num_kv_heads,"
    "head_dim,vocab_size,seq_len,activation,attention_type,moe_num_experts,moe_topk,moe_ffn_hidden_size,"
    "moe_shared_expert_ffn_hidden_size,moe_first_k_dense_layers,gpu_type,num_gpus,framework,precision,tp,pp,vpp,cp,"
    "ep,fsdp,micro_batch_size,global_batch_size,tokens_per_sec_per_gpu,notes\n"
    "R0151,Megatron-Bridge perf summary,GPT OSS 120B,moe,36,2880,,64,8,64,201088,4096,swiglu-like (quick-gelu GLU),"
    "gqa; alternating full / sliding-window(128) attention with sinks,128,4,2880,0,0,H100-SXM5-80GB,64,"
    "Megatron-Bridge (Megatron-Core),BF16,1,4,1,1,8,0,4,512,5630,\n";

TEST(RunMapping, GptOssRowMapsToAlternatingWindowWithSinks) {
  const auto runs = parse_measured_runs(kRow, "t.csv");
  const MappedRun m = map_run(runs.at(0), [](const std::string& name) -> nlohmann::json {
    throw InputError(name, "", "no shipped models in this test");
  });
  ASSERT_TRUE(m.ok) << m.reason;
  EXPECT_EQ(m.model.at("attention_window_tokens"), 128);
  EXPECT_EQ(m.model.at("window_attn_skip_freq"), 2);
  EXPECT_EQ(m.model.at("attention_sinks"), true);
  EXPECT_EQ(m.model.at("add_bias_linear"), true);
  EXPECT_EQ(m.model.at("use_swiglu"), true);
  EXPECT_TRUE(contains(m.inferred, "sliding window (128, 0) on layers 1, 3, 5"));
  EXPECT_TRUE(contains(m.inferred, "SwiGLU-shaped"));
  EXPECT_TRUE(contains(m.inferred, "GPT-OSS conventions"));
  // The mapped model is a valid model file with 18 windowed layers of 36.
  const ModelConfig model = parse_model(m.model, "mapped", nullptr);
  EXPECT_EQ(model.windowed_layers_in(0, 36), 18);
  EXPECT_TRUE(model.attention_sinks);
}

}  // namespace
}  // namespace calisim::calibration
