// Scaling a system file's efficiencies by per-field factors: what a fit to measured runs writes
// (`validate --fit-out`, calibration/run_fit.h) and what a fit to a traced step writes
// (`simulate --trace-fit-out`, calibration/trace_comparison.h).
//
// Contract: scale_efficiencies() multiplies efficiency.matmul and every matmul_by_dtype entry by
// `matmul` (the fp8 entries by matmul × fp8), efficiency.attention and every
// attention_implementations.*.attention by `attention`, efficiency.memory_bound by `memory`, and
// every collective efficiency of network.scale_up / scale_out by `comm`. With fp8 ≠ 1 and a file
// that gives no fp8 entry but whose device has an FP8 peak, a matmul_by_dtype.fp8 entry is added
// from efficiency.matmul (what the FP8 GEMMs used). Each value is capped at 1 and kept to 4
// decimals (the file is read by people; 1e-4 moves no result); the fields the cap cut are named
// in `capped` when given ("efficiency.matmul", "network.scale_up.efficiency.all_reduce", ...).
// Fields absent from the document stay absent; everything else is untouched (field order kept).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace calisim::calibration {

struct EfficiencyScale {
  double matmul = 1, fp8 = 1, attention = 1, memory = 1, comm = 1;
};

nlohmann::json scale_efficiencies(nlohmann::json doc, const EfficiencyScale& s,
                                  std::vector<std::string>* capped = nullptr);
nlohmann::ordered_json scale_efficiencies(nlohmann::ordered_json doc, const EfficiencyScale& s,
                                          std::vector<std::string>* capped = nullptr);

}  // namespace calisim::calibration
