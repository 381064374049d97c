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
  static constexpr std::array<std::array<int, 2>, 4> kTiles{{{64, 128}, {128, 128}, {128, 256}, {256, 128}}};
  double best = 0;
  for (const auto& [tm, tn] : kTiles) {
    const double tiles = static_cast<double>(ceil_div(std::max<std::int64_t>(m, 1), tm) *
                                             ceil_div(std::max<std::int64_t>(n, 1), tn)) *
                         static_cast<double>(std::max<std::int64_t>(batch, 1));
    best = std::max(best, tile_utilization(m, n, tm, tn) * wave_utilization(tiles, sm_count));
  }
  return best;
}

double attention_quantization(const AttentionKey& key, int sm_count) {
  const double ctas = static_cast<double>(key.batch) * static_cast<double>(key.heads_q) *
                      static_cast<double>(ceil_div(std::max<std::int64_t>(key.seq_q, 1), 128));
  return wave_utilization(ctas, sm_count);
}

}  // namespace calisim
