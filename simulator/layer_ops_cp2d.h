// 2D context parallelism on the flash-attention op (docs/simulator.md "2D context parallelism").
//
// Grid r × k = c (StrategyConfig::cp_2d_rows / cp_2d_cols); every rank holds T = b·s/c tokens
// with a query and g KV heads (per TP rank). Along the column group (r consecutive CP ranks,
// Megatron's hierarchical a2a level) an all-to-all trades the token split for a head split
// (Ulysses, Jacobs et al. 2023): afterwards a rank holds the row group's b·s/k tokens for a/r query and g/r KV heads. Along the
// row group (k ranks, strided by r) the sequence stays split and the K/V of those heads are
// all-gathered behind the attention, dK/dV reduce-scattered behind its backward — the NERSC
// model's sequence-parallel fused attention (Subramanian et al. 2024, arXiv:2410.00273), which is
// also calisim's ring CP. A 1 × c grid is exactly today's ring CP; a c × 1 grid is Ulysses.
#pragma once

#include <optional>

#include "simulator/op_builders.h"

namespace calisim::ops {

// The forward/backward all-to-all of Q, K, V and of the output along the column group, as a
// comm-only op issued before the attention (exposed: attention needs its result); the sizes are
// the attention's per-rank heads a, g before the head split. nullopt when r = 1 or under 1D CP.
std::optional<LayerOp> cp2d_head_all_to_all(const Dims& d, std::int64_t a, std::int64_t g, std::int64_t dqk,
                                            std::int64_t dv);

// Sets the attention key (a/r, g/r heads; s/k queries against all s keys, causal) and the ring's
// per-step K/V send/recv (forward, overlapped; backward with dK/dV) along the row group
// (set_ring_steps, priced step by step in op_cost).
void apply_cp2d_attention(const Dims& d, std::int64_t a, std::int64_t g, std::int64_t dqk, std::int64_t dv,
                          LayerOp& op);

}  // namespace calisim::ops
