// Data-parallel state and communication of one pipeline rank (MODELING.md §2, §4):
// ZeRO-0 (replicated), ZeRO-1 (Megatron's distributed optimizer), ZeRO-2 (+ sharded gradients),
// ZeRO-3 / FSDP (+ sharded parameters, gathered per layer in forward and backward).
//
// Dense parameters reduce over the dp·cp group, routed-expert parameters over the
// expert-data-parallel group; the two run one after the other. How many ranks of each share a
// scale-up domain follows the strategy's rank order (rank_placement.h).
// Hybrid sharding (strategy.dp_replicate_size R > 1): each group splits into R replicas of
// consecutive ranks; the state shards over one replica's ranks, gradients reduce-scatter inside
// it and the resulting shard all-reduces over the R ranks holding the same shard (Megatron's
// partial distributed optimizer: intra-instance reduce-scatter, inter-instance all-reduce; FSDP2
// HSDP alike); parameters gather inside the replica.
// Bytes: weights e (bf16/fp16) per parameter, main grads 4 (use_fp32_accum_grad) or e, Adam
// state + fp32 master 12; gradients are reduced in fp32 unless grad_reduce_in_bf16.
#pragma once

#include "simulator/op_cost.h"
#include "simulator/rank_params.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

// *_ranks: the sharding group (a replica's ranks; the whole group without hybrid sharding);
// *_replicas: ranks holding the same shard, one per replica (1 without hybrid sharding).
// *_per_switch: ranks under one PCIe switch (0 when the system has no switch level).
struct DpGroups {
  int dense_ranks = 1, dense_per_domain = 1, dense_per_switch = 0;
  int expert_ranks = 1, expert_per_domain = 1, expert_per_switch = 0;
  int dense_replicas = 1, dense_replicas_per_domain = 1, dense_replicas_per_switch = 0;
  int expert_replicas = 1, expert_replicas_per_domain = 1, expert_replicas_per_switch = 0;
};
DpGroups dp_groups(const StrategyConfig& strategy, int scale_up_domain_size, int pcie_switch_gpus = 0);

// Parameters of `p` this rank keeps optimizer state for (its ZeRO shard, or all of them at ZeRO-0).
double optimizer_shard_params(const RankParams& p, const StrategyConfig& strategy, const DpGroups& g);

struct StaticMemory {
  double weight_bytes = 0, grad_bytes = 0, optimizer_bytes = 0;
  double total() const { return weight_bytes + grad_bytes + optimizer_bytes; }
};
// params: all parameters of this rank's chunks; fp8_params: the part of them in FP8 layers (the
// transformer and MTP layers whose GEMMs run FP8; zero without fp8); largest_layer: the biggest
// layer's parameters on this rank (ZeRO-3 holds it gathered, plus the prefetched next one);
// bucket_params: DP bucket.
// Weights: e bytes per parameter; an FP8 layer's parameters add TE's two cached FP8 copies (row-
// and column-wise, 2 bytes), or, with fp8_param_gather, are themselves FP8 (1 byte) plus the
// column-wise copy (1 byte). Embeddings, LM head and norms of non-FP8 layers keep e.
StaticMemory static_memory(const RankParams& params, const RankParams& fp8_params, double largest_layer_params,
                           double bucket_params, const StrategyConfig& strategy, const DpGroups& g);

// HBM traffic of Megatron's optimizer step on one rank (DistributedOptimizer / DDP, fused Adam),
// split by kernel kind so each is priced with its own efficiency:
// - adam_bytes ("adam_step"): over the `shard_params` this rank updates on the GPU: Adam reads
//   param, grad, m, v and writes param, m, v (fp32, 28 B), the gradient-norm pass reads the grad
//   shard (4 B), and the separate main-to-model copy reads the fp32 master and writes the e-byte
//   model weight (4 + e B). Clipping's rescale runs only when the norm exceeds the threshold
//   (data-dependent), so it is not charged.
// - grad_buffer_bytes ("copy"): passes over this rank's whole local gradient buffer
//   (`grad_buffer_bytes` = StaticMemory::grad_bytes): zero_grad_buffer's memset (write), the
//   pre-reduce NaN check (Megatron's check_for_nan_in_loss_and_grad, default on: a norm over the
//   buffer, read) and, when dp·cp > 1, the pre-reduce scaling by 1/dp (gradient_scaling_factor:
//   read + write), which runs for the expert buffer too. Not sharded: with expert-DP 1 the
//   experts' gradients are all local.
struct OptimizerStepBytes {
  double adam_bytes = 0, grad_buffer_bytes = 0;
};
OptimizerStepBytes optimizer_step_bytes(double shard_params_on_gpu, double grad_buffer_bytes,
                                        const StrategyConfig& strategy);

// How many times the DP parameter all-gather of a rank runs per step. Megatron-LM from 0.9
// (commit 655a663; NVIDIA/Megatron-LM issues #1527, #3284) wraps an MoE model's dense and expert
// DistributedOptimizers in a ChainedOptimizer, and with overlap_param_gather off each of the two
// calls start_param_sync on every model chunk, which gathers all bucket groups: every parameter
// is gathered twice. strategy.moe_double_param_gather turns this on; it applies at ZeRO-1/2 with
// overlap_param_gather off on a rank that holds expert parameters; otherwise 1.
int param_gather_passes(const RankParams& p, const StrategyConfig& strategy);

// Megatron's DP bucket in parameters: bucket_size, or max(4e7, 1e6·dp) when unset.
double bucket_params(const StrategyConfig& strategy);

// Collective times (not yet overlapped) for `p`: the gradient reduction (all-reduce at ZeRO-0,
// reduce-scatter otherwise, plus the shard's all-reduce across replicas under hybrid sharding)
// and the parameter all-gather; `fp8_p` (part of `p`) is gathered in one byte per parameter with
// fp8_param_gather, the rest in the training dtype.
double grad_reduce_s(const RankParams& p, const StrategyConfig& strategy, const DpGroups& g, const OpCoster& coster,
                     SourceTally* tally);
double param_gather_s(const RankParams& p, const RankParams& fp8_p, const StrategyConfig& strategy, const DpGroups& g,
                      const OpCoster& coster, SourceTally* tally);

}  // namespace calisim
