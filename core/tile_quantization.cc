#include "core/tile_quantization.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace calisim {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The causal grid's utilization: attention_quantization's contract for a causal key of `heads`
// (batch x query heads) heads.
double causal_grid_utilization_uncached(std::int64_t seq_q, std::int64_t seq_kv, std::int64_t heads, bool forward,
                                        int sm_count) {
  const std::int64_t nq = ceil_div(std::max<std::int64_t>(seq_q, 1), 128);
  const std::int64_t nkv = ceil_div(std::max<std::int64_t>(seq_kv, 1), 128);
  const std::int64_t blocks = forward ? nq : nkv;
  const double ctas = static_cast<double>(heads) * static_cast<double>(blocks);
  // Causal: the work of a CTA is the number of 128-blocks it visits under the mask (aligned to the
  // bottom right, so a query chunk shorter than its keys sees the keys before it). Forward: query
  // block i visits w_i key blocks; backward: key block j is visited by the query blocks whose
  // w_i > j. Every CTA costs at least one block (its prologue and epilogue).
  std::vector<double> work(static_cast<std::size_t>(blocks));
  const std::int64_t offset = std::max<std::int64_t>(seq_kv, 1) - std::max<std::int64_t>(seq_q, 1);
  std::vector<std::int64_t> visits(static_cast<std::size_t>(nq));
  for (std::int64_t i = 0; i < nq; ++i) {
    const std::int64_t last_row = std::min<std::int64_t>((i + 1) * 128, std::max<std::int64_t>(seq_q, 1));
    visits[static_cast<std::size_t>(i)] = std::clamp<std::int64_t>(ceil_div(last_row + offset, 128), 1, nkv);
  }
  if (forward) {
    for (std::int64_t i = 0; i < nq; ++i) work[static_cast<std::size_t>(i)] = static_cast<double>(visits[static_cast<std::size_t>(i)]);
  } else {
    std::int64_t first = 0;  // first query block whose visits exceed j (visits is nondecreasing)
    for (std::int64_t j = 0; j < nkv; ++j) {
      while (first < nq && visits[static_cast<std::size_t>(first)] <= j) ++first;
      work[static_cast<std::size_t>(j)] = static_cast<double>(std::max<std::int64_t>(nq - first, 1));
    }
  }
  double per_head = 0, largest = 0;
  for (double w : work) {
    per_head += w;
    largest = std::max(largest, w);
  }
  const double total = per_head * static_cast<double>(heads);
  const double sms = static_cast<double>(sm_count);
  // The blocks on the diagonal are computed whole and half thrown away: the FLOPs counted for a
  // causal kernel (half the full product, AttentionKey::flops) over the blocks visited. 4 / 5 at
  // 512 tokens (10 blocks visited for 8 counted), 32 / 33 at 4k.
  const double counted = 0.5 * static_cast<double>(std::max<std::int64_t>(seq_q, 1)) *
                         static_cast<double>(std::max<std::int64_t>(seq_kv, 1)) / (128.0 * 128.0);
  const double useful = std::min(1.0, counted / per_head);
  // Beyond 64 waves the exact schedule costs more than it tells: list scheduling ends within one
  // CTA of total / SMs, on average half the largest (causal grids of 124 to 496 waves on 132 SMs,
  // forward and backward, sequence 8k to 32k: within 0.8 % of the exact schedule).
  if (ctas > 64.0 * sms) return useful * total / (sms * (total / sms + 0.5 * largest));
  // The hardware hands CTAs out in launch order (head-major, block index ascending) to whichever SM
  // frees first: list scheduling. Its makespan against the perfect split is the utilization. (On
  // the H200, causal cuDNN SDPA at 4k tokens and b·h = 7 ... 48 runs at a constant fraction of it,
  // 0.64 forward and 0.52 backward, within 2 %: calibration/data/h200, docs/predictor.md.)
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int s = 0; s < sm_count; ++s) free_at.push(0.0);
  double makespan = 0;
  for (std::int64_t h = 0; h < heads; ++h) {
    for (double w : work) {
      const double t = free_at.top() + w;
      free_at.pop();
      free_at.push(t);
      makespan = std::max(makespan, t);
    }
  }
  return useful * total / (sms * makespan);
}

// The same, memoized for the process: the simulator's roofline default asks for the same few grids
// for every layer and every candidate of a search (on several threads), and the exact schedule of a
// 64-wave grid is ~8k heap steps (a simulation went from 84 to 312 us without a memo; a per-thread
// memo still doubled a search, whose worker threads start cold). Reads share the lock.
double causal_grid_utilization(std::int64_t seq_q, std::int64_t seq_kv, std::int64_t heads, bool forward,
                               int sm_count) {
  struct Grid {
    std::int64_t seq_q, seq_kv, heads;
    bool forward;
    int sm_count;
    bool operator==(const Grid&) const = default;
  };
  struct GridHash {
    std::size_t operator()(const Grid& g) const {
      std::size_t h = std::hash<std::int64_t>{}(g.seq_q);
      for (std::int64_t v : {g.seq_kv, g.heads, static_cast<std::int64_t>(g.sm_count) * 2 + (g.forward ? 1 : 0)}) {
        h ^= std::hash<std::int64_t>{}(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      }
      return h;
    }
  };
  static std::shared_mutex mutex;
  static std::unordered_map<Grid, double, GridHash> memo;
  const Grid g{seq_q, seq_kv, heads, forward, sm_count};
  {
    std::shared_lock lock(mutex);
    if (const auto it = memo.find(g); it != memo.end()) return it->second;
  }
  const double u = causal_grid_utilization_uncached(seq_q, seq_kv, heads, forward, sm_count);
  std::unique_lock lock(mutex);
  if (memo.size() >= 65536) memo.clear();  // bounded: a sweep over many shapes must not grow it
  memo.emplace(g, u);
  return u;
}

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
  const std::int64_t nq = ceil_div(std::max<std::int64_t>(key.seq_q, 1), 128);
  const std::int64_t nkv = ceil_div(std::max<std::int64_t>(key.seq_kv, 1), 128);
  const bool forward = key.direction == AttentionDirection::forward;
  const std::int64_t blocks = forward ? nq : nkv;  // CTAs of one (batch, head)
  const std::int64_t heads = std::max<std::int64_t>(key.batch, 1) * std::max<std::int64_t>(key.heads_q, 1);
  const double ctas = static_cast<double>(heads) * static_cast<double>(blocks);
  if (!key.causal || sm_count <= 0) return wave_utilization(ctas, sm_count);  // equal work per CTA

  return causal_grid_utilization(key.seq_q, key.seq_kv, heads, forward, sm_count);
}

}  // namespace calisim
