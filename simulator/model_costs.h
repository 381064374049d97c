// Phase 1 of a simulation: what one micro-batch costs in each kind of block (a transformer
// layer, the embedding, the LM head) under a layout, through the EfficiencyModel.
//
// The result depends on the model, the system, the efficiency model and only the strategy fields
// collected in LayerCostKey (TP size, sequence parallelism, micro-batch size, sequence length,
// kernel and recompute choices) — not on pp, vpp, dp or the micro-batch count. The strategy
// search therefore computes it once per key and reuses it across candidates (assemble() is
// phase 2). Pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/efficiency_model.h"
#include "simulator/layer_ops.h"
#include "simulator/model_config.h"
#include "simulator/result.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

// Sums of one op list's costs, split the way the pipeline and memory models need them.
struct BlockCost {
  double fwd_s = 0, bwd_s = 0;        // incl. exposed TP comm
  double tp_comm_fwd_s = 0, tp_comm_bwd_s = 0;
  double recompute_fwd_s = 0;         // forward rerun before backward, for a recomputed block
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double act_bytes = 0;               // kept per micro-batch without recompute
  double act_bytes_recomputed = 0;    // kept when recomputed
  double fwd_transient_bytes = 0;     // largest extra live bytes while running forward
  double bwd_transient_bytes = 0;     // largest extra live bytes while running backward
};

struct ModelCosts {
  BlockCost layer;       // one dense transformer layer (with the recompute plan applied)
  BlockCost embedding;   // first chunk only
  BlockCost head;        // last chunk only
  double p2p_bytes = 0;  // activation sent between pipeline stages per micro-batch
  std::array<int, kEfficiencySourceCount> kernels_per_source{};
  std::vector<std::string> roofline_keys;  // filled with details
  std::vector<OpReport> ops;               // filled with details
};

// Requires a validated strategy. Throws InputError for model features not simulated yet.
ModelCosts cost_model(const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system,
                      const EfficiencyModel& efficiency, bool details);

// The strategy fields cost_model depends on; equal keys give equal ModelCosts.
struct LayerCostKey {
  std::int64_t micro_batch_size = 0, seq_len = 0;
  int tp = 0, cp = 0, ep = 0, etp = 0;
  std::uint32_t flags = 0;  // dtype, SP, attention kind, dropout, fusions, grad accumulation
  std::uint32_t recompute = 0;  // granularity and selective switches
  bool operator==(const LayerCostKey&) const = default;
};
LayerCostKey layer_cost_key(const StrategyConfig& strategy);

}  // namespace calisim
