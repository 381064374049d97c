// Design-space studies built on the strategy search: every point runs the full search, so the
// answer is the best achievable layout there, not one fixed layout.
//
//   hardware sweeps — vary one hardware parameter (or a grid of two) of a base system;
//   scale sweeps    — strong or weak scaling over GPU counts, for several systems;
//   layout walks    — around the best layout, change one dimension at a time.
// Pure functions over configs; the CLI adds tables, CSV and SVG plots.
#pragma once

#include <string>
#include <vector>

#include "core/efficiency_model.h"
#include "simulator/model_config.h"
#include "simulator/search.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

// Hardware parameters a sweep can vary, with the system fields they set.
//   peak_bf16      dense bf16 and fp16 peaks, TFLOP/s (fp8 and tf32 scale with them)
//   hbm_gb_s       HBM bandwidth, GB/s
//   memory_gb      HBM capacity, GB
//   scaleup_gb_s   NVLink/scale-up bandwidth per GPU, GB/s
//   nic_gb_s       bandwidth of one NIC, GB/s
//   scaleup_domain GPUs in one scale-up domain
enum class HardwareParam { peak_bf16, hbm_gb_s, memory_gb, scaleup_gb_s, nic_gb_s, scaleup_domain };
const char* to_string(HardwareParam p);
const char* unit_of(HardwareParam p);
HardwareParam parse_hardware_param(const std::string& name);  // throws std::invalid_argument
double hardware_value(const SystemConfig& s, HardwareParam p);
// Returns a copy of `base` with `p` set to `value` (derived fields such as the per-GPU NIC share
// follow). Throws std::invalid_argument for non-positive values.
SystemConfig with_hardware(const SystemConfig& base, HardwareParam p, double value);

// Parses a value list: "1000,2000", "0.5x,1x,2x" (multiples of `base_value`), or a range "a..b"
// (also with x) spread geometrically over `points` values. Throws std::invalid_argument.
std::vector<double> parse_sweep_values(const std::string& spec, double base_value, int points);

// What limits a layout: the largest part of its step time, named for the hardware behind it.
std::string bottleneck(const CandidateResult& r);

struct SweepPoint {
  std::vector<double> values;     // the varied parameters' values at this point
  bool feasible = false;
  CandidateResult best;           // valid when feasible
  std::string explanation;        // why nothing fits, when infeasible
  std::string limit;              // bottleneck(best), or "memory capacity" when nothing fits
};

// One search per point of the cartesian product of `values` (one list per parameter).
std::vector<SweepPoint> sweep_hardware(const ModelConfig& model, const StrategyConfig& base,
                                       const SystemConfig& system, const SearchSpace& space,
                                       const std::vector<HardwareParam>& params,
                                       const std::vector<std::vector<double>>& values, const SearchOptions& options);

struct ScalePoint {
  std::string system;
  int gpus = 0;
  long long global_batch_size = 0;
  bool feasible = false;
  CandidateResult best;
  std::string explanation;
  double time_to_train_s = 0;   // train_tokens / tokens per second
  double gpu_hours = 0;
};

// Strong scaling (fixed global batch) or weak scaling (global batch ∝ GPUs from the first count).
std::vector<ScalePoint> sweep_scale(const ModelConfig& model, const StrategyConfig& base,
                                    const std::vector<SystemConfig>& systems, const std::vector<int>& gpus,
                                    long long global_batch_size, bool weak, double train_tokens,
                                    const SearchSpace& space_lists, const SearchOptions& options);

struct LayoutStep {
  std::string dimension;        // "tp", "pp", "vpp", "cp", "ep", "mbs", "recompute", "zero", "order"
  std::string value;
  bool is_best = false;
  bool legal = false, fits = false;
  std::string why_not;          // illegal reason or memory
  CandidateResult result;       // valid when legal
};

// Walks each dimension of `space` around `best`, keeping the others at the best's values.
std::vector<LayoutStep> walk_layouts(const ModelConfig& model, const StrategyConfig& base,
                                     const SystemConfig& system, const EfficiencyModel& efficiency,
                                     const SearchSpace& space, const CandidateResult& best,
                                     const SearchOptions& options);

}  // namespace calisim
