#include "simulator/model_stats.h"

#include <gtest/gtest.h>

#include "test_support.h"

namespace calisim {
namespace {

using testing_support::gpt_model;
using testing_support::shipped_model;

// Published parameter counts of the Hugging Face checkpoints (untied embeddings).
TEST(ModelStats, LlamaParameterCountsMatchPublishedCheckpoints) {
  EXPECT_DOUBLE_EQ(model_stats(shipped_model("llama2-7b"), 4096).total_params, 6738415616.0);
  EXPECT_DOUBLE_EQ(model_stats(shipped_model("llama3-8b"), 8192).total_params, 8030261248.0);
  EXPECT_NEAR(model_stats(shipped_model("llama3-70b"), 8192).total_params / 1e9, 70.55, 0.01);
  EXPECT_NEAR(model_stats(shipped_model("llama3-405b"), 8192).total_params / 1e9, 405.85, 0.1);
}

// Megatron's FLOPs formula (Narayanan et al. 2021, eq. 3) for GPT with a 4h MLP and MHA:
// 72·B·s·L·h²·(1 + s/(6h) + V/(12·h·L)) per iteration = per token 72·L·h²·(...).
TEST(ModelStats, FlopsPerTokenMatchesMegatronFormula) {
  for (long long s : {2048LL, 4096LL}) {
    const ModelConfig m = gpt_model(12288, 96, 96, 51200);
    const ModelStats st = model_stats(m, s);
    const double L = 96, h = 12288, V = 51200;
    const double expected = 72.0 * L * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * L));
    EXPECT_NEAR(st.model_flops_per_token / expected, 1.0, 1e-12);
    // 6N alone excludes attention; the causal variant halves the attention term.
    const double attn = 12.0 * L * s * h;
    EXPECT_NEAR(st.model_flops_per_token - st.flops_6n_per_token, attn, attn * 1e-12);
    EXPECT_NEAR(st.model_flops_per_token - st.model_flops_per_token_causal, attn / 2, attn * 1e-12);
  }
}

TEST(ModelStats, SixNMatchesParameterCountOfLinearLayers) {
  // For a model without biases, N (matmul params per token) = total - embeddings - norms + LM head.
  const ModelConfig m = shipped_model("llama3-8b");
  const ModelStats st = model_stats(m, 8192);
  const double norms = (2.0 * m.layer_num + 1) * m.hidden_size;
  EXPECT_NEAR(st.matmul_params_per_token, st.total_params - st.embedding_params - norms, 1.0);
}

TEST(ModelStats, GqaShrinksOnlyKeyValueProjections) {
  ModelConfig mha = gpt_model(4096, 32, 2, 32000);
  ModelConfig gqa = mha;
  gqa.kv_head_num = 8;
  gqa.add_bias_linear = false;
  mha.add_bias_linear = false;
  const double diff = dense_layer_params(mha).total() - dense_layer_params(gqa).total();
  EXPECT_DOUBLE_EQ(diff, 2.0 * 4096 * (32 - 8) * 128);
}

}  // namespace
}  // namespace calisim
