// Parameters one rank holds, split by the data-parallel group that reduces their gradients and
// shards their optimizer state (MODELING.md §4): "dense" parameters (attention, norms, dense
// MLPs, the MoE router and shared experts, embeddings) over dp·cp ranks; routed-expert
// parameters over the expert-data-parallel group world / (ep·etp·pp).
//
// TP splits the linear layers; norms, the MoE router and MLA's down projections (with their
// norms) are replicated over TP, as in Megatron-Core.
#pragma once

#include "simulator/model_config.h"
#include "simulator/strategy_config.h"

namespace calisim {

struct RankParams {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
  RankParams& operator+=(const RankParams& o) {
    dense += o.dense;
    expert += o.expert;
    return *this;
  }
};
inline RankParams operator*(double n, const RankParams& p) { return {n * p.dense, n * p.expert}; }

RankParams dense_layer_params_per_rank(const ModelConfig& model, const StrategyConfig& strategy);
RankParams moe_layer_params_per_rank(const ModelConfig& model, const StrategyConfig& strategy);
// One multi-token-prediction depth on the last stage: its transformer layer (dense or MoE as
// above), the column-parallel eh_proj (2h·h/t) and three TP-replicated norms. The shared word
// embedding a last stage needs for the shifted tokens is not included (simulate adds it).
RankParams mtp_depth_params_per_rank(const ModelConfig& model, const StrategyConfig& strategy);

}  // namespace calisim
