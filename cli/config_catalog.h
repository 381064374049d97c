// Finding shipped configs by name, and loading the three configs of a run.
//
// A name containing '/' or ending in ".json" is a path; anything else is looked up as
// <configs>/<kind>/<name>.json, where <configs> is the first existing of: $CALISIM_CONFIG_DIR,
// <executable dir>/../share/calisim/configs, and the source tree's configs/ (compiled in).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "simulator/model_config.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim::cli {

enum class ConfigKind { model, strategy, system };
const char* kind_dir(ConfigKind k);  // "models", "strategies", "systems"
// "model"/"models", "strategy"/"strategies", "system"/"systems"; nullopt for anything else.
std::optional<ConfigKind> parse_config_kind(const std::string& name);
inline constexpr const char* kConfigKindNames = "model(s), strategy/strategies or system(s)";

std::string config_root();
// The shipped measured-runs files (calibration/data/*.csv), found like the configs: the first
// existing of $CALISIM_RUNS_DIR, <executable dir>/../share/calisim/runs and the source tree's
// calibration/data (compiled in). Sorted paths; throws InputError when the folder has none.
std::string runs_root();
std::vector<std::string> shipped_runs_files();
// Throws InputError naming the shipped names when `name` is not found.
std::string resolve_config(ConfigKind kind, const std::string& name_or_path);
std::vector<std::string> list_configs(ConfigKind kind);  // shipped names, sorted

struct RunConfigs {
  ModelConfig model;
  StrategyConfig strategy;
  SystemConfig system;
  std::string model_file, strategy_file, system_file;
  std::vector<std::string> warnings;
};

// The three documents of a run before parsing, named for messages. An absent system is not
// parsed (rc.system stays default): for commands that need no system.
struct RunDocs {
  nlohmann::json model, strategy;
  std::optional<nlohmann::json> system;
  std::string model_file, strategy_file, system_file;
  std::string model_name;  // when the model document names none
};
// Applies --set overrides, parses and validates; messages name a file "(with --set overrides)"
// when its section was overridden.
RunConfigs parse_run_docs(RunDocs docs, const std::vector<std::string>& overrides);

// Resolves, reads, applies --set overrides, parses and validates.
RunConfigs load_run_configs(const std::string& model, const std::string& strategy, const std::string& system,
                            const std::vector<std::string>& overrides);

}  // namespace calisim::cli
