#include "cli/system_device.h"

#include "cli/config_catalog.h"
#include "profiler/device_match.h"
#include "simulator/config_loader.h"

namespace calisim::cli {

db::DeviceRecord device_record_of(const SystemConfig& sys) {
  db::DeviceRecord d;
  d.name = sys.device.name;
  d.sm_count = sys.device.sm_count;
  d.peak_tflops = sys.device.peak_tflops;
  d.hbm_gb_s = sys.device.hbm_gb_s;
  d.memory_gb = sys.device.memory_gb;
  d.l2_mb = sys.device.l2_mb;
  return d;
}

std::optional<ShippedDevice> shipped_device_for(const std::string& cuda_name) {
  const std::string system = profiler::system_for_cuda_device(cuda_name);
  if (system.empty()) return std::nullopt;
  const std::string path = resolve_config(ConfigKind::system, system);
  return ShippedDevice{system, device_record_of(parse_system(read_json_file(path), path))};
}

}  // namespace calisim::cli
