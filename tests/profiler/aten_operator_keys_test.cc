// operator_key(): the GEMM / attention key of a PyTorch operator from its record_shapes
// arguments, as Kineto writes them ("Input Dims", "Input type", "Input Strides", "Concrete
// Inputs", one entry per schema argument), and the reason when there is none.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "profiler/aten_operator_keys.h"

namespace {

using calisim::AttentionDirection;
using calisim::DType;
using calisim::GemmLayout;
using calisim::profiler::is_keyed_operator;
using calisim::profiler::operator_key;
using calisim::profiler::OperatorKey;
using nlohmann::json;

constexpr const char* kBf16 = "c10::BFloat16";

json mm_args(json a, json b, json sa, json sb, const char* type = kBf16) {
  return {{"Input Dims", {a, b}}, {"Input type", {type, type}}, {"Input Strides", {sa, sb}},
          {"Concrete Inputs", {"", ""}}};
}

TEST(AtenOperatorKeys, LinearGemmLayoutsFollowTheOperandStrides) {
  // Forward: X[t, in] @ W^T (a transposed view of W[out, in]): TN, m = tokens, n = out, k = in.
  OperatorKey fwd = operator_key("aten::mm", mm_args({4096, 1024}, {1024, 3072}, {1024, 1}, {1, 1024}));
  ASSERT_EQ(fwd.kind, OperatorKey::Kind::gemm) << fwd.reason;
  EXPECT_EQ(fwd.gemm, (calisim::GemmKey{4096, 3072, 1024, 1, DType::bf16, GemmLayout::TN, false}));
  // Data gradient: dY[t, out] @ W[out, in], both row-major: NN, m = tokens, n = in, k = out.
  OperatorKey dgrad = operator_key("aten::mm", mm_args({4096, 3072}, {3072, 1024}, {3072, 1}, {1024, 1}));
  ASSERT_EQ(dgrad.kind, OperatorKey::Kind::gemm) << dgrad.reason;
  EXPECT_EQ(dgrad.gemm, (calisim::GemmKey{4096, 1024, 3072, 1, DType::bf16, GemmLayout::NN, false}));
  // Weight gradient: dY^T (a view of dY[t, out]) @ X[t, in]: NT, m = out, n = in, k = tokens.
  OperatorKey wgrad = operator_key("aten::mm", mm_args({3072, 4096}, {4096, 1024}, {1, 3072}, {1024, 1}));
  ASSERT_EQ(wgrad.kind, OperatorKey::Kind::gemm) << wgrad.reason;
  EXPECT_EQ(wgrad.gemm, (calisim::GemmKey{3072, 1024, 4096, 1, DType::bf16, GemmLayout::NT, false}));
  // Both transposed is a layout calisim does not key.
  OperatorKey tt = operator_key("aten::mm", mm_args({64, 32}, {32, 16}, {1, 64}, {1, 32}));
  EXPECT_EQ(tt.kind, OperatorKey::Kind::none);
  EXPECT_NE(tt.reason.find("both operands transposed"), std::string::npos) << tt.reason;
  // Strides of a slice with a leading dimension larger than its width are still row-major.
  OperatorKey sliced = operator_key("aten::mm", mm_args({128, 64}, {64, 32}, {256, 1}, {1, 128}));
  ASSERT_EQ(sliced.kind, OperatorKey::Kind::gemm) << sliced.reason;
  EXPECT_EQ(sliced.gemm.layout, GemmLayout::TN);
  // Neither row- nor column-major (every other element).
  OperatorKey strided = operator_key("aten::mm", mm_args({128, 64}, {64, 32}, {128, 2}, {1, 64}));
  EXPECT_EQ(strided.kind, OperatorKey::Kind::none);
  EXPECT_NE(strided.reason.find("neither row- nor column-major"), std::string::npos) << strided.reason;
}

TEST(AtenOperatorKeys, AddmmBmmBaddbmmAndScaledMmTakeTheirOwnOperandPositions) {
  const json addmm = {{"Input Dims", {{3072}, {4096, 1024}, {1024, 3072}, json::array(), json::array()}},
                      {"Input type", {kBf16, kBf16, kBf16, "Scalar", "Scalar"}},
                      {"Input Strides", {{1}, {1024, 1}, {1, 1024}, json::array(), json::array()}},
                      {"Concrete Inputs", {"", "", "", "1", "1"}}};
  OperatorKey a = operator_key("aten::addmm", addmm);
  ASSERT_EQ(a.kind, OperatorKey::Kind::gemm) << a.reason;
  EXPECT_EQ(a.gemm, (calisim::GemmKey{4096, 3072, 1024, 1, DType::bf16, GemmLayout::TN, false}));

  // Batched: the batch count from the first dimension; the layout from the last two strides.
  const json bmm = mm_args({32, 4096, 128}, {32, 128, 4096}, {524288, 128, 1}, {524288, 4096, 1}, "c10::Half");
  OperatorKey b = operator_key("aten::bmm", bmm);
  ASSERT_EQ(b.kind, OperatorKey::Kind::gemm) << b.reason;
  EXPECT_EQ(b.gemm, (calisim::GemmKey{4096, 4096, 128, 32, DType::fp16, GemmLayout::NN, false}));
  const json baddbmm = {{"Input Dims", {{32, 4096, 4096}, {32, 4096, 128}, {32, 128, 4096}, json::array(), json::array()}},
                        {"Input type", {kBf16, kBf16, kBf16, "Scalar", "Scalar"}},
                        {"Input Strides", {{16777216, 4096, 1}, {524288, 128, 1}, {524288, 1, 128}, json::array(), json::array()}}};
  OperatorKey bb = operator_key("aten::baddbmm", baddbmm);
  ASSERT_EQ(bb.kind, OperatorKey::Kind::gemm) << bb.reason;
  EXPECT_EQ(bb.gemm, (calisim::GemmKey{4096, 4096, 128, 32, DType::bf16, GemmLayout::TN, false}));
  EXPECT_EQ(operator_key("aten::bmm", mm_args({32, 64, 128}, {16, 128, 64}, {8192, 128, 1}, {8192, 64, 1})).kind,
            OperatorKey::Kind::none);

  // _scaled_mm: FP8 operands; keyed E5M2 when the gradient operand is.
  auto scaled = [](const char* ta, const char* tb) {
    return json{{"Input Dims", {{4096, 1024}, {1024, 3072}, json::array(), json::array()}},
                {"Input type", {ta, tb, "float", "float"}},
                {"Input Strides", {{1024, 1}, {1, 1024}, json::array(), json::array()}}};
  };
  OperatorKey f = operator_key("aten::_scaled_mm", scaled("c10::Float8_e4m3fn", "c10::Float8_e4m3fn"));
  ASSERT_EQ(f.kind, OperatorKey::Kind::gemm) << f.reason;
  EXPECT_EQ(f.gemm, (calisim::GemmKey{4096, 3072, 1024, 1, DType::fp8_e4m3, GemmLayout::TN, false}));
  EXPECT_EQ(operator_key("aten::_scaled_mm", scaled("c10::Float8_e4m3fn", "c10::Float8_e5m2")).gemm.dtype,
            DType::fp8_e5m2);
  EXPECT_EQ(operator_key("aten::_scaled_mm", scaled(kBf16, kBf16)).kind, OperatorKey::Kind::none);
}

// torch._grouped_mm as torchtitan's MoE experts call it: 8 experts, 16,384 routed tokens, dim 2048,
// expert hidden 1536; weights [G, hidden, dim] used through a transposed view.
TEST(AtenOperatorKeys, GroupedGemmsAreKeyedAsTheSimulatorKeysExpertGemms) {
  auto grouped = [](json a, json b, json sa, json sb, const char* type = kBf16) {
    return json{{"Input Dims", {a, b, {8}, json::array(), json::array()}},
                {"Input type", {type, type, "int", "", "Scalar"}},
                {"Input Strides", {sa, sb, {1}, json::array(), json::array()}},
                {"Concrete Inputs", {"", "", "", "", ""}}};
  };
  // Forward: x [T, dim] @ w^T [G, dim, hidden]: TN, m = tokens per expert, batch = experts.
  OperatorKey fwd = operator_key("aten::_grouped_mm", grouped({16384, 2048}, {8, 2048, 1536}, {2048, 1},
                                                              {3145728, 1, 2048}));
  ASSERT_EQ(fwd.kind, OperatorKey::Kind::gemm) << fwd.reason;
  EXPECT_EQ(fwd.gemm, (calisim::GemmKey{2048, 1536, 2048, 8, DType::bf16, GemmLayout::TN, false}));
  // Data gradient: dY [T, hidden] @ w [G, hidden, dim]: NN.
  OperatorKey dgrad = operator_key("aten::_grouped_mm", grouped({16384, 1536}, {8, 1536, 2048}, {1536, 1},
                                                                {3145728, 2048, 1}));
  ASSERT_EQ(dgrad.kind, OperatorKey::Kind::gemm) << dgrad.reason;
  EXPECT_EQ(dgrad.gemm, (calisim::GemmKey{2048, 2048, 1536, 8, DType::bf16, GemmLayout::NN, false}));
  // Weight gradient: dY^T [hidden, T] @ x [T, dim] -> [G, hidden, dim], groups along the tokens: NT.
  OperatorKey wgrad = operator_key("aten::_grouped_mm", grouped({1536, 16384}, {16384, 2048}, {1, 1536},
                                                                {2048, 1}));
  ASSERT_EQ(wgrad.kind, OperatorKey::Kind::gemm) << wgrad.reason;
  EXPECT_EQ(wgrad.gemm, (calisim::GemmKey{1536, 2048, 2048, 8, DType::bf16, GemmLayout::NT, false}));
  // Uneven totals round up: 16,385 tokens over 8 experts.
  EXPECT_EQ(operator_key("aten::_grouped_mm", grouped({16385, 2048}, {8, 2048, 1536}, {2048, 1},
                                                      {3145728, 1, 2048})).gemm.m,
            2049);
  // Offsets that disagree with the expert count, and a 3-D x 2-D form, are not keyed.
  json bad = grouped({16384, 2048}, {8, 2048, 1536}, {2048, 1}, {3145728, 1, 2048});
  bad["Input Dims"][2] = {4};
  EXPECT_NE(operator_key("aten::_grouped_mm", bad).reason.find("offsets"), std::string::npos);
  EXPECT_EQ(operator_key("aten::_grouped_mm", grouped({8, 64, 32}, {32, 16}, {2048, 32, 1}, {16, 1})).kind,
            OperatorKey::Kind::none);
  // _scaled_grouped_mm: FP8 operands, the offsets fifth (after the two scales).
  const json scaled = {{"Input Dims", {{16384, 2048}, {8, 2048, 1536}, {16384}, {8, 1536}, {8}}},
                       {"Input type", {"c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "int"}},
                       {"Input Strides", {{2048, 1}, {3145728, 1, 2048}, {1}, {1536, 1}, {1}}}};
  OperatorKey f = operator_key("aten::_scaled_grouped_mm", scaled);
  ASSERT_EQ(f.kind, OperatorKey::Kind::gemm) << f.reason;
  EXPECT_EQ(f.gemm, (calisim::GemmKey{2048, 1536, 2048, 8, DType::fp8_e4m3, GemmLayout::TN, false}));
  EXPECT_TRUE(is_keyed_operator("aten::_grouped_mm"));
}

// record_param_comms: c10d's record of a collective call; the size as nccl-tests counts it.
TEST(AtenOperatorKeys, CollectivesFromRecordParamComms) {
  auto comms = [](const char* name, std::int64_t in, std::int64_t out, json ranks = "[0, 1, 2, 3]") {
    return json{{"Collective name", name}, {"dtype", "BFloat16"}, {"In msg nelems", in}, {"Out msg nelems", out},
                {"Group size", 4}, {"Process Group Ranks", ranks}};
  };
  OperatorKey ar = operator_key("record_param_comms", comms("allreduce", 1024, 1024));
  ASSERT_EQ(ar.kind, OperatorKey::Kind::collective) << ar.reason;
  EXPECT_EQ(ar.collective.op, calisim::CollectiveOp::all_reduce);
  EXPECT_EQ(ar.collective.bytes, 2048);
  EXPECT_EQ(ar.collective.ranks, 4);
  EXPECT_EQ(ar.group_ranks, (std::vector<std::int64_t>{0, 1, 2, 3}));
  // all_gather: the whole output; reduce_scatter: the whole input.
  EXPECT_EQ(operator_key("record_param_comms", comms("_allgather_base", 256, 1024)).collective.bytes, 2048);
  EXPECT_EQ(operator_key("record_param_comms", comms("reduce_scatter_tensor", 1024, 256)).collective.bytes, 2048);
  // Point-to-point: the peer is not in the record.
  EXPECT_NE(operator_key("record_param_comms", comms("recv", 0, 512)).reason.find("point-to-point 'recv'"),
            std::string::npos);
  // Ranks as a JSON list too.
  EXPECT_EQ(operator_key("record_param_comms", comms("alltoall_base", 64, 64, json{8, 9, 10, 11})).group_ranks.size(),
            4u);
  // Not keyed: other collectives, a group of one, an element type calisim does not know.
  EXPECT_NE(operator_key("record_param_comms", comms("broadcast", 64, 64)).reason.find("'broadcast'"),
            std::string::npos);
  json one = comms("allreduce", 64, 64);
  one["Group size"] = 1;
  EXPECT_EQ(operator_key("record_param_comms", one).kind, OperatorKey::Kind::none);
  json ints = comms("allreduce", 64, 64);
  ints["dtype"] = "Long";
  EXPECT_NE(operator_key("record_param_comms", ints).reason.find("'Long'"), std::string::npos);
  EXPECT_TRUE(calisim::profiler::is_collective_operator("record_param_comms"));
  EXPECT_FALSE(calisim::profiler::is_collective_operator("aten::mm"));
}

TEST(AtenOperatorKeys, GemmsWithoutAKeySayWhy) {
  auto reason = [](const char* name, const json& args) {
    const OperatorKey k = operator_key(name, args);
    EXPECT_EQ(k.kind, OperatorKey::Kind::none) << name;
    return k.reason;
  };
  EXPECT_NE(reason("aten::mm", mm_args({64, 64}, {64, 64}, {64, 1}, {64, 1}, "float")).find("fp32 inputs"),
            std::string::npos);
  json no_strides = mm_args({64, 64}, {64, 64}, {64, 1}, {64, 1});
  no_strides.erase("Input Strides");
  EXPECT_NE(reason("aten::mm", no_strides).find("no Input Strides"), std::string::npos);
  EXPECT_NE(reason("aten::mm", json{{"Input Dims", {{64, 64}, {64, 64}}}}).find("record_shapes=True"),
            std::string::npos);
  EXPECT_NE(reason("aten::mm", mm_args({64, 32}, {64, 64}, {32, 1}, {64, 1})).find("inner dimensions differ"),
            std::string::npos);
  json mixed = mm_args({64, 64}, {64, 64}, {64, 1}, {64, 1});
  mixed["Input type"][1] = "c10::Half";
  EXPECT_NE(reason("aten::mm", mixed).find("different types"), std::string::npos);
  EXPECT_NE(reason("aten::mm", json(nullptr)).find("record_shapes"), std::string::npos);
  EXPECT_NE(reason("aten::relu", json::object()).find("not an operator calisim keys"), std::string::npos);
  EXPECT_TRUE(is_keyed_operator("aten::addmm"));
  EXPECT_TRUE(is_keyed_operator("aten::_scaled_dot_product_cudnn_attention_backward"));
  EXPECT_FALSE(is_keyed_operator("aten::linear"));
  EXPECT_FALSE(is_keyed_operator("aten::matmul"));
}

// SDPA's public operator: q [b, h, s, d], GQA key heads, is_causal the sixth argument.
json sdpa_args(const char* causal, json mask = json::array()) {
  return {{"Input Dims", {{2, 32, 4096, 128}, {2, 8, 4096, 128}, {2, 8, 4096, 64}, mask, json::array(),
                          json::array(), json::array(), json::array()}},
          {"Input type", {kBf16, kBf16, kBf16, "", "Scalar", "Scalar", "", "Scalar"}},
          {"Concrete Inputs", {"", "", "", "", "0.", causal, "", "True"}}};
}

TEST(AtenOperatorKeys, AttentionKeysFromScaledDotProductAttention) {
  OperatorKey k = operator_key("aten::scaled_dot_product_attention", sdpa_args("True"));
  ASSERT_EQ(k.kind, OperatorKey::Kind::attention) << k.reason;
  calisim::AttentionKey want;
  want.batch = 2, want.heads_q = 32, want.heads_kv = 8, want.seq_q = want.seq_kv = 4096;
  want.head_dim_qk = 128, want.head_dim_v = 64, want.causal = true, want.dtype = DType::bf16;
  want.direction = AttentionDirection::forward;
  EXPECT_EQ(k.attention, want);
  EXPECT_FALSE(operator_key("aten::scaled_dot_product_attention", sdpa_args("False")).attention.causal);
  // An explicit mask is not a key; a causal argument that is not a bool means another schema.
  EXPECT_NE(operator_key("aten::scaled_dot_product_attention", sdpa_args("True", {1, 1, 4096, 4096}))
                .reason.find("explicit attention mask"),
            std::string::npos);
  EXPECT_NE(operator_key("aten::scaled_dot_product_attention", sdpa_args("0.125")).reason.find("not True / False"),
            std::string::npos);
  json no_concrete = sdpa_args("True");
  no_concrete.erase("Concrete Inputs");
  EXPECT_NE(operator_key("aten::scaled_dot_product_attention", no_concrete).reason.find("causal or not is unknown"),
            std::string::npos);
}

TEST(AtenOperatorKeys, FusedAttentionOperatorsReadTheirSchemas) {
  // _scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, return_debug_mask, scale).
  const json flash = {{"Input Dims", {{1, 16, 2048, 128}, {1, 16, 2048, 128}, {1, 16, 2048, 128}, json::array(),
                                      json::array(), json::array(), json::array()}},
                      {"Input type", {kBf16, kBf16, kBf16, "Scalar", "Scalar", "Scalar", ""}},
                      {"Concrete Inputs", {"", "", "", "0.", "True", "False", ""}}};
  OperatorKey f = operator_key("aten::_scaled_dot_product_flash_attention", flash);
  ASSERT_EQ(f.kind, OperatorKey::Kind::attention) << f.reason;
  EXPECT_EQ(f.attention.heads_q, 16);
  EXPECT_EQ(f.attention.seq_q, 2048);
  EXPECT_TRUE(f.attention.causal);

  // The cuDNN backward: grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset,
  // attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal (the 15th), scale.
  json cudnn_bwd = {{"Input Dims", json::array()}, {"Input type", json::array()}, {"Concrete Inputs", json::array()}};
  for (int i = 0; i < 16; ++i) {
    const bool tensor = i <= 4;
    cudnn_bwd["Input Dims"].push_back(tensor ? json{1, 8, 1024, 64} : json::array());
    cudnn_bwd["Input type"].push_back(tensor ? kBf16 : "Scalar");
    cudnn_bwd["Concrete Inputs"].push_back(i == 14 ? "False" : "");
  }
  OperatorKey c = operator_key("aten::_scaled_dot_product_cudnn_attention_backward", cudnn_bwd);
  ASSERT_EQ(c.kind, OperatorKey::Kind::attention) << c.reason;
  EXPECT_EQ(c.attention.direction, AttentionDirection::backward);
  EXPECT_FALSE(c.attention.causal);
  EXPECT_EQ(c.attention.seq_kv, 1024);
  cudnn_bwd["Input Dims"][9] = {2};  // cum_seq_q: a variable-length batch
  EXPECT_NE(operator_key("aten::_scaled_dot_product_cudnn_attention_backward", cudnn_bwd).reason.find("variable-length"),
            std::string::npos);

  // The flash kernels' own operator: [batch, seq, heads, dim]; is_causal the ninth argument.
  json inner = {{"Input Dims", {{1, 2048, 16, 128}, {1, 2048, 4, 128}, {1, 2048, 4, 128}}},
                {"Input type", {kBf16, kBf16, kBf16}},
                {"Concrete Inputs", {"", "", "", "", "", "2048", "2048", "0.", "True", "False", ""}}};
  for (int i = 3; i < 11; ++i) inner["Input Dims"].push_back(json::array()), inner["Input type"].push_back("Scalar");
  OperatorKey in = operator_key("aten::_flash_attention_forward", inner);
  ASSERT_EQ(in.kind, OperatorKey::Kind::attention) << in.reason;
  EXPECT_EQ(in.attention.heads_q, 16);
  EXPECT_EQ(in.attention.heads_kv, 4);
  EXPECT_EQ(in.attention.seq_q, 2048);
}

}  // namespace
