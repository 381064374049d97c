#include "predictor/device_profile.h"

#include <algorithm>
#include <cctype>

namespace calisim::predictor {

DeviceProfile profile_from_record(const db::DeviceRecord& record) {
  DeviceProfile p;
  p.spec = record.to_spec();
  return p;
}

DeviceProfile enrich_profile(DeviceProfile p, const DeviceProfile& system) {
  if (p.spec.sm_count <= 0) p.spec.sm_count = system.spec.sm_count;
  if (p.spec.l2_mb <= 0) p.spec.l2_mb = system.spec.l2_mb;
  if (p.spec.memory_gb <= 0) p.spec.memory_gb = system.spec.memory_gb;
  if (p.spec.hbm_gb_s <= 0) p.spec.hbm_gb_s = system.spec.hbm_gb_s;
  if (p.matmul_efficiency <= 0) p.matmul_efficiency = system.matmul_efficiency;
  for (int t = 0; t < kDTypeCount; ++t) {
    if (p.matmul_efficiency_by_dtype[t] <= 0) p.matmul_efficiency_by_dtype[t] = system.matmul_efficiency_by_dtype[t];
  }
  if (p.attention_efficiency <= 0) p.attention_efficiency = system.attention_efficiency;
  if (p.memory_efficiency <= 0) p.memory_efficiency = system.memory_efficiency;
  if (p.intra_node.gpu_gb_s <= 0) p.intra_node = system.intra_node;
  if (p.inter_node.gpu_gb_s <= 0) p.inter_node = system.inter_node;
  if (p.ranks_per_node <= 0) p.ranks_per_node = system.ranks_per_node;
  if (p.kernel_overhead_us <= 0) p.kernel_overhead_us = system.kernel_overhead_us;
  if (p.scale_up_kind.empty()) p.scale_up_kind = system.scale_up_kind;
  return p;
}

DeviceProfile with_row_links(DeviceProfile p, const std::vector<db::RunBatch>& runs) {
  std::vector<double> links[2];
  for (const auto& b : runs) {
    for (const auto& r : b.rows.collective) {
      const bool inter = r.key.ranks > r.key.ranks_per_node;
      if (r.link_gb_s > 0) links[inter ? 1 : 0].push_back(r.link_gb_s);
    }
    for (const auto& f : b.rows.collective_fits) {
      if (f.link_gb_s > 0) links[f.tier == db::LinkTier::inter_node ? 1 : 0].push_back(f.link_gb_s);
    }
  }
  LinkSpec* tiers[2] = {&p.intra_node, &p.inter_node};
  for (int i = 0; i < 2; ++i) {
    if (links[i].empty()) continue;
    std::nth_element(links[i].begin(), links[i].begin() + links[i].size() / 2, links[i].end());
    tiers[i]->gpu_gb_s = links[i][links[i].size() / 2];
  }
  return p;
}

DeviceProfile with_row_kernels(DeviceProfile p, const std::vector<db::RunBatch>& runs) {
  const auto names_fa2 = [](std::string notes) {
    std::transform(notes.begin(), notes.end(), notes.begin(), [](unsigned char c) { return std::tolower(c); });
    return notes.find("flash2") != std::string::npos || notes.find("flashattention-2") != std::string::npos ||
           notes.find("fa2") != std::string::npos;
  };
  bool any = false, all_fa2 = true;
  for (const auto& b : runs) {
    if (b.run.source == db::Source::predicted || b.rows.attention.empty()) continue;
    any = true;
    all_fa2 = all_fa2 && names_fa2(b.run.notes);
  }
  p.attention_kernel = any && all_fa2 ? AttentionKernel::flash2 : AttentionKernel::best;
  return p;
}

db::DeviceRecord record_from_profile(const DeviceProfile& profile) {
  return db::DeviceRecord::from_spec(profile.spec);
}

}  // namespace calisim::predictor
