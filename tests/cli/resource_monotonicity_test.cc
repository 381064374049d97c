// More of any resource never slows a fixed configuration: every published run of the shipped runs
// files, mapped as `calisim validate` maps it, is simulated on its system and again with one
// resource improved — peak FLOP/s, HBM bandwidth, either network tier's bandwidth, efficiency and
// latency, a kernel class's efficiency, the host's dispatch cost, the slowdown of compute beside
// communication — and the step time may not grow. The search tests (sweep_test.cc) check this for
// the best layout only; a what-if on one layout ("a faster NIC", "a GPU with more HBM bandwidth")
// relies on it per configuration, overlap, schedules and algorithm choice included. Likewise for
// the strategy: an overlap turned on, or a larger global batch, never costs time per sample.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "calibration/measured_runs.h"
#include "cli/mapped_run_inputs.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace {

using calisim::calibration::MeasuredRun;
using nlohmann::json;

struct Improvement {
  std::string name;
  std::vector<std::string> path;  // into the system document
  double factor;                  // numbers at `path` (or every number of the object there) times this
  bool cap_at_one;                // an efficiency: never above 1
};

const std::vector<Improvement> kImprovements = {
    {"peak FLOP/s x1.25", {"device", "peak_tflops"}, 1.25, false},
    {"HBM bandwidth x1.25", {"device", "hbm_gb_s"}, 1.25, false},
    {"scale-up bandwidth x1.25", {"network", "scale_up", "gpu_gb_s"}, 1.25, false},
    {"NIC bandwidth x1.25", {"network", "scale_out", "nic_gb_s"}, 1.25, false},
    {"scale-up collective efficiencies x1.1", {"network", "scale_up", "efficiency"}, 1.1, true},
    {"scale-out collective efficiencies x1.1", {"network", "scale_out", "efficiency"}, 1.1, true},
    {"scale-up latency /2", {"network", "scale_up", "latency_us"}, 0.5, false},
    {"scale-out latency /2", {"network", "scale_out", "latency_us"}, 0.5, false},
    {"matmul efficiency x1.1", {"efficiency", "matmul"}, 1.1, true},
    {"attention efficiency x1.1", {"efficiency", "attention"}, 1.1, true},
    {"memory-bound efficiency x1.05", {"efficiency", "memory_bound"}, 1.05, true},
    {"compute slowdown beside communication /2", {"efficiency", "comm_compute_slowdown"}, 0.5, false},
    {"host op dispatch /2", {"host", "op_dispatch_us"}, 0.5, false},
};

// The system document with `imp` applied; nullopt when the document has no such field.
std::optional<json> improved(json doc, const Improvement& imp) {
  json* at = &doc;
  for (const auto& key : imp.path) {
    if (!at->is_object() || !at->contains(key)) return std::nullopt;
    at = &(*at)[key];
  }
  auto scale = [&](json& v) {
    if (!v.is_number()) return;
    const double x = v.get<double>() * imp.factor;
    v = imp.cap_at_one ? std::min(1.0, x) : x;
  };
  if (at->is_object()) {
    for (auto& [k, v] : at->items()) scale(v);
  } else {
    scale(*at);
  }
  return doc;
}

std::vector<MeasuredRun> shipped_runs() {
  const std::string dir = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/";
  std::vector<MeasuredRun> runs;
  for (const char* f : {"measured_runs.csv", "nemo_long_sequence_b200.csv", "megatron_bridge_archive.csv",
                        "simumax_a100_pcie.csv"}) {
    const auto some = calisim::calibration::read_measured_runs(dir + f);
    runs.insert(runs.end(), some.begin(), some.end());
  }
  return runs;
}

TEST(ResourceMonotonicity, NoPublishedConfigurationSlowsWithMoreOfAResource) {
  const std::vector<MeasuredRun> runs = shipped_runs();
  calisim::SimulateOptions opt;
  opt.details = false;
  auto step_s = [&](const calisim::ModelConfig& model, const calisim::StrategyConfig& strategy, const json& sys_doc) {
    const calisim::SystemConfig sys = calisim::parse_system(sys_doc, "improved system");
    const calisim::DefaultEfficiencyModel eff(sys);
    return calisim::simulate(model, strategy, sys, eff, opt).duration_time_per_iter_s;
  };
  int simulated = 0;
  std::map<std::string, int> applied;
  for (const MeasuredRun& run : runs) {
    const auto m = calisim::cli::map_with_overrides(run, {});
    if (!m.ok) continue;
    const json sys_doc = calisim::cli::mapped_system_doc(m, {});
    const calisim::ModelConfig model = calisim::parse_model(m.model, run.run_id, nullptr);
    calisim::StrategyConfig strategy = calisim::parse_strategy(m.strategy, run.run_id);
    double base = 0;
    try {
      calisim::validate_layout(model, strategy, run.run_id, run.run_id);
      base = step_s(model, strategy, sys_doc);
    } catch (const std::exception&) {
      continue;  // not simulated by validate either (it lists the reason)
    }
    ++simulated;
    for (const Improvement& imp : kImprovements) {
      const auto doc = improved(sys_doc, imp);
      if (!doc) continue;
      ++applied[imp.name];
      const double t = step_s(model, strategy, *doc);
      EXPECT_LE(t, base * (1 + 1e-9)) << run.run_id << " (" << m.system << ", " << m.layout << "): " << imp.name
                                      << " takes the step from " << base << " s to " << t << " s";
    }
  }
  // The published runs cover every system file kind: each improvement met most of them.
  EXPECT_GT(simulated, 250);
  for (const Improvement& imp : kImprovements) {
    EXPECT_GT(applied[imp.name], simulated / 2) << imp.name << " applied to " << applied[imp.name] << " rows";
  }
}

// The same for the strategy: turning on an overlap Megatron offers (gradient reduce, parameter
// gather, TP communication) never slows a configuration, and a larger global batch at the same
// micro-batch (more micro-batches per step: a smaller pipeline bubble, DP communication amortised)
// never raises the time per sample.
TEST(ResourceMonotonicity, OverlapsAndLargerBatchesNeverCostTimePerSample) {
  const std::vector<MeasuredRun> runs = shipped_runs();
  calisim::SimulateOptions opt;
  opt.details = false;
  std::map<std::string, int> applied;
  int simulated = 0;
  for (const MeasuredRun& run : runs) {
    const auto m = calisim::cli::map_with_overrides(run, {});
    if (!m.ok) continue;
    const calisim::SystemConfig sys = calisim::parse_system(calisim::cli::mapped_system_doc(m, {}), run.run_id);
    const calisim::DefaultEfficiencyModel eff(sys);
    const calisim::ModelConfig model = calisim::parse_model(m.model, run.run_id, nullptr);
    auto step_s = [&](const json& strategy_doc) {
      calisim::StrategyConfig strategy = calisim::parse_strategy(strategy_doc, run.run_id);
      calisim::validate_layout(model, strategy, run.run_id, run.run_id);
      return calisim::simulate(model, strategy, sys, eff, opt).duration_time_per_iter_s;
    };
    double base = 0;
    try {
      base = step_s(m.strategy);
    } catch (const std::exception&) {
      continue;
    }
    ++simulated;
    std::vector<std::tuple<std::string, json, double>> variants;  // name, strategy, samples relative to base
    for (const char* flag : {"overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap"}) {
      if (m.strategy.value(flag, false)) continue;
      json s = m.strategy;
      s[flag] = true;
      variants.emplace_back(std::string(flag) + " on", s, 1.0);
    }
    if (m.strategy.contains("global_batch_size")) {
      json s = m.strategy;
      s["global_batch_size"] = 2 * m.strategy["global_batch_size"].get<long long>();
      variants.emplace_back("global batch x2", s, 2.0);
    }
    for (const auto& [name, s, samples] : variants) {
      double t = 0;
      try {
        t = step_s(s) / samples;
      } catch (const std::exception&) {
        continue;  // e.g. an overlap this layout refuses (tp 1)
      }
      ++applied[name];
      EXPECT_LE(t, base * (1 + 1e-9)) << run.run_id << " (" << m.system << ", " << m.layout << "): " << name
                                      << " takes the time per step-sized batch from " << base << " s to " << t
                                      << " s";
    }
  }
  EXPECT_GT(simulated, 250);
  // Each variant met a sizeable share of the rows (most already run with the overlaps on).
  for (const char* name : {"overlap_grad_reduce on", "overlap_param_gather on", "tp_comm_overlap on"}) {
    EXPECT_GT(applied[name], 30) << name;
  }
  EXPECT_GT(applied["global batch x2"], simulated / 2);
}

}  // namespace
