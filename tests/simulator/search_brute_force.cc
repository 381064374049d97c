#include "search_brute_force.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "simulator/simulate.h"

namespace calisim::testing_support {

RankedCandidates brute_force_feasible(const ModelConfig& model, const StrategyConfig& base,
                                      const SystemConfig& system, const EfficiencyModel& eff,
                                      const SearchSpace& space,
                                      const std::function<void(const Candidate&, const StrategyConfig&)>& check) {
  struct Feasible {
    Candidate c;
    double step_s, peak_gb;
    std::uint64_t index;
  };
  std::vector<Feasible> all;
  StrategyConfig st;
  for (std::uint64_t i = 0; i < space_size(space); ++i) {
    const Candidate c = candidate_at(space, i);
    if (!make_strategy(base, model, space, c, st, nullptr)) continue;
    if (check) check(c, st);
    const SimulationResult r = simulate(model, st, system, eff);
    double peak_gb = 0;
    for (const auto& s : r.stages) peak_gb = std::max(peak_gb, s.peak_mem_with_reserved_bytes / 1e9);
    if (peak_gb > system.device.memory_gb) continue;
    all.push_back({c, r.duration_time_per_iter_s, peak_gb, i});
  }
  // The search drops a recomputing candidate whose twin without recompute (every other field
  // equal) is feasible in no more memory; found here by comparing candidates field by field.
  auto same_but_recompute = [](const Candidate& a, const Candidate& b) {
    Candidate x = a;
    x.recompute = b.recompute;
    return x.tp == b.tp && x.pp == b.pp && x.vpp == b.vpp && x.cp == b.cp && x.ep == b.ep && x.zero == b.zero &&
           x.mbs == b.mbs && x.order == b.order && x.tp_2d_rows == b.tp_2d_rows && x.cp_2d_rows == b.cp_2d_rows &&
           x.etp == b.etp && x.cp_comm == b.cp_comm && x.dispatcher == b.dispatcher &&
           x.dp_replicate == b.dp_replicate;
  };
  RankedCandidates out;
  for (const Feasible& f : all) {
    const bool dominated =
        f.c.recompute != RecomputeChoice::none && std::any_of(all.begin(), all.end(), [&](const Feasible& g) {
          return g.c.recompute == RecomputeChoice::none && same_but_recompute(f.c, g.c) && g.peak_gb <= f.peak_gb;
        });
    if (!dominated) out.push_back({f.step_s, f.index});
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
