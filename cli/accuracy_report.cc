#include "cli/accuracy_report.h"

#include <fmt/format.h>

#include "cli/config_catalog.h"
#include "cli/validate_command.h"

namespace calisim::cli {

AccuracyReport accuracy_report(const std::vector<std::string>& runs_files, const std::string& db,
                               const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system,
                               double simulated_step_s) {
  AccuracyReport rep;
  rep.files = runs_files.empty() ? shipped_runs_files() : runs_files;
  ValidateArgs v;
  v.runs = rep.files;
  v.db = db;
  std::vector<calibration::ScoredRun> scored;
  for (const calibration::RowResult& r : validated_rows(v)) {
    if (r.simulated) scored.push_back({r.run_id, r.cls, r.step_error});
  }
  rep.simulated_rows = static_cast<int>(scored.size());
  rep.query = calibration::run_class(model, strategy, system.name);
  rep.envelope = calibration::accuracy_envelope(scored, rep.query, simulated_step_s);
  return rep;
}

nlohmann::json accuracy_json(const AccuracyReport& rep) {
  nlohmann::json j;
  if (rep.envelope) {
    j = calibration::to_json(*rep.envelope);
    j["available"] = true;
  } else {
    j = {{"available", false},
         {"reason", fmt::format("fewer than {} validated {} runs in the runs files", calibration::kMinEnvelopeRuns,
                                rep.query.model_class)}};
  }
  j["query"] = {{"system", rep.query.system}, {"model_class", rep.query.model_class}, {"precision", rep.query.precision}};
  j["runs_files"] = rep.files;
  j["simulated_rows"] = rep.simulated_rows;
  return j;
}

void add_accuracy_options(CLI::App* command, bool& accuracy, std::vector<std::string>& runs_files,
                          const std::string& judged) {
  command->add_flag("--accuracy", accuracy,
                    "also report how far calisim's step times were from measured ones on the validated runs of the "
                    "same class (system, dense/MoE, precision) and the step time that implies for " + judged +
                        "; validates the shipped runs files (calibration/data) with the same efficiencies "
                        "(docs/validation.md)");
  command->add_option("--accuracy-runs", runs_files,
                      "measured-runs CSV(s) for --accuracy instead of the shipped ones (implies --accuracy); repeatable");
}

std::string accuracy_text(const AccuracyReport& rep, const std::string& what) {
  std::string out = fmt::format("accuracy against measured runs (--accuracy: {} runs files, {} rows simulated)\n",
                                rep.files.size(), rep.simulated_rows);
  if (!rep.envelope) {
    return out + fmt::format("  fewer than {} validated {} runs: no envelope\n\n", calibration::kMinEnvelopeRuns,
                             rep.query.model_class);
  }
  const calibration::AccuracyEnvelope& e = *rep.envelope;
  out += "  " + e.summary() + "\n";
  out += fmt::format("  step time those errors imply for {}: {:.4g} s (median), {:.4g} … {:.4g} s (from the 90th "
                     "and 10th percentile)\n\n",
                     what, e.expected_step_s, e.expected_step_low_s, e.expected_step_high_s);
  return out;
}

}  // namespace calisim::cli
