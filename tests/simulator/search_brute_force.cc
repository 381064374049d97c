#include "search_brute_force.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "simulator/simulate.h"

namespace calisim::testing_support {

RankedCandidates brute_force_feasible(const ModelConfig& model, const StrategyConfig& base,
                                      const SystemConfig& system, const EfficiencyModel& eff,
                                      const SearchSpace& space,
                                      const std::function<void(const Candidate&, const StrategyConfig&)>& check) {
  RankedCandidates out;
  StrategyConfig st;
  for (std::uint64_t i = 0; i < space_size(space); ++i) {
    const Candidate c = candidate_at(space, i);
    if (!make_strategy(base, model, space, c, st, nullptr)) continue;
    if (check) check(c, st);
    const SimulationResult r = simulate(model, st, system, eff);
    double peak_gb = 0;
    for (const auto& s : r.stages) peak_gb = std::max(peak_gb, s.peak_mem_with_reserved_bytes / 1e9);
    if (peak_gb > system.device.memory_gb) continue;
    out.push_back({r.duration_time_per_iter_s, i});
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_search_equals_brute_force(const ModelConfig& model, const StrategyConfig& base,
                                      const SystemConfig& system, const EfficiencyModel& eff,
                                      const SearchSpace& space, const RankedCandidates& reference) {
  SearchOptions o;
  o.top_k = static_cast<int>(reference.size());
  o.threads = 2;
  const SearchResult r = run_search(model, base, system, eff, space, o);
  ASSERT_EQ(r.feasible_count, reference.size());
  for (std::size_t i = 0; i < r.top.size(); ++i) EXPECT_DOUBLE_EQ(r.top[i].step_time_s, reference[i].first) << i;
}

}  // namespace calisim::testing_support
