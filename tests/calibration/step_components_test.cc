// calibration/step_components.h: the multipliers of a simulated step's parts that measured step
// times want (non-negative relative least squares, held out by fold), and the parts of a
// simulation result.
#include "calibration/step_components.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "calibration/run_fit.h"

namespace calisim::calibration {
namespace {

constexpr int kCompute = static_cast<int>(StepComponent::compute);
constexpr int kAttention = static_cast<int>(StepComponent::attention);
constexpr int kModelComm = static_cast<int>(StepComponent::model_parallel_comm);
constexpr int kDpComm = static_cast<int>(StepComponent::data_parallel_comm);
constexpr int kBubble = static_cast<int>(StepComponent::bubble);
constexpr int kOther = static_cast<int>(StepComponent::other);

// Rows in three folds whose measured steps are exactly 1.25 x compute + 2 x model-parallel comm +
// 0.8 x bubble (+ 1 x other, for the rows that have some), parts varied so that no two columns are
// proportional.
std::vector<ComponentRow> exact_rows() {
  std::vector<ComponentRow> rows;
  const char* folds[] = {"A", "B", "C"};
  for (int i = 0; i < 12; ++i) {
    ComponentRow r;
    r.run_id = fmt::format("R{}", i);
    r.fold = folds[i % 3];
    r.parts_s[kCompute] = 1.0 + 0.37 * i;
    r.parts_s[kModelComm] = 0.05 + 0.021 * ((i * 7) % 5);
    r.parts_s[kBubble] = 0.1 * ((i * 3) % 4);
    r.parts_s[kOther] = i % 2 ? 0.02 : 0.0;
    r.measured_s = 1.25 * r.parts_s[kCompute] + 2.0 * r.parts_s[kModelComm] + 0.8 * r.parts_s[kBubble] +
                   1.0 * r.parts_s[kOther];
    rows.push_back(r);
  }
  return rows;
}

TEST(StepComponents, RecoversTheMultipliersOfExactRowsAndPredictsHeldOutFolds) {
  const auto rows = exact_rows();
  const ComponentFit f = fit_components(rows);
  EXPECT_NEAR(f.multipliers.value[kCompute], 1.25, 1e-9);
  EXPECT_NEAR(f.multipliers.value[kModelComm], 2.0, 1e-9);
  EXPECT_NEAR(f.multipliers.value[kBubble], 0.8, 1e-9);
  EXPECT_NEAR(f.multipliers.value[kOther], 1.0, 1e-7);
  // No row has data-parallel communication: not fitted, kept at 1.
  EXPECT_FALSE(f.multipliers.fitted[kDpComm]);
  EXPECT_EQ(f.multipliers.value[kDpComm], 1.0);
  EXPECT_TRUE(f.multipliers.fitted[kCompute] && f.multipliers.fitted[kBubble]);
  // Three folds, each predicted from the other two: exact rows are predicted exactly.
  ASSERT_TRUE(f.by_fold);
  ASSERT_EQ(f.folds.size(), 3u);
  ASSERT_EQ(f.held_out.size(), 3u);
  // Each fold holds out exactly its own rows, and the folds cover every row once.
  ASSERT_EQ(f.fold_rows.size(), 3u);
  std::vector<int> held(rows.size(), 0);
  for (std::size_t k = 0; k < 3; ++k) {
    for (std::size_t i : f.fold_rows[k]) {
      ASSERT_LT(i, rows.size());
      EXPECT_EQ(rows[i].fold, rows[f.fold_rows[k].front()].fold) << f.folds[k];
      ++held[i];
    }
  }
  EXPECT_TRUE(std::all_of(held.begin(), held.end(), [](int n) { return n == 1; }));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_NEAR(f.fitted_s[i], rows[i].measured_s, 1e-9 * rows[i].measured_s) << rows[i].run_id;
    EXPECT_NEAR(f.held_out_s[i], rows[i].measured_s, 1e-7 * rows[i].measured_s) << rows[i].run_id;
    double sum = 0;
    for (double p : rows[i].parts_s) sum += p;
    EXPECT_NEAR(f.simulated_s[i], sum, 1e-12) << "multipliers 1 reproduce the simulated step";
  }
  // Shares: each part's fraction of the summed simulated time.
  double total = 0, compute = 0;
  for (const auto& r : rows) {
    for (double p : r.parts_s) total += p;
    compute += r.parts_s[kCompute];
  }
  EXPECT_NEAR(f.share[kCompute], compute / total, 1e-12);
  EXPECT_EQ(f.share[kDpComm], 0.0);
}

// A part that would take a negative multiplier unconstrained is set to 0 and the others refitted:
// the answer is the best non-negative one (checked against every value of that part on a grid).
TEST(StepComponents, MultipliersAreNonNegativeAndOptimalAmongNonNegativeOnes) {
  std::vector<ComponentRow> rows;
  for (int i = 0; i < 8; ++i) {
    ComponentRow r;
    r.run_id = fmt::format("R{}", i);
    r.fold = "only";
    r.parts_s[kCompute] = 1.0 + 0.2 * i;
    r.parts_s[kOther] = 0.1 + 0.05 * i;
    // Measured time falls as `other` grows: unconstrained least squares wants a negative multiplier.
    r.measured_s = 1.3 * r.parts_s[kCompute] - 0.5 * r.parts_s[kOther] + 0.01 * ((i % 3) - 1);
    rows.push_back(r);
  }
  const ComponentFit f = fit_components(rows);
  EXPECT_EQ(f.multipliers.value[kOther], 0.0);
  EXPECT_GT(f.multipliers.value[kCompute], 0);
  auto objective = [&](double c, double o) {
    double sum = 0;
    for (const auto& r : rows) {
      const double e = (c * r.parts_s[kCompute] + o * r.parts_s[kOther] - r.measured_s) / r.measured_s;
      sum += e * e;
    }
    return sum;
  };
  const double found = objective(f.multipliers.value[kCompute], f.multipliers.value[kOther]);
  for (double c = 0.5; c <= 2.0; c += 0.01) {
    for (double o = 0; o <= 1.0; o += 0.05) EXPECT_LE(found, objective(c, o) + 1e-12) << c << " " << o;
  }
  // One fold only: each row is held out by itself.
  EXPECT_FALSE(f.by_fold);
  EXPECT_EQ(f.folds.size(), rows.size());

  // Parts kept as simulated already exceed every measured step: no positive multiplier helps, and
  // 0 (the empty subset) is the non-negative optimum.
  std::vector<ComponentRow> over = rows;
  for (auto& r : over) r.measured_s = 0.5 * r.parts_s[kOther];
  std::array<bool, kStepComponents> compute_only{};
  compute_only[kCompute] = true;
  const ComponentFit z = fit_components(over, compute_only);
  EXPECT_TRUE(z.multipliers.fitted[kCompute]);
  EXPECT_EQ(z.multipliers.value[kCompute], 0.0);
  EXPECT_EQ(z.multipliers.value[kOther], 1.0);
}

// Parts the caller keeps as simulated stay at 1 and the others are fitted to what is left.
TEST(StepComponents, KeptPartsStayAtOneAndTheRestFitsTheRemainder) {
  const auto rows = exact_rows();
  std::array<bool, kStepComponents> fit{};
  fit[kCompute] = fit[kModelComm] = true;
  const ComponentFit f = fit_components(rows, fit);
  EXPECT_FALSE(f.multipliers.fitted[kBubble]);
  EXPECT_FALSE(f.multipliers.fitted[kOther]);
  EXPECT_EQ(f.multipliers.value[kBubble], 1.0);
  // The bubble kept at 1 where the rows want 0.8: compute and communication absorb the 0.2 surplus
  // and the rows no longer fit exactly.
  double worst = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) worst = std::max(worst, std::abs(f.fitted_s[i] / rows[i].measured_s - 1));
  EXPECT_GT(worst, 1e-4);
  EXPECT_LT(worst, 0.1);
  EXPECT_GT(f.multipliers.value[kCompute], 1.1);
  EXPECT_LT(f.multipliers.value[kCompute], 1.3);
}

TEST(StepComponents, RefusesWhatCannotBeFitted) {
  EXPECT_THROW(fit_components({}), std::invalid_argument);
  auto rows = exact_rows();
  rows[3].measured_s = 0;
  EXPECT_THROW(fit_components(rows), std::invalid_argument);
  std::vector<ComponentRow> empty_parts(2);
  empty_parts[0].measured_s = empty_parts[1].measured_s = 1;
  EXPECT_THROW(fit_components(empty_parts), std::invalid_argument);
  EXPECT_THROW(fit_components(exact_rows(), std::array<bool, kStepComponents>{}), std::invalid_argument);
}

TEST(StepComponents, NamesParseBackAndUnknownOnesAreRefused) {
  for (int k = 0; k < kStepComponents; ++k) {
    EXPECT_EQ(parse_step_component(json_name(static_cast<StepComponent>(k))), static_cast<StepComponent>(k));
  }
  try {
    parse_step_component("tp");
    FAIL() << "an unknown part was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("model_parallel_comm"), std::string::npos) << e.what();
  }
}

// A result's breakdown lands in the parts that the fit scales.
TEST(StepComponents, PartsOfASimulationResult) {
  SimulationResult r;
  r.compute_s = 1.0;
  r.recompute_s = 0.25;
  r.tp_comm_exposed_s = 0.1;
  r.cp_comm_exposed_s = 0.02;
  r.ep_comm_exposed_s = 0.03;
  r.pp_comm_exposed_s = 0.04;
  r.dp_comm_exposed_s = 0.5;
  r.bubble_s = 0.3;
  r.optimizer_s = 0.06;
  r.host_exposed_s = 0.007;
  r.straggler_s = 0.008;
  r.offload_exposed_s = 0.009;
  StepParts p = step_parts(r);
  EXPECT_DOUBLE_EQ(p[kCompute], 1.25);
  EXPECT_DOUBLE_EQ(p[kAttention], 0.0);
  // The attention kernels are a share of compute + recompute, taken out of compute.
  r.attention_kernel_s = 0.4;
  p = step_parts(r);
  EXPECT_DOUBLE_EQ(p[kCompute], 0.85);
  EXPECT_DOUBLE_EQ(p[kAttention], 0.4);
  EXPECT_DOUBLE_EQ(p[kModelComm], 0.19);
  EXPECT_DOUBLE_EQ(p[kDpComm], 0.5);
  EXPECT_DOUBLE_EQ(p[kBubble], 0.3);
  EXPECT_DOUBLE_EQ(p[kOther], 0.084);
}

// Rows in four folds whose other kernels run 1.1x and attention kernels `attention_x` times their
// simulated time; the attention share varies from row to row (sequence lengths), as in real runs.
std::vector<ComponentRow> attention_rows(double attention_x) {
  std::vector<ComponentRow> rows;
  const char* folds[] = {"A", "B", "C", "D"};
  for (int i = 0; i < 16; ++i) {
    ComponentRow r;
    r.run_id = fmt::format("R{}", i);
    r.fold = folds[i % 4];
    r.parts_s[kCompute] = 1.0 + 0.13 * i;
    r.parts_s[kAttention] = 0.05 + 0.09 * ((i * 5) % 7);
    r.parts_s[kBubble] = 0.1;
    r.measured_s = 1.1 * r.parts_s[kCompute] + attention_x * r.parts_s[kAttention] + r.parts_s[kBubble];
    rows.push_back(r);
  }
  return rows;
}

// Attention refines compute: fitted apart it gets its own multiplier; asked for compute alone, the
// attention kernels take compute's multiplier (one multiplier for every kernel, what --components
// compute has always fitted).
TEST(StepComponents, AttentionFollowsComputeUnlessFittedApart) {
  const auto rows = attention_rows(1.6);
  std::array<bool, kStepComponents> apart{};
  apart[kCompute] = apart[kAttention] = true;
  const ComponentFit a = fit_components(rows, apart);
  EXPECT_NEAR(a.multipliers.value[kCompute], 1.1, 1e-9);
  EXPECT_NEAR(a.multipliers.value[kAttention], 1.6, 1e-9);
  EXPECT_FALSE(a.multipliers.attention_tied);
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_NEAR(a.held_out_s[i], rows[i].measured_s, 1e-9);

  std::array<bool, kStepComponents> compute{};
  compute[kCompute] = true;
  const ComponentFit t = fit_components(rows, compute);
  EXPECT_TRUE(t.multipliers.attention_tied);
  EXPECT_FALSE(t.multipliers.fitted[kAttention]);
  EXPECT_EQ(t.multipliers.value[kAttention], t.multipliers.value[kCompute]);
  EXPECT_GT(t.multipliers.value[kCompute], 1.1);  // the slow attention pulls the one multiplier up
  EXPECT_LT(t.multipliers.value[kCompute], 1.6);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& p = rows[i].parts_s;
    EXPECT_NEAR(t.fitted_s[i], t.multipliers.value[kCompute] * (p[kCompute] + p[kAttention]) + p[kBubble], 1e-12);
  }
  // Each fold ties attention to that fold's compute multiplier too.
  for (const auto& m : t.held_out) {
    EXPECT_TRUE(m.attention_tied);
    EXPECT_EQ(m.value[kAttention], m.value[kCompute]);
  }
  // Attention alone: the other kernels kept as simulated.
  std::array<bool, kStepComponents> alone{};
  alone[kAttention] = true;
  const ComponentFit o = fit_components(rows, alone);
  EXPECT_FALSE(o.multipliers.attention_tied);
  EXPECT_EQ(o.multipliers.value[kCompute], 1.0);
  EXPECT_TRUE(o.multipliers.fitted[kAttention]);
}

// --select-parts: a part is kept only where the held-out folds gain from it, and each fold's parts
// are chosen without that fold's rows.
TEST(StepComponents, SelectionKeepsAPartOnlyWhereHeldOutRowsAgree) {
  std::array<bool, kStepComponents> asked{};
  asked[kCompute] = asked[kAttention] = true;
  // Attention really is slower: the split predicts every fold exactly, compute alone does not.
  const ComponentFit split = fit_components(attention_rows(1.6), asked, true);
  EXPECT_TRUE(split.selected);
  EXPECT_TRUE(split.multipliers.fitted[kCompute] && split.multipliers.fitted[kAttention]);
  EXPECT_NEAR(split.multipliers.value[kAttention], 1.6, 1e-9);
  for (const auto& m : split.held_out) EXPECT_TRUE(m.fitted[kAttention]);
  // Attention as slow as the rest: both choices predict exactly, and the fewer parts win.
  const ComponentFit same = fit_components(attention_rows(1.1), asked, true);
  EXPECT_TRUE(same.multipliers.fitted[kCompute]);
  EXPECT_FALSE(same.multipliers.fitted[kAttention]);
  EXPECT_TRUE(same.multipliers.attention_tied);
  EXPECT_NEAR(same.multipliers.value[kCompute], 1.1, 1e-9);
  // Without selection every asked part is fitted, here to the same 1.1.
  const ComponentFit forced = fit_components(attention_rows(1.1), asked, false);
  EXPECT_FALSE(forced.selected);
  EXPECT_TRUE(forced.multipliers.fitted[kAttention]);
  EXPECT_NEAR(forced.multipliers.value[kAttention], 1.1, 1e-9);

  // Nested: fold D alone has attention 3x slower. Held out, D's parts are chosen on A-C, which
  // agree on one multiplier for every kernel: D is predicted with compute alone.
  auto rows = attention_rows(1.1);
  for (auto& r : rows) {
    if (r.fold == "D") r.measured_s += (3.0 - 1.1) * r.parts_s[kAttention];
  }
  const ComponentFit nested = fit_components(rows, asked, true);
  ASSERT_EQ(nested.folds.size(), 4u);
  for (std::size_t f = 0; f < nested.folds.size(); ++f) {
    if (nested.folds[f] != "D") continue;
    EXPECT_FALSE(nested.held_out[f].fitted[kAttention]) << "fold D's parts were chosen without its rows";
    EXPECT_NEAR(nested.held_out[f].value[kCompute], 1.1, 1e-9);
  }
}

// Folds: a row's source, sources citing one document joined under the first of them.
TEST(StepComponents, CrossValidationFoldsJoinSourcesCitingOneDocument) {
  const auto folds = cross_validation_folds({"T1", "X", "T2", "T1", "T3"}, {"doc", "", "doc", "doc", "other"});
  ASSERT_EQ(folds.size(), 5u);
  EXPECT_EQ(folds[0], "T1 (+ 1 source citing the same document)");
  EXPECT_EQ(folds[2], folds[0]);
  EXPECT_EQ(folds[3], folds[0]);
  EXPECT_EQ(folds[1], "X");
  EXPECT_EQ(folds[4], "T3");
  EXPECT_THROW(cross_validation_folds({"a"}, {}), std::invalid_argument);
}

}  // namespace
}  // namespace calisim::calibration
