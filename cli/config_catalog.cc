#include "cli/config_catalog.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "simulator/config_loader.h"

#ifndef CALISIM_CONFIG_DIR
#define CALISIM_CONFIG_DIR "configs"
#endif

#ifndef CALISIM_RUNS_DIR
#define CALISIM_RUNS_DIR "calibration/data"
#endif

namespace fs = std::filesystem;

namespace calisim::cli {

const char* kind_dir(ConfigKind k) {
  switch (k) {
    case ConfigKind::model: return "models";
    case ConfigKind::strategy: return "strategies";
    case ConfigKind::system: return "systems";
  }
  return "models";
}

std::optional<ConfigKind> parse_config_kind(const std::string& name) {
  for (ConfigKind k : {ConfigKind::model, ConfigKind::strategy, ConfigKind::system}) {
    const std::string dir = kind_dir(k);
    const std::string one = k == ConfigKind::strategy ? "strategy" : dir.substr(0, dir.size() - 1);
    if (name == one || name == dir) return k;
  }
  return std::nullopt;
}

namespace {
// $ENV, then <exe>/../share/calisim/<installed>, then the compiled-in source folder.
std::string data_root(const char* env_name, const char* installed_dir, const char* source_dir) {
  if (const char* env = std::getenv(env_name); env && *env && fs::is_directory(env)) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "calisim" / installed_dir;
    if (fs::is_directory(installed)) return installed.string();
  }
  return source_dir;
}
}  // namespace

std::string config_root() { return data_root("CALISIM_CONFIG_DIR", "configs", CALISIM_CONFIG_DIR); }

std::string runs_root() { return data_root("CALISIM_RUNS_DIR", "runs", CALISIM_RUNS_DIR); }

std::vector<std::string> shipped_runs_files() {
  const std::string root = runs_root();
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".csv") files.push_back(entry.path().string());
  }
  if (files.empty()) {
    throw InputError(root, "", "no measured-runs files (*.csv) here: set CALISIM_RUNS_DIR or give --accuracy-runs");
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> list_configs(ConfigKind kind) {
  std::vector<std::string> names;
  const fs::path dir = fs::path(config_root()) / kind_dir(kind);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string resolve_config(ConfigKind kind, const std::string& name) {
  const bool is_path = name.find('/') != std::string::npos ||
                       (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0);
  if (is_path) {
    if (!fs::exists(name)) throw InputError(name, "", "file not found");
    return name;
  }
  const fs::path p = fs::path(config_root()) / kind_dir(kind) / (name + ".json");
  if (fs::exists(p)) return p.string();
  std::string known;
  for (const auto& n : list_configs(kind)) known += (known.empty() ? "" : ", ") + n;
  throw InputError("--" + std::string(kind == ConfigKind::model ? "model" : kind == ConfigKind::strategy ? "strategy"
                                                                                                          : "system"),
                   "", "no shipped " + std::string(kind_dir(kind)) + " config named '" + name + "' (shipped: " + known +
                           "; or give a path to a .json file)");
}

RunConfigs load_run_configs(const std::string& model, const std::string& strategy, const std::string& system,
                            const std::vector<std::string>& overrides) {
  RunDocs docs;
  docs.model_file = resolve_config(ConfigKind::model, model);
  docs.strategy_file = resolve_config(ConfigKind::strategy, strategy);
  docs.system_file = resolve_config(ConfigKind::system, system);
  docs.model = read_json_file(docs.model_file);
  docs.strategy = read_json_file(docs.strategy_file);
  docs.system = read_json_file(docs.system_file);
  docs.model_name = fs::path(docs.model_file).stem().string();
  return parse_run_docs(std::move(docs), overrides);
}

RunConfigs parse_run_docs(RunDocs docs, const std::vector<std::string>& overrides) {
  nlohmann::json no_system = nlohmann::json::object();
  nlohmann::json& y = docs.system ? *docs.system : no_system;
  for (const auto& o : overrides) apply_override(o, docs.model, docs.strategy, y);
  // Messages name the file and say when a value came from --set.
  const auto tag = [&](const std::string& file, const char* section) {
    for (const auto& o : overrides) {
      if (o.rfind(std::string(section) + ".", 0) == 0) return file + " (with --set overrides)";
    }
    return file;
  };
  RunConfigs rc;
  rc.model_file = docs.model_file;
  rc.strategy_file = docs.strategy_file;
  rc.system_file = docs.system_file;
  std::vector<std::string> not_modeled;
  rc.model = parse_model(docs.model, tag(rc.model_file, "model"), &not_modeled);
  if (rc.model.model_name.empty()) rc.model.model_name = docs.model_name;
  rc.strategy = parse_strategy(docs.strategy, tag(rc.strategy_file, "strategy"));
  if (docs.system) rc.system = parse_system(y, tag(rc.system_file, "system"));
  validate_layout(rc.model, rc.strategy, tag(rc.strategy_file, "strategy"), rc.model_file);
  for (const auto& f : not_modeled) rc.warnings.push_back("model field '" + f + "' is accepted but not modeled");
  return rc;
}

}  // namespace calisim::cli
