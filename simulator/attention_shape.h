// Roofline default for flash-attention kernels: how the efficiency of one attention kernel moves
// with its direction, mask, sequence length and head dimension (docs/simulator.md "Attention
// kernel efficiency").
//
// Contract: pure functions of the key and two system numbers. The system file's
// `efficiency.attention` is the forward+backward efficiency of its attention implementation at the
// reference shape (causal, head dim 128, sequence 4k-8k; FLOPs counted as forward + 2.5 x forward,
// the FlashAttention convention) and `efficiency.attention_backward_ratio` the backward/forward
// efficiency ratio at that shape. attention_reference_split() turns the pair into a forward and a
// backward efficiency with the same total time at the reference shape; attention_shape_factor()
// scales either by the published relative curves (FlashAttention-2, cuDNN and FlashAttention-3 on
// H100 SXM5, each normalised to its own reference value, then averaged). Used only when no
// database row covers the key: a measured efficiency already contains all of this.
#pragma once

#include "core/kernel_keys.h"

namespace calisim {

struct AttentionReference {
  double forward = 0;   // forward efficiency at the reference shape
  double backward = 0;  // backward efficiency at the reference shape
};

// combined: fwd+bwd efficiency at the reference shape; backward_ratio: bwd/fwd efficiency.
// Solves 3.5 / combined = 1 / forward + 2.5 / backward with backward = ratio · forward.
AttentionReference attention_reference_split(double combined, double backward_ratio);

// The kernel's sequence length for the curves: sqrt(seq_q · seq_kv) (equal to s for
// self-attention; ring context-parallel steps attend s/c queries to s/(2c) keys).
double attention_kernel_seq(const AttentionKey& key);

// Efficiency relative to the reference shape for this key's direction, mask, kernel sequence
// length (log-interpolated between 512 and 16k, clamped outside) and head dimension (max of
// head_dim_qk and head_dim_v, log-interpolated between 64 and 256, clamped outside).
double attention_shape_factor(const AttentionKey& key);

}  // namespace calisim
