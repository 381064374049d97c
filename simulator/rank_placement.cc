#include "simulator/rank_placement.h"

#include <fmt/format.h>

#include <algorithm>

namespace calisim {
namespace {

constexpr const char* kNames[kParallelDimCount] = {"tp", "cp", "ep", "dp", "pp"};

constexpr unsigned bit(ParallelDim d) { return 1u << static_cast<unsigned>(d); }

std::array<int, kParallelDimCount> dense_sizes(const StrategyConfig& st) {
  return {st.tp_size, st.cp_size, 1, st.dp_size, st.pp_size};
}

std::array<int, kParallelDimCount> expert_sizes(const StrategyConfig& st) {
  return {st.etp_size, 1, st.ep_size, st.edp_size, st.pp_size};
}

int stride_of(const RankOrder& order, const std::array<int, kParallelDimCount>& sizes, ParallelDim d) {
  int stride = 1;
  for (ParallelDim x : order) {
    if (x == d) break;
    stride *= sizes[static_cast<int>(x)];
  }
  return stride;
}

}  // namespace

const char* to_string(ParallelDim d) { return kNames[static_cast<int>(d)]; }

int rank_coordinate(const RankOrder& order, const std::array<int, kParallelDimCount>& sizes, ParallelDim d, int rank) {
  return rank / stride_of(order, sizes, d) % sizes[static_cast<int>(d)];
}

std::string to_string(const RankOrder& order) {
  std::string s;
  for (ParallelDim d : order) {
    if (!s.empty()) s += '-';
    s += to_string(d);
  }
  return s;
}

std::optional<RankOrder> parse_rank_order(const std::string& text, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<RankOrder> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  RankOrder order{};
  int count = 0;
  unsigned seen = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t dash = text.find('-', start);
    const std::string name = text.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    const auto it = std::find(std::begin(kNames), std::end(kNames), name);
    if (it == std::end(kNames)) {
      return fail(fmt::format("unknown dimension '{}' in \"{}\" (expected tp, cp, ep, dp and pp joined by '-', "
                              "fastest-varying first, e.g. \"tp-cp-ep-dp-pp\")",
                              name, text));
    }
    const auto d = static_cast<ParallelDim>(it - std::begin(kNames));
    if (seen & bit(d)) return fail(fmt::format("dimension '{}' appears twice in \"{}\"", name, text));
    seen |= bit(d);
    order[count++] = d;
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  if (count != kParallelDimCount) {
    std::string missing;
    for (int d = 0; d < kParallelDimCount; ++d) {
      if (!(seen & (1u << d))) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", kNames[d]);
    }
    return fail(fmt::format("\"{}\" lacks {} (every one of tp, cp, ep, dp, pp must appear once; sizes of 1 too)", text,
                            missing));
  }
  return order;
}

std::vector<RankOrder> all_rank_orders() {
  std::vector<RankOrder> out{kMegatronRankOrder};
  RankOrder o{ParallelDim::tp, ParallelDim::cp, ParallelDim::ep, ParallelDim::dp, ParallelDim::pp};
  do {
    if (o != kMegatronRankOrder) out.push_back(o);
  } while (std::next_permutation(o.begin(), o.end()));
  return out;
}

int ranks_per_block(const RankOrder& order, const std::array<int, kParallelDimCount>& sizes, unsigned group_mask,
                    int block_size) {
  int capacity = block_size;  // how many copies of the remaining dimensions still fit in the block
  int count = 1;
  for (ParallelDim d : order) {
    const int n = sizes[static_cast<int>(d)];
    if (n <= 1) continue;
    if (capacity <= 1) break;
    if (group_mask & bit(d)) count *= std::min(n, capacity);
    capacity /= n;
  }
  return count;
}

Tp2dPlacement place_tp_grid(int tp_per_domain, int rows, int cols) {
  Tp2dPlacement p;
  p.row = std::min(cols, tp_per_domain);
  p.col = std::min(rows, std::max(1, tp_per_domain / cols));
  return p;
}

Tp2dPlacement place_cp_grid(int cp_per_domain, int rows, int cols) {
  // The transposed TP grid: its contiguous "row" is the all-to-all group of `rows` ranks.
  const Tp2dPlacement t = place_tp_grid(cp_per_domain, cols, rows);
  return Tp2dPlacement{t.col, t.row};
}

int pair_per_block(int stride, int block_size) { return stride < block_size ? 2 : 1; }

LayerGroupStrides layer_group_strides(const StrategyConfig& st) {
  const auto dense = dense_sizes(st);
  const auto expert = expert_sizes(st);
  LayerGroupStrides g;
  g.tp = stride_of(st.rank_order, dense, ParallelDim::tp);
  g.cp = stride_of(st.rank_order, dense, ParallelDim::cp);
  g.ep = stride_of(st.rank_order, expert, ParallelDim::ep);
  g.etp = stride_of(st.rank_order, expert, ParallelDim::tp);
  return g;
}

int pipeline_stride(const StrategyConfig& st) {
  return stride_of(st.rank_order, dense_sizes(st), ParallelDim::pp);
}

int expert_pipeline_stride(const StrategyConfig& st) {
  return stride_of(st.rank_order, expert_sizes(st), ParallelDim::pp);
}

RankPlacement place_ranks(const StrategyConfig& st, int block) {
  const RankOrder& o = st.rank_order;
  const auto dense = dense_sizes(st);
  const auto expert = expert_sizes(st);
  RankPlacement p;
  p.tp = ranks_per_block(o, dense, bit(ParallelDim::tp), block);
  p.cp = ranks_per_block(o, dense, bit(ParallelDim::cp), block);
  p.dense_dp = ranks_per_block(o, dense, bit(ParallelDim::cp) | bit(ParallelDim::dp), block);
  p.ep = ranks_per_block(o, expert, bit(ParallelDim::ep), block);
  p.etp = ranks_per_block(o, expert, bit(ParallelDim::tp), block);
  p.expert_dp = ranks_per_block(o, expert, bit(ParallelDim::dp), block);
  p.pp = ranks_per_block(o, dense, bit(ParallelDim::pp), block);
  if (st.pp_size > 1) {
    const int stride = pipeline_stride(st);
    p.pp_next = pair_per_block(stride, block);
    p.pp_ends = pair_per_block(stride * (st.pp_size - 1), block);
  }
  return p;
}

std::string domain_summary(const RankPlacement& p, const RankOrder& order) {
  std::string s;
  for (ParallelDim d : order) {
    int k = 1;
    switch (d) {
      case ParallelDim::tp: k = p.tp; break;
      case ParallelDim::cp: k = p.cp; break;
      case ParallelDim::ep: k = p.ep; break;
      case ParallelDim::dp: k = p.dense_dp / std::max(1, p.cp); break;
      case ParallelDim::pp: k = p.pp; break;
    }
    if (k > 1) s += fmt::format("{}{}{}", s.empty() ? "" : "+", to_string(d), k);
  }
  return s.empty() ? "-" : s;
}

}  // namespace calisim
