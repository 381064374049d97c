#include "profiler/operator_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <set>
#include <unordered_map>

#include "profiler/collective_sizes.h"
#include "profiler/statistics.h"

namespace calisim::profiler {
namespace {

// The calls of one key.
struct KeyCalls {
  OperatorKey key;
  std::set<std::string> operators;
  std::vector<double> isolated_s, all_s;
  double total_s = 0;
};

std::string key_text(const OperatorKey& k) {
  switch (k.kind) {
    case OperatorKey::Kind::gemm: return to_string(k.gemm);
    case OperatorKey::Kind::attention: return to_string(k.attention);
    case OperatorKey::Kind::collective: return to_string(k.collective);
    case OperatorKey::Kind::none: break;
  }
  return {};
}

// ranks_per_node of a collective key from its group's global ranks (placed in order,
// `domain` to a scale-up domain); empty with the reason when it cannot be told.
std::string place_group(OperatorKey& k, int domain) {
  if (domain <= 0) return "a collective on a GPU whose network no shipped system describes";
  if (k.group_ranks.empty()) return "a collective without \"Process Group Ranks\" (which ranks share a node is unknown)";
  if (static_cast<int>(k.group_ranks.size()) != k.collective.ranks) return "\"Process Group Ranks\" disagree with \"Group size\"";
  std::map<std::int64_t, int> per_domain;
  for (std::int64_t r : k.group_ranks) ++per_domain[r / domain];
  int most = 0;
  for (const auto& [d, n] : per_domain) most = std::max(most, n);
  k.collective.ranks_per_node = most;
  return {};
}

// The collective row of one key from its calls' median (no row: the reason).
std::string collective_row(const CollectiveKey& key, const SampleSummary& s, const TraceNetwork& network,
                           db::CollectiveRow& row) {
  try {
    row.algbw_gb_s = algbw_gb_s(key, s.median_s);
    row.busbw_gb_s = busbw_gb_s(key, s.median_s);
  } catch (const std::invalid_argument&) {
    return "a collective smaller than one element per rank";
  }
  row.key = key;
  row.stats = s.to_stats();
  row.link_gb_s = key.ranks_per_node >= key.ranks ? network.links.intra_node_gb_s : network.links.inter_node_gb_s;
  if (!(row.link_gb_s > 0)) return "a collective over a tier the system gives no bandwidth";
  row.efficiency = row.busbw_gb_s / row.link_gb_s;
  if (row.efficiency > 2.0) return "a collective faster than twice its link (another system's network?)";
  return {};
}

double key_flops(const OperatorKey& k) {
  return k.kind == OperatorKey::Kind::gemm ? k.gemm.flops() : k.attention.flops();
}

DType key_dtype(const OperatorKey& k) {
  return k.kind == OperatorKey::Kind::gemm ? k.gemm.dtype : k.attention.dtype;
}

}  // namespace

OperatorRows operator_rows(const std::vector<TracedOperator>& operators, int device, const db::DeviceRecord& record,
                           const TraceNetwork& network) {
  OperatorRows out;
  std::vector<std::string> order;  // keys in first-seen order (ties in the final sort stay stable)
  std::unordered_map<std::string, KeyCalls> by_key;
  for (const TracedOperator& op : operators) {
    if (op.device != device) continue;
    ++out.calls;
    if (op.key.kind == OperatorKey::Kind::none) {
      ++out.not_keyed[op.key.reason];
      continue;
    }
    OperatorKey key = op.key;
    if (key.kind == OperatorKey::Kind::collective) {
      if (const std::string why = place_group(key, network.scale_up_domain); !why.empty()) {
        ++out.not_keyed[why];
        continue;
      }
    }
    const std::string text = key_text(key);
    auto [it, fresh] = by_key.try_emplace(text);
    if (fresh) {
      it->second.key = key;
      order.push_back(text);
    }
    KeyCalls& c = it->second;
    c.operators.insert(op.name);
    c.all_s.push_back(op.gpu_s);
    if (!op.overlaps_communication) c.isolated_s.push_back(op.gpu_s);
    c.total_s += op.gpu_s;
  }

  // The row's entry in `info`: what ran it, how many calls, the GPU time behind it.
  auto add_info = [&out](const std::string& text, const KeyCalls& c, const SampleSummary& s, double efficiency) {
    std::string names;
    for (const auto& n : c.operators) names += (names.empty() ? "" : ", ") + n;
    out.info.push_back(OperatorRowInfo{text, names, static_cast<std::int64_t>(c.all_s.size()), s.n, c.total_s,
                                       s.median_s, efficiency});
    out.keyed_s += c.total_s;
  };
  for (const std::string& text : order) {
    const KeyCalls& c = by_key.at(text);
    const std::int64_t calls = static_cast<std::int64_t>(c.all_s.size());
    // GEMM and attention from the calls without communication beside them when there are any;
    // collectives from all their calls.
    const bool collective = c.key.kind == OperatorKey::Kind::collective;
    const bool overlapped = !collective && c.isolated_s.empty();
    const SampleSummary s = summarize(collective || overlapped ? c.all_s : c.isolated_s);
    if (!(s.median_s > 0)) {
      out.not_keyed["kernels of zero duration"] += calls;
      continue;
    }
    if (collective) {
      db::CollectiveRow row;
      if (const std::string why = collective_row(c.key.collective, s, network, row); !why.empty()) {
        out.not_keyed[why] += calls;
        continue;
      }
      out.rows.collective.push_back(row);
      add_info(text, c, s, row.efficiency);
      continue;
    }
    const double peak = record.peak_tflops[static_cast<std::size_t>(key_dtype(c.key))];
    if (!(peak > 0)) {
      out.not_keyed[fmt::format("no peak for {} on {}", to_string(key_dtype(c.key)), record.name)] += calls;
      continue;
    }
    const double tflops = key_flops(c.key) / s.median_s * 1e-12;
    const double efficiency = tflops / peak;
    if (efficiency > 1.05) {
      out.not_keyed["faster than the device's peak (another GPU or clock than the record's?)"] += calls;
      continue;
    }
    if (c.key.kind == OperatorKey::Kind::gemm) {
      out.rows.gemm.push_back(db::GemmRow{c.key.gemm, s.to_stats(), tflops, efficiency});
    } else {
      out.rows.attention.push_back(db::AttentionRow{c.key.attention, s.to_stats(), tflops, efficiency});
    }
    add_info(text, c, s, efficiency);
    out.overlapped_keys += overlapped ? 1 : 0;
  }
  std::stable_sort(out.info.begin(), out.info.end(),
                   [](const OperatorRowInfo& a, const OperatorRowInfo& b) { return a.total_s > b.total_s; });
  return out;
}

}  // namespace calisim::profiler
