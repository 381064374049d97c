// The efficiency database and the predictor for the Python API.
//
// query_database returns what `calisim db query --json` prints; predict_efficiency answers one
// kernel key the way the simulator would on a measured device: its exact rows, then its
// bandwidth fits, then the predictor's fit of its own measurements (predictor/interpolating_model.h).
// Errors: InputError for an unreadable file or unknown device, std::invalid_argument for a
// malformed key (both reach Python as exceptions with the same message).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace calisim::python {

// Device names, each with its aliases in parentheses ("NVIDIA A100 PCIe 80GB (a100_pcie_bf16)").
std::vector<std::string> database_devices(const std::string& db_path);

// Rows of `device` (name or alias) whose key equals `key`, best first; with nearest > 0 the
// `nearest` closest rows of the key's kind instead, each with its "distance". Each entry: "key",
// the row's numbers (row_text.h), "run", "source", "host".
nlohmann::json query_database(const std::string& db_path, const std::string& device, const std::string& key,
                              int nearest);

// {"key": canonical key, "efficiency": v, "source": measured|interpolated|roofline}; "roofline"
// with efficiency 1 means the database has nothing to say about this key on this device.
nlohmann::json predict_efficiency(const std::string& db_path, const std::string& device, const std::string& key);

}  // namespace calisim::python
