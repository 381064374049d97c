// FieldReader: typed, path-aware access to one JSON object of a config file.
//
// Every getter records the field as known; finish() then rejects any field that was neither
// read nor listed as accepted-but-not-modeled, so no field is ever ignored silently. Errors are
// InputError(file, "<path>.<field>", "expected ..., got ...").
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace calisim {

class FieldReader {
 public:
  // obj must outlive the reader. path is the JSON path of obj ("" for the document root).
  FieldReader(const nlohmann::json& obj, std::string file, std::string path);

  std::optional<std::int64_t> opt_int(const std::string& key);
  std::optional<double> opt_number(const std::string& key);
  std::optional<bool> opt_bool(const std::string& key);
  std::optional<std::string> opt_string(const std::string& key);
  const nlohmann::json* opt_object(const std::string& key);  // nullptr when absent or null
  const nlohmann::json* opt_array(const std::string& key);   // nullptr when absent or null

  std::int64_t req_int(const std::string& key);
  double req_number(const std::string& key);
  std::string req_string(const std::string& key);
  const nlohmann::json& req_object(const std::string& key);

  // Positive-integer and positive-number helpers (the common "size" case).
  std::int64_t req_positive_int(const std::string& key);
  std::int64_t positive_int_or(const std::string& key, std::int64_t fallback);
  std::int64_t nonneg_int_or(const std::string& key, std::int64_t fallback);
  double positive_number_or(const std::string& key, double fallback);
  double fraction_or(const std::string& key, double fallback);  // 0 < x <= 1
  bool bool_or(const std::string& key, bool fallback) { return opt_bool(key).value_or(fallback); }
  std::string string_or(const std::string& key, const std::string& fallback) {
    return opt_string(key).value_or(fallback);
  }

  // Fields accepted for compatibility but not modeled: recorded as seen, returned by finish().
  void accept_not_modeled(std::initializer_list<const char*> keys);
  // Fields another reader of the same object reads: known here (finish() neither refuses them
  // nor leaves them out of the "known fields" it lists).
  void read_elsewhere(std::initializer_list<const char*> keys) { known_.insert(keys.begin(), keys.end()); }
  // Throws InputError for the first unknown field; returns the not-modeled fields present.
  std::vector<std::string> finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  std::string path_of(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& file() const { return file_; }

 private:
  const nlohmann::json* find(const std::string& key);
  const nlohmann::json& obj_;
  std::string file_, path_;
  std::set<std::string> known_;
  std::set<std::string> not_modeled_;
};

// Short description of a JSON value's type for error messages ("string \"abc\"", "number 1.5").
std::string describe_json(const nlohmann::json& v);

}  // namespace calisim
