// The JSON file readers of core/json_file.h under db's namespace (db code and its callers use
// db::read_json_file; one implementation serves configs and database imports alike).
#pragma once

#include "core/json_file.h"

namespace calisim::db {

using ::calisim::read_json_file;
using ::calisim::read_text_file;

}  // namespace calisim::db
