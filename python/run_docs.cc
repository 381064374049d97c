#include "python/run_docs.h"

#include <filesystem>

#include "simulator/config_loader.h"

namespace calisim::python {

cli::RunConfigs load_run_docs(ConfigDoc model, ConfigDoc strategy, ConfigDoc system,
                              const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) apply_override(o, model.doc, strategy.doc, system.doc);
  const auto tag = [&](const std::string& file, const std::string& section) {
    for (const auto& o : overrides) {
      if (o.rfind(section + ".", 0) == 0) return file + " (with --set overrides)";
    }
    return file;
  };
  cli::RunConfigs rc;
  rc.model_file = model.file;
  rc.strategy_file = strategy.file;
  rc.system_file = system.file;
  std::vector<std::string> not_modeled;
  rc.model = parse_model(model.doc, tag(model.file, "model"), &not_modeled);
  if (rc.model.model_name.empty()) rc.model.model_name = std::filesystem::path(model.file).stem().string();
  rc.strategy = parse_strategy(strategy.doc, tag(strategy.file, "strategy"));
  rc.system = parse_system(system.doc, tag(system.file, "system"));
  validate_layout(rc.model, rc.strategy, tag(strategy.file, "strategy"), model.file);
  for (const auto& f : not_modeled) rc.warnings.push_back("model field '" + f + "' is accepted but not modeled");
  return rc;
}

}  // namespace calisim::python
