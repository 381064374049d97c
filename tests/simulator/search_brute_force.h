// Brute force for the search tests: every legal candidate of a space simulated one by one, to
// compare the search's pruned, parallel answer against.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "core/efficiency_model.h"
#include "simulator/model_config.h"
#include "simulator/search.h"
#include "simulator/search_space.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim::testing_support {

// (step time s, candidate index) of every legal candidate whose peak memory (with the allocator
// reserve) fits the device, fastest first, less those that recompute while their twin without
// recompute fits in no more memory (the search's `dominated`). `check` (optional) sees every legal candidate and
// the strategy made from it.
using RankedCandidates = std::vector<std::pair<double, std::uint64_t>>;
RankedCandidates brute_force_feasible(
    const ModelConfig& model, const StrategyConfig& base, const SystemConfig& system, const EfficiencyModel& eff,
    const SearchSpace& space,
    const std::function<void(const Candidate&, const StrategyConfig&)>& check = {});

// Runs the search over the whole space (top K = all) and expects the same feasible count and the
// same ranked step times as `reference`.
void expect_search_equals_brute_force(const ModelConfig& model, const StrategyConfig& base,
                                      const SystemConfig& system, const EfficiencyModel& eff,
                                      const SearchSpace& space, const RankedCandidates& reference);

}  // namespace calisim::testing_support
