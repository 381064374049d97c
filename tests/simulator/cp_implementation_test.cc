// cp_implementation "pytorch" (torch.distributed context_parallel, torchtitan's CP): the ring sends
// K, V repeated to the query heads and dK, dV in fp32, and its eager fp32 merging and gradient
// accumulation are one memory op per layer after the attention, whose bytes these tests recount
// from PyTorch's ring (docs/simulator.md "Context parallelism").
#include <gtest/gtest.h>

#include <string>

#include "simulator/layer_ops.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::find_op;
using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::simulate_roofline;
using testing_support::strategy_from_json;
using testing_support::strategy_refusal;

std::string strategy(int cp, const std::string& extra = "") {
  return R"({"seq_len": 32768, "micro_batch_num": 1, "world_size": 8, "cp_size": )" + std::to_string(cp) + extra +
         "}";
}

TEST(CpImplementation, PytorchRingSendsRepeatedKvAndFp32Gradients) {
  const ModelConfig m = shipped_model("llama3-8b");  // 32 heads, 8 KV heads, d 128
  const ModelOps te = build_model_ops(m, strategy_from_json(strategy(4), m), 8);
  const ModelOps pt = build_model_ops(m, strategy_from_json(strategy(4, R"(, "cp_implementation": "pytorch")"), m), 8);
  const LayerOp* a_te = find_op(te.layer, "core_attention");
  const LayerOp* a_pt = find_op(pt.layer, "core_attention");
  ASSERT_TRUE(a_te && a_pt && a_te->fwd_comm && a_pt->fwd_comm && a_pt->bwd_comm_with_wgrad);
  // 8192 local tokens × (128 + 128) × 2 bytes: TE at the 8 KV heads, PyTorch at the 32 query heads.
  EXPECT_EQ(a_te->fwd_comm->bytes, 8192LL * 8 * 256 * 2);
  EXPECT_EQ(a_pt->fwd_comm->bytes, 8192LL * 32 * 256 * 2);
  EXPECT_EQ(a_pt->bwd_comm_with_wgrad->bytes, 8192LL * 32 * 256 * 4);  // fp32 dK, dV
  EXPECT_DOUBLE_EQ(a_pt->fwd_flops(), a_te->fwd_flops());              // the same kernels
  EXPECT_EQ(find_op(te.layer, "cp_ring_merge"), nullptr);
}

// The merge op's bytes, recounted for c = 4, 8192 local tokens, 32 heads of 128, bf16 (e = 2):
// N = Q = 8192·32·128 output / query elements, KV = 2N.
TEST(CpImplementation, MergeBytesFollowPytorchsRing) {
  const ModelConfig m = shipped_model("llama3-8b");
  const ModelOps pt = build_model_ops(m, strategy_from_json(strategy(4, R"(, "cp_implementation": "pytorch")"), m), 8);
  const LayerOp* merge = find_op(pt.layer, "cp_ring_merge");
  ASSERT_NE(merge, nullptr);
  EXPECT_EQ(std::string((merge - 1)->name), "core_attention");  // right after the attention
  const double N = 8192.0 * 32 * 128, KV = 2 * N;
  // Forward: 3 K, V copies (2·KV·2 each), first conversion (2N + 4N), 3 merges of
  // 0.75·(2 + 36) + 4 = 32.5 bytes per element, the final conversion (4N + 2N).
  const double fwd = 3 * 4 * KV + 6 * N + 3 * 32.5 * N + 6 * N;
  // Backward: fp32 zeros (4N + 4KV), 3 K, V copies, 4 steps of dK, dV accumulation
  // (0.75·(8 + 2) + 4 = 11.5 per element), their fp32 copy (8 per element) and the dQ
  // accumulation, the conversions back (6 per element).
  const double bwd = (4 * N + 4 * KV) + 3 * 4 * KV + 4 * (11.5 * KV + 8 * KV + 11.5 * N) + 6 * (N + KV);
  EXPECT_EQ(merge->mem_fwd.bytes, static_cast<std::int64_t>(fwd));
  EXPECT_EQ(merge->mem_bwd.bytes, static_cast<std::int64_t>(bwd));
  EXPECT_DOUBLE_EQ(merge->act_bytes, 0.0);  // the merged output is what the output projection keeps
  EXPECT_DOUBLE_EQ(merge->transient_bytes, 4 * N + 2 * KV);
}

TEST(CpImplementation, PytorchRingCostsMoreAndIsANoOpWithoutCp) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult te = simulate_roofline(m, strategy(8), sys);
  const SimulationResult pt = simulate_roofline(m, strategy(8, R"(, "cp_implementation": "pytorch")"), sys);
  EXPECT_GT(pt.duration_time_per_iter_s, te.duration_time_per_iter_s);
  EXPECT_LT(pt.duration_time_per_iter_s, 1.25 * te.duration_time_per_iter_s);
  EXPECT_DOUBLE_EQ(pt.mfu * pt.duration_time_per_iter_s, te.mfu * te.duration_time_per_iter_s);  // same model FLOPs
  const SimulationResult one_te = simulate_roofline(m, strategy(1), sys);
  const SimulationResult one_pt = simulate_roofline(m, strategy(1, R"(, "cp_implementation": "pytorch")"), sys);
  EXPECT_DOUBLE_EQ(one_pt.duration_time_per_iter_s, one_te.duration_time_per_iter_s);
}

TEST(CpImplementation, RefusedWhereItIsNotARingOfMhaAttention) {
  const ModelConfig m = shipped_model("llama3-8b");
  const std::string a2a = strategy_refusal(m, strategy(4, R"(, "cp_implementation": "pytorch", "cp_comm_type": "a2a")"));
  EXPECT_EQ(a2a.rfind("cp_implementation: ", 0), 0u) << a2a;
  EXPECT_NE(a2a.find("p2p"), std::string::npos) << a2a;
  const std::string mla = strategy_refusal(shipped_model("deepseek-v2"),
                                  R"({"seq_len": 4096, "micro_batch_num": 1, "world_size": 8, "ep_size": 2,
                                      "cp_size": 4, "cp_implementation": "pytorch"})");
  EXPECT_EQ(mla.rfind("cp_implementation: ", 0), 0u) << mla;
  EXPECT_NE(mla.find("MLA"), std::string::npos) << mla;
  const std::string bad = strategy_refusal(m, strategy(4, R"(, "cp_implementation": "torch")"));
  EXPECT_EQ(bad.rfind("cp_implementation: ", 0), 0u) << bad;
  EXPECT_NE(bad.find("\"torch\""), std::string::npos) << bad;
}

}  // namespace
}  // namespace calisim
