#include "profiler/cupti_attribution.h"

#include <algorithm>
#include <set>

namespace calisim::profiler {

KernelAttribution attribute_kernels(const std::vector<KernelRecordTimes>& kernels,
                                    const std::unordered_map<std::uint32_t, std::uint64_t>& external_of,
                                    const std::vector<std::uint64_t>& op_ids) {
  KernelAttribution out;
  out.ops.resize(op_ids.size());
  std::unordered_map<std::uint64_t, std::size_t> slot_of;  // external id -> index in op_ids
  for (std::size_t i = 0; i < op_ids.size(); ++i) slot_of.emplace(op_ids[i], i);
  std::set<std::string> names;
  for (const KernelRecordTimes& k : kernels) {
    const auto ext = external_of.find(k.correlation);
    if (ext == external_of.end()) continue;  // launched outside any begin()/end() pair
    const auto slot = slot_of.find(ext->second);
    if (slot == slot_of.end()) continue;     // another harvest's (or a discarded) op
    OpKernelTimes& op = out.ops[slot->second];
    op.seen = true;
    if (k.end_ns <= k.start_ns) {
      ++op.incomplete;
      ++out.incomplete_records;
      continue;
    }
    op.first_ns = op.kernels == 0 ? k.start_ns : std::min(op.first_ns, k.start_ns);
    op.last_ns = std::max(op.last_ns, k.end_ns);
    op.sum_ns += k.end_ns - k.start_ns;
    ++op.kernels;
    names.insert(k.name);
  }
  out.names.assign(names.begin(), names.end());
  return out;
}

}  // namespace calisim::profiler
