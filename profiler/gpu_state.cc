#include "profiler/gpu_state.h"

#include <fmt/format.h>

#include <utility>

namespace calisim::profiler {

std::string describe_reasons(std::uint64_t reasons) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {kNvmlReasonSwPowerCap, "sw_power_cap"},       {kNvmlReasonHwSlowdown, "hw_slowdown"},
      {kNvmlReasonSwThermalSlowdown, "sw_thermal"},  {kNvmlReasonHwThermalSlowdown, "hw_thermal"},
      {kNvmlReasonHwPowerBrakeSlowdown, "hw_power_brake"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (!(reasons & bit)) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

ThrottleVerdict judge_throttling(const GpuState& after, double min_clock_fraction) {
  ThrottleVerdict v;
  if (!after.valid) return v;
  if (after.event_reasons & kNvmlSlowdownReasons) {
    v.throttled = true;
    v.why = "NVML reports " + describe_reasons(after.event_reasons);
  }
  if (after.max_sm_clock_mhz > 0 && after.sm_clock_mhz < min_clock_fraction * after.max_sm_clock_mhz) {
    v.throttled = true;
    if (!v.why.empty()) v.why += "; ";
    v.why += fmt::format("SM clock {:.0f} MHz < {:.0f}% of max {:.0f} MHz", after.sm_clock_mhz,
                         100 * min_clock_fraction, after.max_sm_clock_mhz);
  }
  return v;
}

}  // namespace calisim::profiler
