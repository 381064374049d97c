#include "cli/mapped_run_inputs.h"

#include "cli/config_catalog.h"
#include "core/error.h"
#include "simulator/config_loader.h"

namespace calisim::cli {

calibration::MappedRun map_with_overrides(const calibration::MeasuredRun& run, const std::vector<std::string>& overrides) {
  const calibration::ModelLoader loader = [](const std::string& name) {
    return read_json_file(resolve_config(ConfigKind::model, name));
  };
  calibration::MappedRun m = calibration::map_run(run, loader);
  if (!m.ok) return m;
  nlohmann::json unused_system = nlohmann::json::object();
  for (const auto& o : overrides) {
    if (o.rfind("system.", 0) != 0) apply_override(o, m.model, m.strategy, unused_system);
  }
  return m;
}

nlohmann::json mapped_system_doc(const calibration::MappedRun& m, const std::vector<std::string>& overrides) {
  nlohmann::json system = read_json_file(resolve_config(ConfigKind::system, m.system));
  system.merge_patch(m.system_patch);
  nlohmann::json unused_model = nlohmann::json::object(), unused_strategy = nlohmann::json::object();
  for (const auto& o : overrides) {
    if (o.rfind("system.", 0) == 0) apply_override(o, unused_model, unused_strategy, system);
  }
  return system;
}

RunRowConfigs run_row_configs(const std::string& file_and_id, const std::string& system,
                              const std::vector<std::string>& overrides) {
  const auto colon = file_and_id.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == file_and_id.size()) {
    throw InputError("<command line>", "--run",
                     "expected FILE:ID, a measured-runs CSV and one of its run_id values (e.g. "
                     "calibration/data/measured_runs.csv:R0001), got '" + file_and_id + "'");
  }
  const std::string file = file_and_id.substr(0, colon), id = file_and_id.substr(colon + 1);
  RunRowConfigs out;
  bool found = false;
  for (auto& r : calibration::read_measured_runs(file)) {
    if (r.run_id == id) {
      out.run = std::move(r);
      found = true;
      break;
    }
  }
  if (!found) throw InputError(file, "run_id", "no row '" + id + "' (calisim validate --runs " + file + " lists them)");
  out.mapped = map_with_overrides(out.run, {});
  const std::string where = file + " row " + id;
  if (!out.mapped.ok) throw InputError(file, "row " + id, "not simulated: " + out.mapped.reason);
  RunDocs docs;
  docs.model = out.mapped.model;
  docs.strategy = out.mapped.strategy;
  docs.model_file = where + " (model)";
  docs.strategy_file = where + " (strategy)";
  docs.model_name = out.run.model;
  out.system_replaced = !system.empty();
  docs.system_file = resolve_config(ConfigKind::system, out.system_replaced ? system : out.mapped.system);
  docs.system = out.system_replaced ? read_json_file(docs.system_file) : mapped_system_doc(out.mapped, {});
  out.rc = parse_run_docs(std::move(docs), overrides);
  std::vector<std::string> notes;
  if (out.system_replaced) {
    notes.push_back("system " + system + " instead of the row's " + out.mapped.system +
                    (out.mapped.system_patch.empty() ? "" : " (the row's system patch is dropped: " +
                                                                out.mapped.system_patch.dump() + ")"));
  }
  for (const auto& w : out.mapped.warnings) notes.push_back(id + ": " + w);
  out.rc.warnings.insert(out.rc.warnings.begin(), notes.begin(), notes.end());
  return out;
}

}  // namespace calisim::cli
