// The device record of a shipped system's GPU: what a database stores as the device when the rows
// come from somewhere other than a profiling run on this machine (a trace import), and the part of
// it that `profile run` and `calibrate` share before adding what CUDA reports.
//
// Contract:
//   - device_record_of(sys): name, dense peaks per dtype, HBM bandwidth and capacity, SM count and
//     L2 size from the system file's device; driver, CUDA and library versions empty.
//   - shipped_device_for(cuda_name): the shipped system whose GPU CUDA reports under that name
//     (profiler/device_match.h: "NVIDIA H100 80GB HBM3" -> h100-sxm) with its device record;
//     nullopt when no rule matches. Throws only for a damaged shipped file.
#pragma once

#include <optional>
#include <string>

#include "db/records.h"
#include "simulator/system_config.h"

namespace calisim::cli {

db::DeviceRecord device_record_of(const SystemConfig& sys);

struct ShippedDevice {
  std::string system;  // e.g. "h100-sxm"
  db::DeviceRecord record;
};
std::optional<ShippedDevice> shipped_device_for(const std::string& cuda_name);

}  // namespace calisim::cli
