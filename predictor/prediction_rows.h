// Predictions of a target GPU stored back into the database: rows of source `predicted`.
//
// For every key that any source device holds (rows not themselves predicted), the scaled model
// (scaled_model.h, over each source's interpolating model) gives the target's efficiency, and a
// row is written under the target's device name with rates and times derived from it
// (GEMM/attention: TFLOP/s against the target's peak; memory: GB/s of its HBM; collectives:
// busbw over the target tier's link). Size-independent memory and collective fits of the sources
// are carried over with the same rules (bandwidth to the target's, efficiency scaled, latency by
// the ratio of per-step latencies). Each source is fitted by source_fit.h's fit_source, the fit
// `calisim predict --evaluate` scores: with a source's op dispatch time given, its host-bound
// eager-loop published rows are left out of its kernel fits. The run's notes record the provenance:
// the source devices, the model version, how many host-bound rows each source's fit skipped, and
// which ratios were unknown and taken as 1.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "db/records.h"
#include "predictor/device_profile.h"

namespace calisim::predictor {

inline constexpr const char* kPredictorModelVersion = "calisim-predictor-3";

struct DeviceData {
  DeviceProfile profile;               // with_row_links applied by the caller or by predict_target
  db::DeviceRecord record;
  std::vector<db::RunBatch> runs;
};

struct FamilySummary {
  std::string family;                  // "gemm", "attention", "collective", "memory", "fits"
  std::size_t rows = 0;
  double mean_source_efficiency = 0;   // of the source rows the keys came from (first holder)
  double mean_efficiency = 0;          // predicted
};

struct Prediction {
  db::DeviceRecord device;             // the target, to create when missing
  db::RunBatch batch;                  // run source `predicted`, device = target name
  std::vector<FamilySummary> families;
  std::vector<std::string> warnings;   // unknown ratios, skipped keys
};

// Throws std::invalid_argument when `sources` is empty. The target's name must not be one of the
// sources (InputError: predicting a device from itself is a user mistake). op_dispatch_s: host time
// of one eager op per source device name (its system's host.op_dispatch_us); a source not in the
// map gets no host bound (its eager-loop rows are fitted as kernel figures).
Prediction predict_target(const std::vector<DeviceData>& sources, const DeviceProfile& target,
                          const std::map<std::string, double>& op_dispatch_s = {});

}  // namespace calisim::predictor
