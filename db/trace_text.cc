#include "db/trace_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/error.h"

namespace calisim::db {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

// An integer field of a trace record; `required` fields must be present.
std::int64_t int_field(const json& j, const char* name, const std::string& file, const std::string& where,
                       bool required, std::int64_t min_value) {
  auto it = j.find(name);
  if (it == j.end()) {
    if (required) throw InputError(file, where + name, "is missing (expected an integer)");
    return 0;
  }
  if (!it->is_number_integer()) throw InputError(file, where + name, "expected an integer");
  const std::int64_t v = it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)
                             ? -1
                             : it->get<std::int64_t>();
  if (v < min_value) throw InputError(file, where + name, fmt::format("expected an integer >= {}", min_value));
  return v;
}

std::array<int, 3> dim3_field(const json& j, const char* name, const std::string& file, const std::string& where) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_array() || it->size() != 3) {
    throw InputError(file, where + name, "expected an array of 3 integers [x, y, z]");
  }
  std::array<int, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    const json& v = (*it)[i];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > INT32_MAX) {
      throw InputError(file, fmt::format("{}{}[{}]", where, name, i), "expected a non-negative 32-bit integer");
    }
    out[i] = static_cast<int>(v.get<std::int64_t>());
  }
  return out;
}

std::string text_field(const json& j, const char* name, const std::string& file, const std::string& where,
                       bool required) {
  auto it = j.find(name);
  if (it == j.end()) {
    if (required) throw InputError(file, where + name, "is missing (expected a string)");
    return "";
  }
  if (!it->is_string()) throw InputError(file, where + name, "expected a string");
  return it->get<std::string>();
}

}  // namespace

TraceKernel trace_kernel_from_json(const json& j, const std::string& file, const std::string& where) {
  if (!j.is_object()) throw InputError(file, where.substr(0, where.size() - 1), "expected an object");
  // A misspelt field would otherwise be dropped without a word.
  static const std::array<const char*, 11> kFields = {"name",  "class",    "device",     "stream", "grid",     "block",
                                                      "start_ns", "end_ns", "nvtx_range", "bytes",  "copy_kind"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find_if(kFields.begin(), kFields.end(), [&](const char* f) { return it.key() == f; }) == kFields.end()) {
      throw InputError(file, where + it.key(), fmt::format("unknown field (expected {})", fmt::join(kFields, ", ")));
    }
  }
  TraceKernel k;
  k.name = text_field(j, "name", file, where, true);
  k.kernel_class = text_field(j, "class", file, where, true);
  if (!is_trace_class(k.kernel_class)) {
    throw InputError(file, where + "class",
                     fmt::format("'{}' is not a trace class; expected one of {}", k.kernel_class,
                                 fmt::join(trace_classes(), ", ")));
  }
  k.device = static_cast<int>(int_field(j, "device", file, where, true, 0));
  k.stream = int_field(j, "stream", file, where, true, 0);
  const auto grid = dim3_field(j, "grid", file, where);
  const auto block = dim3_field(j, "block", file, where);
  k.grid_x = grid[0], k.grid_y = grid[1], k.grid_z = grid[2];
  k.block_x = block[0], k.block_y = block[1], k.block_z = block[2];
  k.start_ns = static_cast<std::uint64_t>(int_field(j, "start_ns", file, where, true, 0));
  k.end_ns = static_cast<std::uint64_t>(int_field(j, "end_ns", file, where, true, 0));
  if (k.end_ns < k.start_ns) {
    throw InputError(file, where + "end_ns", fmt::format("{} is before start_ns {}", k.end_ns, k.start_ns));
  }
  k.nvtx_range = text_field(j, "nvtx_range", file, where, false);
  k.bytes = int_field(j, "bytes", file, where, false, 0);
  k.copy_kind = text_field(j, "copy_kind", file, where, false);
  return k;
}

ordered_json trace_kernel_to_json(const TraceKernel& k) {
  ordered_json o;
  o["name"] = k.name;
  o["class"] = k.kernel_class;
  o["device"] = k.device;
  o["stream"] = k.stream;
  o["grid"] = {k.grid_x, k.grid_y, k.grid_z};
  o["block"] = {k.block_x, k.block_y, k.block_z};
  o["start_ns"] = k.start_ns;
  o["end_ns"] = k.end_ns;
  if (!k.nvtx_range.empty()) o["nvtx_range"] = k.nvtx_range;
  if (k.bytes != 0) o["bytes"] = k.bytes;
  if (!k.copy_kind.empty()) o["copy_kind"] = k.copy_kind;
  return o;
}

}  // namespace calisim::db
