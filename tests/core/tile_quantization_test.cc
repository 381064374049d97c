// core/tile_quantization.h: wave and tile utilization of a kernel's output grid on the SMs.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/tile_quantization.h"

namespace calisim {
namespace {

TEST(WaveUtilization, FullWavesAreLosslessAndATailWaveCosts) {
  EXPECT_DOUBLE_EQ(wave_utilization(108, 108), 1.0);
  EXPECT_DOUBLE_EQ(wave_utilization(216, 108), 1.0);
  EXPECT_DOUBLE_EQ(wave_utilization(109, 108), 109.0 / 216.0);
  EXPECT_DOUBLE_EQ(wave_utilization(50, 0), 1.0);  // unknown SM count: no loss
}

TEST(TileUtilization, SawToothOfTheGuideExample) {
  // NVIDIA guide: 128-wide tiles, N = 136 wastes most of the second tile, N = 256 none.
  EXPECT_NEAR(tile_utilization(27648, 136, 256, 128), 136.0 / 256.0, 1e-12);
  EXPECT_DOUBLE_EQ(tile_utilization(27648, 256, 256, 128), 1.0);
  EXPECT_LT(tile_utilization(27648, 136, 256, 128), tile_utilization(27648, 248, 256, 128));
}

TEST(GemmQuantization, DependsOnSmCountForSmallGrids) {
  // 1024 x 1024: 128 tiles of 64x128 fill 132 SMs far better than 108.
  EXPECT_GT(gemm_quantization(1024, 1024, 1, 132), gemm_quantization(1024, 1024, 1, 108));
  for (int sms : {108, 132, 148}) {
    const double q = gemm_quantization(8192, 8192, 1, sms);
    EXPECT_GT(q, 0.9);
    EXPECT_LE(q, 1.0);
  }
}

TEST(GemmQuantization, GroupedGemmGroupsShareTheWaves) {
  // 8 experts of 256 x 1024 (64x128 tiles: 4 x 8 = 32 tiles each) = 256 tiles on 132 SMs: two
  // waves, the second nearly full (256 / 264); one group alone (32 tiles) fills a quarter wave.
  EXPECT_NEAR(gemm_quantization(256, 1024, 8, 132), 256.0 / 264.0, 1e-12);
  EXPECT_NEAR(gemm_quantization(256, 1024, 1, 132), 32.0 / 132.0, 1e-12);
}

// An attention key of the grid's shape (batch x heads x 128-token blocks); head dims are irrelevant.
AttentionKey grid(std::int64_t heads, std::int64_t seq_q, std::int64_t seq_kv, bool causal,
                  AttentionDirection dir = AttentionDirection::forward) {
  return AttentionKey{1, heads, heads, seq_q, seq_kv, 128, 128, causal, DType::bf16, dir};
}

TEST(AttentionQuantization, OneQueryBlockPerCta) {
  // 8 heads x 16 query blocks = 128 CTAs; one more block per head: 136 CTAs, two waves.
  EXPECT_NEAR(attention_quantization(grid(8, 128 * 16, 4096, false), 132), 128.0 / 132.0, 1e-12);
  EXPECT_NEAR(attention_quantization(grid(8, 128 * 16 + 1, 4096, false), 132), 136.0 / 264.0, 1e-12);
}

// Backward runs one CTA per 128-row key block: a short query chunk over long keys (context
// parallelism) fills the GPU backward, not forward.
TEST(AttentionQuantization, BackwardRunsOneKeyBlockPerCta) {
  EXPECT_NEAR(attention_quantization(grid(8, 128, 128 * 16, false), 132), 8.0 / 132.0, 1e-12);
  EXPECT_NEAR(attention_quantization(grid(8, 128, 128 * 16, false, AttentionDirection::backward), 132), 128.0 / 132.0,
              1e-12);
}

// Causal, one head of 4 blocks on 2 SMs, by hand. Forward: query block i visits i + 1 key blocks,
// works 1, 2, 3, 4 in launch order: SM0 runs 1 then 3 (ends at 4), SM1 runs 2 then 4 (ends at 6):
// 10 / (2 · 6). Backward: key block j is visited by 4 - j query blocks, works 4, 3, 2, 1: SM0 runs
// 4 then 1, SM1 3 then 2, both end at 5: 10 / (2 · 5). Both times the diagonal's share: 8 blocks
// counted (half of 4 x 4) of the 10 visited.
TEST(AttentionQuantization, CausalGridIsListScheduledInLaunchOrder) {
  const AttentionKey fwd = grid(1, 512, 512, true), bwd = grid(1, 512, 512, true, AttentionDirection::backward);
  EXPECT_NEAR(attention_quantization(fwd, 2), 10.0 / 12.0 * 0.8, 1e-12);
  EXPECT_NEAR(attention_quantization(bwd, 2), 10.0 / 10.0 * 0.8, 1e-12);
  // One SM per block: the longest block alone sets the time, 10 / (132 · 4) of the GPU.
  EXPECT_NEAR(attention_quantization(fwd, 132), 10.0 / (132.0 * 4.0) * 0.8, 1e-12);
}

// Few heads at 4k tokens leave the GPU idle at the end of a causal grid (what the H200 measured:
// b·h = 8 runs at 0.64 of b·h = 64's efficiency); many waves approach the diagonal's share alone,
// and the approximation past 64 waves joins the exact schedule without a step.
TEST(AttentionQuantization, CausalUtilizationGrowsWithTheGrid) {
  const auto at_4k = [](std::int64_t heads) { return attention_quantization(grid(heads, 4096, 4096, true), 132); };
  double last = 0;
  for (int heads : {4, 8, 16, 32, 64, 128, 256, 512}) {  // 32 blocks per head
    const double u = at_4k(heads);
    EXPECT_GT(u, 0.0);
    EXPECT_LE(u, 32.0 / 33.0 + 1e-12) << heads;  // never above the diagonal's share (512 of 528)
    EXPECT_GT(u, last - 0.02) << heads;        // nearly monotone (list scheduling is not exactly)
    last = std::max(last, u);
  }
  EXPECT_GT(last, 0.95);
  EXPECT_LT(at_4k(8), 0.7);  // 256 CTAs of unequal work on 132 SMs
  // 64 waves: 8448 CTAs = 264 heads at 32 blocks; 265 heads is approximated.
  EXPECT_NEAR(at_4k(265), at_4k(264), 0.01);
}

}  // namespace
}  // namespace calisim
