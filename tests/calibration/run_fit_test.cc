// Fitting a system's efficiencies to measured step times (calibration/run_fit.h): a known factor is
// recovered from runs simulated with it, held-out folds follow the groups, the scaled efficiencies
// are capped, the system document scales the same fields, and bad input is refused.
#include "calibration/run_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace calisim::calibration {
namespace {

const std::string kConfigs = CALISIM_CONFIG_DIR;

SystemConfig h100() {
  return parse_system(read_json_file(kConfigs + "/systems/h100-sxm.json"), "h100-sxm");
}

// Llama-3-8B on 8 GPUs with tp × dp layouts and batch sizes; "measured" = simulated on the system
// with the given factors applied, so a fit must find them again.
std::vector<FitRow> synthetic_rows(const FitFactors& truth, bool two_groups) {
  const ModelConfig model = parse_model(read_json_file(kConfigs + "/models/llama3-8b.json"), "llama3-8b", nullptr);
  const SystemConfig sys = h100();
  std::vector<FitRow> rows;
  int n = 0;
  for (int tp : {1, 2, 4}) {
    for (int gbs : {16, 64}) {
      FitRow r;
      r.run_id = "R" + std::to_string(n);
      r.group = two_groups && n % 2 ? "B" : "A";
      r.model = model;
      r.strategy = parse_strategy(nlohmann::json{{"world_size", 8}, {"tp_size", tp}, {"seq_len", 4096},
                                                 {"micro_batch_size", 1}, {"global_batch_size", gbs}},
                                  "s");
      validate_layout(model, r.strategy, "s", "m");  // derives dp and the micro-batch count
      r.system = sys;
      const SystemConfig measured_on = apply_factors(sys, truth);
      const DefaultEfficiencyModel eff(measured_on);
      SimulateOptions o;
      o.details = false;
      r.measured_step_s = simulate(model, r.strategy, measured_on, eff, o).duration_time_per_iter_s;
      rows.push_back(r);
      ++n;
    }
  }
  return rows;
}

TEST(RunFit, RecoversAKnownComputeFactor) {
  FitFactors truth;
  truth.groups = {FitGroup::compute};
  truth.factor = {0.8};
  const auto rows = synthetic_rows(truth, true);
  int progress_calls = 0;
  const RunFitResult r = fit_runs(rows, RunFitOptions{}, [&](int, int total) {
    ++progress_calls;
    EXPECT_EQ(total, 3);  // the full fit and one fold per group
  });
  EXPECT_EQ(progress_calls, 3);
  EXPECT_NEAR(r.factors.of(FitGroup::compute), 0.8, 0.8 * 2e-3);
  EXPECT_DOUBLE_EQ(r.factors.of(FitGroup::comm), 1.0);  // not fitted
  ASSERT_TRUE(r.by_group);
  ASSERT_EQ(r.folds.size(), 2u);
  for (const auto& f : r.held_out) EXPECT_NEAR(f.of(FitGroup::compute), 0.8, 0.8 * 2e-3);
  for (const auto& row : r.rows) {
    EXPECT_NEAR(row.fitted_step_s, row.measured_step_s, 2e-3 * row.measured_step_s) << row.run_id;
    EXPECT_NEAR(row.held_out_step_s, row.measured_step_s, 2e-3 * row.measured_step_s) << row.run_id;
    EXPECT_LT(row.default_step_s, row.measured_step_s);  // the defaults are faster than the slowed system
  }
  EXPECT_GT(r.simulations, 0);
}

// Sources that cite the same document are one fold (a publication's tables are not independent).
TEST(RunFit, GroupsCitingOneDocumentAreOneFold) {
  FitFactors truth;
  truth.groups = {FitGroup::compute};
  truth.factor = {0.9};
  auto rows = synthetic_rows(truth, false);
  const char* groups[] = {"A", "B", "C", "A", "B", "C"};
  const char* docs[] = {"paper", "paper", "other", "paper", "", ""};
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].group = groups[i], rows[i].document = docs[i];
  const RunFitResult r = fit_runs(rows, RunFitOptions{});
  ASSERT_TRUE(r.by_group);
  EXPECT_EQ(r.folds, (std::vector<std::string>{"A (+ 1 source citing the same document)", "C"}));
  EXPECT_EQ(r.rows[1].group, "A (+ 1 source citing the same document)");  // B joined A
  EXPECT_EQ(r.rows[2].group, "C");
}

TEST(RunFit, SeveralGroupsByCoordinateDescentAndLeaveOneRowOut) {
  FitFactors truth;
  truth.groups = {FitGroup::compute, FitGroup::memory};
  truth.factor = {0.7, 0.9};
  const auto rows = synthetic_rows(truth, false);
  RunFitOptions o;
  o.groups = {FitGroup::compute, FitGroup::memory};
  const RunFitResult r = fit_runs(rows, o);
  EXPECT_FALSE(r.by_group);               // one group: each row is its own fold
  EXPECT_EQ(r.folds.size(), rows.size());
  for (const auto& row : r.rows) {
    EXPECT_NEAR(row.fitted_step_s, row.measured_step_s, 1e-2 * row.measured_step_s) << row.run_id;
  }
  EXPECT_NEAR(r.factors.of(FitGroup::compute), 0.7, 0.02);
}

TEST(RunFit, FactorsScaleTheConfigAndTheDocumentAlikeCappedAtOne) {
  FitFactors f;
  f.groups = {FitGroup::compute, FitGroup::comm, FitGroup::memory};
  f.factor = {2.0, 0.5, 0.9};
  const SystemConfig sys = h100();
  const SystemConfig s = apply_factors(sys, f);
  EXPECT_DOUBLE_EQ(s.matmul_efficiency, 1.0);  // 0.72 x 2 capped
  EXPECT_DOUBLE_EQ(s.attention_efficiency, std::min(1.0, sys.attention_efficiency * 2));
  EXPECT_DOUBLE_EQ(s.scale_up.efficiency[0], sys.scale_up.efficiency[0] * 0.5);
  EXPECT_DOUBLE_EQ(s.scale_out.efficiency[1], sys.scale_out.efficiency[1] * 0.5);
  EXPECT_DOUBLE_EQ(s.memory_efficiency, sys.memory_efficiency * 0.9);
  // What the factors put at the whole peak is named (H100: matmul 0.72, fp8 0.638, attention 0.50).
  EXPECT_EQ(efficiencies_at_cap(sys, f), (std::vector<std::string>{"matmul", "matmul_by_dtype.fp8", "attention"}));
  FitFactors comm_up;
  comm_up.groups = {FitGroup::comm};
  comm_up.factor = {1.25};  // scale-up 0.82 and 0.80 reach 1, 0.70 (all-to-all) does not
  const auto comm_cap = efficiencies_at_cap(sys, comm_up);
  EXPECT_NE(std::find(comm_cap.begin(), comm_cap.end(), "scale_up.all_reduce"), comm_cap.end());
  EXPECT_EQ(std::find(comm_cap.begin(), comm_cap.end(), "scale_up.all_to_all"), comm_cap.end());
  EXPECT_TRUE(efficiencies_at_cap(sys, FitFactors{}).empty());

  const nlohmann::json doc = read_json_file(kConfigs + "/systems/h100-sxm.json");
  const nlohmann::json scaled = apply_factors(doc, f);
  EXPECT_DOUBLE_EQ(scaled["efficiency"]["matmul"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(scaled["efficiency"]["matmul_by_dtype"]["fp8"].get<double>(), 1.0);
  EXPECT_NEAR(scaled["efficiency"]["attention_implementations"]["flash2"]["attention"].get<double>(),
              doc["efficiency"]["attention_implementations"]["flash2"]["attention"].get<double>() * 2, 1e-4);
  EXPECT_NEAR(scaled["network"]["scale_out"]["efficiency"]["all_reduce"].get<double>(),
              doc["network"]["scale_out"]["efficiency"]["all_reduce"].get<double>() * 0.5, 1e-4);
  EXPECT_NEAR(scaled["efficiency"]["memory_bound"].get<double>(), doc["efficiency"]["memory_bound"].get<double>() * 0.9,
              1e-4);
  // The scaled document is a valid system file with the config's values (to the 4 written decimals).
  const SystemConfig reparsed = parse_system(scaled, "scaled");
  EXPECT_NEAR(reparsed.memory_efficiency, s.memory_efficiency, 1e-4);
  EXPECT_NEAR(reparsed.scale_up.efficiency[0], s.scale_up.efficiency[0], 1e-4);
}

// The fp8 group scales the FP8 GEMMs' efficiency on top of compute; recovered from FP8 runs, and
// written as the file's fp8 entry (added from matmul when the file has none).
TEST(RunFit, Fp8FactorScalesFp8GemmsOnTopOfCompute) {
  FitFactors f;
  f.groups = {FitGroup::compute, FitGroup::fp8};
  f.factor = {0.9, 1.1};
  const SystemConfig sys = h100();
  const SystemConfig s = apply_factors(sys, f);
  EXPECT_NEAR(s.matmul_efficiency_for(DType::fp8_e4m3), sys.matmul_efficiency_for(DType::fp8_e4m3) * 0.99, 1e-12);
  EXPECT_NEAR(s.matmul_efficiency_for(DType::fp8_e5m2), sys.matmul_efficiency_for(DType::fp8_e5m2) * 0.99, 1e-12);
  EXPECT_NEAR(s.matmul_efficiency_for(DType::bf16), sys.matmul_efficiency * 0.9, 1e-12);
  nlohmann::json doc = read_json_file(kConfigs + "/systems/h100-sxm.json");
  const nlohmann::json scaled = apply_factors(doc, f);
  EXPECT_NEAR(scaled["efficiency"]["matmul_by_dtype"]["fp8"].get<double>(),
              doc["efficiency"]["matmul_by_dtype"]["fp8"].get<double>() * 0.99, 1e-4);
  EXPECT_NEAR(scaled["efficiency"]["matmul"].get<double>(), doc["efficiency"]["matmul"].get<double>() * 0.9, 1e-4);
  // A file without matmul_by_dtype: the FP8 GEMMs used matmul; the fit writes their own entry.
  doc["efficiency"].erase("matmul_by_dtype");
  const nlohmann::json added = apply_factors(doc, f);
  EXPECT_NEAR(added["efficiency"]["matmul_by_dtype"]["fp8"].get<double>(),
              doc["efficiency"]["matmul"].get<double>() * 0.99, 1e-4);
  const SystemConfig plain = parse_system(doc, "plain");
  EXPECT_NEAR(parse_system(added, "added").matmul_efficiency_for(DType::fp8_e4m3),
              apply_factors(plain, f).matmul_efficiency_for(DType::fp8_e4m3), 1e-4);

  // Recovered from FP8 and BF16 runs simulated with it.
  FitFactors truth = f;
  truth.factor = {0.85, 1.15};
  auto rows = synthetic_rows(truth, false);
  for (std::size_t i = 0; i < rows.size(); i += 2) {  // half of them FP8
    rows[i].strategy.fp8 = Fp8Recipe::delayed;
    const SystemConfig measured_on = apply_factors(rows[i].system, truth);
    SimulateOptions o;
    o.details = false;
    rows[i].measured_step_s =
        simulate(rows[i].model, rows[i].strategy, measured_on, DefaultEfficiencyModel(measured_on), o)
            .duration_time_per_iter_s;
  }
  RunFitOptions o;
  o.groups = {FitGroup::compute, FitGroup::fp8};
  o.passes = 6;
  const RunFitResult r = fit_runs(rows, o);
  EXPECT_NEAR(r.factors.of(FitGroup::compute), 0.85, 0.01);
  EXPECT_NEAR(r.factors.of(FitGroup::fp8), 1.15, 0.02);
  // Without an FP8 row the rows say nothing about FP8 GEMMs: the factor stays 1, not a boundary.
  const auto bf16_rows = synthetic_rows(FitFactors{}, true);
  const RunFitResult none = fit_runs(bf16_rows, o);
  EXPECT_DOUBLE_EQ(none.factors.of(FitGroup::fp8), 1.0);
  for (const auto& held : none.held_out) EXPECT_DOUBLE_EQ(held.of(FitGroup::fp8), 1.0);
}

TEST(RunFit, BadInputIsRefused) {
  EXPECT_THROW(fit_runs({}, RunFitOptions{}), std::invalid_argument);
  FitFactors none;
  auto rows = synthetic_rows(none, false);
  RunFitOptions no_groups;
  no_groups.groups.clear();
  EXPECT_THROW(fit_runs(rows, no_groups), std::invalid_argument);
  rows[0].measured_step_s = 0;
  EXPECT_THROW(fit_runs(rows, RunFitOptions{}), std::invalid_argument);
  EXPECT_EQ(parse_fit_group("comm"), FitGroup::comm);
  try {
    parse_fit_group("flops");
    FAIL() << "accepted 'flops'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("expected compute, comm, memory or fp8"), std::string::npos);
  }
}

}  // namespace
}  // namespace calisim::calibration
