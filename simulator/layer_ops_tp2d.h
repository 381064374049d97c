// 2D (SUMMA) tensor parallelism for the dense layer ops (Subramanian et al. 2024, "Comprehensive
// Performance Modeling and System Design Insights for Foundation Models", arXiv:2410.00273).
//
// Grid r × c = t (StrategyConfig::tp_2d_rows / tp_2d_cols). Rank (i, j) holds the layer input as
// an (m/r) × (h/c) block (m = b·s tokens of the micro-batch) and every weight W[k, n] as a
// (k/r) × (n/c) block (column-parallel GEMMs; row-parallel ones (k/c) × (n/r)). A GEMM then is
// Megatron's 1D column/row-parallel linear with sequence parallelism run by the c ranks of a row
// group on m/r tokens, plus the SUMMA weight panel: the k × n/c (n/c × k) panel gathered along
// the column group of r ranks before the GEMM, gathered again beside dgrad, and its gradient
// reduce-scattered along the column group beside wgrad. Attention runs a/c heads on s/r queries
// (causally load-balanced as ring CP) and gathers the s/r-token K/V blocks along the column group.
// A 1 × t grid is exactly 1D TP with sequence parallelism.
#pragma once

#include "simulator/op_builders.h"

namespace calisim::ops {

// The dims the 1D builders see for one row group: t → c, tokens T → T/r, queries s → s/r, TP
// ranks per domain → row-group ranks per domain. Unchanged under 1D tensor parallelism.
Dims summa_row_view(const Dims& d);

// Adds the SUMMA weight-panel collectives (panel = the GEMM's k × n at the activation dtype,
// r − 1 of r blocks received per rank) and the gathered panel's buffer to a GEMM built on the
// row view; nothing when r = 1 or under 1D TP.
LayerOp with_summa_weights(const Dims& d, LayerOp gemm);

// Attention on s/r queries against all s keys: the K/V blocks all-gathered along the column
// group (overlapped with the attention, as ring CP), dK/dV reduce-scattered beside its backward.
// `view` is summa_row_view(d); g = KV heads per rank; nothing when r = 1.
void apply_summa_attention(const Dims& d, const Dims& view, std::int64_t g, std::int64_t dqk, std::int64_t dv,
                           LayerOp& op);

}  // namespace calisim::ops
