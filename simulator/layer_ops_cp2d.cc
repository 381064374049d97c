#include "simulator/layer_ops_cp2d.h"

namespace calisim::ops {

std::optional<LayerOp> cp2d_head_all_to_all(const Dims& d, std::int64_t a, std::int64_t g, std::int64_t dqk,
                                            std::int64_t dv) {
  if (!d.cp_2d || d.cp_rows <= 1) return std::nullopt;
  LayerOp op;
  op.name = "cp_head_all_to_all";
  op.kind = OpKind::memory;  // no kernel of its own: the collective is the whole cost
  op.unit = OpUnit::attention_core;
  op.comm_group = CommGroup::cp;
  // Forward: Q, K, V in and the output back; backward: dO in, dQ, dK, dV back (as 1D Ulysses,
  // on this rank's T tokens before the head split).
  const double bytes = static_cast<double>(d.T) * (a * (dqk + dv) + g * (dqk + dv)) * d.e;
  op.fwd_comm = collective(CollectiveOp::all_to_all, bytes, static_cast<int>(d.cp_rows), d.cp_col_per_domain, d.dtype);
  op.bwd_comm = op.fwd_comm;
  return op;
}

void apply_cp2d_attention(const Dims& d, std::int64_t a, std::int64_t g, std::int64_t dqk, std::int64_t dv,
                          LayerOp& op) {
  const std::int64_t r = d.cp_rows, k = d.cp_cols;
  op.comm_group = CommGroup::cp;
  op.attn_fwd.heads_q = a / r;
  op.attn_fwd.heads_kv = g / r;
  op.attn_fwd.seq_q = d.s_full / k;  // the row group's tokens, causally load-balanced as ring CP
  op.attn_fwd.seq_kv = d.s_full;
  op.attn_bwd = op.attn_fwd;
  op.attn_bwd.direction = AttentionDirection::backward;
  if (k <= 1) return;
  set_ring_steps(d.b, d.s_full, g / r, dqk, dv, static_cast<int>(k), d.cp_row_per_domain, d.e, d.e, d.dtype, op);
}

}  // namespace calisim::ops
