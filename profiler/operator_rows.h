// Efficiency rows from the keyed operator calls of a profiler trace (profiler/kineto_trace.h,
// traces recorded with record_shapes=True): the GEMM, attention and collective efficiencies the
// user's own training job reached, by shape, stored beside the trace so that `simulate --db` and the predictor
// use them like profiled rows (source `trace`, which a measured row of the same key outranks).
//
// Contract (operator_rows(), pure):
//   - Takes the calls of one device and that device's record (its dense peaks per dtype). One row
//     per key: the median, min, p90 and standard deviation of the calls' GPU times (each call's
//     kernels summed), n = the calls used; tflops = key FLOPs / median (core/kernel_keys.h's
//     FLOP convention: causal attention halved, backward 2.5x forward); efficiency = tflops / the
//     device's dense peak for the key's dtype.
//   - Calls none of whose kernels met a communication kernel are used when a key has any: those
//     are the kernel's own speed, which is what the simulator's efficiencies are (it slows compute
//     under overlapped communication itself, system comm_compute_slowdown). A key whose every call
//     overlapped communication is timed from all of them, and counted in `overlapped_keys` (its
//     efficiency includes that slowdown).
//   - Not rows, counted by reason in `not_keyed` (calls): calls without a key (their reason from
//     aten_operator_keys.h), keys whose dtype has no peak on the device record ("no peak for
//     DTYPE on DEVICE"), and keys whose efficiency exceeds 1.05 of the peak (a wrong device or
//     clock: "faster than the device's peak").
//   - Collective calls (record_param_comms, profiler/kineto_trace.h) need `network`: the key's
//     ranks_per_node is the most of the group's ranks ("Process Group Ranks", global ranks placed
//     in order, scale_up_domain to a domain) that share one domain; the row's time statistics are
//     the calls' communication-kernel times, which include waiting for the slowest peer (so the
//     efficiency is a lower bound of the link's: in-situ, not nccl-tests) unless the caller
//     replaced them by times matched across ranks (profiler/collective_matching.h); algbw / busbw as
//     nccl-tests counts them (profiler/collective_sizes.h), efficiency = busbw / the bandwidth of the
//     tier the group spans (scale-up when all its ranks share a domain). No key: unknown network,
//     no or inconsistent group ranks, a busbw above twice the link (another system's network).
//   - `rows` keep the order of each key's first call; `info` (one entry per row, with the calls
//     and GPU time behind it) is ordered by GPU time spent in the key, largest first.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "db/records.h"
#include "profiler/kineto_trace.h"
#include "profiler/row_builder.h"

namespace calisim::profiler {

struct OperatorRowInfo {
  std::string key;          // core/kernel_keys.h text
  std::string operators;    // the operator names that ran it, e.g. "aten::mm"
  std::int64_t calls = 0;   // every call of the key
  std::int64_t used = 0;    // calls timed (those without overlapping communication, when any)
  double total_s = 0;       // GPU time of every call
  double median_s = 0;
  double efficiency = 0;
};

struct OperatorRows {
  db::MeasurementSet rows;                       // gemm, attention and collective rows
  std::vector<OperatorRowInfo> info;             // one per row, same keys, by total_s
  std::int64_t calls = 0;                        // calls of the device considered
  std::int64_t overlapped_keys = 0;
  double keyed_s = 0;                            // GPU time of the calls that became rows
  std::map<std::string, std::int64_t> not_keyed; // reason -> calls
};

// The network collectives ran over: which ranks share a scale-up domain, and the per-GPU bandwidth
// of each tier (a collective row's efficiency is busbw over the bandwidth of the tier its group
// spans, as profiled rows are: profiler/row_builder.h).
struct TraceNetwork {
  int scale_up_domain = 0;  // GPUs per scale-up domain; 0 = unknown (collectives get no key)
  LinkBandwidth links;
};

OperatorRows operator_rows(const std::vector<TracedOperator>& operators, int device, const db::DeviceRecord& record,
                           const TraceNetwork& network = {});

}  // namespace calisim::profiler
