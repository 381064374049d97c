#include "simulator/layer_ops.h"

#include "simulator/op_builders.h"

namespace calisim {

double LayerOp::fwd_flops() const {
  if (kind == OpKind::gemm) return gemm_fwd.flops();
  if (kind == OpKind::attention) return attn_fwd.flops();
  return 0;
}

double LayerOp::bwd_flops() const {
  if (kind == OpKind::gemm) return gemm_dgrad.flops() + (has_wgrad ? gemm_wgrad.flops() : 0);
  if (kind == OpKind::attention) return attn_bwd.flops();
  return 0;
}

ModelOps build_model_ops(const ModelConfig& m, const StrategyConfig& st, int scale_up_domain_size) {
  using namespace ops;
  const Dims d = make_dims(m, st, scale_up_domain_size);
  const bool fp8 = d.fp8 != Fp8Recipe::none;
  ModelOps out;
  // Attention half (shared by dense and MoE layers), then the MLP.
  std::vector<LayerOp> attn;
  if (m.attention_type == AttentionType::mla) {
    add_mla_attention(d, m, st, attn);
  } else {
    add_attention(d, m, st, attn);
  }
  attn.push_back(dropout_residual(d, "attn_residual", OpUnit::post_attn, st.enable_dropout));
  attn.push_back(norm(d, m, "post_attn_norm", OpUnit::post_norm, d.Tsp, d.h));
  const bool need_dense = !m.is_moe || m.dense_layers > 0;
  if (need_dense) {
    out.layer = attn;
    add_dense_mlp(d, m, st, m.intermediate_size, OpUnit::mlp, kDenseMlpNames, out.layer);
    out.layer.push_back(dropout_residual(d, "mlp_residual", OpUnit::post_mlp, st.enable_dropout));
  }
  if (m.is_moe) {
    out.moe_layer = std::move(attn);
    add_moe_mlp(d, m, st, scale_up_domain_size, out.moe_layer);
    out.moe_layer.push_back(dropout_residual(d, "mlp_residual", OpUnit::post_mlp, st.enable_dropout));
  }

  const double full = static_cast<double>(d.T) * d.h * d.e;
  const double shard = static_cast<double>(d.Tsp) * d.h * d.e;
  out.layer_input_bytes = shard;
  out.p2p_bytes = shard;

  // Embedding (first chunk): vocab-parallel lookup, then the partial sums are combined across TP.
  // Backward: PyTorch's embedding backward builds a dense gradient of the vocabulary shard (zero
  // fill, then the T token rows added in), and Megatron's gradient hook adds it into the main
  // gradient (gradient-accumulation fusion covers linear layers only): read it, read and write
  // the main gradient. The dense gradient is live beside the backward's working set.
  const double vocab_shard = static_cast<double>(m.padded_vocab(static_cast<int>(d.t)) / d.t) * d.h;
  auto embedding = [&]() {
    double fwd = 2 * full, bwd = 3 * full + vocab_shard * (d.e + d.e + 2 * d.main_grad_e);
    // Learned positions are added to the whole [s, b, h] tensor before the sequence scatter
    // (Megatron-Core's LanguageModelEmbedding reduce-scatters only without them).
    const bool positions = m.position_embedding_type == PositionEmbedding::learned_absolute;
    if (positions) fwd += 3 * full, bwd += 2 * full;
    LayerOp emb = memory_op("embedding", OpUnit::other, "embedding_fwd", fwd, "embedding_bwd", bwd, 0.0);
    emb.bwd_transient_bytes = vocab_shard * d.e;
    if (st.enable_dropout) {
      emb.act_bytes = static_cast<double>(d.Tsp) * d.h;
    }
    if (d.t > 1) {
      // With learned positions under SP: all-reduce, add the positions, then a local split whose
      // backward all-gathers; without them the partial sums are reduce-scattered.
      emb.fwd_comm = tp_coll(d, d.sp && !positions ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce, full);
      if (d.sp) emb.bwd_comm = tp_coll(d, CollectiveOp::all_gather, full);
    }
    return emb;
  };
  out.embedding.push_back(embedding());
  // Head (last chunk): final norm, LM head over the padded vocabulary shard (kept in the training
  // dtype under FP8, as TE recipes do), cross-entropy.
  auto add_head = [&](std::vector<LayerOp>& head_ops) {
    const std::int64_t v = m.padded_vocab(static_cast<int>(d.t)) / d.t;
    LayerOp head = column_parallel(d, "lm_head", OpUnit::other, d.h, v, d.h, false);
    // GPTModel's output layer is Megatron's own ColumnParallelLinear, not a TransformerEngine
    // module: TE's userbuffer overlap (tp_comm_overlap) never covers its input all-gather.
    head.fwd_comm_overlapped = false;
    const double logits = static_cast<double>(d.T) * v * d.e;
    head.transient_bytes = logits;
    head_ops.push_back(head);
    const double n = static_cast<double>(d.T) * v;  // logits per rank
    LayerOp ce;
    if (st.cross_entropy_loss_fusion && st.cross_entropy_fusion_impl == CrossEntropyFusionImpl::te) {
      // Fused (TE) cross-entropy reads the logits once and writes their gradient into them during
      // forward; backward scales that gradient in place by the loss gradient and hands the same
      // buffer on, so nothing is live beside the kept logits (the generic estimate of an op's
      // backward, its transient plus twice what it kept, overstated the last stage by 3·n·e).
      ce = memory_op("cross_entropy", OpUnit::other, "ce_fused_fwd", 2 * n * d.e, "ce_fused_bwd", 2 * n * d.e, n * d.e);
      ce.transient_bytes = n * d.e;
      ce.bwd_transient_bytes = 0;
    } else if (st.cross_entropy_loss_fusion) {
      // Megatron-Core's fused_vocab_parallel_cross_entropy (--cross-entropy-fusion-impl native),
      // compiled element-wise steps over the [T, V/t] logits, bytes per logit: the fp32 upcast
      // fused with the row max (read e, write 4), exp(x - max) in place (read + write 4) and its
      // row sum (read 4), the division by the sum in place (read + write 4): the fp32 softmax,
      // kept for backward. Backward turns it into the gradient in place (read + write 4; the
      // target's subtraction is a [T] scatter) and casts it to the logits' dtype (read 4, write e).
      // The logits live beside their fp32 copy in forward; the cast gradient beside the softmax in
      // backward. Same fp32 streams as the unfused Megatron loss, so the same memory kinds.
      ce = memory_op("cross_entropy", OpUnit::other, "ce_fwd", n * (d.e + 4 + 8 + 4 + 8), "ce_bwd",
                     n * (8 + 4 + d.e), n * 4);
      ce.transient_bytes = n * d.e;
      ce.bwd_transient_bytes = n * d.e;
    } else if (st.cross_entropy_impl == CrossEntropyImpl::megatron) {
      // Megatron's unfused vocab-parallel cross-entropy (tensor_parallel/cross_entropy.py), one
      // eager kernel per step over the [T, V/t] logits, bytes per logit: forward .float() copy
      // (read e, write 4), max (read 4), in-place subtract max, in-place exp, sum (read 4), in-place
      // divide by the sum (read + write 4 each); the fp32 softmax is kept for backward, which
      // multiplies it in place by the loss gradient (read + write 4) and casts the gradient back
      // to the logits' dtype through .float()'s backward (read 4, write e). Forward holds the
      // logits, their fp32 copy and the kept softmax: releases before Megatron-Core's in-place
      // subtract (logits - max made a new tensor) hold the copy beside it, later ones rewrite the
      // copy in place (4n less). The older count is kept: it is what the SimuMax A100 memory
      // measurements (Megatron runs) support, 1.6 % against 2.2 % with the in-place count.
      // Backward only adds the cast gradient (the rest is in place).
      ce = memory_op("cross_entropy", OpUnit::other, "ce_fwd", n * (d.e + 4 + 4 + 8 + 8 + 4 + 8), "ce_bwd",
                     n * (8 + 4 + d.e), n * 4);
      ce.transient_bytes = n * (d.e + 4);
      ce.bwd_transient_bytes = n * d.e;
    } else if (d.t == 1) {
      // PyTorch's F.cross_entropy on a .float() copy of the logits (torchtitan's loss): .float()
      // (read e, write 4), log_softmax (max and sum-exp passes read 8, output write 4; the output
      // is kept for backward), nll_loss (a gather). Backward: nll_loss's gradient, a new dense fp32
      // tensor (write 4), log_softmax's backward into another (read 8, write 4), then the cast back
      // (read 4, write e). Backward holds both fp32 gradients beside the kept output.
      ce = memory_op("cross_entropy", OpUnit::other, "ce_fwd", n * (d.e + 4 + 8 + 4), "ce_bwd",
                     n * (4 + 12 + 4 + d.e), n * 4);
      ce.transient_bytes = n * (d.e + 4);
      ce.bwd_transient_bytes = n * 8;
    } else {
      // The same loss over vocabulary-sharded logits runs as PyTorch's loss_parallel (torchtitan
      // with TP; torch/distributed/tensor/parallel/loss.py), whose log-softmax is a decomposition:
      // .float() copy (read e, write 4), amax (read 4), shifted = x - max (read 4, write 4),
      // exp (read 4, write 4) and its sum, result = shifted - logsumexp (read 4, write 4, kept).
      // The logits, the copy, shifted and exp are live together (the caller keeps the logits until
      // backward): 10 bytes per logit beside the kept result. Backward (one fused nll/log-softmax
      // function): zeros (write 4) with the targets scattered, exp(result) (read 4, write 4),
      // their sum (read 8, write 4), times the loss gradient (read 4, write 4), then the cast back
      // (read 4, write e); three fp32 tensors live at once beside the kept result.
      ce = memory_op("cross_entropy", OpUnit::other, "ce_fwd", n * (d.e + 4 + 4 + 8 + 8 + 8), "ce_bwd",
                     n * (4 + 8 + 12 + 8 + 4 + d.e), n * 4);
      ce.transient_bytes = n * (d.e + 8);
      ce.bwd_transient_bytes = n * 12;
    }
    if (d.t > 1) ce.fwd_comm = tp_coll(d, CollectiveOp::all_reduce, 3.0 * d.T * 4);  // max, target logit, sum
    head_ops.push_back(ce);
  };
  out.head.push_back(norm(d, m, "final_norm", OpUnit::other, d.Tsp, d.h));
  add_head(out.head);

  // Multi-token prediction (Megatron's MultiTokenPredictionLayer), one depth: the embedding of the
  // tokens shifted by one (same vocab-parallel lookup), enorm on it and hnorm on the incoming
  // hidden state (SP shards), their concatenation [Tsp, 2h], eh_proj (ColumnParallelLinear 2h → h,
  // gather_output false: all-gather of the [T, 2h] input under SP, output [T, h/t]), an all-gather
  // of that output over TP to [T, h] (gather_from_tensor_model_parallel_region; under SP the
  // following scatter to the sequence shard is a slice whose backward all-gathers [T, h]), one
  // transformer layer of the model's kind, the depth's final norm, then the shared LM head and
  // a cross-entropy of its own (the loss is scaled by mtp_loss_scaling_factor, which costs nothing).
  if (m.mtp_num_layers > 0) {
    out.mtp_embedding.push_back(embedding());
    auto& core = out.mtp_layer;
    core.push_back(norm(d, m, "mtp_enorm", OpUnit::other, d.Tsp, d.h));
    core.push_back(norm(d, m, "mtp_hnorm", OpUnit::other, d.Tsp, d.h));
    const double cat = 2.0 * shard;  // [Tsp, 2h]
    core.push_back(memory_op("mtp_concat", OpUnit::other, "concat_fwd", 2 * cat, "concat_bwd", 2 * cat, 0.0));
    push_gemm(d, core, column_parallel(d, "mtp_eh_proj", OpUnit::other, 2 * d.h, d.h / d.t, 2 * d.h, fp8),
              "mtp_eh_proj_fp8_cast");
    if (d.t > 1) {
      LayerOp gather = memory_op("mtp_eh_gather", OpUnit::other, "none", 0, "none", 0, 0.0);
      gather.fwd_comm = tp_coll(d, CollectiveOp::all_gather, full);
      if (d.sp) gather.bwd_comm = tp_coll(d, CollectiveOp::all_gather, full);
      gather.transient_bytes = full;
      core.push_back(gather);
    }
    const std::vector<LayerOp>& layer = m.mtp_layer_is_moe() ? out.moe_layer : out.layer;
    core.insert(core.end(), layer.begin(), layer.end());
    core.push_back(norm(d, m, "mtp_final_norm", OpUnit::other, d.Tsp, d.h));
    add_head(out.mtp_head);
  }
  return out;
}

namespace {

bool is_fp8(DType t) { return t == DType::fp8_e4m3 || t == DType::fp8_e5m2; }

// A plan for the output-saving policies: every op rerun, nothing kept, until the policy says.
RecomputePlan rerun_everything(std::size_t ops) {
  RecomputePlan plan;
  plan.recomputed.assign(ops, false);
  plan.rerun.assign(ops, 1.0);
  plan.kept_bytes.assign(ops, 0.0);
  return plan;
}

// Bytes of a GEMM's forward output; an FP8 GEMM writes the training dtype (2 bytes: bf16 or fp16).
double gemm_output_bytes(const GemmKey& g) {
  const double out_e = is_fp8(g.dtype) ? 2.0 : bytes_per_element(g.dtype);
  return static_cast<double>(g.m) * g.n * g.batch * out_e;
}

// torchtitan's op-level selective checkpointing (torchtitan/parallelisms/parallelize_llama.py,
// Dec 2024). Inside each checkpointed block PyTorch saves the outputs of the 1st, 3rd, 5th, ...
// aten.mm call (every other one, counted per block), of SDPA and of max, and reruns everything
// else when backward first needs one of the block's tensors. The block's matmuls run in the
// order q, k, v, o, w1, w3, w2 (GeLU MLP: q, k, v, o, w1, w2), so k, o and w3 (GeLU: w2) are
// rerun; calisim's fused QKV and gate|up FC1 are rerun in those shares. torchao's Float8Linear
// calls torch.mm on Float8Tensor operands; the checkpoint's dispatch mode sees that aten.mm
// before the subclass turns it into _scaled_mm, so FP8 linears are counted and saved alike (their
// outputs in the training dtype) — which is why torchtitan's list also saves aten.max, the amax
// of the FP8 casts (measured: Float8 and bf16 runs of Llama 3.1 8B peak within 0.3 %, R0288 /
// R0289). The block input is the checkpoint's input and stays. validate_layout admits only dense
// MHA/GQA layers with flash attention (no MoE, MLA, MTP), whose op lists this walks.
RecomputePlan selective_op_plan(const std::vector<LayerOp>& layer) {
  const std::size_t n = layer.size();
  RecomputePlan plan = rerun_everything(n);
  double k_share = 1.0 / 3.0;  // K's share of the fused QKV output (MHA); GQA from the core's heads
  const LayerOp* fc1 = nullptr;
  const LayerOp* fc2 = nullptr;
  for (const LayerOp& op : layer) {
    if (op.kind == OpKind::attention) {
      const double a = static_cast<double>(op.attn_fwd.heads_q), g = static_cast<double>(op.attn_fwd.heads_kv);
      k_share = g * op.attn_fwd.head_dim_qk / (a * op.attn_fwd.head_dim_qk + g * (op.attn_fwd.head_dim_qk + op.attn_fwd.head_dim_v));
    }
    if (op.kind == OpKind::gemm && op.unit == OpUnit::mlp) (fc1 ? fc2 : fc1) = &op;
  }
  // Gated MLP: FC1 computes gate and up (2f outputs) for an FC2 of f inputs.
  const bool gated = fc1 && fc2 && fc1->gemm_fwd.n == 2 * fc2->gemm_fwd.k;
  for (std::size_t i = 0; i < n; ++i) {
    const LayerOp& op = layer[i];
    double& rerun = plan.rerun[i];
    double& kept = plan.kept_bytes[i];
    if (op.kind == OpKind::attention) {
      const AttentionKey& k = op.attn_fwd;
      const double rows = static_cast<double>(k.batch) * k.heads_q * k.seq_q;
      rerun = 0;
      kept = rows * k.head_dim_v * bytes_per_element(k.dtype) + rows * 4.0;  // output and fp32 log-sum-exp
    } else if (op.kind == OpKind::gemm) {
      const double out = gemm_output_bytes(op.gemm_fwd);
      double saved_share = 0;  // share of the output the policy saves (the rest is rerun)
      if (op.unit == OpUnit::qkv) saved_share = 1 - k_share;          // q, v saved; k rerun
      else if (&op == fc1) saved_share = gated ? 0.5 : 1.0;           // w1 saved (w3 rerun)
      else if (&op == fc2) saved_share = gated ? 1.0 : 0.0;           // w2: 7th mm saved, 6th rerun
      rerun = 1 - saved_share;                                        // out_proj: 4th mm, rerun
      kept = saved_share * out;
    }
    if (i == 0) kept += op.act_bytes;  // the block input (the input norm's saved input)
    plan.recomputed[i] = rerun > 0;
  }
  return plan;
}

// MaxText's remat_policy "save_qkv_proj" (jax.checkpoint_policies.save_only_these_names over
// query_proj, key_proj, value_proj and qkv_proj, the names MaxText gives the projections'
// outputs, before RoPE). Backward reruns the block from its input except those projections: the
// norm before them, RoPE, attention, the output projection, the MLP and every element-wise op
// rerun; the projections' FP8 input casts belong to the saved dots and do not. Kept: the block
// input and the projections' outputs. validate_layout admits MHA/GQA layers (no MLA).
RecomputePlan save_qkv_proj_plan(const std::vector<LayerOp>& layer) {
  const std::size_t n = layer.size();
  RecomputePlan plan = rerun_everything(n);
  for (std::size_t i = 0; i < n; ++i) {
    const LayerOp& op = layer[i];
    if (op.unit == OpUnit::qkv && op.kind == OpKind::gemm) {
      plan.rerun[i] = 0;
      plan.kept_bytes[i] = gemm_output_bytes(op.gemm_fwd);
    } else if (op.unit == OpUnit::qkv && op.kind == OpKind::memory && op.mem_fwd.kind == "fp8_cast_fwd") {
      plan.rerun[i] = 0;
    }
    if (i == 0) plan.kept_bytes[i] += op.act_bytes;  // the block input
    plan.recomputed[i] = plan.rerun[i] > 0;
  }
  return plan;
}

// A recomputed run [first, last] whose checkpoint reruns only what backward reads
// (recompute_early_stop, save_qkv_proj): its trailing residual add without dropout (the add keeps
// nothing and its output is the run's output) and, before it, a GEMM (its backward reads the
// input and the weight, not the output) are not rerun. Stops at anything else: an FP8 cast's
// output is the input the weight gradient reads, a dropout-add regenerates its mask, a MoE
// combine's backward reads the expert outputs.
void prune_unneeded_tail(const std::vector<LayerOp>& layer, std::size_t first, std::size_t last, RecomputePlan& plan) {
  std::size_t i = last + 1;
  if (i > first && layer[i - 1].kind == OpKind::memory && layer[i - 1].mem_fwd.kind == "add_fwd") plan.rerun[--i] = 0;
  if (i > first && layer[i - 1].kind == OpKind::gemm) plan.rerun[--i] = 0;
}

// Apply prune_unneeded_tail to every maximal run of ops with a rerun share.
void prune_unneeded_tails(const std::vector<LayerOp>& layer, RecomputePlan& plan) {
  for (std::size_t i = 0; i < layer.size();) {
    if (plan.rerun[i] <= 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < layer.size() && plan.rerun[j + 1] > 0) ++j;
    prune_unneeded_tail(layer, i, j, plan);
    i = j + 1;
  }
  for (std::size_t i = 0; i < layer.size(); ++i) plan.recomputed[i] = plan.rerun[i] > 0;
}

// Megatron-Core's recompute_modules (selective granularity) on its TransformerEngine layer spec.
// "mlp" (a dense layer's MLP) and "moe" (the MoE block) are whole-module checkpoints: the module
// reruns and keeps its input only. A dense layer's pre-MLP norm is fused into FC1 (LayerNormLinear),
// so "mlp" reruns it too and keeps the residual stream, its input. "layernorm", "mla_up_proj" and
// "moe_act" are output-discarding checkpoints (tensor_parallel.CheckpointWithoutOutput): the
// module reruns from its inputs, which it keeps, and its outputs' storage is freed once their
// consumer has run, so what consumers saved of them (LayerOp::alias_bytes) is not kept either.
//  - layernorm: the norms that are modules of their own, an MLA layer's input norm and a MoE
//    layer's pre-MLP norm; the others are fused into the next linear layer (an IdentityOp norm,
//    which Megatron's TransformerLayer does not recompute).
//  - mla_up_proj: the q/kv up projections and RoPE, with the q/kv norms fused into the up
//    projections (they rerun and keep their inputs, the compressed q and kv: the checkpoint's).
//  - moe_act: the routed experts' activation, which keeps its input (FC1's output).
RecomputePlan megatron_modules_plan(const std::vector<LayerOp>& layer, const StrategyConfig& st) {
  const std::uint8_t mods = st.megatron_recompute_modules;
  bool mla = false, moe = false;
  for (const LayerOp& op : layer) {
    mla = mla || op.unit == OpUnit::qkv_down;
    moe = moe || op.unit == OpUnit::router;
  }
  auto whole_module = [&](OpUnit u) {
    return ((mods & kRecomputeMlp) && !moe && (u == OpUnit::post_norm || u == OpUnit::mlp)) ||
           ((mods & kRecomputeMoe) && (u == OpUnit::router || u == OpUnit::moe_dispatch || u == OpUnit::expert ||
                                       u == OpUnit::expert_act || u == OpUnit::shared_expert));
  };
  auto discarded = [&](OpUnit u) {
    return ((mods & kRecomputeLayernorm) && ((u == OpUnit::input_norm && mla) || (u == OpUnit::post_norm && moe))) ||
           ((mods & kRecomputeMlaUpProj) && mla && u == OpUnit::qkv) ||
           ((mods & kRecomputeMoeAct) && u == OpUnit::expert_act);
  };
  // The q/kv norms an MLA up projection fuses (memory ops of the down-projection unit).
  auto fused_up_norm = [&](const LayerOp& op) {
    return (mods & kRecomputeMlaUpProj) && mla && op.unit == OpUnit::qkv_down && op.kind == OpKind::memory;
  };
  const std::size_t n = layer.size();
  RecomputePlan plan;
  plan.recomputed.assign(n, false);
  plan.rerun.assign(n, 0.0);
  plan.kept_bytes.assign(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const LayerOp& op = layer[i];
    const bool whole = whole_module(op.unit);
    if (whole) {
      const bool first_of_run = i == 0 || !whole_module(layer[i - 1].unit);  // the checkpoint input
      plan.kept_bytes[i] = first_of_run ? op.act_bytes : 0.0;
    } else if (discarded(op.unit)) {
      // Norms and the activation keep their inputs; the up projections, their casts and RoPE
      // run inside the checkpoint on tensors it made, so they keep nothing.
      plan.kept_bytes[i] = op.unit == OpUnit::qkv ? 0.0 : op.act_bytes;
    } else {
      plan.kept_bytes[i] = op.act_bytes;
    }
    plan.recomputed[i] = whole || discarded(op.unit) || fused_up_norm(op);
    plan.rerun[i] = plan.recomputed[i] ? 1.0 : 0.0;
    if (op.alias_bytes > 0 && discarded(op.alias_of)) {
      plan.kept_bytes[i] = std::max(0.0, plan.kept_bytes[i] - op.alias_bytes);
    }
  }
  return plan;
}

}  // namespace

RecomputePlan recompute_plan(const std::vector<LayerOp>& layer, const StrategyConfig& st) {
  // Switched off (enable_recompute false or no layer count): nothing is marked, so the per-op
  // report does not flag ops of a run that recomputes none.
  const bool active = st.recompute_active();
  if (active && st.recompute_granularity == RecomputeGranularity::selective_op) {
    RecomputePlan plan = selective_op_plan(layer);
    if (st.recompute_early_stop) prune_unneeded_tails(layer, plan);
    return plan;
  }
  if (active && st.recompute_granularity == RecomputeGranularity::save_qkv_proj) {
    RecomputePlan plan = save_qkv_proj_plan(layer);
    prune_unneeded_tails(layer, plan);  // JAX's remat drops the recomputation backward does not read
    return plan;
  }
  if (active && st.recompute_granularity == RecomputeGranularity::selective && st.megatron_recompute_modules) {
    RecomputePlan plan = megatron_modules_plan(layer, st);
    if (st.recompute_early_stop) prune_unneeded_tails(layer, plan);
    return plan;
  }
  RecomputePlan plan;
  plan.recomputed.assign(layer.size(), false);
  // recompute_variance: the last op of each recomputed run is not rerun.
  const bool skip_last_forward =
      st.recompute_variance && st.recompute_granularity != RecomputeGranularity::full_block;
  auto in_plan = [&](OpUnit u) {
    if (!active) return false;
    switch (st.recompute_granularity) {
      case RecomputeGranularity::none: return false;
      case RecomputeGranularity::full_block: return true;
      case RecomputeGranularity::attn_only:
        return u == OpUnit::qkv_down || u == OpUnit::qkv || u == OpUnit::attention_core || u == OpUnit::out_proj;
      case RecomputeGranularity::sdp_only: return u == OpUnit::attention_core;
      case RecomputeGranularity::selective_op: return false;   // selective_op_plan
      case RecomputeGranularity::save_qkv_proj: return false;  // save_qkv_proj_plan
      case RecomputeGranularity::mlp_only:
        return u == OpUnit::mlp || u == OpUnit::expert || u == OpUnit::expert_act;
      case RecomputeGranularity::selective:
        // SimuMax: mla_rms = input norm (+ MLA down projections); attn = up projections, RoPE,
        // core attention; mlp = MLP / grouped GEMMs; mlp_rms = MLP norm, router, shared experts.
        return ((u == OpUnit::input_norm || u == OpUnit::qkv_down) && st.mla_rms_recompute) ||
               ((u == OpUnit::qkv || u == OpUnit::attention_core) && st.attn_recompute) ||
               ((u == OpUnit::post_norm || u == OpUnit::router || u == OpUnit::shared_expert) &&
                st.mlp_rms_recompute) ||
               ((u == OpUnit::mlp || u == OpUnit::expert || u == OpUnit::expert_act) && st.mlp_recompute);
    }
    return false;
  };
  for (std::size_t i = 0; i < layer.size(); ++i) plan.recomputed[i] = in_plan(layer[i].unit);
  plan.rerun.assign(layer.size(), 0.0);
  plan.kept_bytes.assign(layer.size(), 0.0);
  for (std::size_t i = 0; i < layer.size(); ++i) {
    const bool first_of_run = plan.recomputed[i] && (i == 0 || !plan.recomputed[i - 1]);  // the checkpoint input
    const bool last_of_run = i + 1 == layer.size() || !plan.recomputed[i + 1];
    if (plan.recomputed[i] && !(skip_last_forward && last_of_run)) plan.rerun[i] = 1;
    if (!plan.recomputed[i] || first_of_run) plan.kept_bytes[i] = layer[i].act_bytes;
  }
  if (active && st.recompute_early_stop) prune_unneeded_tails(layer, plan);
  return plan;
}

}  // namespace calisim
