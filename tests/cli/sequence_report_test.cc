// cli/sequence_report: what `calisim profile sequence` reports from a measurement, checked on a
// synthetic one (the GPU path that fills it runs only on a GPU).
#include "cli/sequence_report.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "simulator/default_efficiency.h"
#include "tests/simulator/test_support.h"

namespace calisim::cli {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

struct Fixture {
  SystemConfig sys = shipped_system("h200");
  ModelConfig model = shipped_model("llama3-8b");
  StrategyConfig st = strategy_from_json(
      R"({"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 1, "world_size": 1, "use_flash_sdp": true})",
      model);
  DefaultEfficiencyModel eff{sys};
  LayerSequence seq = layer_sequence(model, st, sys, eff, SequenceLayer::dense, "test");
  SequenceContext ctx{"llama3-8b dense layer", "m.json", "s.json", "h200", "", 0.19};
  SequenceDevice device{"NVIDIA H200", "580.1", "13.0", "cublasLt 130100", "cupti", 132, 20};

  // Every kernel alone at 1.1x its simulated time; the run alone at 1.25x the alone sum (20
  // groups, the last two slower), beside 16 SMs 10 % slower than alone.
  profiler::SequenceMeasurement measured() const {
    profiler::SequenceMeasurement m;
    std::set<std::string> seen;
    for (const auto& k : seq.kernels) {
      if (!seen.insert(k.key).second) continue;
      m.distinct_keys.push_back(k.key);
      profiler::Measurement iso;
      iso.status = profiler::MeasurementStatus::measured;
      iso.summary.median_s = 1.1 * k.simulated_s;
      iso.algorithm = "algo " + k.key.substr(0, 4);
      m.isolated.push_back(iso);
    }
    double alone = 0;
    for (const auto& k : seq.kernels) alone += 1.1 * k.simulated_s;
    profiler::SustainedRun solo, beside;
    for (int g = 0; g < 20; ++g) solo.pass_s.push_back(1.25 * alone * (g >= 18 ? 1.02 : 1.0));
    profiler::GpuState s;
    s.valid = true;
    s.sm_clock_mhz = 1500;
    s.max_sm_clock_mhz = 1980;
    s.power_w = 690;
    s.event_reasons = profiler::kNvmlReasonSwPowerCap;
    solo.states = {s, s};
    beside = solo;
    for (double& p : beside.pass_s) p *= 1.1;
    beside.background_ctas = 16;
    beside.background_bytes = 2e12;
    beside.background_s = 4.0;
    m.runs = {solo, beside};
    return m;
  }
};

TEST(SequenceReport, JsonSetsTheSustainedPassBesideTheKernelsAloneAndTheSimulation) {
  const Fixture f;
  const profiler::SequenceMeasurement m = f.measured();
  const auto j = sequence_report_json(f.ctx, f.seq, &f.device, &m);
  EXPECT_EQ(j["calisim_sequence"], 1);
  EXPECT_EQ(j["device"]["name"], "NVIDIA H200");
  ASSERT_EQ(j["kernels"].size(), f.seq.kernels.size());
  double alone = 0;
  for (const auto& k : j["kernels"]) {
    EXPECT_NEAR(k["alone_s"].get<double>(), 1.1 * k["simulated_s"].get<double>(), 1e-15);
    alone += k["alone_s"].get<double>();
  }
  EXPECT_NEAR(j["alone_sum_s"].get<double>(), alone, 1e-12);
  EXPECT_NEAR(j["alone_sum_over_sustained"].get<double>(), 1 / 1.25, 1e-9);
  EXPECT_NEAR(j["simulated_over_sustained"].get<double>(), 1 / (1.1 * 1.25), 1e-9);
  ASSERT_EQ(j["runs"].size(), 2u);
  const auto& solo = j["runs"][0];
  EXPECT_EQ(solo["groups"], 20);
  EXPECT_NEAR(solo["drift"].get<double>(), 1.02, 1e-9);
  EXPECT_EQ(solo["slowdown_reasons"], "sw_power_cap");
  EXPECT_EQ(solo["sm_clock_median_mhz"], 1500);
  EXPECT_FALSE(solo.contains("slowdown"));
  const auto& beside = j["runs"][1];
  EXPECT_EQ(beside["background_ctas"], 16);
  EXPECT_NEAR(beside["slowdown"].get<double>(), 0.1, 1e-9);
  EXPECT_NEAR(beside["background_gb_s"].get<double>(), 500, 1e-9);
}

TEST(SequenceReport, TextHasBothTablesAndADryRunOnlyTheKernels) {
  const Fixture f;
  const profiler::SequenceMeasurement m = f.measured();
  const std::string text = sequence_report_text(f.ctx, f.seq, &f.device, &m);
  EXPECT_NE(text.find("on NVIDIA H200 (system h200)"), std::string::npos) << text;
  EXPECT_NE(text.find("alone / simulated"), std::string::npos) << text;
  EXPECT_NE(text.find("beside a copy on 16 SMs"), std::string::npos) << text;
  EXPECT_NE(text.find("+10.0 %"), std::string::npos) << text;
  EXPECT_NE(text.find("0.800"), std::string::npos) << text;  // alone sum / pass
  EXPECT_NE(text.find("comm_compute_slowdown is 0.19"), std::string::npos) << text;
  EXPECT_NE(text.find("--set system.efficiency.sustained_kernel_speed=0.800"), std::string::npos) << text;

  const std::string dry = sequence_report_text(f.ctx, f.seq);
  EXPECT_NE(dry.find("--dry-run"), std::string::npos) << dry;
  EXPECT_EQ(dry.find("alone"), std::string::npos) << dry;
  const auto j = sequence_report_json(f.ctx, f.seq);
  EXPECT_FALSE(j.contains("runs"));
  EXPECT_FALSE(j["kernels"][0].contains("alone_s"));
}

TEST(SequenceReport, AMeasurementMissingAKernelOrARunIsRefused) {
  const Fixture f;
  profiler::SequenceMeasurement m = f.measured();
  m.runs.clear();
  EXPECT_THROW(sequence_report_json(f.ctx, f.seq, &f.device, &m), std::invalid_argument);
  m = f.measured();
  m.distinct_keys.pop_back();
  m.isolated.pop_back();
  EXPECT_THROW(sequence_report_text(f.ctx, f.seq, &f.device, &m), std::invalid_argument);
}

}  // namespace
}  // namespace calisim::cli
