// How far calisim's step times have been from measured ones on published runs like a given
// configuration: the accuracy envelope `calisim simulate --accuracy` prints beside a result.
//
// A simulation is one number; its error is not known for a run nobody measured, but it is known
// for the published runs of the same kind (calisim validate). The envelope takes the validated runs
// of the same class — same system, same model class (dense / MoE), same training precision
// (bf16 family / fp8) — and reports their signed step-time errors (median, 10th and 90th
// percentile, range) and what they imply for this run: a measured step time of
// simulated / (1 + error). Where the system has fewer than `min_runs` such runs the class widens,
// one criterion at a time (precision, then system, then both), and the envelope says on what it
// matched, so an h200 simulation is judged by the dense bf16 runs of every system, and says so.
//
// Why errors rather than a fitted factor: the spread is the information. One source's runs can sit
// 30 % apart from another's on the same GPU (docs/validation.md), and a user planning a cluster
// needs that range, not only its centre. Error convention as validate: (simulated − measured) /
// measured, < 0 = simulation faster. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/model_config.h"
#include "simulator/strategy_config.h"

namespace calisim::calibration {

// The criteria runs are compared on.
struct RunClass {
  std::string system;       // the system file's name (h100-sxm, ...)
  std::string model_class;  // "dense" | "moe"
  std::string precision;    // "fp8" (any FP8 recipe) | "bf16" (bf16 or fp16 training dtype)
  bool operator==(const RunClass&) const = default;
};
RunClass run_class(const ModelConfig& model, const StrategyConfig& strategy, const std::string& system_name);

struct ScoredRun {
  std::string run_id;
  RunClass cls;
  double step_error = 0;  // (simulated − measured) / measured
};

struct AccuracyEnvelope {
  // What the runs share with the query, most specific first: "system h100-sxm", "dense", "bf16";
  // a criterion left out was widened ("any system").
  std::vector<std::string> matched_on;
  std::vector<std::string> run_ids;  // the runs it is built from, in input order
  int considered = 0;                // scored runs available to match
  double median_error = 0, p10_error = 0, p90_error = 0, min_error = 0, max_error = 0;
  // simulated / (1 + error): the step time a measured run would have taken at the median error,
  // and at the 90th / 10th percentile (the low and high ends: a larger error means a run that was
  // simulated slower than it measured, so its measured time is the lower one).
  double simulated_step_s = 0, expected_step_s = 0, expected_step_low_s = 0, expected_step_high_s = 0;
  std::string summary() const;  // one sentence, e.g. for the CLI
};

inline constexpr int kMinEnvelopeRuns = 5;

// nullopt when not even the widest class (model class alone) has min_runs runs.
std::optional<AccuracyEnvelope> accuracy_envelope(const std::vector<ScoredRun>& runs, const RunClass& query,
                                                  double simulated_step_s, int min_runs = kMinEnvelopeRuns);

// Linear-interpolation percentile (q in [0, 1]) of a non-empty list.
double percentile(std::vector<double> values, double q);

nlohmann::json to_json(const AccuracyEnvelope& e);

}  // namespace calisim::calibration
