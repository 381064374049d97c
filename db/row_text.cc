#include "db/row_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "core/error.h"
#include "db/key_text.h"
#include "db/row_tables.h"

namespace calisim::db {
namespace {

template <class S, class F>
void visit_stats(S& s, F& f) {
  f("median_s", s.median_s);
  f("min_s", s.min_s);
  f("p90_s", s.p90_s);
  f("stddev_s", s.stddev_s);
  f("n", s.n);
}

// Calls f(name, member) for each number of a row, const or not.
template <class R, class F>
void visit_numbers(R& r, F&& f) {
  using T = std::remove_const_t<R>;
  if constexpr (std::is_same_v<T, GemmRow> || std::is_same_v<T, AttentionRow>) {
    visit_stats(r.stats, f);
    f("tflops", r.tflops);
  } else if constexpr (std::is_same_v<T, CollectiveRow>) {
    visit_stats(r.stats, f);
    f("algbw_gb_s", r.algbw_gb_s);
    f("busbw_gb_s", r.busbw_gb_s);
    f("link_gb_s", r.link_gb_s);
  } else if constexpr (std::is_same_v<T, MemoryOpRow>) {
    visit_stats(r.stats, f);
    f("gb_s", r.gb_s);
  } else if constexpr (std::is_same_v<T, MemoryFit>) {
    f("gb_s", r.bandwidth_gb_s);
  } else {
    f("link_gb_s", r.link_gb_s);
  }
  f("efficiency", r.efficiency);
  if constexpr (std::is_same_v<T, MemoryFit> || std::is_same_v<T, CollectiveFit>) f("latency_us", r.latency_us);
}

// Sets the identifying fields of a row from its key text.
void set_key(GemmRow& r, const std::string& k) { r.key = parse_gemm_key(k); }
void set_key(AttentionRow& r, const std::string& k) { r.key = parse_attention_key(k); }
void set_key(CollectiveRow& r, const std::string& k) { r.key = parse_collective_key(k); }
void set_key(MemoryOpRow& r, const std::string& k) { r.key = parse_memory_key(k); }
void set_key(MemoryFit& r, const std::string& k) { r = parse_memory_fit_key(k); }
void set_key(CollectiveFit& r, const std::string& k) { r = parse_collective_fit_key(k); }

template <class Row>
constexpr const char* kind_name() {
  if constexpr (std::is_same_v<Row, GemmRow>) return "gemm";
  if constexpr (std::is_same_v<Row, AttentionRow>) return "attn";
  if constexpr (std::is_same_v<Row, CollectiveRow>) return "coll";
  if constexpr (std::is_same_v<Row, MemoryOpRow>) return "mem";
  if constexpr (std::is_same_v<Row, MemoryFit>) return "memfit";
  return "collfit";
}

template <class Row>
void read_row(const nlohmann::json& obj, const std::string& key, std::vector<Row>& out, const std::string& file,
              const std::string& where) {
  Row r;
  try {
    set_key(r, key);
  } catch (const std::invalid_argument& e) {
    throw InputError(file, where + "key", e.what());
  }
  // A field this kind of row does not have (a typo, or another kind's number) would otherwise be
  // dropped without a word.
  std::vector<std::string> fields = {"key"};
  visit_numbers(r, [&](const char* name, auto&) { fields.emplace_back(name); });
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(fields.begin(), fields.end(), it.key()) == fields.end()) {
      throw InputError(file, where + it.key(),
                       fmt::format("is not a field of a {} row (expected {})", kind_name<Row>(), fmt::join(fields, ", ")));
    }
  }
  bool has_efficiency = false;
  visit_numbers(r, [&](const char* name, auto& member) {
    auto it = obj.find(name);
    if (it == obj.end() || it->is_null()) return;
    using M = std::remove_reference_t<decltype(member)>;
    if (!it->is_number() || (std::is_integral_v<M> && !it->is_number_integer())) {
      throw InputError(file, where + name,
                       fmt::format("'{}' is not {}", it->dump(), std::is_integral_v<M> ? "an integer" : "a number"));
    }
    member = it->get<M>();
    const bool efficiency = std::string_view(name) == "efficiency";
    has_efficiency = has_efficiency || efficiency;
    // Times, rates, counts and latencies are never negative (0 = not given, see row_text.h).
    if (!efficiency && !(std::isfinite(static_cast<double>(member)) && member >= 0)) {
      throw InputError(file, where + name, fmt::format("{} must be a finite number >= 0", it->dump()));
    }
  });
  if (!has_efficiency) throw InputError(file, where + "efficiency", "is required");
  // The same rule as the database's (efficiency_db.h validate_rows), checked here so that the
  // error names this file and the row's path rather than the database being written. No upper
  // bound, as in the database: whatever the database holds must survive an export and re-import
  // (a GEMM above its datasheet peak points at a wrong peak or FLOP count, which the predictor's
  // fits bound; refusing the row here would lose the measurement).
  if (!std::isfinite(r.efficiency) || r.efficiency <= 0) {
    throw InputError(file, where + "efficiency", fmt::format("{} is not a finite number above 0", r.efficiency));
  }
  out.push_back(std::move(r));
}

}  // namespace

const std::vector<std::string>& row_number_fields() {
  static const std::vector<std::string> fields = {"median_s",   "min_s",      "p90_s",     "stddev_s",
                                                  "n",          "tflops",     "gb_s",      "algbw_gb_s",
                                                  "busbw_gb_s", "link_gb_s",  "latency_us", "efficiency"};
  return fields;
}

void for_each_row_text(const MeasurementSet& rows,
                       const std::function<void(const std::string& key, const nlohmann::ordered_json&)>& f) {
  detail::for_each_table(rows, [&](auto, const auto& list) {
    std::vector<std::pair<std::string, nlohmann::ordered_json>> items;
    for (const auto& r : list) {
      nlohmann::ordered_json obj;
      const std::string key = detail::row_key(r);
      obj["key"] = key;
      visit_numbers(r, [&](const char* name, const auto& member) { obj[name] = member; });
      items.emplace_back(key, std::move(obj));
    }
    std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [key, obj] : items) f(key, obj);
  });
}

void add_row_from_text(const nlohmann::json& object, MeasurementSet& out, const std::string& file,
                       const std::string& where) {
  auto k = object.find("key");
  if (k == object.end() || !k->is_string()) throw InputError(file, where + "key", "a text key is required");
  const std::string key = k->get<std::string>();
  KeyKind kind;
  try {
    kind = key_kind(key);
  } catch (const std::invalid_argument& e) {
    throw InputError(file, where + "key", e.what());
  }
  switch (kind) {
    case KeyKind::gemm: return read_row(object, key, out.gemm, file, where);
    case KeyKind::attention: return read_row(object, key, out.attention, file, where);
    case KeyKind::collective: return read_row(object, key, out.collective, file, where);
    case KeyKind::memory: return read_row(object, key, out.memory, file, where);
    case KeyKind::memory_fit: return read_row(object, key, out.memory_fits, file, where);
    case KeyKind::collective_fit: return read_row(object, key, out.collective_fits, file, where);
  }
}

}  // namespace calisim::db
