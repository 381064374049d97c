#include "calibration/sequence_setting.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"

namespace calisim::calibration {

SequenceSetting read_sequence_report(const nlohmann::json& doc, const std::string& file) {
  if (!doc.is_object() || doc.value("calisim_sequence", 0) != 1) {
    throw InputError(file, "calisim_sequence", "expected 1: a report written by `calisim profile sequence -o FILE`");
  }
  const auto runs = doc.find("runs");
  if (runs == doc.end() || !runs->is_array() || runs->empty()) {
    throw InputError(file, "runs",
                     "no sustained run: this is a --dry-run report; run `calisim profile sequence` on the GPU");
  }
  const auto speed = doc.find("alone_sum_over_sustained");
  if (speed == doc.end() || !speed->is_number() || !std::isfinite(speed->get<double>()) ||
      !(speed->get<double>() > 0 && speed->get<double>() <= 2)) {
    throw InputError(file, "alone_sum_over_sustained", "expected a number in (0, 2]");
  }
  SequenceSetting s;
  s.sustained_kernel_speed = speed->get<double>();
  if (const auto dev = doc.find("device"); dev != doc.end() && dev->is_object()) {
    s.device = dev->value("name", "");
  }
  if (s.device.empty()) throw InputError(file, "device.name", "expected the GPU the sequence ran on");
  s.description = doc.value("description", "");
  s.sustain_s = doc.value("sustain_s", 0.0);
  return s;
}

void apply_sequence_setting(nlohmann::ordered_json& system_doc, const SequenceSetting& s, const std::string& report) {
  system_doc["efficiency"]["sustained_kernel_speed"] = s.sustained_kernel_speed;
  const std::string note =
      fmt::format("efficiency.sustained_kernel_speed {:.3f} = the kernels alone over their sustained pass "
                  "({} s back to back) of {} on {}, `calisim profile sequence` report {}",
                  s.sustained_kernel_speed, s.sustain_s, s.description.empty() ? "a layer" : s.description, s.device,
                  report);
  std::string source = system_doc.contains("source") && system_doc["source"].is_string()
                           ? system_doc["source"].get<std::string>()
                           : std::string();
  system_doc["source"] = source.empty() ? note : source + " " + note + ".";
}

}  // namespace calisim::calibration
