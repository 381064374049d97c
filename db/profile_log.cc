#include "db/profile_log.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "db/sqlite_handle.h"

namespace calisim::db {
namespace {

// The profiler created this table before db/ knew it; the definition is unchanged, so databases
// written by earlier profilers need no migration.
constexpr const char* kLogSchema = R"sql(
CREATE TABLE IF NOT EXISTS calisim_profile_log (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  device TEXT NOT NULL,
  key TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('measured','skipped')),
  reason TEXT NOT NULL DEFAULT '',
  recorded_at TEXT NOT NULL,
  details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS calisim_profile_log_by_key ON calisim_profile_log(device, key);
)sql";

}  // namespace

bool is_profile_log_status(const std::string& status) { return status == "measured" || status == "skipped"; }

void ensure_profile_log_table(EfficiencyDb& db) { db.connection().exec(kLogSchema); }

bool has_profile_log_table(EfficiencyDb& db) {
  return db.connection().query_int(
             "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'calisim_profile_log'") > 0;
}

std::vector<std::int64_t> runs_with_profile_log(EfficiencyDb& db) {
  std::vector<std::int64_t> out;
  if (!has_profile_log_table(db)) return out;
  Statement st(db.connection(), "SELECT DISTINCT run_id FROM calisim_profile_log ORDER BY run_id");
  while (st.step()) out.push_back(st.int64(0));
  return out;
}

std::vector<ProfileLogEntry> load_profile_log(EfficiencyDb& db, std::int64_t run_id) {
  std::vector<ProfileLogEntry> out;
  if (!has_profile_log_table(db)) return out;
  Statement st(db.connection(),
               "SELECT key, status, reason, recorded_at, details FROM calisim_profile_log WHERE run_id = ? ORDER BY id");
  st.bind(1, run_id);
  while (st.step()) out.push_back({st.text(0), st.text(1), st.text(2), st.text(3), st.text(4)});
  return out;
}

void append_profile_log(EfficiencyDb& db, std::int64_t run_id, const std::string& device,
                        const std::vector<ProfileLogEntry>& entries) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ProfileLogEntry& e = entries[i];
    if (!is_profile_log_status(e.status)) {
      throw std::invalid_argument(fmt::format("profile log entry {} ('{}'): status '{}' is not measured or skipped", i,
                                              e.key, e.status));
    }
    const auto details = nlohmann::json::parse(e.details, nullptr, false);
    if (details.is_discarded() || !details.is_object()) {
      throw std::invalid_argument(fmt::format("profile log entry {} ('{}'): details are not a JSON object", i, e.key));
    }
  }
  if (entries.empty()) return;
  ensure_profile_log_table(db);
  Statement st(db.connection(),
               "INSERT INTO calisim_profile_log (run_id, device, key, status, reason, recorded_at, details) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (const ProfileLogEntry& e : entries) {
    st.bind(1, run_id).bind(2, device).bind(3, e.key).bind(4, e.status).bind(5, e.reason);
    st.bind(6, e.recorded_at).bind(7, e.details);
    st.run();
  }
}

}  // namespace calisim::db
