// Cross-device GEMM scaling uses the matmul efficiency of the GEMM's dtype
// (DeviceProfile::matmul_efficiency_by_dtype, a system file's efficiency.matmul_by_dtype).
#include <gtest/gtest.h>

#include "predictor/achievable_ceiling.h"
#include "predictor/cross_device.h"
#include "predictor/device_profile.h"
#include "predictor_test_util.h"

namespace calisim::predictor {
namespace {

constexpr int kE4m3 = static_cast<int>(DType::fp8_e4m3);
constexpr int kE5m2 = static_cast<int>(DType::fp8_e5m2);

// H100 SXM as configs/systems/h100-sxm.json gives it: FP8 peak 1979, FP8 matmul 0.638.
DeviceProfile h100_with_fp8() {
  DeviceProfile p = testing::h100_sxm();
  p.spec.peak_tflops[kE4m3] = p.spec.peak_tflops[kE5m2] = 1979;
  p.matmul_efficiency_by_dtype[kE4m3] = p.matmul_efficiency_by_dtype[kE5m2] = 0.638;
  return p;
}

TEST(MatmulDtype, ProfileFallsBackToMatmulForDtypesWithoutAFigure) {
  const DeviceProfile p = h100_with_fp8();
  EXPECT_DOUBLE_EQ(p.matmul_efficiency_for(DType::fp8_e4m3), 0.638);
  EXPECT_DOUBLE_EQ(p.matmul_efficiency_for(DType::bf16), 0.72);
}

TEST(MatmulDtype, PairUsesTheDtypesMamf) {
  DeviceProfile s = testing::h200(), t = h100_with_fp8();
  s.spec.peak_tflops[kE4m3] = 1979;
  s.matmul_efficiency_by_dtype[kE4m3] = 0.661;
  // No ceiling: the two system-file figures of the dtype.
  MatmulPair p = matmul_pair(s, t, DType::fp8_e4m3);
  EXPECT_FALSE(p.anchored);
  EXPECT_DOUBLE_EQ(p.source, 0.661);
  EXPECT_DOUBLE_EQ(p.target, 0.638);
  EXPECT_DOUBLE_EQ(matmul_pair(s, t, DType::bf16).target, 0.72);
  // With an FP8 ceiling in the source rows: anchored on the target's FP8 MAMF (0.638 / 0.9 = 0.709),
  // not its BF16 one (0.803).
  s.matmul_ceiling[kE4m3] = 0.70;
  p = matmul_pair(s, t, DType::fp8_e4m3);
  EXPECT_TRUE(p.anchored);
  EXPECT_NEAR(p.target, 0.638 / kSystemMatmulShareOfMamf, 1e-12);
  // A source row at its own FP8 ceiling scales to the target's FP8 MAMF (same SM count, large square).
  const GemmKey k{16384, 16384, 16384, 1, DType::fp8_e4m3, GemmLayout::TN, false};
  EXPECT_NEAR(scale_gemm(0.70, k, s, t).efficiency, 0.709, 0.01);
}

TEST(MatmulDtype, EnrichFillsOnlyMissingDtypes) {
  DeviceProfile record;
  record.matmul_efficiency_by_dtype[kE5m2] = 0.5;
  const DeviceProfile p = enrich_profile(record, h100_with_fp8());
  EXPECT_DOUBLE_EQ(p.matmul_efficiency_by_dtype[kE4m3], 0.638);
  EXPECT_DOUBLE_EQ(p.matmul_efficiency_by_dtype[kE5m2], 0.5);
  EXPECT_DOUBLE_EQ(p.matmul_efficiency_for(DType::bf16), 0.72);
}

TEST(MatmulDtype, CeilingRegimeUsesTheDtypesFigure) {
  // Skinny FP8 GEMMs (M 64, N = K = 8192: ~126 FLOP/B) are bandwidth-bound on the achievable
  // roofline at a_c 0.72 (ridge 1979 x 0.72 / (3350 x 0.9) = 473 FLOP/B) and compute-bound at an FP8
  // figure of 0.05 (ridge 33 FLOP/B): whether they count toward the ceiling depends on the figure
  // of their dtype.
  DeviceProfile d = h100_with_fp8();
  d.matmul_efficiency_by_dtype[kE4m3] = 0.05;
  std::vector<db::GemmRow> rows;
  for (int i = 0; i < 4; ++i) {
    db::GemmRow r;
    r.key = GemmKey{64, 8192, 8192 + 128 * i, 1, DType::fp8_e4m3, GemmLayout::TN, false};
    r.efficiency = 0.03;  // ~150 us per call: long against t0 = 4 us
    rows.push_back(r);
  }
  EXPECT_TRUE(gemm_ceiling(rows, d, 4e-6).has_value());
  d.matmul_efficiency_by_dtype[kE4m3] = 0;  // FP8 at matmul 0.72: bandwidth-bound, no ceiling
  EXPECT_FALSE(gemm_ceiling(rows, d, 4e-6).has_value());
}

}  // namespace
}  // namespace calisim::predictor
