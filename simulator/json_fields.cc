#include "simulator/json_fields.h"

#include <cmath>

#include "core/error.h"

namespace calisim {

std::string describe_json(const nlohmann::json& v) {
  std::string dump = v.dump();
  if (dump.size() > 40) dump = dump.substr(0, 37) + "...";
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "boolean " + dump;
    case nlohmann::json::value_t::string: return "string " + dump;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "integer " + dump;
    case nlohmann::json::value_t::number_float: return "number " + dump;
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    default: return dump;
  }
}

FieldReader::FieldReader(const nlohmann::json& obj, std::string file, std::string path)
    : obj_(obj), file_(std::move(file)), path_(std::move(path)) {
  if (!obj_.is_object()) {
    throw InputError(file_, path_.empty() ? "(document)" : path_, "expected a JSON object, got " + describe_json(obj_));
  }
}

void FieldReader::fail(const std::string& key, const std::string& problem) const {
  throw InputError(file_, path_of(key), problem);
}

const nlohmann::json* FieldReader::find(const std::string& key) {
  known_.insert(key);
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::int64_t> FieldReader::opt_int(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_number_integer() || v->is_number_unsigned()) return v->get<std::int64_t>();
  // Accept integral floats such as 4096.0 that some generators write.
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<std::int64_t>(d);
  }
  fail(key, "expected an integer, got " + describe_json(*v));
}

std::optional<double> FieldReader::opt_number(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_number()) {
    const double d = v->get<double>();
    if (!std::isfinite(d)) fail(key, "expected a finite number");
    return d;
  }
  fail(key, "expected a number, got " + describe_json(*v));
}

std::optional<bool> FieldReader::opt_bool(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  fail(key, "expected true or false, got " + describe_json(*v));
}

std::optional<std::string> FieldReader::opt_string(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  fail(key, "expected a string, got " + describe_json(*v));
}

const nlohmann::json* FieldReader::opt_object(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v) return nullptr;
  if (!v->is_object()) fail(key, "expected an object, got " + describe_json(*v));
  return v;
}

const nlohmann::json* FieldReader::opt_array(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v) return nullptr;
  if (!v->is_array()) fail(key, "expected an array, got " + describe_json(*v));
  return v;
}

std::int64_t FieldReader::req_int(const std::string& key) {
  auto v = opt_int(key);
  if (!v) fail(key, "required field is missing (expected an integer)");
  return *v;
}

double FieldReader::req_number(const std::string& key) {
  auto v = opt_number(key);
  if (!v) fail(key, "required field is missing (expected a number)");
  return *v;
}

std::string FieldReader::req_string(const std::string& key) {
  auto v = opt_string(key);
  if (!v) fail(key, "required field is missing (expected a string)");
  return *v;
}

const nlohmann::json& FieldReader::req_object(const std::string& key) {
  const nlohmann::json* v = opt_object(key);
  if (!v) fail(key, "required field is missing (expected an object)");
  return *v;
}

std::int64_t FieldReader::req_positive_int(const std::string& key) {
  const std::int64_t v = req_int(key);
  if (v <= 0) fail(key, "expected a positive integer, got " + std::to_string(v));
  return v;
}

std::int64_t FieldReader::positive_int_or(const std::string& key, std::int64_t fallback) {
  auto v = opt_int(key);
  if (!v) return fallback;
  if (*v <= 0) fail(key, "expected a positive integer, got " + std::to_string(*v));
  return *v;
}

std::int64_t FieldReader::nonneg_int_or(const std::string& key, std::int64_t fallback) {
  auto v = opt_int(key);
  if (!v) return fallback;
  if (*v < 0) fail(key, "expected a non-negative integer, got " + std::to_string(*v));
  return *v;
}

double FieldReader::positive_number_or(const std::string& key, double fallback) {
  auto v = opt_number(key);
  if (!v) return fallback;
  if (*v <= 0) fail(key, "expected a positive number, got " + nlohmann::json(*v).dump());
  return *v;
}

double FieldReader::fraction_or(const std::string& key, double fallback) {
  auto v = opt_number(key);
  if (!v) return fallback;
  if (*v <= 0 || *v > 1) fail(key, "expected a fraction in (0, 1], got " + nlohmann::json(*v).dump());
  return *v;
}

void FieldReader::accept_not_modeled(std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    known_.insert(k);
    if (obj_.contains(k)) not_modeled_.insert(k);
  }
}

std::vector<std::string> FieldReader::finish() const {
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (!known_.count(it.key())) {
      std::string known_list;
      for (const auto& k : known_) known_list += (known_list.empty() ? "" : ", ") + k;
      throw InputError(file_, path_of(it.key()),
                       "unknown field (known fields here: " + known_list + "; see docs/configs.md)");
    }
  }
  std::vector<std::string> out;
  for (const auto& k : not_modeled_) out.push_back(path_of(k));
  return out;
}

}  // namespace calisim
