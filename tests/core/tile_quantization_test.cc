// core/tile_quantization.h: wave and tile utilization of a kernel's output grid on the SMs.
#include <gtest/gtest.h>

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

TEST(AttentionQuantization, OneQueryBlockPerCta) {
  AttentionKey k;
  k.batch = 1;
  k.heads_q = 8;
  k.seq_q = 128 * 16;  // 8 heads x 16 query blocks = 128 CTAs
  EXPECT_NEAR(attention_quantization(k, 132), 128.0 / 132.0, 1e-12);
  k.seq_q = 128 * 16 + 1;  // one more block per head: 136 CTAs, two waves
  EXPECT_NEAR(attention_quantization(k, 132), 136.0 / 264.0, 1e-12);
}

}  // namespace
}  // namespace calisim
