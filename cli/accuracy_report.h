// `simulate --accuracy`: a simulation beside the validated runs of its class
// (calibration/accuracy_envelope.h). The runs files (default: the shipped ones, config_catalog.h
// shipped_runs_files) are validated with the same efficiency source as the simulation (--db, or
// each system file's efficiency_db), so a database's calibration shows in the envelope too. Shared
// by the CLI and the Python API (calisim.simulate(..., accuracy=True)).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "calibration/accuracy_envelope.h"
#include "simulator/model_config.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim::cli {

struct AccuracyReport {
  std::vector<std::string> files;  // the runs files validated
  int simulated_rows = 0;          // their rows that simulated (the candidates)
  calibration::RunClass query;     // the simulation's class
  std::optional<calibration::AccuracyEnvelope> envelope;  // nullopt: too few runs of the model class
};

// runs_files empty = the shipped ones. Throws InputError for an unreadable or malformed runs file.
AccuracyReport accuracy_report(const std::vector<std::string>& runs_files, const std::string& db,
                               const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system,
                               double simulated_step_s);

// The envelope's JSON plus "available" (false: "reason"), "query", "runs_files", "simulated_rows".
nlohmann::json accuracy_json(const AccuracyReport& rep);
// Adds --accuracy and --accuracy-runs to a command; `judged` names the step time the envelope is
// applied to in the help text ("this configuration", "the best layout").
void add_accuracy_options(CLI::App* command, bool& accuracy, std::vector<std::string>& runs_files,
                          const std::string& judged);

// The CLI's text section; `what` names the step time judged ("this run", "the best layout").
std::string accuracy_text(const AccuracyReport& rep, const std::string& what = "this run");

}  // namespace calisim::cli
