#include "simulator/op_builders.h"

#include "simulator/rank_placement.h"

namespace calisim::ops {

Dims make_dims(const ModelConfig& m, const StrategyConfig& st, int scale_up_domain_size) {
  Dims d;
  d.b = st.micro_batch_size;
  d.c = st.cp_size;
  d.s_full = st.seq_len;
  d.s = st.seq_len / d.c;
  d.h = m.hidden_size;
  d.t = st.tp_size;
  d.T = d.b * d.s;
  d.sp = st.sequence_parallel;
  d.Tsp = d.sp ? d.T / d.t : d.T;
  d.dtype = st.dtype;
  d.e = bytes_per_element(st.dtype);
  d.accumulate = st.use_fp32_accum_grad && st.use_fused_grad_accumulation;
  d.grad_accum_unfused = !st.use_fused_grad_accumulation;
  d.main_grad_e = st.use_fp32_accum_grad ? 4.0 : d.e;
  d.fused_norm = st.use_fused_norm;
  d.fused_rope = st.use_fused_rope;
  d.tp_comm_overlap = st.tp_comm_overlap && d.sp;
  d.fp8 = st.fp8;
  d.fp8_torchao = st.fp8_impl == Fp8Implementation::torchao;
  d.domain_size = scale_up_domain_size;
  const RankPlacement placed = place_ranks(st, scale_up_domain_size);
  d.tp_per_domain = placed.tp;
  d.cp_per_domain = placed.cp;
  d.ep_per_domain = placed.ep;
  d.etp_per_domain = placed.etp;
  d.tp_2d = st.tp_mode == TensorParallelMode::two_d;
  d.tp_rows = st.tp_2d_rows;
  d.tp_cols = st.tp_2d_cols;
  const Tp2dPlacement grid = place_tp_grid(placed.tp, st.tp_2d_rows, st.tp_2d_cols);
  d.tp_row_per_domain = grid.row;
  d.tp_col_per_domain = grid.col;
  d.cp_2d = st.cp_mode == ContextParallelMode::two_d;
  d.cp_rows = st.cp_2d_rows;
  d.cp_cols = st.cp_2d_cols;
  const Tp2dPlacement cp_grid = place_cp_grid(placed.cp, st.cp_2d_rows, st.cp_2d_cols);
  d.cp_row_per_domain = cp_grid.row;
  d.cp_col_per_domain = cp_grid.col;
  return d;
}

CollectiveKey collective(CollectiveOp op, double bytes, int ranks, int ranks_per_node, DType dtype) {
  CollectiveKey k;
  k.op = op;
  k.bytes = static_cast<std::int64_t>(bytes);
  k.ranks = ranks;
  k.ranks_per_node = ranks_per_node;
  k.dtype = dtype;
  return k;
}

void set_ring_steps(std::int64_t b, std::int64_t s_full, std::int64_t g, std::int64_t dqk, std::int64_t dv, int ring,
                    int ranks_per_domain, double e, double grad_e, DType dtype, LayerOp& op) {
  if (ring <= 1) return;
  op.cp_ring_steps = ring;
  const double kv_elements = static_cast<double>(b) * (static_cast<double>(s_full) / ring) * g * (dqk + dv);
  const int per_node = ranks_per_domain >= ring ? 2 : 1;
  op.fwd_comm = collective(CollectiveOp::send_recv, kv_elements * e, 2, per_node, dtype);
  op.fwd_comm_overlapped = true;
  op.bwd_comm_with_dgrad = op.fwd_comm;  // K, V again
  op.bwd_comm_with_wgrad = collective(CollectiveOp::send_recv, kv_elements * grad_e, 2, per_node, dtype);  // dK, dV
}

CollectiveKey tp_coll(const Dims& d, CollectiveOp op, double bytes) {
  return collective(op, bytes, static_cast<int>(d.t), d.tp_per_domain, d.dtype);
}

LayerOp linear(const Dims& d, const char* name, OpUnit unit, std::int64_t tokens, std::int64_t in, std::int64_t out,
               bool fp8) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.unit = unit;
  // TE's "hybrid" format for delayed / per-tensor scaling: E4M3 forward, E5M2 gradients; the
  // block-scaled recipes use E4M3 throughout. FP8 and bf16 share a byte count only in name.
  DType fwd = d.dtype, bwd = d.dtype;
  if (fp8) {
    fwd = DType::fp8_e4m3;
    bwd = (d.fp8 == Fp8Recipe::delayed || d.fp8 == Fp8Recipe::tensorwise) ? DType::fp8_e5m2 : DType::fp8_e4m3;
  }
  // TE runs every FP8 GEMM as TN: it keeps a transposed (column-wise) FP8 copy of each operand,
  // made by the cast-transpose priced beside the GEMM (push_gemm's fp8_cast), because Hopper's
  // cuBLASLt FP8 kernels take no other layout. So the data- and weight-gradient keys of an FP8
  // linear say TN, which is also what the profiler can measure; 16/32-bit ones keep NN / NT.
  op.gemm_fwd = GemmKey{tokens, out, in, 1, fwd, GemmLayout::TN, false};
  op.gemm_dgrad = GemmKey{tokens, in, out, 1, bwd, fp8 ? GemmLayout::TN : GemmLayout::NN, false};
  op.gemm_wgrad = GemmKey{out, in, tokens, 1, bwd, fp8 ? GemmLayout::TN : GemmLayout::NT, d.accumulate};
  op.has_wgrad = true;
  if (d.grad_accum_unfused) op.wgrad_accum_bytes = static_cast<double>(out) * in * (d.e + 2 * d.main_grad_e);
  // A TE FP8 GEMM saves its FP8 (column-wise) input for the weight gradient: one byte per
  // element; torchao's saves the high-precision input.
  op.act_bytes = static_cast<double>(tokens) * in * (fp8 && !d.fp8_torchao ? 1.0 : d.e);
  return op;
}

LayerOp column_parallel(const Dims& d, const char* name, OpUnit unit, std::int64_t in, std::int64_t out_per_rank,
                        std::int64_t gather_width, bool fp8) {
  LayerOp op = linear(d, name, unit, d.T, in, out_per_rank, fp8);
  // SP keeps only the shard of the input (it is gathered again in backward).
  if (d.sp && gather_width > 0) op.act_bytes = static_cast<double>(d.Tsp) * in * (fp8 && !d.fp8_torchao ? 1.0 : d.e);
  if (d.t > 1 && gather_width > 0) {
    const double full = static_cast<double>(d.T) * gather_width * d.e;
    if (d.sp) {
      op.fwd_comm = tp_coll(d, CollectiveOp::all_gather, full);
      op.fwd_comm_overlapped = d.tp_comm_overlap;
      op.bwd_comm_with_dgrad = tp_coll(d, CollectiveOp::all_gather, full);
      op.bwd_comm_with_wgrad = tp_coll(d, CollectiveOp::reduce_scatter, full);
    } else {
      op.bwd_comm_with_wgrad = tp_coll(d, CollectiveOp::all_reduce, full);
    }
  }
  return op;
}

LayerOp row_parallel(const Dims& d, const char* name, OpUnit unit, std::int64_t in_per_rank, std::int64_t out,
                     bool fp8) {
  LayerOp op = linear(d, name, unit, d.T, in_per_rank, out, fp8);
  if (d.t > 1) {
    const double full = static_cast<double>(d.T) * out * d.e;
    if (d.sp) {
      op.fwd_comm = tp_coll(d, CollectiveOp::reduce_scatter, full);
      op.bwd_comm = tp_coll(d, CollectiveOp::all_gather, full);
      op.fwd_comm_overlapped = d.tp_comm_overlap;
      op.bwd_comm_overlapped = d.tp_comm_overlap;
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

LayerOp norm(const Dims& d, const ModelConfig& m, const char* name, OpUnit unit, std::int64_t tokens,
             std::int64_t width) {
  const double x = static_cast<double>(tokens) * width * d.e;
  const bool ln = m.norm_type == NormType::layernorm;
  // Fused: forward reads x and writes y; backward reads x and dy and writes dx. Unfused (eager
  // PyTorch) makes a statistics pass and a normalise pass in fp32, about twice the traffic. The
  // saved input x is what Korthikanti et al. count (2·s·b·h per norm); row statistics are negligible.
  const double f = d.fused_norm ? 1.0 : 2.0;
  return memory_op(name, unit, ln ? "layernorm_fwd" : "rmsnorm_fwd", 2 * x * f, ln ? "layernorm_bwd" : "rmsnorm_bwd",
                   3 * x * f, x);
}

LayerOp dropout_residual(const Dims& d, const char* name, OpUnit unit, bool dropout) {
  const double x = static_cast<double>(d.Tsp) * d.h * d.e;
  const double mask = dropout ? static_cast<double>(d.Tsp) * d.h : 0.0;  // one byte per element
  // Add: read two, write one. Dropout fused in: writes the mask; backward reads mask and dy.
  return memory_op(name, unit, dropout ? "dropout_add_fwd" : "add_fwd", 3 * x + mask,
                   dropout ? "dropout_add_bwd" : "add_bwd", dropout ? 2 * x + mask : 0.0, mask);
}

LayerOp rope(const Dims& d, const char* name, OpUnit unit, double elements) {
  const double passes = d.fused_rope ? 1.0 : 5.0;
  const double bytes = 2 * elements * d.e * passes;  // each pass reads and writes every element
  return memory_op(name, unit, "rope_fwd", bytes, "rope_bwd", bytes, 0.0);
}

LayerOp fp8_cast(const Dims& d, const char* name, OpUnit unit, std::int64_t tokens, std::int64_t in,
                 std::int64_t out) {
  const double amax_pass = d.fp8 == Fp8Recipe::tensorwise ? 1.0 : 0.0;
  const double per_element = d.e * (1 + amax_pass) + 2;  // amax read, cast read, row- and column-wise writes
  const double x = static_cast<double>(tokens) * in, dy = static_cast<double>(tokens) * out;
  if (!d.fp8_torchao) {
    return memory_op(name, unit, "fp8_cast_fwd", x * per_element, "fp8_cast_bwd", dy * per_element, 0.0);
  }
  // torchao: the weight is cast on every call, and backward casts the saved input and weight again.
  const double w = static_cast<double>(in) * out;
  return memory_op(name, unit, "fp8_cast_fwd", (x + w) * per_element, "fp8_cast_bwd", (dy + x + w) * per_element, 0.0);
}

void push_gemm(const Dims& d, std::vector<LayerOp>& ops, LayerOp gemm, const char* cast_name) {
  if (d.fp8 != Fp8Recipe::none && gemm.gemm_fwd.dtype != d.dtype) {
    const GemmKey& f = gemm.gemm_fwd;  // m = tokens, n = out, k = in (times groups for grouped GEMMs)
    ops.push_back(fp8_cast(d, cast_name, gemm.unit, f.m * f.batch, f.k, f.n));
  }
  ops.push_back(std::move(gemm));
}

}  // namespace calisim::ops
