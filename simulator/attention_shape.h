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

// How this key's CTA grid fills the SMs against the grid of the published curves at the same
// kernel sequence length and head dimension (hidden 2048, 16k tokens per batch: heads 2048 / d,
// batch 16384 / s): attention_quantization (core/tile_quantization.h) of the key over that of the
// reference grid, same mask and direction, on `sm_count` SMs. Below 1 where a tensor-parallel
// shard at micro-batch 1 leaves few heads (b·h = 8 at 4k tokens: 0.64 of the reference on an
// H200, as measured); 1 when sm_count <= 0.
double attention_grid_factor(const AttentionKey& key, int sm_count);

// Sliding-window attention at the flash kernel's tile granularity (docs/simulator.md
// "Sliding-window attention and sinks"). The kernel walks query blocks of `tile` rows; a block
// whose rows attend keys i-W..i computes in full every KV block from the one holding its first
// row's earliest key up to its diagonal block (partly masked blocks cost a whole block), so with
// W = tile = 128 an interior query block computes 2 KV blocks. The windowed kernel is then
// query_blocks independent problems of `tile` queries against kv_tokens keys (the mean over
// query blocks, rounded to a token), non-causal: AttentionKey{b * query_blocks, .., tile,
// kv_tokens, causal = false}. Its efficiency comes from the curves above at that short length
// (sqrt(tile * kv_tokens), clamped to the shortest published length, 512).
struct WindowTiles {
  std::int64_t query_blocks = 0;  // ceil(seq / tile)
  std::int64_t kv_blocks = 0;     // KV blocks computed, summed over query blocks
  std::int64_t kv_tokens = 0;     // round(kv_blocks * tile / query_blocks)
};
// window: keys before the query (W); requires seq > W + 1 (otherwise the window covers the
// whole causal prefix and the layer is plain causal attention), tile > 0.
WindowTiles window_tiles(std::int64_t seq, std::int64_t window, std::int64_t tile);

// Useful (unmasked) query-key pairs of one sequence under the window, Megatron-Bridge's count
// (flop_utils attention_flops_calculator, is_swa): W(W+1)/2 + (s - W)·W for s > W, else the
// causal s(s+1)/2. The model-FLOP (MFU) convention uses this; the kernel executes window_tiles.
double window_mask_pairs(std::int64_t seq, std::int64_t window);

}  // namespace calisim
