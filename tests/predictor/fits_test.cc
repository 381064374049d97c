#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "predictor/alpha_beta_fit.h"
#include "predictor/device_fit.h"
#include "predictor/kernel_overhead.h"
#include "predictor/ridge_fit.h"
#include "predictor/shape_features.h"

namespace calisim::predictor {
namespace {

TEST(RidgeFit, RecoversALinearFunctionAndClampsOutsideTheData) {
  std::vector<double> x, y;
  for (int i = 0; i < 40; ++i) {
    const double a = i % 7, b = (i * 3) % 11;
    x.insert(x.end(), {a, b});
    y.push_back(3.0 + 2.0 * a - b);
  }
  const LinearFit fit = fit_ridge(x, y, 2);
  EXPECT_NEAR(fit.predict(std::vector<double>{2.0, 5.0}), 3.0 + 4.0 - 5.0, 1e-2);
  EXPECT_LT(fit.loo_rmse, 1e-2);
  // a = 100 lies far outside [0, 6]: answered as a = 6.
  EXPECT_NEAR(fit.predict(std::vector<double>{100.0, 5.0}), fit.predict(std::vector<double>{6.0, 5.0}), 1e-12);
}

TEST(RidgeFit, ConstantColumnsGetNoWeightAndBadShapesThrow) {
  const std::vector<double> x{1, 5, 2, 5, 3, 5, 4, 5};
  const std::vector<double> y{1, 2, 3, 4};
  const LinearFit fit = fit_ridge(x, y, 2);
  EXPECT_EQ(fit.weight[1], 0.0);
  EXPECT_THROW(fit_ridge(std::vector<double>{1, 2, 3}, y, 2), std::invalid_argument);
}

TEST(AlphaBetaFit, RecoversLatencyAndBandwidth) {
  std::vector<double> s, t;
  for (double size = 1e3; size < 1e10; size *= 4) {
    s.push_back(size);
    t.push_back(10e-6 + size / 200e9);
  }
  const AlphaBetaFit f = fit_alpha_beta(s, t);
  EXPECT_NEAR(f.alpha_s, 10e-6, 1e-8);
  EXPECT_NEAR(f.beta_per_s / 200e9, 1.0, 1e-6);
  const AlphaBetaFit one = fit_alpha_beta(std::vector<double>{1e6}, std::vector<double>{1e-3});
  EXPECT_EQ(one.alpha_s, 0.0);
  EXPECT_NEAR(one.time_s(1e6), 1e-3, 1e-12);
}

DeviceSpec test_spec() {
  DeviceSpec d;
  d.name = "Test GPU";
  d.peak_tflops[static_cast<int>(DType::bf16)] = 312;
  d.hbm_gb_s = 2000;
  d.sm_count = 108;
  return d;
}

TEST(DeviceFit, AnswersStayInZeroOneAndFollowTheRooflineOutsideTheData) {
  std::vector<db::GemmRow> rows;
  for (std::int64_t m : {1024, 2048, 4096, 8192}) {
    for (std::int64_t n : {1024, 4096, 16384}) {
      db::GemmRow r;
      r.key = GemmKey{m, n, 4096, 1, DType::bf16, GemmLayout::TN, false};
      r.efficiency = 0.5 + 0.03 * std::log2(static_cast<double>(m * n) / (1024.0 * 1024.0));
      rows.push_back(r);
    }
  }
  const DeviceSpec spec = test_spec();
  const ShapeFit fit = fit_gemm(rows, spec);
  for (std::int64_t m : {1, 7, 64, 1 << 20}) {
    for (std::int64_t n : {1, 100, 1 << 18}) {
      const GemmKey k{m, n, 4096, 1, DType::bf16, GemmLayout::NN, true};
      const double e = predict_gemm(fit, k, spec);
      EXPECT_GT(e, 0.0) << m << "x" << n;
      EXPECT_LE(e, 1.0) << m << "x" << n;
      EXPECT_LE(e, roofline_fraction(k.flops(), k.bytes(), k.dtype, spec) + 1e-12) << m << "x" << n;
    }
  }
  // Inside the data the fit reproduces the trend within a few percent.
  EXPECT_NEAR(predict_gemm(fit, rows[4].key, spec), rows[4].efficiency, 0.02);
}

TEST(KernelOverhead, AddAndRemoveAreInverseAndTinyProblemsFall) {
  const double peak = 989e12, t0 = 4e-6;
  for (double flops : {2.1e9, 1.7e10, 1.1e12}) {
    const double e = add_overhead(0.8, flops, peak, t0);
    EXPECT_NEAR(remove_overhead(e, flops, peak, t0), 0.8, 1e-12);
    EXPECT_NEAR(flops / (peak * e), t0 + flops / (peak * 0.8), 1e-15);  // time = t0 + work / rate
  }
  EXPECT_LT(add_overhead(0.8, 2.1e9, peak, t0), 0.35);                   // 1024³: 2.7 us of work
  EXPECT_NEAR(add_overhead(0.8, 1.1e12, peak, t0), 0.8, 0.8 * 0.003);    // 8192³: 1.4 ms of work
  // An overhead larger than the measured time is not believed: the work keeps >= 10 % of it.
  EXPECT_NEAR(remove_overhead(0.1, 1e9, peak, 1.0), 1.0, 1e-12);
}

// Rows of a device whose calls cost t0 + F / (peak · r(shape)), r smooth in the shape.
std::vector<db::GemmRow> rows_with_overhead(double t0, const DeviceSpec& spec) {
  std::vector<db::GemmRow> rows;
  for (std::int64_t m : {256, 512, 1024, 2048, 4096, 8192}) {
    for (std::int64_t n : {512, 1024, 4096, 8192}) {
      for (std::int64_t k : {512, 2048, 8192}) {
        db::GemmRow r;
        r.key = GemmKey{m, n, k, 1, DType::bf16, GemmLayout::TN, false};
        const double work = 0.55 + 0.02 * std::log2(static_cast<double>(m * n) / (512.0 * 512.0));
        r.efficiency = add_overhead(work, r.key.flops(), spec.peak_flops_per_s(DType::bf16), t0);
        rows.push_back(r);
      }
    }
  }
  return rows;
}

TEST(DeviceFit, TheOverheadIsFittedWhereShortRowsExistAndTinyGemmsFall) {
  const DeviceSpec spec = test_spec();
  const auto rows = rows_with_overhead(5e-6, spec);
  const ShapeFit fit = fit_gemm(rows, spec);
  EXPECT_TRUE(fit.overhead_fitted);
  EXPECT_NEAR(fit.overhead_s, 5e-6, 1.01e-6);
  // Shapes smaller than the data: the work rate stays at the edge, the overhead makes them fall.
  const GemmKey tiny{128, 128, 256, 1, DType::bf16, GemmLayout::TN, false};
  ShapeFit no_t0 = fit;
  no_t0.overhead_s = 0;
  EXPECT_LT(predict_gemm(fit, tiny, spec), 0.2 * predict_gemm(no_t0, tiny, spec));
  EXPECT_LT(predict_gemm(fit, tiny, spec), predict_gemm(fit, rows.front().key, spec));
  // Large shapes are unchanged within 1 %.
  const GemmKey big{8192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_NEAR(predict_gemm(fit, big, spec) / predict_gemm(no_t0, big, spec), 1.0, 0.01);
}

TEST(DeviceFit, WithoutShortRowsThePriorIsUsedAndLargeShapesBarelyMove) {
  const DeviceSpec spec = test_spec();
  std::vector<db::GemmRow> rows;
  for (const auto& r : rows_with_overhead(0, spec)) {
    if (r.key.flops() / (312e12 * r.efficiency) > kShortRowFactor * kOverheadPriorUs * 1e-6) rows.push_back(r);
  }
  ASSERT_GE(rows.size(), 10u);
  const ShapeFit fit = fit_gemm(rows, spec);
  EXPECT_FALSE(fit.overhead_fitted);
  EXPECT_DOUBLE_EQ(fit.overhead_s, kOverheadPriorUs * 1e-6);
  for (const auto& r : rows) {
    if (r.key.flops() > 1e11) {
      EXPECT_NEAR(predict_gemm(fit, r.key, spec) / r.efficiency, 1.0, 0.01);
    }
  }
  const GemmKey tiny{256, 256, 256, 1, DType::bf16, GemmLayout::TN, false};  // 34 MFLOP: ~0.2 us of work
  EXPECT_LT(predict_gemm(fit, tiny, spec), 0.1);
}

}  // namespace
}  // namespace calisim::predictor
