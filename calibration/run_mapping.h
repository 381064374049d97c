// Mapping one measured run to the simulator's inputs: a model JSON, a strategy JSON and a shipped
// system (with patches such as torchtitan's 96 GB H100s). Settings the source leaves unstated are
// inferred from the framework's published recipe conventions and recorded in `inferred`; rows the
// simulator cannot represent get ok = false and a reason. docs/validation.md lists every rule.
// Pure functions; the model loader is the only way in to the shipped configs.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "calibration/measured_runs.h"

namespace calisim::calibration {

struct MappedRun {
  bool ok = false;
  std::string reason;                 // why the row cannot be simulated (ok == false)
  nlohmann::json model, strategy;     // documents for parse_model / parse_strategy
  std::string system;                 // shipped system name
  nlohmann::json system_patch = nlohmann::json::object();  // JSON merge patch applied to the system file
  std::vector<std::string> inferred;  // settings not stated by the source, as "what (why)"
  std::vector<std::string> warnings;  // the source row contradicts itself (reported with the row)
  std::string layout;                 // "tp8 pp8 vpp3 cp1 ep1 dp1"
};

struct SystemChoice {
  std::string system;                 // empty: no shipped system for this GPU
  nlohmann::json patch = nlohmann::json::object();
  std::string note;                   // non-empty when an assumption was made
};

// gpu_type text of a row -> shipped system (A100-SXM4-80GB -> a100-sxm-80g, H100 variants ->
// h100-sxm, B200 -> b200, GB200 -> gb200-nvl72, GB300 -> gb300-nvl72, B300 -> b300, ...).
SystemChoice system_for_gpu(const std::string& gpu_type);

// Loads a shipped model by name (configs/models/<name>.json); used by SimuMax-format rows.
using ModelLoader = std::function<nlohmann::json(const std::string& name)>;

MappedRun map_run(const MeasuredRun& run, const ModelLoader& load_model);

}  // namespace calisim::calibration
