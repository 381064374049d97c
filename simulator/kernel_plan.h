// The kernel plan of a configuration: every distinct GEMM, attention, collective and memory-op
// key that simulating (model, strategy, system) asks the EfficiencyModel about.
//
// Contract: pure (configs in, keys out), deterministic (each list sorted by canonical key string,
// no duplicates) and complete by construction: it runs simulate() under an EfficiencyModel that
// records every question, so a database holding a measured row for each planned key makes every
// kernel of that simulation `measured`. Collectives of a single rank (which cost nothing and are
// never asked about) do not appear. Requires a strategy that passed validate_layout; throws what
// simulate() throws (InputError for features the simulator does not model yet).
#pragma once

#include <vector>

#include "core/kernel_keys.h"
#include "simulator/model_config.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

struct KernelPlan {
  std::vector<GemmKey> gemm;
  std::vector<AttentionKey> attention;
  std::vector<CollectiveKey> collective;
  std::vector<MemoryOpKey> memory;
  std::size_t size() const { return gemm.size() + attention.size() + collective.size() + memory.size(); }
};

KernelPlan plan_kernels(const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system);

}  // namespace calisim
