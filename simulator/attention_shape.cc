#include "simulator/attention_shape.h"

#include "core/tile_quantization.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace calisim {
namespace {

// Sequence lengths of the published figures: 512, 1k, 2k, 4k, 8k, 16k.
constexpr std::array<double, 6> kSeq{512, 1024, 2048, 4096, 8192, 16384};

// Relative efficiency by sequence length, head dim 128, H100 80GB SXM5, each implementation's
// TFLOP/s divided by its own mean at 4k and 8k, then the mean over FlashAttention-2, cuDNN and
// FlashAttention-3 (Dao-AILab/flash-attention assets/flash3_fp16_fwd.png and the FlashAttention-3
// paper's backward figure, arXiv 2407.08608; values in shared/reference/kernel_figures.md §2.1).
// Forward causal: FA2 191..335, cuDNN 315..539, FA3 292..616 TFLOP/s.
constexpr std::array<double, 6> kFwdCausal{0.561, 0.766, 0.907, 0.983, 1.017, 1.033};
// Forward non-causal: FA2 309..370, cuDNN 497..595, FA3 467..648.
constexpr std::array<double, 6> kFwdNonCausal{0.796, 0.926, 0.992, 1.000, 1.000, 0.999};
// Backward non-causal (the figure has no causal backward): FA2 214..322, cuDNN 305..516, FA3 316..561.
constexpr std::array<double, 6> kBwdNonCausal{0.618, 0.800, 0.917, 0.984, 1.016, 1.020};
// Causal / non-causal forward efficiency at 4k-8k: FA2 326/369, cuDNN 523.5/604.5, FA3
// 590.5/642 -> 0.883, 0.866, 0.920, mean 0.89. Non-causal kernels do the same work per tile
// without the masked diagonal blocks, so they run closer to peak.
constexpr double kCausalOverNonCausal = 0.89;
// Head dim 64 and 256 against 128, forward causal at 4k-8k: FA2 0.888 / 0.905, cuDNN 0.709 /
// 0.936, FA3 0.745 / 1.050 -> means 0.781 / 0.964 (same figure).
constexpr double kHeadDim64 = 0.781, kHeadDim256 = 0.964;

double interp_log2(const std::array<double, 6>& curve, double seq) {
  const double x = std::clamp(std::log2(seq), std::log2(kSeq.front()), std::log2(kSeq.back())) - std::log2(kSeq[0]);
  const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(x), curve.size() - 2);
  const double f = x - static_cast<double>(i);
  return curve[i] * (1 - f) + curve[i + 1] * f;
}

double head_dim_factor(std::int64_t head_dim) {
  const double x = std::clamp(std::log2(static_cast<double>(std::max<std::int64_t>(head_dim, 1))), 6.0, 8.0);
  return x <= 7.0 ? kHeadDim64 + (1.0 - kHeadDim64) * (x - 6.0) : 1.0 + (kHeadDim256 - 1.0) * (x - 7.0);
}

}  // namespace

AttentionReference attention_reference_split(double combined, double backward_ratio) {
  AttentionReference r;
  r.forward = combined * (1.0 + 2.5 / backward_ratio) / 3.5;
  r.backward = r.forward * backward_ratio;
  return r;
}

double attention_kernel_seq(const AttentionKey& key) {
  return std::sqrt(static_cast<double>(std::max<std::int64_t>(key.seq_q, 1)) *
                   static_cast<double>(std::max<std::int64_t>(key.seq_kv, 1)));
}

double attention_shape_factor(const AttentionKey& key) {
  const double s = attention_kernel_seq(key);
  double seq_factor;
  if (key.direction == AttentionDirection::forward) {
    seq_factor = key.causal ? interp_log2(kFwdCausal, s) : interp_log2(kFwdNonCausal, s) / kCausalOverNonCausal;
  } else if (key.causal) {
    // Named assumption: the mask costs the backward what it costs the forward at the same length.
    seq_factor = interp_log2(kBwdNonCausal, s) * interp_log2(kFwdCausal, s) / interp_log2(kFwdNonCausal, s);
  } else {
    seq_factor = interp_log2(kBwdNonCausal, s) / kCausalOverNonCausal;
  }
  return seq_factor * head_dim_factor(std::max(key.head_dim_qk, key.head_dim_v));
}

double attention_grid_factor(const AttentionKey& key, int sm_count) {
  if (sm_count <= 0) return 1.0;
  const AttentionKey ref = flash_benchmark_key(std::llround(attention_kernel_seq(key)),
                                               std::max(key.head_dim_qk, key.head_dim_v), key.causal, key.dtype,
                                               key.direction);
  return attention_quantization(key, sm_count) / attention_quantization(ref, sm_count);
}

WindowTiles window_tiles(std::int64_t seq, std::int64_t window, std::int64_t tile) {
  WindowTiles w;
  w.query_blocks = (seq + tile - 1) / tile;
  for (std::int64_t i = 0; i < w.query_blocks; ++i) {
    const std::int64_t first_key = std::max<std::int64_t>(0, i * tile - window);
    w.kv_blocks += i - first_key / tile + 1;
  }
  w.kv_tokens = (w.kv_blocks * tile + w.query_blocks / 2) / w.query_blocks;
  return w;
}

double window_mask_pairs(std::int64_t seq, std::int64_t window) {
  const double s = static_cast<double>(seq), w = static_cast<double>(window);
  if (seq <= window) return s * (s + 1) / 2;
  return w * (w + 1) / 2 + (s - w) * w;
}

}  // namespace calisim
