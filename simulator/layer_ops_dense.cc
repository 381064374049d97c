// MHA/GQA attention (flash or unfused, with context parallelism) and the dense MLP.
#include "simulator/attention_shape.h"
#include "simulator/layer_ops_cp2d.h"
#include "simulator/layer_ops_tp2d.h"
#include "simulator/op_builders.h"

namespace calisim::ops {
namespace {

// Context parallelism on a flash-attention op (MODELING.md §2). Ring (p2p, Megatron/TE
// AttnFuncWithCPAndKVP2P): the sequence is cut into 2·c chunks and rank i holds chunks i and
// 2c−1−i (causal load balancing), so its s/c queries attend to all s keys with 1/c of the causal
// work, which the whole-share key (seq_q = s/c, seq_kv = s, causal) counts. The kernels are
// per step: step 0 is causal attention of the local chunks to themselves, steps 1..c−1 non-causal
// attention of one half of the pair to the other (s/c queries to s/(2c) keys or the reverse),
// each overlapped with the send/recv of the next step's K, V to the ring neighbour (backward: K,
// V forward and the partial dK, dV onward); op_cost prices them step by step (cp_ring_steps).
// Ulysses (a2a): all-to-all of Q, K, V and of the output turn the sequence split into a head
// split; attention then runs on the full sequence with a/c heads. All-gather
// (TransformerEngine's AttnFuncWithCPAndKVAllGather): the ranks' K, V are gathered in front of the
// attention, exposed (TE: "KV all-gather between CP ranks is exposed"), and each rank's two
// load-balanced query chunks attend their causal key prefixes — together the same 1/c of the
// causal work as the ring, the whole-share key —; backward gathers K, V again (the op's backward
// collective) and reduce-scatters dK, dV (cp_all_gather_reorder, pushed in front of it).
void apply_context_parallel(const Dims& d, std::int64_t a, std::int64_t g, std::int64_t dqk, std::int64_t dv,
                            CpCommType type, CpImplementation impl, LayerOp& op) {
  if (d.c <= 1) return;
  if (d.cp_2d) return apply_cp2d_attention(d, a, g, dqk, dv, op);  // 2D grid (layer_ops_cp2d.h)
  op.comm_group = CommGroup::cp;
  const int c = static_cast<int>(d.c);
  if (type == CpCommType::p2p) {
    op.attn_fwd.seq_kv = d.s_full;
    // PyTorch's ring runs the flash op, which takes as many K, V heads as query heads: the K, V it
    // sends on are repeated to a heads, and the dK, dV it sends on are its fp32 accumulators.
    const bool pytorch = impl == CpImplementation::pytorch;
    set_ring_steps(d.b, d.s_full, pytorch ? a : g, dqk, dv, c, d.cp_per_domain, d.e, pytorch ? 4.0 : d.e, d.dtype, op);
  } else if (type == CpCommType::all_gather) {
    op.attn_fwd.seq_kv = d.s_full;
    const double kv_all = static_cast<double>(d.T) * g * (dqk + dv) * d.e * c;  // the gathered K, V
    op.fwd_comm = collective(CollectiveOp::all_gather, kv_all, c, d.cp_per_domain, d.dtype);
    op.bwd_comm = op.fwd_comm;
  } else {
    op.attn_fwd.heads_q = a / d.c;
    op.attn_fwd.heads_kv = g / d.c;
    op.attn_fwd.seq_q = op.attn_fwd.seq_kv = d.s_full;
    // Q, K, V in and the output back (forward); dO in, dQ, dK, dV back (backward).
    const double bytes = static_cast<double>(d.T) * (a * (dqk + dv) + g * (dqk + dv)) * d.e;
    op.fwd_comm = collective(CollectiveOp::all_to_all, bytes, c, d.cp_per_domain, d.dtype);
    op.bwd_comm = op.fwd_comm;
  }
  op.attn_bwd = op.attn_fwd;
  op.attn_bwd.direction = AttentionDirection::backward;
}

// The tile height and width of the flash kernels Megatron runs (cuDNN / FlashAttention BLOCK_M
// and BLOCK_N of 128 for bf16 forward): the granularity at which a window's masked KV blocks
// are still computed.
constexpr std::int64_t kFlashTile = 128;

// A windowed layer (model_config.h attention_window_tokens; the op lists describe a windowed
// layer whenever it is set, cost_model mixes them with full-attention layers): the core becomes
// query-block problems against the KV blocks their window touches (attention_shape.h
// window_tiles), with the executed FLOPs of those blocks. Activations do not shrink: Q, K, V and
// the log-sum-exp are kept for every token as before. Applied after Ulysses CP, whose kernel
// attends the whole sequence with a/c heads; validate_layout refuses ring CP with a window.
void apply_window(std::int64_t window, LayerOp& op) {
  for (AttentionKey* k : {&op.attn_fwd, &op.attn_bwd}) {
    if (k->seq_q <= window + 1) continue;  // the window covers the whole causal prefix
    const WindowTiles w = window_tiles(k->seq_q, window, kFlashTile);
    k->batch *= w.query_blocks;
    k->seq_q = kFlashTile;
    k->seq_kv = w.kv_tokens;
    k->causal = false;
  }
}

}  // namespace

void push_cp_all_gather_reorder(const Dims& d, const StrategyConfig& st, std::int64_t g, std::int64_t dqk,
                                std::int64_t dv, std::vector<LayerOp>& ops) {
  if (d.c <= 1 || d.cp_2d || st.cp_comm_type != CpCommType::all_gather) return;
  // The gathered K, V copied into sequence order (index_select) before the attention, and in
  // backward the same for the regathered K, V and for dK, dV before their reduce-scatter; the
  // gathered and reordered K, V live while the attention runs.
  const double kv_all = static_cast<double>(d.T) * g * (dqk + dv) * d.e * static_cast<double>(d.c);
  LayerOp op = memory_op("cp_all_gather_reorder", OpUnit::attention_core, "copy", 2 * kv_all, "copy", 4 * kv_all, 0.0);
  op.comm_group = CommGroup::cp;
  CollectiveKey rs = collective(CollectiveOp::reduce_scatter, kv_all, static_cast<int>(d.c), d.cp_per_domain, d.dtype);
  op.bwd_comm = rs;
  op.transient_bytes = 2 * kv_all;
  ops.push_back(std::move(op));
}

LayerOp flash_attention(const Dims& d, const StrategyConfig& st, std::int64_t a, std::int64_t g, std::int64_t dqk,
                        std::int64_t dv) {
  LayerOp op;
  op.name = "core_attention";
  op.kind = OpKind::attention;
  op.unit = OpUnit::attention_core;
  op.attn_fwd = AttentionKey{d.b, a, g, d.s, d.s, dqk, dv, true, d.dtype, AttentionDirection::forward};
  op.attn_bwd = op.attn_fwd;
  op.attn_bwd.direction = AttentionDirection::backward;
  const double q_bytes = static_cast<double>(d.T) * a * dqk * d.e;
  const double kv_bytes = static_cast<double>(d.T) * g * (dqk + dv) * d.e;
  // Flash attention keeps Q, K, V (its output O is the saved input of the output projection) and
  // the fp32 log-sum-exp per row; dropout inside flash keeps only an RNG state.
  op.act_bytes = q_bytes + kv_bytes + static_cast<double>(d.T) * a * 4.0;
  op.transient_bytes = q_bytes + kv_bytes;  // dQ, dK, dV during backward
  apply_context_parallel(d, a, g, dqk, dv, st.cp_comm_type, st.cp_impl, op);
  return op;
}

// PyTorch's ring attention (torch.distributed.tensor.experimental._attention,
// _templated_ring_attention and its backward; convert_to_f32 on) around its flash op, per rank
// and micro-batch, as element-wise traffic on c ring steps. N = T·a·d_v output elements, Q =
// T·a·d_qk query elements, KV = T·a·(d_qk + d_v) K, V elements (repeated to the query heads), e
// bytes per training-dtype element. Forward: each step but the last copies K, V into one send
// buffer (torch.cat: 2·KV·e); the first block output is converted to fp32 (N·e + 4N); every
// later step converts its block (N·e + 4N) and merges it, out − sigmoid(lse' − lse)·(out − o'),
// in three fp32 passes over the output (12N + 8N + 12N); with load balancing a step on the
// second half of the queries (about half the steps) works on N/2 and copies the whole fp32
// output back together (torch.cat: 8N), so a merge step averages N·(0.75·(e + 36) + 4); the
// result is converted back (4N + N·e). Backward: fp32 dQ, dK, dV start at zero (4Q + 4KV); K, V
// are copied to send as forward; every step adds the block's dK, dV into the fp32 accumulators
// (read 4 + e, write 4 per element; half the steps on half of them plus a torch.cat of the
// whole: 0.75·(8 + e) + 4 per element on average), copies them into the send buffer (8 per
// element) and adds dQ the same way; the accumulators are converted back at the end ((Q + KV)·
// (4 + e)). The lse and sigmoid terms (1/d of these) are left out. Transients: the fp32 output
// and the K, V send buffer forward; the fp32 accumulators and the dK, dV buffer backward.
LayerOp pytorch_ring_merge(const Dims& d, std::int64_t a, std::int64_t dqk, std::int64_t dv) {
  const double T = static_cast<double>(d.T), e = d.e, c = static_cast<double>(d.c);
  const double N = T * a * dv, Q = T * a * dqk, KV = T * a * (dqk + dv);
  const double merge = 0.75 * (e + 36) + 4, accumulate = 0.75 * (8 + e) + 4;
  const double fwd = (c - 1) * 2 * KV * e + (N * e + 4 * N) + (c - 1) * N * merge + (4 * N + N * e);
  const double bwd = (4 * Q + 4 * KV) + (c - 1) * 2 * KV * e + c * (KV * accumulate + 8 * KV + Q * accumulate) +
                     (Q + KV) * (4 + e);
  LayerOp op = memory_op("cp_ring_merge", OpUnit::attention_core, "cp_merge_fwd", fwd, "cp_merge_bwd", bwd, 0.0);
  op.transient_bytes = 4 * N + KV * e;
  op.bwd_transient_bytes = 4 * Q + 8 * KV;
  return op;
}

void add_attention(const Dims& grid, const ModelConfig& m, const StrategyConfig& st, std::vector<LayerOp>& ops) {
  const Dims d = summa_row_view(grid);  // 2D TP: one row group's view (layer_ops_tp2d.h)
  const std::int64_t a = m.head_num / d.t, g = m.kv_head_num / d.t, hd = m.head_size;
  const bool fp8 = d.fp8 != Fp8Recipe::none;
  ops.push_back(norm(d, m, "input_norm", OpUnit::input_norm, d.Tsp, d.h));
  const std::int64_t qkv_out = (a + 2 * g) * hd;
  push_gemm(d, ops, with_summa_weights(grid, column_parallel(d, "qkv_proj", OpUnit::qkv, d.h, qkv_out, d.h, fp8)),
            "qkv_fp8_cast");
  if (m.position_embedding_type == PositionEmbedding::rope) {
    // RoPE rewrites Q and K in place; it keeps only the (shared) frequency table.
    ops.push_back(rope(d, "rope", OpUnit::qkv, static_cast<double>(d.T) * (a + g) * hd));
  }
  if (st.use_flash_sdp) {
    // 2D CP: the head all-to-all along the grid's column group precedes the attention.
    if (auto a2a = cp2d_head_all_to_all(d, a, g, hd, hd)) ops.push_back(*a2a);
    push_cp_all_gather_reorder(d, st, g, hd, hd, ops);
    LayerOp core = flash_attention(d, st, a, g, hd, hd);
    apply_summa_attention(grid, d, g, hd, hd, core);
    if (m.attention_window_tokens > 0) apply_window(m.attention_window_tokens, core);
    ops.push_back(std::move(core));
    // validate_layout admits PyTorch's ring for 1D ring CP of MHA/GQA attention only.
    if (st.cp_impl == CpImplementation::pytorch && d.c > 1 && !d.cp_2d && st.cp_comm_type == CpCommType::p2p) {
      ops.push_back(pytorch_ring_merge(d, a, hd, hd));
    }
  } else {
    // Unfused ("math") attention: scores = Q·Kᵀ, softmax, dropout, context = P·V. K and V are
    // expanded to all query heads (Megatron repeats KV groups before the batched GEMMs).
    // validate_layout rejects it with context parallelism.
    const double q_bytes = static_cast<double>(d.T) * a * hd * d.e;
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
    pv.act_bytes = scores;            // P after dropout (V is counted with the scores GEMM's inputs)
    pv.transient_bytes = 2 * scores;  // dP and dS in backward
    ops.push_back(pv);
  }
  push_gemm(d, ops, with_summa_weights(grid, row_parallel(d, "out_proj", OpUnit::out_proj, a * hd, d.h, fp8)),
            "out_proj_fp8_cast");
}

void add_dense_mlp(const Dims& grid, const ModelConfig& m, const StrategyConfig& st, std::int64_t ffn, OpUnit unit,
                   const MlpNames& names, std::vector<LayerOp>& ops) {
  const Dims d = summa_row_view(grid);  // 2D TP: one row group's view (layer_ops_tp2d.h)
  const std::int64_t f = ffn / d.t;
  const bool fp8 = d.fp8 != Fp8Recipe::none;
  const std::int64_t fc1_out = m.use_swiglu ? 2 * f : f;
  push_gemm(d, ops, with_summa_weights(grid, column_parallel(d, names.fc1, unit, d.h, fc1_out, d.h, fp8)),
            names.fc1_cast);
  const double y = static_cast<double>(d.T) * f * d.e;
  const double x = m.use_swiglu ? 2 * y : y;
  // Activation keeps its input (GeLU: fc1 output; SwiGLU: gate and up halves). Unfused SwiGLU
  // runs SiLU and the product as two kernels and also keeps SiLU(gate) for the product's backward.
  if (m.use_swiglu && !st.use_fused_swiglu) {
    ops.push_back(memory_op(names.act, unit, "swiglu_unfused_fwd", 5 * y, "swiglu_unfused_bwd", 8 * y, x + y));
  } else {
    ops.push_back(memory_op(names.act, unit, m.use_swiglu ? "swiglu_fwd" : "gelu_fwd", x + y,
                            m.use_swiglu ? "swiglu_bwd" : "gelu_bwd", 2 * x + y, x));
  }
  push_gemm(d, ops, with_summa_weights(grid, row_parallel(d, names.fc2, unit, f, d.h, fp8)), names.fc2_cast);
}

}  // namespace calisim::ops
