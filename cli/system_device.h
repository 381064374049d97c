// The device record of the shipped system whose GPU CUDA reports under a name: what a database
// stores as the device when its rows come from somewhere other than a profiling run on this
// machine (a trace import).
//
// Contract:
//   - shipped_device_for(cuda_name): the shipped system whose GPU CUDA reports under that name
//     (profiler/device_match.h: "NVIDIA H100 80GB HBM3" -> h100-sxm) with its device record;
//     nullopt when no rule matches. The record is db::DeviceRecord::from_spec of the system's device
//     (name, peaks, HBM, capacity, SMs, L2; no versions), and its network (scale-up domain size,
//     scale-up and scale-out bandwidth per GPU). Throws only for a damaged shipped file.
#pragma once

#include <optional>
#include <string>

#include "db/records.h"
#include "profiler/operator_rows.h"

namespace calisim::cli {

struct ShippedDevice {
  std::string system;  // e.g. "h100-sxm"
  db::DeviceRecord record;
  profiler::TraceNetwork network;  // scale-up domain size, per-GPU NVLink and NIC bandwidth
};
std::optional<ShippedDevice> shipped_device_for(const std::string& cuda_name);

}  // namespace calisim::cli
