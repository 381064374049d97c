// `calisim calibrate --sequence REPORT`: the sustained kernel speed a `calisim profile sequence`
// report measured, carried into the calibrated system file as efficiency.sustained_kernel_speed.
//
// read_sequence_report takes the report's JSON (cli/sequence_report.h): calisim_sequence 1, a
// measured report (a dry run has no runs), alone_sum_over_sustained in (0, 2] — the layer's
// kernels timed alone over its sustained pass, which is what the setting means — and the GPU and
// layer for the provenance note. Anything else is an InputError naming the file and the field.
// apply_sequence_setting sets the field and appends that provenance to the document's "source".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace calisim::calibration {

struct SequenceSetting {
  double sustained_kernel_speed = 1;
  std::string device;       // the GPU the sequence ran on, as CUDA names it
  std::string description;  // the layer ("llama3-70b dense layer, tp 8 ...")
  double sustain_s = 0;
};

SequenceSetting read_sequence_report(const nlohmann::json& doc, const std::string& file);

void apply_sequence_setting(nlohmann::ordered_json& system_doc, const SequenceSetting& s, const std::string& report);

}  // namespace calisim::calibration
