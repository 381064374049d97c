// Loading a run from JSON documents already in memory: what `calisim simulate` does with files
// (cli/config_catalog.h, load_run_configs), for documents the Python layer holds and may have
// edited. Same parsing, the same --set overrides, the same messages.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cli/config_catalog.h"

namespace calisim::python {

// One config document and the file name messages use (a path, or "<dict>" for one built in code).
struct ConfigDoc {
  nlohmann::json doc;
  std::string file;
};

// Applies `overrides` ("section.key=value", as --set), parses the three documents, fills the
// model name from the model file's stem when the document has none, validates the layout and
// collects warnings for accepted-but-not-modeled model fields. Throws InputError naming the file
// (tagged "(with --set overrides)" when an override touched it), the JSON path and the problem.
cli::RunConfigs load_run_docs(ConfigDoc model, ConfigDoc strategy, ConfigDoc system,
                              const std::vector<std::string>& overrides);

}  // namespace calisim::python
