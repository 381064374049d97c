// What the simulator gets from a database (predictor/served_model.h): measured rows, the device's
// fits where they have data, predicted rows and their fit as `scaled`, roofline elsewhere.
#include "predictor/served_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>

#include "predictor/interpolating_model.h"
#include "tests/predictor/predictor_test_util.h"

namespace calisim::predictor {
namespace {

using Served = testing::ScratchDb;

GemmKey gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType t = DType::bf16) {
  return {m, n, k, 1, t, GemmLayout::TN, false};
}
AttentionKey attention(std::int64_t seq, AttentionDirection dir = AttentionDirection::forward) {
  return {1, 32, 8, seq, seq, 128, 128, true, DType::bf16, dir};
}

TEST_F(Served, MeasuredDeviceAnswersRowsThenItsFitInsideTheDataThenRoofline) {
  auto db = make_db(false);
  const auto d = data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie());
  const auto model = make_served_model(d.profile.spec, d.record, d.runs, no_data_model());
  EXPECT_EQ(model->gemm(gemm(4096, 1536, 5120)).source, EfficiencySource::measured);
  const Efficiency e = model->gemm(gemm(4096, 2000, 5000));
  EXPECT_EQ(e.source, EfficiencySource::interpolated);
  EXPECT_EQ(e.origin, 0);
  EXPECT_GT(e.value, 0.5);
  EXPECT_LT(e.value, 0.85);
  // The SimuMax table spans 512 (m: 576) .. 129280 in every GEMM dimension: beyond a factor 4 of
  // that the fit does not answer.
  EXPECT_EQ(model->gemm(gemm(4096, 4096, 400000)).source, EfficiencySource::interpolated);
  EXPECT_EQ(model->gemm(gemm(64, 4096, 4096)).source, EfficiencySource::roofline);
  EXPECT_EQ(model->gemm(gemm(4096, 4096, std::int64_t{1} << 20)).source, EfficiencySource::roofline);
  // No fp8 rows at all: roofline.
  EXPECT_EQ(model->gemm(gemm(4096, 2000, 5000, DType::fp8_e4m3)).source, EfficiencySource::roofline);
  // Its attention rows are all at 4096 tokens: 8192 is inside the margin, 32768 is not.
  EXPECT_EQ(model->attention(attention(8192)).source, EfficiencySource::interpolated);
  EXPECT_EQ(model->attention(attention(8192, AttentionDirection::backward)).source, EfficiencySource::interpolated);
  EXPECT_EQ(model->attention(attention(32768)).source, EfficiencySource::roofline);
  EXPECT_EQ(model->attention(attention(1024)).source, EfficiencySource::roofline);
  // The raw interpolating model (what predictions scale) still answers far outside the data.
  const auto raw = make_interpolating_model(d.profile.spec, d.record, d.runs, no_data_model());
  EXPECT_EQ(raw->attention(attention(32768)).source, EfficiencySource::interpolated);
}

TEST_F(Served, PredictedOnlyDeviceAnswersScaledWithItsOrigin) {
  auto db = make_db(false);
  const auto source = data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie());
  const Prediction p = predict_target({source}, testing::h100_sxm());
  const auto model = make_served_model(p.device.to_spec(), p.device, {p.batch}, no_data_model());
  const Efficiency row = model->gemm(gemm(4096, 1536, 5120));
  EXPECT_EQ(row.source, EfficiencySource::scaled);
  EXPECT_EQ(model->origin(row.origin), "NVIDIA A100 PCIe 80GB");
  const Efficiency fitted = model->gemm(gemm(4096, 2000, 5000));
  EXPECT_EQ(fitted.source, EfficiencySource::scaled);
  EXPECT_EQ(model->origin(fitted.origin), "NVIDIA A100 PCIe 80GB");
  EXPECT_GT(fitted.value, 0.4);
  EXPECT_LE(fitted.value, 1.0);
  const Efficiency attn = model->attention(attention(8192));
  EXPECT_EQ(attn.source, EfficiencySource::scaled);
  EXPECT_EQ(model->origin(attn.origin), "NVIDIA A100 PCIe 80GB");
  EXPECT_EQ(model->gemm(gemm(4096, 2000, 5000, DType::fp8_e4m3)).source, EfficiencySource::roofline);
  EXPECT_EQ(model->attention(attention(32768)).source, EfficiencySource::roofline);
}

// What backs kGemmSizeMargin: fit the SimuMax A100-PCIe GEMM rows on one side of a cut in one
// dimension, then compare the fit with the system file's default (matmul 0.73) on the held-out
// rows within the margin and beyond it. Prints the table docs/predictor.md quotes.
TEST_F(Served, GemmSizeMarginIsBackedByHeldOutOctaves) {
  auto db = make_db(false);
  const auto d = data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie());
  const DeviceSpec& spec = d.profile.spec;
  const double fallback = d.profile.matmul_efficiency;
  const auto rows = group_rows(d.runs).gemm[static_cast<int>(DType::bf16)];
  const std::pair<const char*, std::function<double(const GemmKey&)>> dims[] = {
      {"m", [](const GemmKey& k) { return static_cast<double>(k.m); }},
      {"n", [](const GemmKey& k) { return static_cast<double>(k.n); }},
      {"k", [](const GemmKey& k) { return static_cast<double>(k.k); }}};
  int fit_better_within = 0, splits = 0;
  for (const auto& [name, size] : dims) {
    for (double cut : {8192.0, 16384.0}) {
      for (bool train_small : {true, false}) {
        GroupedRows train;
        std::vector<db::GemmRow> within, beyond;
        for (const auto& r : rows) {
          const double v = size(r.key);
          if (train_small ? v <= cut : v >= cut) {
            train.gemm[static_cast<int>(DType::bf16)].push_back(r);
          } else {
            const bool in = train_small ? v <= cut * kGemmSizeMargin : v >= cut / kGemmSizeMargin;
            (in ? within : beyond).push_back(r);
          }
        }
        const DeviceFit fit(spec, train);
        const auto mape_pct = [&](const std::vector<db::GemmRow>& held, bool use_fit) {
          double sum = 0;
          for (const auto& r : held) sum += std::abs((use_fit ? *fit.gemm(r.key) : fallback) - r.efficiency) / r.efficiency;
          return held.empty() ? 0.0 : 100 * sum / static_cast<double>(held.size());
        };
        const double fit_in = mape_pct(within, true), roof_in = mape_pct(within, false);
        std::printf("%s %s %6.0f train %3zu | within x%.0f: %3zu rows fit %5.1f%% default %5.1f%% | beyond: %3zu rows "
                    "fit %5.1f%% default %5.1f%%\n",
                    name, train_small ? "<=" : ">=", cut, train.gemm[static_cast<int>(DType::bf16)].size(),
                    kGemmSizeMargin, within.size(), fit_in, roof_in, beyond.size(), mape_pct(beyond, true),
                    mape_pct(beyond, false));
        EXPECT_LT(fit_in, 10.0) << name << " cut " << cut;
        ++splits;
        if (fit_in <= roof_in) ++fit_better_within;
      }
    }
  }
  // Inside the margin the fit is the better answer in most held-out splits.
  EXPECT_GE(fit_better_within, splits / 2);
}

// In-memory device with rows generated from known laws.
db::DeviceRecord test_device() {
  db::DeviceRecord r;
  r.name = "Test GPU";
  r.peak_tflops[static_cast<int>(DType::bf16)] = 1000;
  r.hbm_gb_s = 3000;
  r.sm_count = 132;
  return r;
}

db::RunBatch measured_run(const db::DeviceRecord& device) {
  db::RunBatch b;
  b.run.device = device.name;
  b.run.source = db::Source::measured;
  return b;
}

TEST(ServedModel, TooFewGemmRowsAreNotFitted) {
  const db::DeviceRecord device = test_device();
  db::RunBatch b = measured_run(device);
  for (std::size_t i = 0; i + 1 < kMinGemmRowsToServe; ++i) {
    db::GemmRow r;
    r.key = gemm(1024 + 512 * static_cast<std::int64_t>(i), 4096, 4096);
    r.efficiency = 0.7;
    r.stats.median_s = r.key.flops() / (0.7 * 1e15);
    r.stats.n = 10;
    b.rows.gemm.push_back(r);
  }
  const auto few = make_served_model(device.to_spec(), device, {b}, no_data_model());
  EXPECT_EQ(few->gemm(gemm(1300, 4096, 4096)).source, EfficiencySource::roofline);
  db::GemmRow extra = b.rows.gemm.back();
  extra.key.n = 8192;
  extra.stats.median_s *= 2;
  b.rows.gemm.push_back(extra);
  const auto enough = make_served_model(device.to_spec(), device, {b}, no_data_model());
  const Efficiency e = enough->gemm(gemm(1300, 4096, 4096));
  EXPECT_EQ(e.source, EfficiencySource::interpolated);
  EXPECT_NEAR(e.value, 0.7, 0.1);
}

TEST(ServedModel, CollectiveFitIsReexpressedAgainstTheCallersLink) {
  const db::DeviceRecord device = test_device();
  db::RunBatch b = measured_run(device);
  constexpr double kAlphaS = 12e-6, kBusbwGbS = 100, kRowLinkGbS = 150, kSystemLinkGbS = 400;
  const auto time_of = [&](const CollectiveKey& k) {
    return kAlphaS + static_cast<double>(k.bytes) * db::bus_factor(k.op, k.ranks) / (kBusbwGbS * 1e9);
  };
  for (int shift = 20; shift <= 30; shift += 2) {
    db::CollectiveRow r;
    r.key = {CollectiveOp::all_reduce, std::int64_t{1} << shift, 8, 8, DType::bf16};
    r.stats.median_s = time_of(r.key);
    r.stats.n = 20;
    r.link_gb_s = kRowLinkGbS;
    r.algbw_gb_s = static_cast<double>(r.key.bytes) / r.stats.median_s / 1e9;
    r.busbw_gb_s = r.algbw_gb_s * db::bus_factor(r.key.op, r.key.ranks);
    r.efficiency = r.busbw_gb_s / r.link_gb_s;
    b.rows.collective.push_back(r);
  }
  const auto model = make_served_model(device.to_spec(), device, {b}, no_data_model(),
                                       [&](const CollectiveKey&) { return kSystemLinkGbS; });
  // The simulator's time: wire bytes / (its link x the answer).
  const auto simulated_s = [&](const CollectiveKey& k, const Efficiency& e) {
    return static_cast<double>(k.bytes) * db::bus_factor(k.op, k.ranks) / (kSystemLinkGbS * 1e9 * e.value);
  };
  const CollectiveKey row = b.rows.collective[2].key;
  const Efficiency measured = model->collective(row);
  EXPECT_EQ(measured.source, EfficiencySource::measured);
  EXPECT_NEAR(simulated_s(row, measured), b.rows.collective[2].stats.median_s, 1e-9);
  const CollectiveKey between{CollectiveOp::all_reduce, 3 * (std::int64_t{1} << 25), 8, 8, DType::bf16};
  const Efficiency fitted = model->collective(between);
  EXPECT_EQ(fitted.source, EfficiencySource::interpolated);
  EXPECT_NEAR(simulated_s(between, fitted) / time_of(between), 1.0, 1e-3);
  // Another group size was never measured and has no stored fit: roofline.
  const CollectiveKey other{CollectiveOp::all_reduce, std::int64_t{1} << 26, 4, 4, DType::bf16};
  EXPECT_EQ(model->collective(other).source, EfficiencySource::roofline);
}

}  // namespace
}  // namespace calisim::predictor
