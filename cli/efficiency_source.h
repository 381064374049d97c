// Which EfficiencyModel a command uses: the database named by --db, else the system file's
// "efficiency_db" (relative to the system file), else the system file's roofline defaults.
// A database answers through predictor/served_model.h: the device's rows, then the predictor's
// fits of them where the fits have data, then the roofline. A system that selects a non-default
// attention implementation (efficiency.attention_implementation) takes attention from that
// implementation's defaults instead of the database's default-kernel rows, and a note says so.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/efficiency_model.h"
#include "simulator/system_config.h"

namespace calisim::cli {

struct EfficiencyChoice {
  std::shared_ptr<const EfficiencyModel> model;
  std::string database;            // empty when roofline only
  std::vector<std::string> notes;  // what the user should know about the choice (shown as warnings)
};

// Throws InputError when the database cannot be read or lacks the system's device.
EfficiencyChoice make_efficiency_source(const SystemConfig& system, const std::string& system_file,
                                        const std::string& db_flag);

}  // namespace calisim::cli
