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
// follow). Throws std::invalid_argument for values that are not finite and positive, and for a
// scaleup_domain that is not a whole number of GPUs.
SystemConfig with_hardware(const SystemConfig& base, HardwareParam p, double value);

// Parses a value list: "1000,2000", "0.5x,1x,2x" (multiples of `base_value`), or a range "a..b"
// (also with x) spread geometrically over `points` values (at least 2). Every value must be finite
// and positive. Throws std::invalid_argument naming the bad value.
std::vector<double> parse_sweep_values(const std::string& spec, double base_value, int points);

// What limits a layout: the largest part of its step time, named for the hardware behind it.
std::string bottleneck(const CandidateResult& r);

struct SweepPoint {
  std::vector<double> values;     // the varied parameters' values at this point
  bool feasible = false;          // some layout is legal and fits in memory
  bool legal = false;             // some layout passes the divisibility and batch rules (fitting or not)
  CandidateResult best;           // valid when feasible
  std::string explanation;        // the search's reason, when infeasible
  // bottleneck(best); when infeasible kNothingFits (legal layouts exist, none fits in memory) or
  // kNoLegalLayout (no layout passes the rules, so memory is not the reason).
  std::string limit;
};
inline constexpr const char* kNothingFits = "memory capacity (nothing fits)";
inline constexpr const char* kNoLegalLayout = "no legal layout (divisibility and batch rules)";

// One search per point of the cartesian product of `values` (one list per parameter).
std::vector<SweepPoint> sweep_hardware(const ModelConfig& model, const StrategyConfig& base,
                                       const SystemConfig& system, const SearchSpace& space,
                                       const std::vector<HardwareParam>& params,
                                       const std::vector<std::vector<double>>& values, const SearchOptions& options);

struct ScalePoint {
  std::string system;
  int gpus = 0;
  long long global_batch_size = 0;
  bool feasible = false;        // as SweepPoint
  bool legal = false;           // as SweepPoint
  CandidateResult best;         // valid when feasible
  std::string explanation;      // the search's reason (or the pp lists'), when infeasible
  double time_to_train_s = 0;   // train_tokens / tokens per second; 0 when infeasible
  double gpu_hours = 0;         // 0 when infeasible
};

// Strong scaling (fixed global batch) or weak scaling (global batch ∝ GPUs from the first count).
// A given pp list is kept to the sizes dividing each count; a count that none divides has no
// legal layout (the point says so rather than searching other pp sizes). Throws
// std::invalid_argument for no GPU counts, a count or batch below 1, train_tokens that is not
// finite and positive, and a weak-scaled batch that is not a whole number of sequences.
std::vector<ScalePoint> sweep_scale(const ModelConfig& model, const StrategyConfig& base,
                                    const std::vector<SystemConfig>& systems, const std::vector<int>& gpus,
                                    long long global_batch_size, bool weak, double train_tokens,
                                    const SearchSpace& space_lists, const SearchOptions& options);

struct LayoutStep {
  // "tp", "pp", "vpp", "cp", "ep", "etp", "cp_comm", "dispatcher", "mbs", "recompute", "zero",
  // "tp_2d_rows", "cp_2d_rows" (0 = 1D; walked when the space tries grids) or "order"
  std::string dimension;
  std::string value;
  bool is_best = false;
  bool legal = false, fits = false;
  std::string why_not;          // illegal reason or memory
  CandidateResult result;       // valid when legal
};

// Walks each dimension of `space` around `best`, keeping the others at the best's values (2D TP
// and CP grids included: a step changing tp keeps the best's grid rows, so it may be illegal).
std::vector<LayoutStep> walk_layouts(const ModelConfig& model, const StrategyConfig& base,
                                     const SystemConfig& system, const EfficiencyModel& efficiency,
                                     const SearchSpace& space, const CandidateResult& best,
                                     const SearchOptions& options);

}  // namespace calisim
