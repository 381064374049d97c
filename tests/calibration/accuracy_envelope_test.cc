// The accuracy envelope (calibration/accuracy_envelope.h): percentiles, the implied step times, the
// widening order of the class (precision, then system, then both; never the model class), too few
// runs, and the class of a parsed configuration.
#include "calibration/accuracy_envelope.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "simulator/config_loader.h"

namespace calisim::calibration {
namespace {

const std::string kConfigs = CALISIM_CONFIG_DIR;

std::vector<ScoredRun> runs_of(const RunClass& c, const std::vector<double>& errors, const std::string& prefix) {
  std::vector<ScoredRun> out;
  for (std::size_t i = 0; i < errors.size(); ++i) out.push_back({prefix + std::to_string(i), c, errors[i]});
  return out;
}

void append(std::vector<ScoredRun>& to, const std::vector<ScoredRun>& more) { to.insert(to.end(), more.begin(), more.end()); }

const RunClass kH100DenseBf16{"h100-sxm", "dense", "bf16"};

TEST(AccuracyEnvelope, PercentileInterpolatesBetweenSortedValues) {
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({0, 10}, 0.1), 1);
  EXPECT_DOUBLE_EQ(percentile({0, 10}, 0.9), 9);
  EXPECT_DOUBLE_EQ(percentile({7}, 0.9), 7);
  EXPECT_DOUBLE_EQ(percentile({1, 5}, 1.5), 5) << "q is clamped to [0, 1]";
}

// Errors of -20 % everywhere: a measured run took simulated / 0.8.
TEST(AccuracyEnvelope, ImpliedStepTimesFollowTheErrors) {
  const auto runs = runs_of(kH100DenseBf16, {-0.5, -0.2, -0.2, -0.2, 0.0}, "R");
  const auto e = accuracy_envelope(runs, kH100DenseBf16, 10.0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->matched_on, (std::vector<std::string>{"system h100-sxm", "dense", "bf16"}));
  EXPECT_EQ(e->run_ids.size(), 5u);
  EXPECT_EQ(e->considered, 5);
  EXPECT_DOUBLE_EQ(e->median_error, -0.2);
  EXPECT_DOUBLE_EQ(e->min_error, -0.5);
  EXPECT_DOUBLE_EQ(e->max_error, 0.0);
  EXPECT_NEAR(e->p10_error, -0.38, 1e-12);  // 0.4 of the way from -0.5 to -0.2
  EXPECT_NEAR(e->p90_error, -0.08, 1e-12);
  EXPECT_DOUBLE_EQ(e->expected_step_s, 12.5);
  EXPECT_NEAR(e->expected_step_low_s, 10.0 / 0.92, 1e-12);
  EXPECT_NEAR(e->expected_step_high_s, 10.0 / 0.62, 1e-12);
  EXPECT_LT(e->expected_step_low_s, e->expected_step_s);
  EXPECT_GT(e->expected_step_high_s, e->expected_step_s);
  EXPECT_NE(e->summary().find("5 validated runs (system h100-sxm, dense, bf16)"), std::string::npos) << e->summary();
  const auto j = to_json(*e);
  EXPECT_EQ(j["runs"], 5);
  EXPECT_DOUBLE_EQ(j["expected_step_s"].get<double>(), 12.5);
}

// Widening: the exact class first; precision before system; system and precision together last.
TEST(AccuracyEnvelope, WidensPrecisionThenSystemNeverModelClass) {
  std::vector<ScoredRun> runs;
  append(runs, runs_of(kH100DenseBf16, {-0.1, -0.1, -0.1}, "exact"));
  append(runs, runs_of({"h100-sxm", "dense", "fp8"}, {-0.3, -0.3}, "fp8_"));
  append(runs, runs_of({"b200", "dense", "bf16"}, {-0.5, -0.5, -0.5}, "b200_"));
  append(runs, runs_of({"h100-sxm", "moe", "bf16"}, {-0.9, -0.9, -0.9, -0.9, -0.9, -0.9}, "moe_"));

  // 3 exact runs < 5: same system, any precision has 5.
  auto e = accuracy_envelope(runs, kH100DenseBf16, 1.0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->matched_on, (std::vector<std::string>{"system h100-sxm", "dense", "any precision"}));
  EXPECT_EQ(e->run_ids.size(), 5u);
  EXPECT_DOUBLE_EQ(e->median_error, -0.1);

  // With a lower bar the exact class answers.
  e = accuracy_envelope(runs, kH100DenseBf16, 1.0, 3);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->matched_on.back(), "bf16");
  EXPECT_EQ(e->run_ids, (std::vector<std::string>{"exact0", "exact1", "exact2"}));

  // A system with no runs: any system, same precision (h100 and b200 bf16 dense: 6 runs).
  e = accuracy_envelope(runs, {"h200", "dense", "bf16"}, 1.0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->matched_on, (std::vector<std::string>{"any system", "dense", "bf16"}));
  EXPECT_EQ(e->run_ids.size(), 6u);

  // Any system, any precision when even that is short: fp8 dense has 2 runs, all dense 8.
  e = accuracy_envelope(runs, {"h200", "dense", "fp8"}, 1.0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->matched_on, (std::vector<std::string>{"any system", "dense", "any precision"}));
  EXPECT_EQ(e->run_ids.size(), 8u);

  // The model class is never widened: MoE runs never judge a dense query, and the reverse.
  for (const std::string& id : e->run_ids) EXPECT_EQ(id.rfind("moe_", 0), std::string::npos) << id;
  e = accuracy_envelope(runs, {"b200", "moe", "fp8"}, 1.0);
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->median_error, -0.9);
  EXPECT_FALSE(accuracy_envelope(runs, {"b200", "moe", "fp8"}, 1.0, 7)) << "6 MoE runs < 7";
  EXPECT_FALSE(accuracy_envelope({}, kH100DenseBf16, 1.0));
}

TEST(AccuracyEnvelope, RunClassOfParsedConfigs) {
  const SystemConfig sys = parse_system(read_json_file(kConfigs + "/systems/b200.json"), "b200");
  const ModelConfig dense = parse_model(read_json_file(kConfigs + "/models/llama3-8b.json"), "llama3-8b", nullptr);
  const ModelConfig moe = parse_model(read_json_file(kConfigs + "/models/mixtral-8x7b.json"), "mixtral", nullptr);
  const StrategyConfig bf16 = parse_strategy(nlohmann::json{{"world_size", 8}, {"seq_len", 4096}, {"micro_batch_size", 1}, {"global_batch_size", 8}}, "s");
  const StrategyConfig fp8 = parse_strategy(nlohmann::json{{"world_size", 8}, {"seq_len", 4096}, {"micro_batch_size", 1}, {"global_batch_size", 8}, {"fp8", true}, {"fp8_recipe", "tensorwise"}}, "s");
  EXPECT_EQ(run_class(dense, bf16, sys.name), (RunClass{"b200", "dense", "bf16"}));
  EXPECT_EQ(run_class(moe, fp8, sys.name), (RunClass{"b200", "moe", "fp8"}));
}

}  // namespace
}  // namespace calisim::calibration
