#include "simulator/collective_table.h"

#include "simulator/comm_model.h"
#include "simulator/kernel_plan.h"

namespace calisim {

std::vector<CollectiveReport> collective_table(const std::vector<CollectiveKey>& keys, const SystemConfig& sys,
                                               const EfficiencyModel& eff, CollectiveChoiceMask mask) {
  std::vector<CollectiveReport> rows;
  rows.reserve(keys.size());
  for (const CollectiveKey& k : keys) {
    const CollectiveCost c = collective_cost(k, sys, eff, mask);
    CollectiveReport r;
    r.op = std::string(to_string(k.op));
    r.algorithm = std::string(to_string(c.algo));
    r.protocol = std::string(to_string(c.proto));
    r.tier = std::string(to_string(c.tier));
    r.source = std::string(to_string(c.efficiency.source));
    r.bytes = k.bytes;
    r.ranks = k.ranks;
    r.ranks_per_domain = k.ranks_per_node;
    r.time_s = c.time_s;
    r.busbw_gb_s = c.busbw_gb_s;
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<CollectiveReport> simulation_collectives(const ModelConfig& model, const StrategyConfig& strategy,
                                                     const SystemConfig& system, const EfficiencyModel& eff) {
  return collective_table(plan_kernels(model, strategy, system).collective, system, eff, strategy.nccl);
}

}  // namespace calisim
