// Shared helpers for the db tests: a scratch directory per test and small sample rows.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "core/efficiency_model.h"
#include "db/efficiency_db.h"

namespace calisim::db::testing {

// A fresh directory under the system temp dir, removed with the fixture.
class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("calisim_db_") + info->test_suite_name() + "_" + info->name() + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

// Answers every key with a recognisable roofline value (the fallback of DB-backed models).
class ConstantModel final : public EfficiencyModel {
 public:
  Efficiency gemm(const GemmKey&) const override { return {0.123, EfficiencySource::roofline}; }
  Efficiency attention(const AttentionKey&) const override { return {0.234, EfficiencySource::roofline}; }
  Efficiency memory_op(const MemoryOpKey&) const override { return {0.345, EfficiencySource::roofline}; }
  Efficiency collective(const CollectiveKey&) const override { return {0.456, EfficiencySource::roofline}; }
};

inline std::string fixture(const std::string& rel) { return std::string(CALISIM_TEST_DATA_DIR) + "/" + rel; }

inline DeviceRecord test_device(const std::string& name = "Test GPU") {
  DeviceRecord d;
  d.name = name;
  d.architecture = "Testwell";
  d.sm_count = 100;
  d.peak_tflops[static_cast<int>(DType::bf16)] = 1000;
  d.peak_tflops[static_cast<int>(DType::fp16)] = 1000;
  d.hbm_gb_s = 2000;
  d.memory_gb = 80;
  return d;
}

inline GemmRow gemm_row(std::int64_t m, double efficiency, std::int64_t n_samples = 10) {
  GemmRow r;
  r.key = GemmKey{m, 1024, 4096, 1, DType::bf16, GemmLayout::TN, false};
  r.efficiency = efficiency;
  r.tflops = efficiency * 1000;
  const double t = r.key.flops() / (r.tflops * 1e12);
  r.stats = SampleStats{t, t * 0.98, t * 1.05, t * 0.01, n_samples};
  return r;
}

inline RunBatch run_with(const std::string& device, Source source, const std::string& host,
                         const std::string& started_at, MeasurementSet rows) {
  RunBatch b;
  b.run.device = device;
  b.run.source = source;
  b.run.tool_version = "calisim test";
  b.run.host = host;
  b.run.started_at = started_at;
  b.run.ended_at = started_at;
  b.rows = std::move(rows);
  return b;
}

// n GEMM rows with distinct m, starting at m = first_m.
inline MeasurementSet gemm_rows(int n, std::int64_t first_m = 64, double efficiency = 0.5) {
  MeasurementSet s;
  for (int i = 0; i < n; ++i) s.gemm.push_back(gemm_row(first_m + i, efficiency));
  return s;
}

}  // namespace calisim::db::testing
