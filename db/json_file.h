// Reads a whole JSON file. Throws InputError(path, "line L, column C", what) on a syntax error
// and InputError(path, "", "cannot read ...") when the file cannot be opened.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace calisim::db {

nlohmann::json read_json_file(const std::string& path);
// The whole file as a string (same errors).
std::string read_text_file(const std::string& path);

}  // namespace calisim::db
