#include "calibration/accuracy_envelope.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace calisim::calibration {

RunClass run_class(const ModelConfig& model, const StrategyConfig& strategy, const std::string& system_name) {
  RunClass c;
  c.system = system_name;
  c.model_class = model.is_moe ? "moe" : "dense";
  // The training dtype is bf16 or fp16 (config_loader refuses others); FP8 is a separate switch.
  c.precision = strategy.fp8 != Fp8Recipe::none ? "fp8" : "bf16";
  return c;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::optional<AccuracyEnvelope> accuracy_envelope(const std::vector<ScoredRun>& runs, const RunClass& query,
                                                  double simulated_step_s, int min_runs) {
  // Widening order: the system matters most (its defaults are one set of numbers), so precision
  // goes first; then the system with precision kept, then both. The model class is never widened:
  // MoE and dense runs sit in different error regimes (docs/validation.md).
  struct Level {
    bool system, precision;
  };
  constexpr Level kLevels[] = {{true, true}, {true, false}, {false, true}, {false, false}};
  for (const Level& level : kLevels) {
    std::vector<const ScoredRun*> hit;
    for (const ScoredRun& r : runs) {
      if (r.cls.model_class != query.model_class) continue;
      if (level.system && r.cls.system != query.system) continue;
      if (level.precision && r.cls.precision != query.precision) continue;
      hit.push_back(&r);
    }
    if (static_cast<int>(hit.size()) < std::max(1, min_runs)) continue;
    AccuracyEnvelope e;
    e.matched_on.push_back(level.system ? "system " + query.system : "any system");
    e.matched_on.push_back(query.model_class);
    e.matched_on.push_back(level.precision ? query.precision : "any precision");
    e.considered = static_cast<int>(runs.size());
    std::vector<double> errors;
    for (const ScoredRun* r : hit) {
      e.run_ids.push_back(r->run_id);
      errors.push_back(r->step_error);
    }
    e.median_error = percentile(errors, 0.5);
    e.p10_error = percentile(errors, 0.1);
    e.p90_error = percentile(errors, 0.9);
    e.min_error = *std::min_element(errors.begin(), errors.end());
    e.max_error = *std::max_element(errors.begin(), errors.end());
    e.simulated_step_s = simulated_step_s;
    e.expected_step_s = simulated_step_s / (1 + e.median_error);
    e.expected_step_low_s = simulated_step_s / (1 + e.p90_error);
    e.expected_step_high_s = simulated_step_s / (1 + e.p10_error);
    return e;
  }
  return std::nullopt;
}

std::string AccuracyEnvelope::summary() const {
  auto pct = [](double f) { return fmt::format("{:+.1f}%", 100 * f); };
  return fmt::format("{} validated runs ({}): step-time error (simulated - measured) / measured: median {}, 10th … "
                     "90th percentile {} … {}, range {} … {}",
                     run_ids.size(), fmt::join(matched_on, ", "), pct(median_error), pct(p10_error), pct(p90_error),
                     pct(min_error), pct(max_error));
}

nlohmann::json to_json(const AccuracyEnvelope& e) {
  return {{"matched_on", e.matched_on},
          {"runs", e.run_ids.size()},
          {"run_ids", e.run_ids},
          {"runs_considered", e.considered},
          {"error_convention", "(simulated - measured) / measured, on step time"},
          {"median_error", e.median_error},
          {"p10_error", e.p10_error},
          {"p90_error", e.p90_error},
          {"min_error", e.min_error},
          {"max_error", e.max_error},
          {"simulated_step_s", e.simulated_step_s},
          {"expected_step_s", e.expected_step_s},
          {"expected_step_low_s", e.expected_step_low_s},
          {"expected_step_high_s", e.expected_step_high_s}};
}

}  // namespace calisim::calibration
