#include "cli/system_device.h"

#include "cli/config_catalog.h"
#include "profiler/device_match.h"
#include "simulator/config_loader.h"

namespace calisim::cli {

std::optional<ShippedDevice> shipped_device_for(const std::string& cuda_name) {
  const std::string system = profiler::system_for_cuda_device(cuda_name);
  if (system.empty()) return std::nullopt;
  const std::string path = resolve_config(ConfigKind::system, system);
  const SystemConfig sys = parse_system(read_json_file(path), path);
  profiler::TraceNetwork network;
  network.scale_up_domain = sys.scale_up_domain_size;
  network.links = {sys.scale_up.gpu_gb_s, sys.scale_out.gpu_gb_s};
  return ShippedDevice{system, db::DeviceRecord::from_spec(sys.device), network};
}

}  // namespace calisim::cli
