#include "profiler/profile_plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/error.h"

namespace calisim::profiler {
namespace {

constexpr const char* kFormatField = "calisim_profile_plan";
constexpr int kFormatVersion = 1;

struct Group {
  db::KeyKind kind;
  const char* field;
};
// File order of the groups, which is also the measuring order.
constexpr Group kGroups[] = {{db::KeyKind::gemm, "gemm"},
                             {db::KeyKind::attention, "attention"},
                             {db::KeyKind::memory, "memory"},
                             {db::KeyKind::collective, "collective"}};

}  // namespace

namespace {
void add_once(std::vector<PlannedKernel>& kernels, PlannedKernel k) {
  if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(std::move(k));
}
}  // namespace

void ProfilePlan::add(const GemmKey& k) { add_once(kernels, {db::KeyKind::gemm, to_string(k)}); }
void ProfilePlan::add(const AttentionKey& k) { add_once(kernels, {db::KeyKind::attention, to_string(k)}); }
void ProfilePlan::add(const CollectiveKey& k) { add_once(kernels, {db::KeyKind::collective, to_string(k)}); }
void ProfilePlan::add(const MemoryOpKey& k) { add_once(kernels, {db::KeyKind::memory, to_string(k)}); }

std::size_t ProfilePlan::count(db::KeyKind kind) const {
  std::size_t n = 0;
  for (const auto& k : kernels) n += k.kind == kind ? 1 : 0;
  return n;
}

std::string plan_to_json(const ProfilePlan& plan) {
  nlohmann::ordered_json doc;
  doc[kFormatField] = kFormatVersion;
  doc["description"] = plan.description;
  for (const Group& g : kGroups) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& k : plan.kernels) {
      if (k.kind == g.kind) list.push_back(k.key);
    }
    doc[g.field] = list;
  }
  return doc.dump(2) + "\n";
}

ProfilePlan plan_from_json(const std::string& text, const std::string& file) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(file, "", std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains(kFormatField)) {
    throw InputError(file, "", std::string("not a calisim profile plan (no \"") + kFormatField + "\" field)");
  }
  if (doc[kFormatField] != kFormatVersion) {
    throw InputError(file, kFormatField, "unsupported plan version (this calisim reads version 1)");
  }
  for (const auto& [field, value] : doc.items()) {
    bool known = field == kFormatField || field == "description";
    for (const Group& g : kGroups) known = known || field == g.field;
    if (!known) throw InputError(file, field, "unknown field (expected description, gemm, attention, memory, collective)");
  }
  ProfilePlan plan;
  if (doc.contains("description") && doc["description"].is_string()) plan.description = doc["description"];
  std::set<std::string> seen;
  for (const Group& g : kGroups) {
    if (!doc.contains(g.field)) continue;
    const auto& list = doc[g.field];
    if (!list.is_array()) throw InputError(file, g.field, "expected an array of key strings");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = std::string(g.field) + "[" + std::to_string(i) + "]";
      if (!list[i].is_string()) throw InputError(file, where, "expected a key string");
      std::string key;
      try {
        if (db::key_kind(list[i].get<std::string>()) != g.kind) {
          throw std::invalid_argument(std::string("key is not a ") + g.field + " key");
        }
        key = db::canonical_key(list[i].get<std::string>());
      } catch (const std::invalid_argument& e) {
        throw InputError(file, where, e.what());
      }
      if (seen.insert(key).second) plan.kernels.push_back({g.kind, key});
    }
  }
  return plan;
}

ProfilePlan read_plan_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot read the plan file");
  std::stringstream ss;
  ss << in.rdbuf();
  return plan_from_json(ss.str(), path);
}

void write_plan_file(const ProfilePlan& plan, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(path, "", "cannot write the plan file");
  out << plan_to_json(plan);
  if (!out) throw InputError(path, "", "write failed");
}

}  // namespace calisim::profiler
