// The profiler's session log (db/profile_log.h: what was skipped and why, the timer, throttling)
// moves with its run: JSON export -> import gives the same entries, merging two databases keeps
// both sessions' logs, old export versions still load, and CSV refuses rather than drops it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "db/merge.h"
#include "db/profile_log.h"
#include "db/text_dump.h"
#include "db_test_util.h"

namespace calisim::db {
namespace {

using testing::gemm_rows;
using testing::run_with;
using testing::test_device;

std::vector<ProfileLogEntry> session(const std::string& at) {
  return {{"gemm m=64 n=1024 k=4096 batch=1 dtype=bf16 layout=TN acc=0", "measured", "", at,
           R"({"timer":"cupti","stop":"converged","n":41,"mean_s":1.2345678901234568e-05,"rel_stddev":0.0031,)"
           R"("before":{"sm_clock_mhz":1980,"power_w":612.5},"after":null,"throttled":false})"},
          {"attn b=1 hq=128 hkv=128 sq=65536 skv=65536 dqk=192 dv=128 causal=1 dtype=bf16 dir=bwd", "skipped",
           "out of memory: cudaMalloc of 68.7 GB", at, R"({"timer":"cupti","before":null,"after":null,"throttled":false})"},
          {"gemm m=65 n=1024 k=4096 batch=1 dtype=bf16 layout=TN acc=0", "measured", "", at,
           R"({"timer":"cuda_events","timer_note":"CUPTI held by another client","throttled":true,)"
           R"("throttle_why":"sm clock 1410 < 0.9 x 1980 MHz","before":null,"after":null})"}};
}

class ProfileLogDumpTest : public testing::ScratchDir {
 protected:
  // A database with one profiler session (run) of `host`, its rows and its log.
  std::int64_t make_db(const std::string& name, const std::string& host, const std::vector<ProfileLogEntry>& log) {
    auto db = EfficiencyDb::open(path(name), OpenMode::create);
    db.add_device_if_missing(test_device());
    const std::int64_t run =
        db.insert_run(run_with("Test GPU", Source::measured, host, "2026-11-21T10:00:00Z", gemm_rows(2)));
    append_profile_log(db, run, "Test GPU", log);
    return run;
  }
  Dump dump_of(const std::string& name) {
    auto db = EfficiencyDb::open(path(name), OpenMode::read_only);
    return dump_database(db);
  }
  static std::string json_text(const Dump& d) {
    std::ostringstream ss;
    write_json(ss, d);
    return ss.str();
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(path(name)) << text; }
  // Every entry of every run of a database, by host.
  std::map<std::string, std::vector<ProfileLogEntry>> logs(const std::string& name) {
    auto db = EfficiencyDb::open(path(name), OpenMode::read_only);
    std::map<std::string, std::vector<ProfileLogEntry>> out;
    for (const auto& b : db.load_runs()) {
      auto entries = load_profile_log(db, b.run.id);
      out[b.run.host].insert(out[b.run.host].end(), entries.begin(), entries.end());
    }
    return out;
  }
};

TEST_F(ProfileLogDumpTest, JsonExportImportGivesIdenticalLogRows) {
  make_db("src.db", "node1", session("2026-11-21T10:00:01Z"));
  const Dump src = dump_of("src.db");
  ASSERT_EQ(src.profile_logs.size(), 1u);
  EXPECT_EQ(src.profile_log_count(), 3u);
  const std::string text = json_text(src);
  EXPECT_NE(text.find("\"version\": 3"), std::string::npos);  // older readers refuse, not drop
  EXPECT_NE(text.find("\"profile_log\": ["), std::string::npos);
  // Details are written as JSON objects (readable diffs), not as escaped strings.
  EXPECT_NE(text.find("\"details\":{\"timer\":\"cupti\""), std::string::npos);
  write("a.json", text);
  {
    auto db = EfficiencyDb::open(path("copy.db"), OpenMode::create);
    const MergeReport r = merge_into(db, read_json_dump(path("a.json")));
    EXPECT_EQ(r.runs_added, 1);
    EXPECT_EQ(r.profile_log_added, 3);
  }
  EXPECT_EQ(logs("copy.db"), logs("src.db"));
  EXPECT_EQ(logs("copy.db")["node1"], session("2026-11-21T10:00:01Z"));  // details text byte for byte
  EXPECT_EQ(json_text(dump_of("copy.db")), text);
}

TEST_F(ProfileLogDumpTest, MergeKeepsBothSessionsLogsAndAddsEachEntryOnce) {
  make_db("a.db", "node1", session("2026-11-21T10:00:01Z"));
  auto second = session("2026-11-21T11:00:00Z");
  second.pop_back();
  make_db("b.db", "node2", second);
  auto db = EfficiencyDb::open(path("out.db"), OpenMode::create);
  EXPECT_EQ(merge_into(db, read_any(path("a.db"))).profile_log_added, 3);
  EXPECT_EQ(merge_into(db, read_any(path("b.db"))).profile_log_added, 2);
  const MergeReport again = merge_into(db, read_any(path("a.db")));
  EXPECT_EQ(again.profile_log_added, 0);
  EXPECT_EQ(again.profile_log_duplicates, 3);
  // A copy of node1's session taken before it resumed and logged one more shape: only that entry.
  auto resumed = session("2026-11-21T10:00:01Z");
  resumed.push_back({"gemm m=66 n=1024 k=4096 batch=1 dtype=bf16 layout=TN acc=0", "skipped",
                     "cuBLASLt: no algorithm for this shape", "2026-11-21T12:00:00Z", "{}"});
  make_db("resumed.db", "node1", resumed);
  const MergeReport r = merge_into(db, read_any(path("resumed.db")));
  EXPECT_EQ(r.profile_log_added, 1);
  EXPECT_EQ(r.profile_log_duplicates, 3);
  EXPECT_EQ(r.conflicts, 0);
  const auto merged = logs("out.db");
  EXPECT_EQ(merged.at("node1"), resumed);
  EXPECT_EQ(merged.at("node2"), second);
}

TEST_F(ProfileLogDumpTest, OldVersionsStillLoadAndMalformedLogsAreRefusedByPath) {
  const std::string v1 = R"({"format": "calisim-efficiency-db", "version": 1, "devices": [{"name": "Test GPU"}],
    "runs": [{"device": "Test GPU", "source": "measured", "host": "h", "started_at": "2026-11-21T10:00:00Z",
              "rows": [{"key": "gemm m=64 n=1024 k=4096 batch=1 dtype=bf16 layout=TN acc=0", "median_s": 1e-05,
                        "efficiency": 0.5}]}]})";
  write("v1.json", v1);
  const Dump d = read_json_dump(path("v1.json"));
  EXPECT_EQ(d.runs.size(), 1u);
  EXPECT_TRUE(d.profile_logs.empty());
  // Without a log an export stays version 1, readable by older calisims.
  EXPECT_NE(json_text(d).find("\"version\": 1"), std::string::npos);

  const auto refused = [&](const std::string& text, const std::string& where) {
    write("bad.json", text);
    try {
      read_json_dump(path("bad.json"));
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
    }
  };
  const std::string head = R"({"format": "calisim-efficiency-db", "version": VERSION, "runs": [{"device": "Test GPU",
    "source": "measured", "profile_log": [LOG]}]})";
  const auto file = [&](const std::string& version, const std::string& log) {
    std::string t = head;
    t.replace(t.find("VERSION"), 7, version);
    t.replace(t.find("LOG"), 3, log);
    return t;
  };
  const std::string ok = R"({"key": "k", "status": "skipped", "reason": "oom", "recorded_at": "t", "details": {}})";
  write("v3.json", file("3", ok));
  EXPECT_EQ(read_json_dump(path("v3.json")).profile_log_count(), 1u);
  refused(file("2", ok), "$.runs[0].profile_log");
  refused(file("3", R"({"key": "k", "status": "failed", "reason": "", "recorded_at": "t", "details": {}})"),
          "$.runs[0].profile_log[0].status");
  refused(file("3", R"({"key": "k", "status": "skipped", "reason": "", "recorded_at": "t", "details": "{}"})"),
          "$.runs[0].profile_log[0].details");
  refused(file("3", R"({"status": "skipped", "reason": "", "recorded_at": "t", "details": {}})"),
          "$.runs[0].profile_log[0].key");
  refused(file("4", ok), "$.version");
}

TEST_F(ProfileLogDumpTest, CsvRefusesALogRatherThanDroppingIt) {
  make_db("src.db", "node1", session("t"));
  Dump d = dump_of("src.db");
  std::ostringstream ss;
  EXPECT_THROW(write_csv(ss, d), std::invalid_argument);
  d.profile_logs.clear();
  EXPECT_NO_THROW(write_csv(ss, d));
}

TEST_F(ProfileLogDumpTest, EntriesWithAnUnknownStatusOrNonObjectDetailsAreNotWritten) {
  auto db = EfficiencyDb::open(path("x.db"), OpenMode::create);
  db.add_device_if_missing(test_device());
  const std::int64_t run = db.insert_run(run_with("Test GPU", Source::measured, "h", "t", gemm_rows(1)));
  EXPECT_THROW(append_profile_log(db, run, "Test GPU", {{"k", "failed", "", "t", "{}"}}), std::invalid_argument);
  EXPECT_THROW(append_profile_log(db, run, "Test GPU", {{"k", "skipped", "", "t", "[1]"}}), std::invalid_argument);
  EXPECT_TRUE(load_profile_log(db, run).empty());
  EXPECT_TRUE(runs_with_profile_log(db).empty());
}

}  // namespace
}  // namespace calisim::db
