#include "cli/mapped_run_inputs.h"

#include "cli/config_catalog.h"
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

}  // namespace calisim::cli
