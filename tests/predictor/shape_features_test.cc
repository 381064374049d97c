#include <gtest/gtest.h>

#include "predictor/shape_features.h"

namespace calisim::predictor {
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

TEST(RooflineFraction, DecodeGemmIsBandwidthBoundLargeIsNot) {
  DeviceSpec h100;
  h100.peak_tflops[static_cast<int>(DType::bf16)] = 989;
  h100.hbm_gb_s = 3350;
  const GemmKey decode{1, 12288, 5376, 1, DType::bf16, GemmLayout::TN, false};
  const GemmKey big{8192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_LT(roofline_fraction(decode.flops(), decode.bytes(), DType::bf16, h100), 0.01);
  EXPECT_DOUBLE_EQ(roofline_fraction(big.flops(), big.bytes(), DType::bf16, h100), 1.0);
}

}  // namespace
}  // namespace calisim::predictor
