#include "profiler/collective_matching.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

namespace calisim::profiler {
namespace {

// The group and key of a collective call, as one text ("0,1,2,3|all_reduce ...").
std::string instance_class(const OperatorKey& k) {
  std::vector<std::int64_t> ranks = k.group_ranks;
  std::sort(ranks.begin(), ranks.end());
  return fmt::format("{}|{}", fmt::join(ranks, ","), to_string(k.collective));
}

bool takes_part(const TracedOperator& op) {
  return op.key.kind == OperatorKey::Kind::collective && !op.key.group_ranks.empty();
}

}  // namespace

CollectiveMatching match_collectives(const std::vector<RankOperators>& traces) {
  CollectiveMatching out;
  out.matched_s.resize(traces.size());
  std::set<int> seen_ranks;
  for (const auto& t : traces) {
    const bool has_calls = std::any_of(t.operators->begin(), t.operators->end(), takes_part);
    if (!has_calls) continue;
    out.calls += std::count_if(t.operators->begin(), t.operators->end(), takes_part);
    ++out.ranks;
    if (t.rank < 0) {
      out.refused = "a trace with collectives names no rank (no distributedInfo)";
    } else if (!seen_ranks.insert(t.rank).second && out.refused.empty()) {
      out.refused = fmt::format("two traces of rank {} (profiling cycles of one rank cannot be matched)", t.rank);
    }
  }
  if (!out.refused.empty()) return out;
  if (out.ranks < 2) {
    out.refused = "collectives from fewer than two ranks";
    return out;
  }
  // instance (class, occurrence) -> (trace, operator index, time) of each rank's call.
  struct Call {
    std::size_t trace, index;
    double s;
  };
  std::map<std::pair<std::string, int>, std::vector<Call>> instances;
  for (std::size_t t = 0; t < traces.size(); ++t) {
    std::map<std::string, int> occurrence;
    const auto& ops = *traces[t].operators;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!takes_part(ops[i])) continue;
      const std::string cls = instance_class(ops[i].key);
      instances[{cls, occurrence[cls]++}].push_back({t, i, ops[i].gpu_s});
    }
  }
  for (const auto& [id, calls] : instances) {
    if (calls.size() < 2) continue;
    const double fastest =
        std::min_element(calls.begin(), calls.end(), [](const Call& a, const Call& b) { return a.s < b.s; })->s;
    for (const Call& c : calls) {
      out.matched_s[c.trace][c.index] = fastest;
      out.wait_removed_s += c.s - fastest;
      ++out.matched_calls;
    }
  }
  return out;
}

}  // namespace calisim::profiler
