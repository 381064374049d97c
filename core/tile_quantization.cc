#include "core/tile_quantization.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace calisim {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

double wave_utilization(double tiles, int sm_count) {
  if (tiles <= 0 || sm_count <= 0) return 1.0;
  const double waves = std::ceil(tiles / sm_count);
  return tiles / (waves * sm_count);
}

double tile_utilization(std::int64_t m, std::int64_t n, int tile_m, int tile_n) {
  if (m <= 0 || n <= 0) return 1.0;
  const double padded = static_cast<double>(ceil_div(m, tile_m) * tile_m) * static_cast<double>(ceil_div(n, tile_n) * tile_n);
  return static_cast<double>(m) * static_cast<double>(n) / padded;
}

double gemm_quantization(std::int64_t m, std::int64_t n, std::int64_t batch, int sm_count) {
  // On the simulator's hot path (every roofline GEMM lookup): the tile sides are powers of two,
  // so the tile counts are shifts; one division per tile shape is left, for the waves.
  m = std::max<std::int64_t>(m, 1);
  n = std::max<std::int64_t>(n, 1);
  batch = std::max<std::int64_t>(batch, 1);
  struct Shape {
    int log2_m, log2_n;
  };
  static constexpr std::array<Shape, 4> kTiles{{{6, 7}, {7, 7}, {7, 8}, {8, 7}}};  // 64x128 ... 256x128
  const double useful = static_cast<double>(m) * static_cast<double>(n);
  double best = 0;
  for (const Shape& t : kTiles) {
    const std::int64_t tiles_m = (m + (std::int64_t{1} << t.log2_m) - 1) >> t.log2_m;
    const std::int64_t tiles_n = (n + (std::int64_t{1} << t.log2_n) - 1) >> t.log2_n;
    const double padded = static_cast<double>(tiles_m << t.log2_m) * static_cast<double>(tiles_n << t.log2_n);
    const double tiles = static_cast<double>(tiles_m * tiles_n) * static_cast<double>(batch);
    best = std::max(best, useful / padded * wave_utilization(tiles, sm_count));
  }
  return best;
}

double attention_quantization(const AttentionKey& key, int sm_count) {
  const double ctas = static_cast<double>(key.batch) * static_cast<double>(key.heads_q) *
                      static_cast<double>(ceil_div(std::max<std::int64_t>(key.seq_q, 1), 128));
  return wave_utilization(ctas, sm_count);
}

}  // namespace calisim
