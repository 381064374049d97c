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

// A published run as validate maps it: the documents each case varies.
struct Published {
  std::string id, system, layout;
  json model, strategy, system_doc;
};

// The step time of a mapped run with these strategy and system documents; throws what the loaders
// or the simulator throw.
double step_s(const Published& p, const json& strategy_doc, const json& system_doc) {
  const calisim::ModelConfig model = calisim::parse_model(p.model, p.id, nullptr);
  calisim::StrategyConfig strategy = calisim::parse_strategy(strategy_doc, p.id);
  calisim::validate_layout(model, strategy, p.id, p.id);
  const calisim::SystemConfig sys = calisim::parse_system(system_doc, p.id);
  const calisim::DefaultEfficiencyModel eff(sys);
  calisim::SimulateOptions opt;
  opt.details = false;
  return calisim::simulate(model, strategy, sys, eff, opt).duration_time_per_iter_s;
}

// Every row of the four shipped runs files that validate simulates, mapped once for both cases.
const std::vector<Published>& published_runs() {
  static const std::vector<Published> all = [] {
    const std::string dir = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/";
    std::vector<Published> out;
    for (const char* f : {"measured_runs.csv", "nemo_long_sequence_b200.csv", "megatron_bridge_archive.csv",
                          "simumax_a100_pcie.csv"}) {
      for (const MeasuredRun& run : calisim::calibration::read_measured_runs(dir + f)) {
        const auto m = calisim::cli::map_with_overrides(run, {});
        if (!m.ok) continue;
        Published p{run.run_id, m.system, m.layout, m.model, m.strategy, calisim::cli::mapped_system_doc(m, {})};
        try {
          step_s(p, p.strategy, p.system_doc);
        } catch (const std::exception&) {
          continue;  // not simulated by validate either (it lists the reason)
        }
        out.push_back(std::move(p));
      }
    }
    return out;
  }();
  return all;
}

TEST(ResourceMonotonicity, NoPublishedConfigurationSlowsWithMoreOfAResource) {
  const std::vector<Published>& runs = published_runs();
  std::map<std::string, int> applied;
  for (const Published& p : runs) {
    const double base = step_s(p, p.strategy, p.system_doc);
    for (const Improvement& imp : kImprovements) {
      const auto doc = improved(p.system_doc, imp);
      if (!doc) continue;
      ++applied[imp.name];
      const double t = step_s(p, p.strategy, *doc);
      EXPECT_LE(t, base * (1 + 1e-9)) << p.id << " (" << p.system << ", " << p.layout << "): " << imp.name
                                      << " takes the step from " << base << " s to " << t << " s";
    }
  }
  // The published runs cover every system file kind: each improvement met most of them.
  const int simulated = static_cast<int>(runs.size());
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
  const std::vector<Published>& runs = published_runs();
  std::map<std::string, int> applied;
  for (const Published& p : runs) {
    const double base = step_s(p, p.strategy, p.system_doc);
    std::vector<std::tuple<std::string, json, double>> variants;  // name, strategy, samples relative to base
    for (const char* flag : {"overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap"}) {
      if (p.strategy.value(flag, false)) continue;
      json s = p.strategy;
      s[flag] = true;
      variants.emplace_back(std::string(flag) + " on", s, 1.0);
    }
    if (p.strategy.contains("global_batch_size")) {
      json s = p.strategy;
      s["global_batch_size"] = 2 * p.strategy["global_batch_size"].get<long long>();
      variants.emplace_back("global batch x2", s, 2.0);
    }
    for (const auto& [name, s, samples] : variants) {
      double t = 0;
      try {
        t = step_s(p, s, p.system_doc) / samples;
      } catch (const std::exception&) {
        continue;  // e.g. an overlap this layout refuses (tp 1)
      }
      ++applied[name];
      EXPECT_LE(t, base * (1 + 1e-9)) << p.id << " (" << p.system << ", " << p.layout << "): " << name
                                      << " takes the time per step-sized batch from " << base << " s to " << t
                                      << " s";
    }
  }
  const int simulated = static_cast<int>(runs.size());
  EXPECT_GT(simulated, 250);
  // Each variant met a sizeable share of the rows (most already run with the overlaps on).
  for (const char* name : {"overlap_grad_reduce on", "overlap_param_gather on", "tp_comm_overlap on"}) {
    EXPECT_GT(applied[name], 30) << name;
  }
  EXPECT_GT(applied["global batch x2"], simulated / 2);
}

}  // namespace
