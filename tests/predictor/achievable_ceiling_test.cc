// The GEMM ceiling of a device's own rows and the (ceiling, MAMF) pair of cross-device scaling.
#include <gtest/gtest.h>

#include <algorithm>

#include "predictor/achievable_ceiling.h"
#include "predictor/cross_device.h"
#include "predictor_test_util.h"

namespace calisim::predictor {
namespace {

using testing::a100_pcie;
using testing::h100_sxm;

db::GemmRow row(std::int64_t m, std::int64_t n, std::int64_t k, double efficiency) {
  db::GemmRow r;
  r.key = GemmKey{m, n, k, 1, DType::bf16, GemmLayout::TN, false};
  r.efficiency = efficiency;
  return r;
}

TEST(GemmCeiling, HighQuantileOfLongComputeBoundRowsOnly) {
  const DeviceProfile d = a100_pcie();
  std::vector<db::GemmRow> rows;
  // 20 long compute-bound rows at 0.60, 0.61, ... 0.79: nearest-rank q95 is the 19th, 0.78.
  for (int i = 0; i < 20; ++i) rows.push_back(row(8192, 8192, 4096 + 64 * i, 0.60 + 0.01 * i));
  // Excluded: a short row (2 us of work; t0 = 4 us) and a bandwidth-bound one (m = 1), both "better".
  rows.push_back(row(128, 128, 128, 0.99));
  rows.push_back(row(1, 8192, 8192, 0.99));
  const auto c = gemm_ceiling(rows, d, 4e-6);
  ASSERT_TRUE(c.has_value());
  // Work efficiency (the 4 us overhead taken off a ~1.6 ms call) is a little above the stored 0.78.
  EXPECT_GT(*c, 0.78);
  EXPECT_LT(*c, 0.79);
}

TEST(GemmCeiling, TooFewQualifyingRowsGiveNone) {
  const std::vector<db::GemmRow> rows{row(8192, 8192, 8192, 0.7), row(8192, 8192, 4096, 0.7),
                                      row(64, 64, 64, 0.1), row(1, 4096, 4096, 0.01)};
  EXPECT_FALSE(gemm_ceiling(rows, a100_pcie(), 4e-6).has_value());
}

TEST(MatmulPair, AnchorsTheSourceCeilingOnTheTargetMamf) {
  DeviceProfile s = a100_pcie(), t = h100_sxm();
  MatmulPair p = matmul_pair(s, t, DType::bf16);
  EXPECT_FALSE(p.anchored);  // no ceiling: the system files' ratio
  EXPECT_DOUBLE_EQ(p.source, 0.73);
  EXPECT_DOUBLE_EQ(p.target, 0.72);
  s.matmul_ceiling[static_cast<int>(DType::bf16)] = 0.765;
  p = matmul_pair(s, t, DType::bf16);
  EXPECT_TRUE(p.anchored);
  EXPECT_DOUBLE_EQ(p.source, 0.765);
  EXPECT_NEAR(p.target, 0.72 / kSystemMatmulShareOfMamf, 1e-12);  // H100 MAMF 0.803 x 0.9 = 0.72
  // Another dtype has no ceiling: system files.
  EXPECT_FALSE(matmul_pair(s, t, DType::fp8_e4m3).anchored);
  // A source row at its own ceiling scales to the target's MAMF (large square: same quantization).
  const GemmKey k{16384, 16384, 16384, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_NEAR(scale_gemm(0.765, k, s, t).efficiency, 0.8, 0.01);
}

// Attention rows at a known level: every row of both directions at the same efficiency, over the
// shapes around the reference (causal, head dim 128, the curves' grid). The fits then answer that
// level at the reference shape, and the level is fwd+bwd combined: 3.5 / (1/f + 2.5/b).
std::vector<db::AttentionRow> level_rows(double fwd, double bwd, bool with_backward = true) {
  std::vector<db::AttentionRow> rows;
  for (AttentionDirection dir : {AttentionDirection::forward, AttentionDirection::backward}) {
    if (dir == AttentionDirection::backward && !with_backward) continue;
    for (std::int64_t seq : {1024, 2048, 4096, 8192, 16384}) {
      for (std::int64_t heads : {8, 16, 32}) {
        db::AttentionRow r;
        r.key = AttentionKey{std::max<std::int64_t>(1, 16384 / seq), heads, heads, seq, seq, 128, 128, true,
                             DType::bf16, dir};
        r.efficiency = dir == AttentionDirection::forward ? fwd : bwd;
        rows.push_back(r);
      }
    }
  }
  return rows;
}

DeviceProfile with_level_of(const std::vector<db::AttentionRow>& rows, AttentionKernel kernel) {
  DeviceProfile d = h100_sxm();
  d.attention_kernel = kernel;
  db::RunBatch b;
  b.rows.attention = rows;
  const DeviceFit fit(d.spec, group_rows({b}), 4e-6);
  return with_attention_level(d, fit);
}

TEST(AttentionLevel, TheSourcesOwnRowsAtTheReferenceShape) {
  const DeviceProfile d = with_level_of(level_rows(0.60, 0.50), AttentionKernel::best);
  EXPECT_NEAR(d.attention_level, 3.5 / (1 / 0.60 + 2.5 / 0.50), 0.01);
  // One direction only, or FlashAttention-2 rows (scaled by the kernel's share): no level.
  EXPECT_EQ(with_level_of(level_rows(0.60, 0.50, false), AttentionKernel::best).attention_level, 0.0);
  EXPECT_EQ(with_level_of(level_rows(0.60, 0.50), AttentionKernel::flash2).attention_level, 0.0);
  // Scaling reads a source row against its level: a row at the level maps onto the target's figure.
  DeviceProfile target = h100_sxm();
  target.attention_efficiency = 0.40;
  AttentionKey k{4, 16, 16, 4096, 4096, 128, 128, true, DType::bf16, AttentionDirection::forward};
  const double from_level = scale_attention(d.attention_level, k, d, target).efficiency;
  EXPECT_NEAR(from_level, 0.40, 0.01);
}

TEST(CollectivesTransfer, OnlyBetweenKnownEqualScaleUpFabrics) {
  DeviceProfile s = a100_pcie(), t = h100_sxm();
  EXPECT_FALSE(collectives_transfer(s, t));  // unknown on both sides
  s.scale_up_kind = "pcie";
  t.scale_up_kind = "nvswitch";
  EXPECT_FALSE(collectives_transfer(s, t));
  s.scale_up_kind = "nvswitch";
  EXPECT_TRUE(collectives_transfer(s, t));
}

}  // namespace
}  // namespace calisim::predictor
