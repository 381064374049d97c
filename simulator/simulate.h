// simulate(): one training iteration of a validated (model, strategy, system) under an
// EfficiencyModel. Pure: no I/O, deterministic, thread-safe for concurrent calls.
#pragma once

#include <limits>

#include "core/efficiency_model.h"
#include "simulator/model_config.h"
#include "simulator/model_costs.h"
#include "simulator/result.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

struct SimulateOptions {
  bool details = true;   // per-op table, roofline key list (costs a few string allocations)
  bool trace = false;    // record pipeline events for a Chrome/Perfetto trace
  // Strategy search: when the pipeline's lower bound already exceeds this step time, the event
  // simulation is skipped and the result is marked `pruned` (its times are lower bounds; memory
  // is exact).
  double pipeline_cutoff_s = std::numeric_limits<double>::infinity();
};

// Requires strategy to have passed validate_layout against model. Throws InputError for features
// the simulator does not model yet (MoE layers, MLA) and when the training dtype has no peak on
// the device.
SimulationResult simulate(const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system,
                          const EfficiencyModel& efficiency, const SimulateOptions& options = {});

// Phase 2 alone: stages, pipeline schedule, DP communication, memory and metrics from costs made
// by cost_model() for a strategy with the same layer_cost_key(). simulate() = assemble(cost_model()).
SimulationResult assemble(const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system,
                          const EfficiencyModel& efficiency, const ModelCosts& costs, const SimulateOptions& options);

}  // namespace calisim
