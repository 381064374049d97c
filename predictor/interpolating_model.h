// The EfficiencyModel of a measured device with interpolation: measured rows first, the
// device's fits for shapes it never measured, then the fallback.
//
// Resolution (ARCHITECTURE.md, "Efficiency resolution order"):
//   1. an exact key in the device's rows, or a stored bandwidth fit (db_efficiency_model.h)
//                                                    -> `measured` / `interpolated`, as the db answers
//   2. the device's Eigen fit for the key's group (device_fit.h)          -> `interpolated`
//   3. `fallback` (normally the roofline model)                           -> its answer, unchanged
// Building fits every group once; calls do not allocate, lock or do I/O, and are safe from many
// threads. The fits answer any size (features clamped to the data): what scaling and evaluation
// need. The simulator gets served_model.h instead, which adds row minimums and a size envelope.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/efficiency_model.h"
#include "db/records.h"
#include "predictor/device_fit.h"

namespace calisim::predictor {

// `device` gives the spec the fits use (sm_count for quantization, peaks, bandwidth): normally
// profile_from_record(record).spec, possibly enriched. `fallback` must not be null.
std::unique_ptr<EfficiencyModel> make_interpolating_model(const DeviceSpec& device, const db::DeviceRecord& record,
                                                          const std::vector<db::RunBatch>& runs,
                                                          std::shared_ptr<const EfficiencyModel> fallback);

// The same over an already built fit of `runs` (so a caller can read the fit's overhead).
std::unique_ptr<EfficiencyModel> make_interpolating_model(std::shared_ptr<const DeviceFit> fit,
                                                          const db::DeviceRecord& record,
                                                          const std::vector<db::RunBatch>& runs,
                                                          std::shared_ptr<const EfficiencyModel> fallback);

// The same, answering only from the fits (step 2, then the fallback): what leave-one-out and
// cross-device evaluation use, so a held-out key is not answered from the rows themselves.
std::unique_ptr<EfficiencyModel> make_fit_model(std::shared_ptr<const DeviceFit> fit,
                                                std::shared_ptr<const EfficiencyModel> fallback);

// Answers every key with {1.0, roofline}: "no data here". The fallback of source models inside
// scaling and evaluation, so that a source without data for a key is recognised and skipped.
std::shared_ptr<const EfficiencyModel> no_data_model();

// Opens the database read-only and builds make_interpolating_model for `device_name` (a name or
// alias), using the record's own spec. Throws InputError like load_db_efficiency_model.
std::unique_ptr<EfficiencyModel> load_interpolating_model(const std::string& db_path, const std::string& device_name,
                                                          std::shared_ptr<const EfficiencyModel> fallback);

}  // namespace calisim::predictor
