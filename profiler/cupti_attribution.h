// Joins CUPTI kernel records to the timed operations that launched them (the CPU-side half of
// CuptiTimer::harvest; CUDA-free so it is tested on every machine).
//
// Each kernel record carries the launch's correlation id; the EXTERNAL_CORRELATION records map
// correlation ids to the external id CuptiTimer pushed around an op. attribute_kernels() groups
// the kernels by op, for the op ids asked for, in their order:
// - a record with end <= start has no usable duration: a record whose end was not yet written
//   when a forced flush delivered it (end 0), or one without timestamps (start = end = 0). It is
//   left out of the op's span and sum and counted, per op and in total, never subtracted (the
//   unsigned end - start would wrap to ~1.8e10 s);
// - an op is `seen` when at least one of its records (complete or not) arrived;
// - kernels of other ops (launched outside the pairs asked for, or of discarded pairs) are
//   ignored, their names too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace calisim::profiler {

struct KernelRecordTimes {
  std::uint32_t correlation = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::string name;
};

struct OpKernelTimes {
  bool seen = false;                  // some record of the op arrived
  std::uint64_t first_ns = 0, last_ns = 0;  // first start, last end of its complete kernels
  std::uint64_t sum_ns = 0;           // summed durations of its complete kernels
  int kernels = 0;                    // complete kernels
  int incomplete = 0;                 // records with end <= start
};

struct KernelAttribution {
  std::vector<OpKernelTimes> ops;     // one per op id asked for, in that order
  std::size_t incomplete_records = 0; // records with end <= start among the attributed ones
  std::vector<std::string> names;     // distinct names of the ops' complete kernels, sorted
};

KernelAttribution attribute_kernels(const std::vector<KernelRecordTimes>& kernels,
                                    const std::unordered_map<std::uint32_t, std::uint64_t>& external_of,
                                    const std::vector<std::uint64_t>& op_ids);

}  // namespace calisim::profiler
