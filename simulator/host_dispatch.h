// Host (CPU) side of one block's micro-batch: how long the framework takes to issue its kernels,
// and how much of that the GPU sees as idle time (docs/simulator.md "Host dispatch").
//
// Model. Every op of the block's op list is issued by the host: a PyTorch eager op (Python,
// dispatcher, autograd bookkeeping, one launch) costs the system's host.op_dispatch_us. With
// TransformerEngine's grouped GEMM (moe_grouped_gemm) an expert GEMM costs one op plus, per local
// expert, host.grouped_gemm_expert_us (one library GEMM submission; absent:
// efficiency.kernel_launch_us), and its FP8 multi-quantize one op plus one op per local expert (the
// per-expert output allocations). Without it (Megatron's SequentialMLP loops in Python) every
// per-expert op is one op per local expert and each expert GEMM also pays the same submission, so
// sequential experts never issue faster than grouped ones. Backward issues the dgrad and the
// wgrad; each collective of a group with more than one rank is one more op (an NCCL launch). Ops
// inside a CUDA-graph scope cost nothing each; each captured run costs one graph launch (one op
// dispatch).
// The GPU runs behind the host on one stream: op i starts when both the GPU is free and the host
// has issued it. Megatron's dropless MoE token dispatchers copy the routing counts to the host
// (all-to-all: input/output splits before the dispatch all-to-all; all-gather: tokens per expert
// before the expert GEMMs) once per MoE layer in forward: the host waits for the GPU to drain, pays
// host.sync_us, and the GPU then waits for every op the host issues after the sync. Backward reuses
// the splits kept from forward and has no sync. Between two syncs a block costs
// max(GPU work, host dispatch) in the sense of that one-stream recurrence; without a sync (backward,
// dense layers) the host runs ahead and only a host slower than the GPU over the whole block is
// exposed (max(0, host − GPU)). No sync with drop-and-pad (moe_pad_expert_input_to_capacity: fixed
// splits) or a full-iteration CUDA graph (a capture cannot contain one).
//
// Pure; the host model is off (all zeros) when the system gives neither host.op_dispatch_us nor
// host.sync_us.
#pragma once

#include <cstddef>
#include <vector>

#include "simulator/layer_ops.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

struct HostDispatchSettings {
  double op_dispatch_s = 0;      // host time of one framework op (system host.op_dispatch_us)
  double expert_gemm_s = 0;      // per local expert of an expert GEMM: the library submission
                                 // (host.grouped_gemm_expert_us, else efficiency.kernel_launch_us)
  double sync_s = 0;             // one device-to-host copy and wait (system host.sync_us)
  bool grouped_gemm = false;     // strategy moe_grouped_gemm
  std::uint8_t cuda_graph = 0;   // strategy cuda_graph_scope bits (CudaGraphScope)
  int local_experts = 1;         // routed experts per EP rank: per-expert GEMMs, casts, activations
  bool enabled() const { return op_dispatch_s > 0 || sync_s > 0; }
};
HostDispatchSettings host_dispatch_settings(const SystemConfig& system, const StrategyConfig& strategy,
                                            const ModelConfig& model);

// Host time to issue one op (forward, backward), ignoring CUDA graphs.
struct HostOpCost {
  double fwd_s = 0, bwd_s = 0;
};
HostOpCost host_op_cost(const LayerOp& op, const HostDispatchSettings& s);

// Whether a CUDA-graph scope captures the op (`moe_block`: the op belongs to a MoE layer, where
// the pre-MLP norm is part of Megatron's moe_router scope).
bool graph_captured(const LayerOp& op, std::uint8_t cuda_graph, bool moe_block);

// Index of the op before which a MoE layer's forward copies the routing counts to the host, or
// -1 when the block has no such synchronisation (not a MoE layer, drop-and-pad, full-iteration
// graph).
int moe_sync_index(const std::vector<LayerOp>& ops, const StrategyConfig& strategy, bool moe_block,
                   bool pad_to_capacity);

struct HostBlockTiming {
  double host_fwd_s = 0, host_bwd_s = 0;        // host dispatch time of the block, one micro-batch
  double gpu_fwd_s = 0, gpu_bwd_s = 0;          // GPU time of the block (ops' compute + exposed comm)
  double exposed_fwd_s = 0, exposed_bwd_s = 0;  // GPU idle time the host causes (incl. sync waits)
  int syncs_fwd = 0;                            // device-to-host synchronisations per forward
};

// gpu_fwd_s[i], gpu_bwd_s[i]: op i's GPU time. sync_index from moe_sync_index.
HostBlockTiming host_block_timing(const std::vector<LayerOp>& ops, const std::vector<double>& gpu_fwd_s,
                                  const std::vector<double>& gpu_bwd_s, const HostDispatchSettings& s, bool moe_block,
                                  int sync_index);

}  // namespace calisim
