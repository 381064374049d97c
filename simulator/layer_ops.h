// The operators of one transformer layer (and of the embedding and LM head), per micro-batch and
// per TP rank, with everything the cost and memory models need (MODELING.md §1–2).
//
// Pure: (model, strategy) in, op lists out. No efficiencies or times here; op_cost turns these into
// seconds. Activation bytes are what each op keeps for its backward pass, derived from the tensors
// it saves, so GQA, SwiGLU, dropout and sequence parallelism come out right; they reproduce
// Korthikanti et al.'s 34·s·b·h/t (+5·a·s²·b/t without flash attention) for MHA, a 4h GeLU MLP
// and dropout.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/kernel_keys.h"
#include "simulator/flex_dispatch.h"
#include "simulator/model_config.h"
#include "simulator/strategy_config.h"

namespace calisim {

enum class OpKind : std::uint8_t { gemm, attention, memory };

// Which recompute group an op belongs to (SimuMax's selective switches map onto these).
enum class OpUnit : std::uint8_t {
  input_norm,
  qkv_down,        // MLA: q/kv down projections and their norms
  qkv,             // QKV projection (MLA: q/kv up projections) and RoPE
  attention_core,  // flash attention, or scores/softmax/dropout/context when unfused
  out_proj,
  post_attn,
  post_norm,
  mlp,             // dense MLP
  router,          // MoE router GEMM and top-k
  moe_dispatch,    // permutation, dispatch / combine collectives, un-permutation
  expert,          // routed experts' grouped GEMMs
  expert_act,      // routed experts' activation
  shared_expert,   // DeepSeek's shared experts
  post_mlp,
  other
};

// The process group an op's collectives run on (reports split exposed communication by it).
enum class CommGroup : std::uint8_t { tp, cp, ep };

struct LayerOp {
  const char* name = "";
  OpKind kind = OpKind::memory;
  OpUnit unit = OpUnit::other;
  // gemm: fwd / dgrad / wgrad (batch > 1 for batched attention GEMMs of the unfused path).
  GemmKey gemm_fwd, gemm_dgrad, gemm_wgrad;
  bool has_wgrad = false;
  // GEMM kernels that run one after another for each of those keys, each paying the system's
  // fixed GEMM time in the roofline path (efficiency.gemm_fixed_us): 1 for a GEMM or a strided
  // batch (one kernel); routed experts: one kernel per local expert, spread over
  // TransformerEngine's 4 compute streams with grouped GEMM, one after another in SequentialMLP.
  int gemm_serial_kernels = 1;
  // attention: flash forward and backward.
  AttentionKey attn_fwd, attn_bwd;
  // memory-bound: bytes moved forward and backward.
  MemoryOpKey mem_fwd, mem_bwd;

  double act_bytes = 0;         // kept from forward to backward
  // The part of act_bytes that is the output of an earlier op of the layer (of unit alias_of),
  // saved as that tensor itself rather than a copy. Megatron's output-discarding checkpoints
  // (tensor_parallel.CheckpointWithoutOutput: recompute_modules "layernorm", "mla_up_proj",
  // "moe_act") free their outputs' storage once the consumer has run and recompute them before
  // its backward, so these bytes are not kept; under FP8 Megatron makes such a consumer save its
  // original input instead of the FP8 copy (set_save_original_input), so all of it goes.
  OpUnit alias_of = OpUnit::other;
  double alias_bytes = 0;
  // Without weight-gradient accumulation fusion, backward adds the wgrad GEMM's output into the
  // main gradient in a separate element-wise kernel (Megatron's main_grad.add_ hook): these
  // bytes (read the gradient, read and write the main gradient), priced as memory kind
  // "grad_accum" beside the wgrad. 0 = fused (the GEMM accumulates) or no parameter gradient.
  double wgrad_accum_bytes = 0;
  double transient_bytes = 0;   // extra bytes live while the op runs (outputs not yet freed, workspaces)
  // Extra bytes live while its backward runs, beyond the activations; < 0: transient_bytes plus
  // twice act_bytes (the gradient of what it kept and of its input beside the forward's working set).
  double bwd_transient_bytes = -1;

  // Collectives tied to this op (absent when their group has one rank).
  CommGroup comm_group = CommGroup::tp;
  std::optional<CollectiveKey> fwd_comm;             // exposed in forward unless fwd_comm_overlapped
  std::optional<CollectiveKey> bwd_comm;             // exposed in backward unless bwd_comm_overlapped
  std::optional<CollectiveKey> bwd_comm_with_dgrad;  // overlapped with this op's dgrad GEMM (attention: its backward)
  std::optional<CollectiveKey> bwd_comm_with_wgrad;  // overlapped with this op's wgrad GEMM (attention: its backward)
  bool fwd_comm_overlapped = false;  // fwd_comm runs beside this op's forward compute (TP overlap, CP ring)
  bool bwd_comm_overlapped = false;  // bwd_comm runs beside this op's dgrad (TP overlap)
  // 2D (SUMMA) tensor parallelism: weight-panel collectives on the TP column group, issued in
  // weight_comm_steps pipelined panels beside the GEMM (gather beside forward, re-gather beside
  // dgrad, gradient reduce-scatter beside wgrad); the first panel cannot overlap (op_cost.cc).
  std::optional<CollectiveKey> fwd_weight_comm, bwd_weight_comm_with_dgrad, bwd_weight_comm_with_wgrad;
  int weight_comm_steps = 1;
  // Ring context parallelism (Megatron/TE p2p CP), c = cp_ring_steps > 1: attn_fwd/attn_bwd hold
  // the rank's whole share (for FLOP counts); op_cost runs it as one causal diagonal step on the
  // rank's two chunks and c - 1 non-causal chunk-pair steps, each hiding the next step's KV
  // transfer (fwd_comm / bwd_comm_with_dgrad: one send_recv of the local K, V) and, in backward,
  // the previous step's dK, dV (bwd_comm_with_wgrad).
  int cp_ring_steps = 0;
  // The flex (DeepEP / HybridEP) dispatcher's dispatch or combine: not an NCCL collective; op_cost
  // prices it with simulator/flex_dispatch.h, forward and backward alike (exposed, EP group).
  std::optional<FlexExchange> flex;

  double fwd_flops() const;
  double bwd_flops() const;
};

// Op lists for the kinds of model chunk content.
struct ModelOps {
  std::vector<LayerOp> layer;      // one dense transformer layer (MoE models: one of the `dense_layers`)
  std::vector<LayerOp> moe_layer;  // one MoE layer; empty for dense models
  std::vector<LayerOp> embedding;  // first chunk only
  std::vector<LayerOp> head;       // last chunk only: final norm, LM head, cross-entropy
  // One multi-token-prediction depth (last chunk, × mtp_num_layers; empty without MTP), in the
  // three parts Megatron runs: the shifted tokens' embedding lookup (shared weights); the
  // checkpointable core (enorm, hnorm, concat, column-parallel eh_proj 2h→h/t, the TP gather of
  // its output, one transformer layer of the model's kind, the depth's final norm); the shared
  // LM head and its cross-entropy.
  std::vector<LayerOp> mtp_embedding, mtp_layer, mtp_head;
  double layer_input_bytes = 0;    // a layer's input as kept by full recompute (sharded under SP)
  double p2p_bytes = 0;            // activation sent between pipeline stages per micro-batch
};

// Requires a validated strategy (validate_layout). Attention is MHA/GQA or MLA by the model;
// a MoE model also gets `moe_layer` (router, dispatch, grouped GEMMs, shared experts, combine).
ModelOps build_model_ops(const ModelConfig& model, const StrategyConfig& strategy, int scale_up_domain_size);

// Recompute plan for one layer. Run-based granularities: a recomputed op is rerun before its
// backward and keeps no activation except the first op of each contiguous recomputed run (the
// checkpoint input). selective_op (torchtitan's op-level policy) saves outputs instead, so it
// gives each op the share of its forward that is rerun (part of a fused GEMM: the K third of QKV,
// the up half of a SwiGLU FC1) and the bytes kept for it; save_qkv_proj (MaxText) reruns all but
// the Q, K, V projections and keeps their outputs. Megatron's recompute modules ("layernorm",
// "mla_up_proj", "moe_act": output-discarding checkpoints; "mlp", "moe": whole-module
// checkpoints) follow Megatron-Core's TransformerEngine layer spec: "layernorm" reruns only the
// norms that are modules of their own (an MLA layer's input norm, a MoE layer's pre-MLP norm; the
// others are fused into the next linear layer), and a discarded output is not kept by the ops
// that saved it (LayerOp::alias_bytes). With recompute_early_stop (and always for
// save_qkv_proj, a JAX policy) a run's trailing residual add and the GEMM before it are not rerun:
// backward reads neither output. rerun[i] and kept_bytes[i] hold the answer for every
// granularity; the cost model reads those two.
struct RecomputePlan {
  std::vector<bool> recomputed;    // any of op i's forward is rerun (the per-op report's mark)
  std::vector<double> rerun;       // share of op i's forward time and FLOPs rerun, in [0, 1]
  std::vector<double> kept_bytes;  // activation bytes op i keeps from forward to backward
};
RecomputePlan recompute_plan(const std::vector<LayerOp>& layer, const StrategyConfig& strategy);

}  // namespace calisim
