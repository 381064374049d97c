#include <gtest/gtest.h>

#include "predictor/shape_features.h"

namespace calisim::predictor {
namespace {

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
