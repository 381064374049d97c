// Phase 1 of a simulation: what one micro-batch costs in each kind of block (a dense transformer
// layer, a MoE layer, the embedding, the LM head) under a layout, through the EfficiencyModel.
//
// The result depends on the model, the system, the efficiency model and only the strategy fields
// collected in LayerCostKey (TP/CP/EP/ETP sizes and their strides in the rank order, sequence
// parallelism, micro-batch size, sequence length, kernel, FP8, recompute, TP-overlap and MoE
// dispatch/overlap choices, grouped GEMM and CUDA-graph scope (host dispatch), NCCL
// algorithm/protocol overrides) — not on pp, vpp, dp, ZeRO, DP
// overlap, offload or the micro-batch count, except where the rank order puts pp or dp before a
// TP/CP/EP group (the strides). The strategy search therefore computes it once per key and reuses
// it across candidates (assemble() is phase 2). Pure and thread-safe.
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
  double fwd_s = 0, bwd_s = 0;        // incl. exposed TP / CP / EP comm
  double tp_comm_fwd_s = 0, tp_comm_bwd_s = 0;  // exposed, per group
  double cp_comm_fwd_s = 0, cp_comm_bwd_s = 0;
  double ep_comm_fwd_s = 0, ep_comm_bwd_s = 0;
  double comm_s() const {
    return tp_comm_fwd_s + tp_comm_bwd_s + cp_comm_fwd_s + cp_comm_bwd_s + ep_comm_fwd_s + ep_comm_bwd_s;
  }
  double recompute_fwd_s = 0;         // forward rerun before backward, for a recomputed block
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double compute_fwd_s = 0, compute_bwd_s = 0;  // kernels alone, no communication
  double shared_expert_fwd_s = 0, shared_expert_bwd_s = 0;  // MoE shared experts' compute
  // Of compute_fwd_s / compute_bwd_s / recompute_fwd_s, the attention core's kernels (OpUnit::
  // attention_core: the fused or unfused attention, the CP ring's merge), communication excluded.
  double attention_fwd_s = 0, attention_bwd_s = 0, attention_recompute_s = 0;
  // Time the 1F1B EP all-to-all overlap (overlap_moe_expert_parallel_comm) took off fwd_s / bwd_s:
  // it hides a micro-batch's all-to-all behind another micro-batch's compute, so a forward or
  // backward that runs unpaired (warm-up, cool-down) pays it back.
  double ep_paired_saving_fwd_s = 0, ep_paired_saving_bwd_s = 0;
  double act_bytes = 0;               // kept per micro-batch without recompute
  double act_bytes_recomputed = 0;    // kept when recomputed
  double fwd_transient_bytes = 0;     // largest extra live bytes while running forward
  double bwd_transient_bytes = 0;     // largest extra live bytes while running backward
  // Host dispatch (simulator/host_dispatch.h), one micro-batch: the host's issue time, and the GPU
  // idle time it causes, already included in fwd_s / bwd_s (zero when the system has no host model).
  double host_fwd_s = 0, host_bwd_s = 0;
  double host_exposed_fwd_s = 0, host_exposed_bwd_s = 0;
  int host_syncs_fwd = 0;             // device-to-host synchronisations per forward
};

struct ModelCosts {
  BlockCost layer;       // one dense transformer layer (with the recompute plan applied)
  BlockCost moe_layer;   // one MoE layer (zero for dense models)
  // The same two layers with training-dtype GEMMs, for the layers strategy.has_bf16_layers() keeps
  // out of FP8 (Megatron --first-last-layers-bf16); zero otherwise.
  BlockCost layer_bf16;
  BlockCost moe_layer_bf16;
  BlockCost embedding;   // first chunk only
  BlockCost head;        // last chunk only
  // One multi-token-prediction depth (last chunk only, × model.mtp_num_layers; zero without MTP):
  // embedding lookup + checkpointable core (projection, layer, norms; recompute plan applied to
  // it) + LM head and cross-entropy.
  BlockCost mtp;
  double p2p_bytes = 0;  // activation sent between pipeline stages per micro-batch
  std::array<int, kEfficiencySourceCount> kernels_per_source{};
  std::array<int, kOriginIdCount> kernels_per_origin{};  // by Efficiency::origin
  std::vector<std::string> roofline_keys;  // filled with details
  std::vector<OpReport> ops;               // filled with details
};

// Requires a validated strategy.
ModelCosts cost_model(const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system,
                      const EfficiencyModel& efficiency, bool details);

// The strategy fields cost_model depends on; equal keys give equal ModelCosts.
struct LayerCostKey {
  std::int64_t micro_batch_size = 0, seq_len = 0;
  int tp = 0, cp = 0, ep = 0, etp = 0;
  std::uint32_t flags = 0;  // dtype, SP, attention kind, dropout, fusions, grad accumulation, FP8, TP overlap, CP kind
  std::uint32_t recompute = 0;  // granularity, selective switches, Megatron recompute modules
  std::uint32_t moe = 0;        // dispatcher, flex backend, dispatch_probs, shared-expert and EP all-to-all overlap, grouped GEMM, CUDA graphs
  double moe_token_imbalance_factor = 1.0;
  int flex_num_sms = 0;         // SMs of the flex dispatcher's kernels (0 unless flex)
  int tp_stride = 1, cp_stride = 1, ep_stride = 1, etp_stride = 1;  // rank order: which share a scale-up domain
  int tp_2d_rows = 0;  // 0 = 1D tensor parallelism; else the 2D grid's rows (cols = tp / rows)
  int cp_2d_rows = 0;  // 0 = 1D context parallelism; else the 2D CP grid's rows (cols = cp / rows)
  CollectiveChoiceMask nccl;  // NCCL_ALGO/NCCL_PROTO-style override: changes every collective's cost
  bool operator==(const LayerCostKey&) const = default;
};
LayerCostKey layer_cost_key(const StrategyConfig& strategy);

}  // namespace calisim
