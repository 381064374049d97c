#include "simulator/layer_ops_tp2d.h"

namespace calisim::ops {

Dims summa_row_view(const Dims& d) {
  if (!d.tp_2d) return d;
  Dims g = d;
  g.t = d.tp_cols;
  g.T = d.T / d.tp_rows;
  g.s = d.s / d.tp_rows;
  g.tp_per_domain = d.tp_row_per_domain;
  return g;  // Tsp = T/t is already (T/r)/c
}

LayerOp with_summa_weights(const Dims& d, LayerOp gemm) {
  if (!d.tp_2d || d.tp_rows <= 1) return gemm;
  const int r = static_cast<int>(d.tp_rows);
  // The gathered panel: the local GEMM's full reduction dimension k times its n (forward TN key).
  const double panel = static_cast<double>(gemm.gemm_fwd.k) * gemm.gemm_fwd.n * d.e;
  const CollectiveKey gather = collective(CollectiveOp::all_gather, panel, r, d.tp_col_per_domain, d.dtype);
  gemm.fwd_weight_comm = gather;
  gemm.bwd_weight_comm_with_dgrad = gather;
  gemm.bwd_weight_comm_with_wgrad = collective(CollectiveOp::reduce_scatter, panel, r, d.tp_col_per_domain, d.dtype);
  // SUMMA broadcasts one of the r blocks per step; the GEMM on a block runs while the next moves.
  gemm.weight_comm_steps = r;
  gemm.transient_bytes += panel;  // the gathered panel (and in backward its gradient) while the GEMM runs
  return gemm;
}

void apply_summa_attention(const Dims& d, const Dims& view, std::int64_t g, std::int64_t dqk, std::int64_t dv,
                           LayerOp& op) {
  if (!d.tp_2d || d.tp_rows <= 1) return;
  const int r = static_cast<int>(d.tp_rows);
  op.attn_fwd.seq_kv = d.s;  // every query block attends over the whole (causal) sequence
  op.attn_bwd = op.attn_fwd;
  op.attn_bwd.direction = AttentionDirection::backward;
  const double kv_all = static_cast<double>(view.b) * d.s * g * (dqk + dv) * d.e;
  const CollectiveKey gather = collective(CollectiveOp::all_gather, kv_all, r, d.tp_col_per_domain, d.dtype);
  op.fwd_comm = gather;
  op.fwd_comm_overlapped = true;
  op.bwd_comm_with_dgrad = gather;
  op.bwd_comm_with_wgrad = collective(CollectiveOp::reduce_scatter, kv_all, r, d.tp_col_per_domain, d.dtype);
}

}  // namespace calisim::ops
