#include "simulator/sweep.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>

#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "test_support.h"

namespace calisim {
namespace {

struct Study {
  ModelConfig model = testing_support::shipped_model("llama3-8b");
  SystemConfig system = testing_support::shipped_system("h100-sxm");
  StrategyConfig base = parse_strategy(nlohmann::json::parse(R"({"seq_len": 4096, "global_batch_size": 32})"), "base");
  SearchSpace space;
  Study() {
    space.world_size = 16;
    space.global_batch_size = 32;
    space.tp = {1, 2, 4};
    space.mbs = {1, 2};
    space.recompute = {RecomputeChoice::none, RecomputeChoice::full};
  }
};

// The study's best layout (a search over its space with the default lists filled in) and the
// layout walk around it.
struct BestAndWalk {
  SearchSpace space;
  SearchResult best;
  std::vector<LayoutStep> walk;
};
BestAndWalk best_and_walk(const Study& s, SearchOptions o) {
  DefaultEfficiencyModel eff(s.system);
  BestAndWalk out;
  out.space = s.space;
  fill_default_lists(out.space, s.model, s.system.scale_up_domain_size);
  o.top_k = 1;
  out.best = run_search(s.model, s.base, s.system, eff, out.space, o);
  if (!out.best.top.empty()) {
    out.walk = walk_layouts(s.model, s.base, s.system, eff, out.space, out.best.top.front(), o);
  }
  return out;
}

TEST(Sweep, ValueLists) {
  EXPECT_EQ(parse_sweep_values("100,200", 50, 5), (std::vector<double>{100, 200}));
  EXPECT_EQ(parse_sweep_values("0.5x,2x", 50, 5), (std::vector<double>{25, 100}));
  const auto r = parse_sweep_values("1x..4x", 10, 3);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_NEAR(r[0], 10, 1e-9);
  EXPECT_NEAR(r[1], 20, 1e-9);  // geometric
  EXPECT_NEAR(r[2], 40, 1e-9);
  EXPECT_THROW(parse_sweep_values("abc", 1, 3), std::invalid_argument);
  EXPECT_THROW(parse_sweep_values("-1", 1, 3), std::invalid_argument);
  EXPECT_THROW(parse_hardware_param("flops"), std::invalid_argument);
}

TEST(Sweep, HardwareParametersSetTheirFields) {
  Study s;
  const SystemConfig a = with_hardware(s.system, HardwareParam::peak_bf16, 2 * 989);
  EXPECT_DOUBLE_EQ(a.device.peak_tflops[static_cast<int>(DType::fp8_e4m3)], 2 * 1979);
  const SystemConfig b = with_hardware(s.system, HardwareParam::nic_gb_s, 100);
  EXPECT_DOUBLE_EQ(b.scale_out.gpu_gb_s, 100.0 * b.nics_per_node / b.gpus_per_node);
  EXPECT_EQ(with_hardware(s.system, HardwareParam::scaleup_domain, 72).scale_up_domain_size, 72);
  EXPECT_THROW(with_hardware(s.system, HardwareParam::hbm_gb_s, 0), std::invalid_argument);
}

// More of any resource never makes the best step time worse; more memory never shrinks the
// feasible set.
TEST(Sweep, MonotonicInEveryResource) {
  Study s;
  SearchOptions o;
  for (HardwareParam p : {HardwareParam::peak_bf16, HardwareParam::hbm_gb_s, HardwareParam::scaleup_gb_s,
                          HardwareParam::nic_gb_s, HardwareParam::memory_gb}) {
    const double base = hardware_value(s.system, p);
    const auto pts = sweep_hardware(s.model, s.base, s.system, s.space, {p}, {{0.5 * base, base, 2 * base}}, o);
    ASSERT_EQ(pts.size(), 3u);
    for (std::size_t i = 1; i < pts.size(); ++i) {
      ASSERT_TRUE(pts[i].feasible || !pts[i - 1].feasible) << to_string(p);
      if (pts[i - 1].feasible) {
        EXPECT_LE(pts[i].best.step_time_s, pts[i - 1].best.step_time_s * (1 + 1e-12)) << to_string(p);
      }
    }
  }
  std::uint64_t last = 0;
  for (double gb : {20.0, 40.0, 80.0, 160.0}) {
    SystemConfig sys = with_hardware(s.system, HardwareParam::memory_gb, gb);
    DefaultEfficiencyModel eff(sys);
    SearchSpace sp = s.space;
    fill_default_lists(sp, s.model, sys.scale_up_domain_size);
    const SearchResult r = run_search(s.model, s.base, sys, eff, sp, o);
    EXPECT_GE(r.feasible_count, last) << gb;
    last = r.feasible_count;
  }
}

// With every rank order searched (so TP, CP or DP may take the NVLink domain): more scale-up
// bandwidth never makes the best time worse, and more memory never shrinks the feasible set.
TEST(Sweep, MonotonicWithPlacementSearched) {
  Study s;
  s.space.cp = {1, 2};
  s.space.orders = rank_order_list("all");
  SearchOptions o;
  const double bw = hardware_value(s.system, HardwareParam::scaleup_gb_s);
  const auto pts = sweep_hardware(s.model, s.base, s.system, s.space, {HardwareParam::scaleup_gb_s},
                                  {{0.1 * bw, 0.3 * bw, bw, 3 * bw}}, o);
  ASSERT_EQ(pts.size(), 4u);
  for (std::size_t i = 1; i < pts.size(); ++i) {
    ASSERT_TRUE(pts[i].feasible);
    EXPECT_LE(pts[i].best.step_time_s, pts[i - 1].best.step_time_s * (1 + 1e-12)) << i;
  }
  std::uint64_t last = 0;
  for (double gb : {20.0, 40.0, 80.0, 160.0}) {
    SystemConfig sys = with_hardware(s.system, HardwareParam::memory_gb, gb);
    DefaultEfficiencyModel eff(sys);
    SearchSpace sp = s.space;
    fill_default_lists(sp, s.model, sys.scale_up_domain_size);
    const SearchResult r = run_search(s.model, s.base, sys, eff, sp, o);
    EXPECT_GE(r.feasible_count, last) << gb;
    last = r.feasible_count;
  }
  EXPECT_GT(last, 0u);
}

// A scale-up domain of 4 on 16 GPUs: the best layout's placement is reported, and walking the
// orders around it gives one step per distinct placement.
TEST(Sweep, LayoutWalkCoversPlacements) {
  Study s;
  s.system.scale_up_domain_size = 4;
  s.space.cp = {1, 2};
  s.space.orders = rank_order_list("tp_first");
  const BestAndWalk r = best_and_walk(s, SearchOptions{});
  ASSERT_FALSE(r.best.top.empty());
  const auto& walk = r.walk;
  std::vector<RankPlacement> seen;
  int orders = 0;
  for (const auto& w : walk) {
    if (w.dimension != "order" || !w.legal) continue;
    ++orders;
    for (const auto& p : seen) EXPECT_FALSE(p == w.result.placement) << w.value << " repeats a placement";
    seen.push_back(w.result.placement);
  }
  EXPECT_GE(orders, 2);
  EXPECT_LT(orders, 24);
}

TEST(Sweep, ScaleAndLayoutWalk) {
  Study s;
  SearchOptions o;
  const auto pts = sweep_scale(s.model, s.base, {s.system}, {8, 16, 32}, 32, false, 1e9, SearchSpace{}, o);
  ASSERT_EQ(pts.size(), 3u);
  for (const auto& p : pts) {
    ASSERT_TRUE(p.feasible) << p.gpus;
    EXPECT_NEAR(p.time_to_train_s, 1e9 / (p.best.tokens_per_s_per_gpu * p.gpus), 1e-6 * p.time_to_train_s);
  }
  // Strong scaling: more GPUs, shorter steps.
  EXPECT_LT(pts[2].best.step_time_s, pts[0].best.step_time_s);

  const BestAndWalk r = best_and_walk(s, o);
  ASSERT_FALSE(r.best.top.empty());
  const auto& best = r.best;
  const auto& walk = r.walk;
  int marked = 0;
  for (const auto& w : walk) {
    if (!w.is_best) continue;
    ++marked;
    EXPECT_DOUBLE_EQ(w.result.step_time_s, best.top.front().step_time_s);
  }
  EXPECT_GE(marked, 5);  // the best appears once per dimension
  for (const auto& w : walk) {
    if (w.legal && w.fits) {
      EXPECT_GE(w.result.step_time_s, best.top.front().step_time_s * (1 - 1e-12));
    }
  }
}


// Values that are not finite and positive, and fractional domains, are refused (inf used to pass
// and 8.5 GPUs became 9).
TEST(Sweep, ValuesMustBeFinitePositiveAndDomainsWhole) {
  Study s;
  EXPECT_THROW(parse_sweep_values("inf", 1, 3), std::invalid_argument);
  EXPECT_THROW(parse_sweep_values("nan", 1, 3), std::invalid_argument);
  EXPECT_THROW(parse_sweep_values("1e999", 1, 3), std::invalid_argument);
  EXPECT_THROW(parse_sweep_values("1x..2x", 1, 1), std::invalid_argument);
  EXPECT_THROW(with_hardware(s.system, HardwareParam::hbm_gb_s, std::numeric_limits<double>::infinity()),
               std::invalid_argument);
  EXPECT_THROW(with_hardware(s.system, HardwareParam::scaleup_domain, 8.5), std::invalid_argument);
  // A geometric range lands on whole domains up to rounding: 8, 24, 72.
  for (double d : parse_sweep_values("8..72", 8, 3)) {
    EXPECT_NO_THROW(with_hardware(s.system, HardwareParam::scaleup_domain, d)) << d;
  }
  SearchOptions o;
  for (double tokens : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    EXPECT_THROW(sweep_scale(s.model, s.base, {s.system}, {8}, 32, false, tokens, s.space, o), std::invalid_argument)
        << tokens;
  }
  EXPECT_THROW(sweep_scale(s.model, s.base, {s.system}, {}, 32, false, 1e9, s.space, o), std::invalid_argument);
  EXPECT_THROW(sweep_scale(s.model, s.base, {s.system}, {0}, 32, false, 1e9, s.space, o), std::invalid_argument);
  EXPECT_THROW(sweep_scale(s.model, s.base, {s.system}, {3, 4}, 32, true, 1e9, s.space, o), std::invalid_argument);
}

// A point without any legal layout says so; it is not a memory problem.
TEST(Sweep, IllegalPointsAreNotCalledMemoryLimited) {
  Study s;
  SearchOptions o;
  SearchSpace sp = s.space;
  sp.world_size = 100;  // 32 layers, 32 heads: no tp x pp x dp of 100 GPUs divides the batch of 32
  const auto pts = sweep_hardware(s.model, s.base, s.system, sp, {HardwareParam::peak_bf16},
                                  {{hardware_value(s.system, HardwareParam::peak_bf16)}}, o);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_FALSE(pts[0].feasible);
  EXPECT_FALSE(pts[0].legal);
  EXPECT_EQ(pts[0].limit, kNoLegalLayout);
  EXPECT_NE(pts[0].explanation.find("no legal layout"), std::string::npos) << pts[0].explanation;

  const auto big = sweep_hardware(s.model, s.base, s.system, s.space, {HardwareParam::memory_gb}, {{1.0}}, o);
  ASSERT_EQ(big.size(), 1u);
  EXPECT_FALSE(big[0].feasible);
  EXPECT_TRUE(big[0].legal);
  EXPECT_EQ(big[0].limit, kNothingFits);

  const auto scale = sweep_scale(s.model, s.base, {s.system}, {16, 100}, 32, false, 1e9, s.space, o);
  ASSERT_EQ(scale.size(), 2u);
  EXPECT_TRUE(scale[0].feasible && scale[0].legal);
  EXPECT_FALSE(scale[1].feasible || scale[1].legal);
  EXPECT_EQ(scale[1].time_to_train_s, 0);

  // A pp list none of whose sizes divides the count: illegal there, not searched with pp 1.
  SearchSpace pp3 = s.space;
  pp3.pp = {3};
  const auto odd = sweep_scale(s.model, s.base, {s.system}, {16}, 32, false, 1e9, pp3, o);
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_FALSE(odd[0].legal);
  EXPECT_NE(odd[0].explanation.find("pipeline sizes"), std::string::npos) << odd[0].explanation;
}

// With 2D TP grids in the space, the layout walk walks the grid rows and marks the best's.
TEST(Sweep, LayoutWalkCoversTensorParallelGrids) {
  Study s;
  s.space.tp = {4};
  s.space.tp_2d_rows = {0, 2};
  const BestAndWalk r = best_and_walk(s, SearchOptions{});
  ASSERT_FALSE(r.best.top.empty());
  const auto& best = r.best;
  const auto& walk = r.walk;
  int grid_steps = 0, marked = 0;
  for (const auto& w : walk) {
    if (w.dimension != "tp_2d_rows") continue;
    ++grid_steps;
    EXPECT_TRUE(w.legal) << w.value << ": " << w.why_not;
    EXPECT_EQ(w.result.candidate.tp_2d_rows, std::stoi(w.value));
    if (w.is_best) {
      ++marked;
      EXPECT_EQ(std::stoi(w.value), best.top.front().candidate.tp_2d_rows);
      EXPECT_DOUBLE_EQ(w.result.step_time_s, best.top.front().step_time_s);
    }
  }
  EXPECT_EQ(grid_steps, 2);
  EXPECT_EQ(marked, 1);
}

}  // namespace
}  // namespace calisim
