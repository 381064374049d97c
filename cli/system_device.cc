#include "cli/system_device.h"

#include "cli/config_catalog.h"
#include "profiler/device_match.h"
#include "simulator/config_loader.h"

namespace calisim::cli {

std::optional<ShippedDevice> shipped_device_for(const std::string& cuda_name) {
  const std::string system = profiler::system_for_cuda_device(cuda_name);
  if (system.empty()) return std::nullopt;
  const std::string path = resolve_config(ConfigKind::system, system);
  return ShippedDevice{system, db::DeviceRecord::from_spec(parse_system(read_json_file(path), path).device)};
}

}  // namespace calisim::cli
