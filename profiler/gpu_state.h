// What NVML says about a GPU around a measurement, and the rule that flags throttling.
//
// A GpuState is read before and after each measurement (profiler/nvml_monitor.h reads it on a
// CUDA build); everything here is plain data and pure functions, testable without a GPU.
// Clocks are MHz, temperature degrees Celsius, power watts. `valid` is false when NVML was
// unavailable; such states never flag throttling (the row then says clocks were unknown).
#pragma once

#include <cstdint>
#include <string>

namespace calisim::profiler {

// NVML's clocks-event (formerly "throttle") reason bits that mean the GPU slowed itself down.
// Idle, application-clock and display-clock settings are not counted: they are not a slowdown
// caused by the measured work.
inline constexpr std::uint64_t kNvmlReasonSwPowerCap = 0x4;
inline constexpr std::uint64_t kNvmlReasonHwSlowdown = 0x8;
inline constexpr std::uint64_t kNvmlReasonSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kNvmlReasonHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kNvmlReasonHwPowerBrakeSlowdown = 0x80;
inline constexpr std::uint64_t kNvmlSlowdownReasons = kNvmlReasonSwPowerCap | kNvmlReasonHwSlowdown |
                                                       kNvmlReasonSwThermalSlowdown | kNvmlReasonHwThermalSlowdown |
                                                       kNvmlReasonHwPowerBrakeSlowdown;

struct GpuState {
  bool valid = false;
  double sm_clock_mhz = 0, mem_clock_mhz = 0;
  double max_sm_clock_mhz = 0;   // the board's maximum SM clock
  double temperature_c = 0;
  double power_w = 0;
  std::uint64_t event_reasons = 0;  // NVML clocks-event reason bits
};

struct ThrottleVerdict {
  bool throttled = false;
  std::string why;  // empty when not throttled
};

// Throttled when, after the measurement, NVML reports a slowdown reason, or the SM clock is
// under `min_clock_fraction` of the board maximum (nvbench's 75 % rule). Only the state read
// right after the timed loop is judged: a GPU idle before it legitimately reports a low clock.
ThrottleVerdict judge_throttling(const GpuState& after, double min_clock_fraction = 0.75);

// Names of the set slowdown bits, comma-separated ("sw_power_cap,hw_thermal").
std::string describe_reasons(std::uint64_t reasons);

}  // namespace calisim::profiler
