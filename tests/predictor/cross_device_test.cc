#include <gtest/gtest.h>

#include "predictor/cross_device.h"
#include "predictor/kernel_overhead.h"
#include "predictor/shape_features.h"
#include "predictor_test_util.h"

namespace calisim::predictor {
namespace {

using testing::a100_sxm;
using testing::h100_sxm;
using testing::h200;

// The scaling rules alone: profiles whose fixed per-call overhead is negligible (1 ps).
DeviceProfile no_overhead(DeviceProfile p) {
  p.kernel_overhead_us = 1e-6;
  return p;
}

TEST(ScaleGemm, ComputeBoundScalesByTheAchievableEfficiencyRatio) {
  // profiling_notes.md: A100 -> H100 large BF16 GEMMs go 271 -> 794 TFLOP/s (x2.9), not the x3.17
  // of the peaks: the efficiency falls by the ratio of achievable efficiencies (0.72 / 0.78).
  const GemmKey k{8192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false};
  const ScaledEfficiency s = scale_gemm(0.869, k, no_overhead(a100_sxm()), no_overhead(h100_sxm()));
  EXPECT_EQ(s.source_regime, Regime::compute);
  EXPECT_EQ(s.target_regime, Regime::compute);
  const double q_ratio = gemm_quantization(8192, 8192, 1, 132) / gemm_quantization(8192, 8192, 1, 108);
  EXPECT_NEAR(q_ratio, 1.0, 0.02);  // a large grid has almost no tail wave on either GPU
  EXPECT_NEAR(s.efficiency, 0.869 * 0.72 / 0.78 * q_ratio, 1e-9);
  EXPECT_NEAR(s.efficiency * 989 / (0.869 * 312), 2.9, 0.1);
  // With the default 4 us overhead on both sides a 3.3 ms GEMM moves by well under 1 %.
  EXPECT_NEAR(scale_gemm(0.869, k, a100_sxm(), h100_sxm()).efficiency / s.efficiency, 1.0, 0.01);
}

TEST(ScaleGemm, BandwidthBoundScalesByTheBandwidthRatio) {
  // H100 -> H200: same peaks, 4.8 / 3.35 TB/s: decode GEMMs speed up 1.43x, large ones not at all.
  const GemmKey decode{1, 12288, 5376, 1, DType::bf16, GemmLayout::TN, false};
  const ScaledEfficiency s = scale_gemm(2.87 / 989, decode, no_overhead(h100_sxm()), no_overhead(h200()));
  EXPECT_EQ(s.source_regime, Regime::bandwidth);
  EXPECT_NEAR(s.efficiency / (2.87 / 989), 4800.0 / 3350.0, 1e-6);
  const GemmKey big{8192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_NEAR(scale_gemm(0.803, big, h100_sxm(), h200()).efficiency, 0.803, 1e-9);
  // The fixed overhead (4 us of the 46 us call) does not get faster with the bandwidth.
  const double with_t0 = scale_gemm(2.87 / 989, decode, h100_sxm(), h200()).efficiency / (2.87 / 989);
  const double t_s = 2.0 * 12288 * 5376 / 2.87e12;
  EXPECT_NEAR(with_t0, t_s / (4e-6 + (t_s - 4e-6) * 3350.0 / 4800.0), 1e-6);
}

TEST(ScaleGemm, ARegimeChangeUsesEachSidesAchievableBound) {
  // Intensity ~183 FLOP/B: above the A100's achievable ridge (312·0.78 / (2039·0.88) = 136),
  // below the H100's (989·0.72 / (3350·0.90) = 236).
  const GemmKey k{192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false};
  const DeviceProfile a = no_overhead(a100_sxm()), h = no_overhead(h100_sxm());
  const ScaledEfficiency s = scale_gemm(0.6, k, a, h);
  EXPECT_EQ(s.source_regime, Regime::compute);
  EXPECT_EQ(s.target_regime, Regime::bandwidth);
  // time_T = time_S · (B / (BW_T·0.90)) / (F / (peak_S·0.78)) · Q_S / Q_T.
  const double q_ratio = gemm_quantization(192, 8192, 1, 108) / gemm_quantization(192, 8192, 1, 132);
  const double t_s = k.flops() / (312e12 * 0.6);
  const double t_t = t_s * (k.bytes() / (3350e9 * 0.90)) / (k.flops() / (312e12 * 0.78)) * q_ratio;
  EXPECT_NEAR(s.efficiency, k.flops() / (989e12 * t_t), 1e-6);
  EXPECT_LT(s.efficiency, roofline_fraction(k.flops(), k.bytes(), DType::bf16, h.spec));
}

TEST(ScaleGemm, TheFixedOverheadMakesTinyGemmsSlowOnAFastGpu) {
  // 1024³ is 2.1 GFLOP: 2.7 us of work at 80 % of an H100, the same order as the overhead.
  const GemmKey tiny{1024, 1024, 1024, 1, DType::bf16, GemmLayout::TN, false};
  const double without = scale_gemm(0.7, tiny, no_overhead(a100_sxm()), no_overhead(h100_sxm())).efficiency;
  const double with = scale_gemm(0.7, tiny, a100_sxm(), h100_sxm()).efficiency;
  EXPECT_LT(with, 0.6 * without);
  // Same rule in time: t_T = t0_T + (t_S − t0_S) · ratio.
  const double t_s = tiny.flops() / (312e12 * 0.7);
  const double work_t = (t_s - 4e-6) * (tiny.flops() / (989e12 * 0.72)) / (tiny.flops() / (312e12 * 0.78)) *
                        gemm_quantization(1024, 1024, 1, 108) / gemm_quantization(1024, 1024, 1, 132);
  EXPECT_NEAR(with, tiny.flops() / (989e12 * (4e-6 + work_t)), 1e-9);
}

TEST(ScaleAttention, FlashAttention2RowsScaleByFa2sShareOnEachSide) {
  const AttentionKey k{4, 16, 16, 4096, 4096, 128, 128, true, DType::fp16, AttentionDirection::forward};
  DeviceProfile a = no_overhead(a100_sxm()), h = no_overhead(h100_sxm());
  const double best = scale_attention(0.55, k, a, h).efficiency;
  a.attention_kernel = AttentionKernel::flash2;
  const double fa2 = scale_attention(0.55, k, a, h).efficiency;
  // Ampere's best kernel is FA2 (share 1); on Hopper FA2 reaches 326 / 557 of FA3/cuDNN.
  EXPECT_NEAR(fa2 / best, kHopperFlash2Share, 1e-9);
  EXPECT_NEAR(kHopperFlash2Share, 0.585, 0.001);
  EXPECT_EQ(attention_kernel_share(h.spec, AttentionKernel::flash2), kHopperFlash2Share);
  EXPECT_EQ(attention_kernel_share(a.spec, AttentionKernel::flash2), 1.0);
  DeviceSpec b200;
  b200.name = "NVIDIA B200";
  EXPECT_FALSE(attention_kernel_share(b200, AttentionKernel::flash2).has_value());
}

TEST(ScaleCollective, LargeMessagesFollowTheLinkSmallOnesTheLatency) {
  DeviceProfile a = a100_sxm(), h = h100_sxm();
  a.intra_node = {300, 3, {0.77, 0.77, 0.77, 0.65, 0.77}};
  h.intra_node = {450, 3, {0.82, 0.82, 0.82, 0.70, 0.80}};
  a.ranks_per_node = h.ranks_per_node = 8;
  const CollectiveKey big{CollectiveOp::all_reduce, std::int64_t{1} << 32, 8, 8, DType::bf16};
  EXPECT_NEAR(scale_collective(0.77, big, a, h), 0.82, 0.01);
  const CollectiveKey tiny{CollectiveOp::all_reduce, 8192, 8, 8, DType::bf16};
  const double e = scale_collective(0.01, tiny, a, h);
  EXPECT_GT(e, 0.0);
  EXPECT_LT(e, 0.01);  // same latency, faster link: a smaller fraction of the link is used
}

TEST(ScaleAll, ResultsAreBoundedEvenForExtremeInputs) {
  const GemmKey k{8192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false};
  DeviceProfile weak = h100_sxm();
  weak.matmul_efficiency = 0.1;
  EXPECT_LE(scale_gemm(1.0, k, weak, h100_sxm()).efficiency, 1.0);
  EXPECT_GT(scale_memory_op(1e-9, a100_sxm(), h100_sxm()), 0.0);
  EXPECT_LE(scale_memory_op(1.0, weak, h100_sxm()), 1.0);
}

}  // namespace
}  // namespace calisim::predictor
