#include "calibration/system_profile.h"

namespace calisim::calibration {

predictor::LinkSpec link_of(const NetworkTier& tier) {
  predictor::LinkSpec l;
  l.gpu_gb_s = tier.gpu_gb_s;
  l.latency_us = tier.latency_us;
  for (int i = 0; i < kCollectiveOpCount; ++i) l.efficiency[i] = tier.efficiency[i];
  return l;
}

predictor::DeviceProfile profile_of_system(const SystemConfig& system) {
  predictor::DeviceProfile p;
  p.spec = system.device;
  p.matmul_efficiency = system.matmul_efficiency;
  p.matmul_efficiency_by_dtype = system.matmul_efficiency_by_dtype;
  p.attention_efficiency = system.attention_efficiency;
  p.memory_efficiency = system.memory_efficiency;
  p.intra_node = link_of(system.scale_up);
  p.inter_node = link_of(system.scale_out);
  p.ranks_per_node = system.scale_up_domain_size;
  p.scale_up_kind = std::string(to_string(system.topology.scale_up_kind));
  return p;
}

}  // namespace calisim::calibration
