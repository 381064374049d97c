// Collective calls of one job's traces, one trace per rank, matched call by call across ranks, so
// that a collective's time is its transfer and not the wait for late peers.
//
// A communication kernel starts when its rank launches it and ends when the collective completes
// on every rank; a rank that arrives early spends the difference waiting. The rank that arrives
// last waits least, so the shortest of the ranks' times for one call is the closest a trace comes
// to the collective's own time (the figure nccl-tests measures after a barrier).
//
// Contract (match_collectives(), pure):
//   - Input: one entry per trace, its rank (distributedInfo) and its operator calls in launch order
//     (profiler/kineto_trace.h). Only collective calls with their group's ranks take part.
//   - A call's instance is its group (the global ranks), its key (core/kernel_keys.h text) and its
//     occurrence among that rank's calls of the same group and key: NCCL runs a communicator's
//     collectives in the same order on every rank, so the k-th call of a key in a group is the same
//     collective on each of its ranks.
//   - An instance seen on two or more ranks is matched: each of its calls gets the shortest time
//     among them (`matched_s`, by trace and operator index); the time removed is counted in
//     `wait_removed_s`. Calls seen on one rank only keep their time and are not listed.
//   - Nothing is matched (`refused` says why) when a trace has no rank or two traces have the same
//     rank (two profiling cycles of one rank would pair calls of different steps).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/kineto_trace.h"

namespace calisim::profiler {

struct RankOperators {
  int rank = -1;
  const std::vector<TracedOperator>* operators = nullptr;
};

struct CollectiveMatching {
  std::vector<std::map<std::size_t, double>> matched_s;  // per input trace: operator index -> time
  std::int64_t calls = 0;          // collective calls with a group, over all traces
  std::int64_t matched_calls = 0;  // of those, calls of instances seen on two or more ranks
  int ranks = 0;                   // traces (ranks) with such calls
  double wait_removed_s = 0;       // sum over matched calls of (own time - matched time)
  std::string refused;             // why nothing was matched ("" = matched)
};

CollectiveMatching match_collectives(const std::vector<RankOperators>& traces);

}  // namespace calisim::profiler
