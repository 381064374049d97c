// Reading JSON input files with errors a user can act on. Every failure is an InputError naming
// the file: cannot open / is a directory (field ""), a syntax error ("line L, column C"), a value
// JSON cannot hold (a number beyond double's range), or a key given twice in one object (the
// key's path, e.g. "network.scale_up.latency_us": nlohmann::json would keep one value silently).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace calisim {

nlohmann::json read_json_file(const std::string& path);
// The whole file as a string (same open errors).
std::string read_text_file(const std::string& path);

}  // namespace calisim
