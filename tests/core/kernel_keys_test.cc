#include "core/kernel_keys.h"

#include <gtest/gtest.h>

#include <unordered_set>

#include "core/device_spec.h"
#include "core/dtype.h"

namespace calisim {
namespace {

TEST(KernelKeys, CanonicalStringsAreStable) {
  GemmKey g{4096, 1536, 5120, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_EQ(to_string(g), "gemm m=4096 n=1536 k=5120 batch=1 dtype=bf16 layout=TN acc=0");
  AttentionKey a{1, 64, 8, 4096, 4096, 128, 128, true, DType::bf16, AttentionDirection::forward};
  EXPECT_EQ(to_string(a), "attn b=1 hq=64 hkv=8 sq=4096 skv=4096 dqk=128 dv=128 causal=1 dtype=bf16 dir=fwd");
  CollectiveKey c{CollectiveOp::all_reduce, 1 << 20, 8, 8, DType::bf16};
  EXPECT_EQ(to_string(c), "coll op=all_reduce bytes=1048576 ranks=8 per_node=8 dtype=bf16");
  EXPECT_EQ(to_string(MemoryOpKey{"rmsnorm_fwd", 100}), "mem kind=rmsnorm_fwd bytes=100");
}

TEST(KernelKeys, FlopsFollowModelingConventions) {
  GemmKey g{4096, 1536, 5120, 2, DType::bf16, GemmLayout::TN, false};
  EXPECT_DOUBLE_EQ(g.flops(), 2.0 * 4096 * 1536 * 5120 * 2);
  // 4·b·s²·a·d non-causal forward, halved for causal, 2.5x for backward.
  AttentionKey a{2, 32, 8, 2048, 2048, 128, 128, false, DType::bf16, AttentionDirection::forward};
  EXPECT_DOUBLE_EQ(a.flops(), 4.0 * 2 * 2048.0 * 2048 * 32 * 128);
  a.causal = true;
  EXPECT_DOUBLE_EQ(a.flops(), 2.0 * 2 * 2048.0 * 2048 * 32 * 128);
  a.direction = AttentionDirection::backward;
  EXPECT_DOUBLE_EQ(a.flops(), 2.5 * 2.0 * 2 * 2048.0 * 2048 * 32 * 128);
}

TEST(KernelKeys, HashAndEqualityByValue) {
  std::unordered_set<GemmKey> set;
  set.insert({1, 2, 3, 1, DType::bf16, GemmLayout::TN, false});
  set.insert({1, 2, 3, 1, DType::bf16, GemmLayout::TN, false});
  set.insert({1, 2, 3, 1, DType::bf16, GemmLayout::NT, true});
  EXPECT_EQ(set.size(), 2u);
}

TEST(KernelKeys, ParsersRoundTripAndReject) {
  for (auto op : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
                  CollectiveOp::all_to_all, CollectiveOp::send_recv}) {
    EXPECT_EQ(parse_collective_op(to_string(op)), op);
  }
  EXPECT_EQ(parse_gemm_layout("NT"), GemmLayout::NT);
  EXPECT_THROW(parse_gemm_layout("TT"), std::invalid_argument);
  EXPECT_EQ(parse_dtype("fp8"), DType::fp8_e4m3);
  EXPECT_EQ(parse_dtype(to_string(DType::fp16)), DType::fp16);
  EXPECT_THROW(parse_dtype("int4"), std::invalid_argument);
}

TEST(DeviceSpec, MissingPeakIsAnError) {
  DeviceSpec d;
  d.name = "A100";
  d.peak_tflops[static_cast<int>(DType::bf16)] = 312;
  d.hbm_gb_s = 2039;
  EXPECT_DOUBLE_EQ(d.peak_flops_per_s(DType::bf16), 312e12);
  EXPECT_NEAR(d.ridge_flops_per_byte(DType::bf16), 312e12 / 2039e9, 1e-9);
  EXPECT_THROW(d.peak_tflops_for(DType::fp8_e4m3), std::invalid_argument);
}

// The FlashAttention benchmark grid: hidden 2048, 16k tokens per batch, never below one of each.
TEST(KernelKeys, FlashBenchmarkGrid) {
  const AttentionKey k = flash_benchmark_key(4096, 128, true, DType::bf16, AttentionDirection::backward);
  EXPECT_EQ(k, (AttentionKey{4, 16, 16, 4096, 4096, 128, 128, true, DType::bf16, AttentionDirection::backward}));
  EXPECT_EQ(flash_benchmark_key(512, 64, false, DType::fp16, AttentionDirection::forward).batch, 32);
  EXPECT_EQ(flash_benchmark_key(512, 64, false, DType::fp16, AttentionDirection::forward).heads_q, 32);
  EXPECT_EQ(flash_benchmark_key(32768, 128, true, DType::bf16, AttentionDirection::forward).batch, 1);
  EXPECT_EQ(flash_benchmark_key(8192, 4096, true, DType::bf16, AttentionDirection::forward).heads_q, 1);
}

}  // namespace
}  // namespace calisim
