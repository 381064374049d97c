#include "simulator/layer_ops.h"

#include "core/error.h"

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

namespace {

struct Dims {
  std::int64_t T = 0;    // tokens per micro-batch: b·s
  std::int64_t Tsp = 0;  // tokens per TP rank in norms/dropout/residual: T/t under SP
  std::int64_t b = 0, s = 0, h = 0, t = 1;
  DType dtype = DType::bf16;
  double e = 2;          // bytes per activation element
  bool sp = false;
  bool accumulate = true;
  bool fused_norm = true;
  int tp_per_domain = 1;
};

CollectiveKey tp_coll(const Dims& d, CollectiveOp op, double bytes) {
  CollectiveKey k;
  k.op = op;
  k.bytes = static_cast<std::int64_t>(bytes);
  k.ranks = static_cast<int>(d.t);
  k.ranks_per_node = d.tp_per_domain;
  k.dtype = d.dtype;
  return k;
}

// Linear layer y[T, out] = x[T, in] · W[in, out]: forward TN, data-gradient NN, weight-gradient NT
// (SimuMax's shape convention, so its measured tables key the same way).
LayerOp linear(const Dims& d, const char* name, OpUnit unit, std::int64_t in, std::int64_t out) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.unit = unit;
  op.gemm_fwd = GemmKey{d.T, out, in, 1, d.dtype, GemmLayout::TN, false};
  op.gemm_dgrad = GemmKey{d.T, in, out, 1, d.dtype, GemmLayout::NN, false};
  op.gemm_wgrad = GemmKey{out, in, d.T, 1, d.dtype, GemmLayout::NT, d.accumulate};
  op.has_wgrad = true;
  return op;
}

// Column-parallel linear (QKV, FC1, LM head): input all-gathered under SP (and re-gathered in
// backward for the weight gradient, overlapped with dgrad); the input gradient is reduce-scattered
// (SP) or all-reduced (no SP), overlapped with the weight-gradient GEMM, as Megatron does.
LayerOp column_parallel(const Dims& d, const char* name, OpUnit unit, std::int64_t in, std::int64_t out_per_rank) {
  LayerOp op = linear(d, name, unit, in, out_per_rank);
  const double full = static_cast<double>(d.T) * d.h * d.e;
  op.act_bytes = static_cast<double>(d.Tsp) * in * d.e;  // SP keeps only the shard of the input
  if (d.t > 1) {
    if (d.sp) {
      op.fwd_comm = tp_coll(d, CollectiveOp::all_gather, full);
      op.bwd_comm_with_dgrad = tp_coll(d, CollectiveOp::all_gather, full);
      op.bwd_comm_with_wgrad = tp_coll(d, CollectiveOp::reduce_scatter, full);
    } else {
      op.bwd_comm_with_wgrad = tp_coll(d, CollectiveOp::all_reduce, full);
    }
  }
  return op;
}

// Row-parallel linear (output projection, FC2): output reduce-scattered (SP) or all-reduced; in
// backward the output gradient is all-gathered under SP (the all-reduce's backward is identity).
LayerOp row_parallel(const Dims& d, const char* name, OpUnit unit, std::int64_t in_per_rank, std::int64_t out) {
  LayerOp op = linear(d, name, unit, in_per_rank, out);
  const double full = static_cast<double>(d.T) * d.h * d.e;
  op.act_bytes = static_cast<double>(d.T) * in_per_rank * d.e;
  if (d.t > 1) {
    if (d.sp) {
      op.fwd_comm = tp_coll(d, CollectiveOp::reduce_scatter, full);
      op.bwd_comm = tp_coll(d, CollectiveOp::all_gather, full);
    } else {
      op.fwd_comm = tp_coll(d, CollectiveOp::all_reduce, full);
    }
  }
  return op;
}

LayerOp memory_op(const char* name, OpUnit unit, const char* fwd_kind, double fwd_bytes, const char* bwd_kind,
                  double bwd_bytes, double act_bytes) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::memory;
  op.unit = unit;
  op.mem_fwd = MemoryOpKey{fwd_kind, static_cast<std::int64_t>(fwd_bytes)};
  op.mem_bwd = MemoryOpKey{bwd_kind, static_cast<std::int64_t>(bwd_bytes)};
  op.act_bytes = act_bytes;
  return op;
}

LayerOp norm(const Dims& d, const ModelConfig& m, const char* name, OpUnit unit) {
  const double x = static_cast<double>(d.Tsp) * d.h * d.e;
  const bool ln = m.norm_type == NormType::layernorm;
  // Fused: forward reads x and writes y; backward reads x and dy and writes dx. Unfused (eager
  // PyTorch) makes a statistics pass and a normalise pass in fp32, about twice the traffic. The
  // saved input x is what Korthikanti et al. count (2·s·b·h per norm); row statistics are negligible.
  const double f = d.fused_norm ? 1.0 : 2.0;
  return memory_op(name, unit, ln ? "layernorm_fwd" : "rmsnorm_fwd", 2 * x * f, ln ? "layernorm_bwd" : "rmsnorm_bwd",
                   3 * x * f, x);
}

// Dropout (when enabled) followed by the residual add, on the sequence-parallel shard.
LayerOp dropout_residual(const Dims& d, const char* name, OpUnit unit, bool dropout) {
  const double x = static_cast<double>(d.Tsp) * d.h * d.e;
  const double mask = dropout ? static_cast<double>(d.Tsp) * d.h : 0.0;  // one byte per element
  // Add: read two, write one. Dropout fused in: writes the mask; backward reads mask and dy.
  return memory_op(name, unit, dropout ? "dropout_add_fwd" : "add_fwd", 3 * x + mask,
                   dropout ? "dropout_add_bwd" : "add_bwd", dropout ? 2 * x + mask : 0.0, mask);
}

void add_attention(const Dims& d, const ModelConfig& m, const StrategyConfig& st, std::vector<LayerOp>& ops) {
  const std::int64_t a = m.head_num / d.t, g = m.kv_head_num / d.t, hd = m.head_size;
  const double q_bytes = static_cast<double>(d.T) * a * hd * d.e;
  const double kv_bytes = static_cast<double>(d.T) * g * hd * d.e;
  if (st.use_flash_sdp) {
    LayerOp op;
    op.name = "core_attention";
    op.kind = OpKind::attention;
    op.unit = OpUnit::attention_core;
    op.attn_fwd = AttentionKey{d.b, a, g, d.s, d.s, hd, hd, true, d.dtype, AttentionDirection::forward};
    op.attn_bwd = op.attn_fwd;
    op.attn_bwd.direction = AttentionDirection::backward;
    // Flash attention keeps Q, K, V (its output O is the saved input of the output projection) and
    // the fp32 log-sum-exp per row; dropout inside flash keeps only an RNG state.
    op.act_bytes = q_bytes + 2 * kv_bytes + static_cast<double>(d.T) * a * 4.0;
    op.transient_bytes = q_bytes + 2 * kv_bytes;  // dQ, dK, dV during backward
    ops.push_back(op);
    return;
  }
  // Unfused ("math") attention: scores = Q·Kᵀ, softmax, dropout, context = P·V. K and V are
  // expanded to all query heads (Megatron repeats KV groups before the batched GEMMs).
  const std::int64_t batch = d.b * a;
  const double scores = static_cast<double>(batch) * d.s * d.s * d.e;
  LayerOp qk;
  qk.name = "attention_scores";
  qk.kind = OpKind::gemm;
  qk.unit = OpUnit::attention_core;
  qk.gemm_fwd = GemmKey{d.s, d.s, hd, batch, d.dtype, GemmLayout::TN, false};
  qk.gemm_dgrad = GemmKey{d.s, hd, d.s, batch, d.dtype, GemmLayout::NN, false};  // dQ = dS·K
  qk.gemm_wgrad = GemmKey{d.s, hd, d.s, batch, d.dtype, GemmLayout::NT, false};  // dK = dSᵀ·Q
  qk.has_wgrad = true;
  qk.act_bytes = 3 * q_bytes;  // the core's inputs: Q and expanded K, V
  ops.push_back(qk);
  const bool dropout = st.enable_dropout;
  ops.push_back(memory_op("softmax", OpUnit::attention_core, "softmax_fwd", 2 * scores, "softmax_bwd", 3 * scores,
                          dropout ? scores : 0.0));
  if (dropout) {
    const double mask = scores / d.e;
    ops.push_back(memory_op("attention_dropout", OpUnit::attention_core, "dropout_fwd", 2 * scores + mask,
                            "dropout_bwd", 2 * scores + mask, mask));
  }
  LayerOp pv;
  pv.name = "attention_context";
  pv.kind = OpKind::gemm;
  pv.unit = OpUnit::attention_core;
  pv.gemm_fwd = GemmKey{d.s, hd, d.s, batch, d.dtype, GemmLayout::TN, false};
  pv.gemm_dgrad = GemmKey{d.s, d.s, hd, batch, d.dtype, GemmLayout::NN, false};  // dP = dO·Vᵀ
  pv.gemm_wgrad = GemmKey{d.s, hd, d.s, batch, d.dtype, GemmLayout::NT, false};  // dV = Pᵀ·dO
  pv.has_wgrad = true;
  pv.act_bytes = scores;  // P after dropout (V is counted with the scores GEMM's inputs)
  pv.transient_bytes = 2 * scores;  // dP and dS in backward
  ops.push_back(pv);
}

}  // namespace

ModelOps build_model_ops(const ModelConfig& m, const StrategyConfig& st, int scale_up_domain_size) {
  if (m.is_moe) {
    throw InputError(m.model_name.empty() ? "model" : m.model_name, "model_type",
                     "MoE layers are not simulated yet (the model loads; its parameter count is available with "
                     "`calisim configs show`)");
  }
  if (m.attention_type == AttentionType::mla) {
    throw InputError(m.model_name.empty() ? "model" : m.model_name, "attention_type",
                     "MLA attention is not simulated yet");
  }
  Dims d;
  d.b = st.micro_batch_size;
  d.s = st.seq_len;
  d.h = m.hidden_size;
  d.t = st.tp_size;
  d.T = d.b * d.s;
  d.sp = st.sequence_parallel;
  d.Tsp = d.sp ? d.T / d.t : d.T;
  d.dtype = st.dtype;
  d.e = bytes_per_element(st.dtype);
  d.accumulate = st.use_fp32_accum_grad && st.use_fused_grad_accumulation;
  d.fused_norm = st.use_fused_norm;
  d.tp_per_domain = st.tp_size <= scale_up_domain_size ? st.tp_size : scale_up_domain_size;

  ModelOps out;
  const std::int64_t a = m.head_num / d.t, g = m.kv_head_num / d.t, hd = m.head_size;
  const std::int64_t f = m.intermediate_size / d.t;
  auto& L = out.layer;
  L.push_back(norm(d, m, "input_norm", OpUnit::input_norm));
  L.push_back(column_parallel(d, "qkv_proj", OpUnit::qkv, d.h, (a + 2 * g) * hd));
  if (m.position_embedding_type == PositionEmbedding::rope) {
    const double qk = static_cast<double>(d.T) * (a + g) * hd * d.e;
    // RoPE rewrites Q and K in place; the fused kernel keeps only the (shared) frequency table.
    L.push_back(memory_op("rope", OpUnit::qkv, "rope_fwd", 2 * qk, "rope_bwd", 2 * qk, 0.0));
  }
  add_attention(d, m, st, L);
  L.push_back(row_parallel(d, "out_proj", OpUnit::out_proj, a * hd, d.h));
  L.push_back(dropout_residual(d, "attn_residual", OpUnit::post_attn, st.enable_dropout));
  L.push_back(norm(d, m, "post_attn_norm", OpUnit::post_norm));
  L.push_back(column_parallel(d, "fc1", OpUnit::mlp, d.h, m.use_swiglu ? 2 * f : f));
  {
    const double y = static_cast<double>(d.T) * f * d.e;
    const double x = m.use_swiglu ? 2 * y : y;
    // Activation keeps its input (GeLU: fc1 output; SwiGLU: gate and up halves). Unfused SwiGLU
    // runs SiLU and the product as two kernels and also keeps SiLU(gate) for the product's backward.
    if (m.use_swiglu && !st.use_fused_swiglu) {
      L.push_back(memory_op("activation", OpUnit::mlp, "swiglu_unfused_fwd", 5 * y, "swiglu_unfused_bwd", 8 * y,
                            x + y));
    } else {
      L.push_back(memory_op("activation", OpUnit::mlp, m.use_swiglu ? "swiglu_fwd" : "gelu_fwd", x + y,
                            m.use_swiglu ? "swiglu_bwd" : "gelu_bwd", 2 * x + y, x));
    }
  }
  L.push_back(row_parallel(d, "fc2", OpUnit::mlp, f, d.h));
  L.push_back(dropout_residual(d, "mlp_residual", OpUnit::post_mlp, st.enable_dropout));

  const double full = static_cast<double>(d.T) * d.h * d.e;
  const double shard = static_cast<double>(d.Tsp) * d.h * d.e;
  out.layer_input_bytes = shard;
  out.p2p_bytes = shard;

  // Embedding (first chunk): vocab-parallel lookup, then the partial sums are combined across TP.
  {
    double fwd = 2 * full, bwd = full + static_cast<double>(d.T) * d.h * (d.accumulate ? 4.0 : d.e);
    if (m.position_embedding_type == PositionEmbedding::learned_absolute) fwd += 3 * shard, bwd += 2 * shard;
    LayerOp emb = memory_op("embedding", OpUnit::other, "embedding_fwd", fwd, "embedding_bwd", bwd, 0.0);
    if (st.enable_dropout) {
      emb.act_bytes = static_cast<double>(d.Tsp) * d.h;
    }
    if (d.t > 1) {
      emb.fwd_comm = tp_coll(d, d.sp ? CollectiveOp::reduce_scatter : CollectiveOp::all_reduce, full);
      if (d.sp) emb.bwd_comm = tp_coll(d, CollectiveOp::all_gather, full);
    }
    out.embedding.push_back(emb);
  }
  // Head (last chunk): final norm, LM head over the padded vocabulary shard, cross-entropy.
  {
    out.head.push_back(norm(d, m, "final_norm", OpUnit::other));
    const std::int64_t v = m.padded_vocab(static_cast<int>(d.t)) / d.t;
    LayerOp head = column_parallel(d, "lm_head", OpUnit::other, d.h, v);
    const double logits = static_cast<double>(d.T) * v * d.e;
    head.transient_bytes = logits;
    out.head.push_back(head);
    const double n = static_cast<double>(d.T) * v;  // logits per rank
    LayerOp ce;
    if (st.cross_entropy_loss_fusion) {
      // Fused (TE) cross-entropy reads the logits once and writes their gradient in place.
      ce = memory_op("cross_entropy", OpUnit::other, "ce_fused_fwd", 2 * n * d.e, "ce_fused_bwd", 2 * n * d.e, n * d.e);
      ce.transient_bytes = n * d.e;
    } else {
      // Megatron's vocab-parallel cross-entropy: fp32 copy, max, exp, sum, normalise; keeps the
      // fp32 softmax for backward, which writes the bf16 gradient.
      ce = memory_op("cross_entropy", OpUnit::other, "ce_fwd", n * (d.e + 4 * 4), "ce_bwd", n * (4 + d.e + 4), n * 4);
      ce.transient_bytes = n * (d.e + 4);
    }
    if (d.t > 1) ce.fwd_comm = tp_coll(d, CollectiveOp::all_reduce, 3.0 * d.T * 4);  // max, target logit, sum
    out.head.push_back(ce);
  }
  return out;
}

RecomputePlan recompute_plan(const std::vector<LayerOp>& layer, const StrategyConfig& st) {
  RecomputePlan plan;
  plan.recomputed.assign(layer.size(), false);
  plan.keeps_input.assign(layer.size(), false);
  plan.skip_last_forward = st.recompute_variance && st.recompute_granularity != RecomputeGranularity::full_block;
  auto in_plan = [&](OpUnit u) {
    switch (st.recompute_granularity) {
      case RecomputeGranularity::none: return false;
      case RecomputeGranularity::full_block: return true;
      case RecomputeGranularity::attn_only:
        return u == OpUnit::qkv || u == OpUnit::attention_core || u == OpUnit::out_proj;
      case RecomputeGranularity::sdp_only: return u == OpUnit::attention_core;
      case RecomputeGranularity::mlp_only: return u == OpUnit::mlp;
      case RecomputeGranularity::selective:
        return (u == OpUnit::input_norm && st.mla_rms_recompute) ||
               ((u == OpUnit::qkv || u == OpUnit::attention_core) && st.attn_recompute) || (u == OpUnit::post_norm && st.mlp_rms_recompute) ||
               (u == OpUnit::mlp && st.mlp_recompute);
    }
    return false;
  };
  for (std::size_t i = 0; i < layer.size(); ++i) {
    plan.recomputed[i] = in_plan(layer[i].unit);
    plan.keeps_input[i] = plan.recomputed[i] && (i == 0 || !plan.recomputed[i - 1]);
  }
  return plan;
}

}  // namespace calisim
