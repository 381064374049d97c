// The per-collective table of a simulation: every distinct collective the simulation charges, with
// the NCCL algorithm and protocol the network model picks, its tier, time and achieved busbw
// (SimulationResult::collectives, printed by `calisim simulate`, written by to_json).
//
// Contract: pure; allocates (strings for the report), so it is for reports, never for the search's
// hot path. Keys come from plan_kernels (simulator/kernel_plan.h), which lists exactly the
// collectives the simulation asks about; rows keep that order (sorted by canonical key).
#pragma once

#include <vector>

#include "core/efficiency_model.h"
#include "core/kernel_keys.h"
#include "simulator/collective_algorithms.h"
#include "simulator/model_config.h"
#include "simulator/result.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

std::vector<CollectiveReport> collective_table(const std::vector<CollectiveKey>& keys, const SystemConfig& system,
                                               const EfficiencyModel& eff, CollectiveChoiceMask mask = {});

// The table of one simulation: plan_kernels' collectives, costed with the strategy's NCCL override.
// What `calisim simulate` and the Python API's simulate() put into SimulationResult::collectives.
std::vector<CollectiveReport> simulation_collectives(const ModelConfig& model, const StrategyConfig& strategy,
                                                     const SystemConfig& system, const EfficiencyModel& eff);

}  // namespace calisim
