// The report of `calisim profile sequence` (cli/profile_sequence.h), as JSON and as text: pure
// functions of the layer's sequence (simulator/layer_sequence.h) and, when it ran on a GPU, of
// what was measured (profiler/sequence_stats.h), so the report is tested without a GPU.
//
// JSON (`calisim_sequence: 1`): the configuration, the layer and its kernel counts, every kernel
// with its simulated time and, measured, its time alone and algorithm; the sums; per sustained run
// the pass statistics, NVML's clocks, power and slowdown reasons, and for runs beside the copy
// kernel its GB/s and the slowdown against the run alone; alone_sum_over_sustained and
// simulated_over_sustained of the run alone (the first is the system setting
// efficiency.sustained_kernel_speed this layer measures; the text prints it as a --set). Without a measurement (a dry run) only the
// configuration, kernels and simulated sum. Throws std::invalid_argument when a measurement lacks a
// kernel of the sequence or has no run alone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "profiler/sequence_stats.h"
#include "simulator/layer_sequence.h"

namespace calisim::cli {

struct SequenceContext {
  std::string description;        // "llama3-70b dense layer, tp 8 ..."
  std::string model_file, strategy_file, system;
  std::string efficiency_source;  // database path, or empty for the system's roofline defaults
  double comm_compute_slowdown = 0;
};

struct SequenceDevice {
  std::string name, driver, cuda, libraries, timer;
  int sm_count = 0;
  double sustain_s = 0;
};

nlohmann::ordered_json sequence_report_json(const SequenceContext& ctx, const LayerSequence& seq,
                                            const SequenceDevice* device = nullptr,
                                            const profiler::SequenceMeasurement* m = nullptr);

std::string sequence_report_text(const SequenceContext& ctx, const LayerSequence& seq,
                                 const SequenceDevice* device = nullptr,
                                 const profiler::SequenceMeasurement* m = nullptr);

}  // namespace calisim::cli
