#include "db/text_dump.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "core/error.h"
#include "db/json_file.h"
#include "db/merge.h"
#include "db/published_import.h"
#include "db_test_util.h"

namespace calisim::db {
namespace {

using testing::gemm_row;
using testing::gemm_rows;
using testing::run_with;
using testing::test_device;

MeasurementSet every_kind() {
  MeasurementSet s = gemm_rows(3);
  AttentionRow a;
  a.key.heads_q = 16, a.key.seq_q = a.key.seq_kv = 2048;
  a.efficiency = 0.45, a.tflops = 450, a.stats = {1e-3, 9e-4, 1.2e-3, 2e-5, 30};
  s.attention.push_back(a);
  CollectiveRow c;
  c.key = CollectiveKey{CollectiveOp::all_gather, 1 << 24, 8, 8, DType::bf16};
  c.algbw_gb_s = 150, c.busbw_gb_s = 131.25, c.link_gb_s = 450, c.efficiency = 131.25 / 450;
  c.stats = {1e-4, 1e-4, 1e-4, 0, 9};
  s.collective.push_back(c);
  MemoryOpRow m;
  m.key = MemoryOpKey{"swiglu_fwd", 3 << 20};
  m.gb_s = 1234.5, m.efficiency = 0.61725, m.stats = {2e-6, 2e-6, 2e-6, 0, 100};
  s.memory.push_back(m);
  s.memory_fits.push_back(MemoryFit{"default", 1717.9869184, 0.91, 40});
  s.collective_fits.push_back(CollectiveFit{CollectiveOp::all_reduce, LinkTier::intra_node, 8, 32.21, 0.4176, 8.98});
  return s;
}

class TextDumpTest : public testing::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    auto db = EfficiencyDb::open(path("src.db"), OpenMode::create);
    db.put_device(test_device());
    db.put_device(test_device("B GPU"));
    db.add_alias("tg", "Test GPU");
    db.insert_runs({run_with("Test GPU", Source::measured, "node1", "2025-01-02T00:00:00Z", every_kind()),
                    run_with("B GPU", Source::published, "", "2024-01-01T00:00:00Z", gemm_rows(2, 300, 0.7)),
                    run_with("Test GPU", Source::imported, "", "2023-01-01T00:00:00Z", gemm_rows(2, 900, 0.6))});
  }
  Dump source_dump() {
    auto db = EfficiencyDb::open(path("src.db"), OpenMode::read_only);
    return dump_database(db);
  }
  static std::string json_text(const Dump& d) {
    std::ostringstream ss;
    write_json(ss, d);
    return ss.str();
  }
  static std::string csv_text(const Dump& d) {
    std::ostringstream ss;
    write_csv(ss, d);
    return ss.str();
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(path(name)) << text; }
};

TEST_F(TextDumpTest, JsonRoundTripsThroughAFreshDatabase) {
  const std::string first = json_text(source_dump());
  write("a.json", first);
  {
    auto db = EfficiencyDb::open(path("copy.db"), OpenMode::create);
    const MergeReport r = merge_into(db, read_json_dump(path("a.json")));
    EXPECT_EQ(r.devices_added, 2);
    EXPECT_EQ(r.runs_added, 3);
    EXPECT_EQ(r.rows_added, 12);
  }
  auto copy = EfficiencyDb::open(path("copy.db"), OpenMode::read_only);
  EXPECT_EQ(json_text(dump_database(copy)), first);  // stable order, same numbers
  EXPECT_EQ(copy.device("tg").name, "Test GPU");
  // One row per line: a JSON row line names its key.
  EXPECT_NE(first.find("\n      {\"key\":\"gemm m=64 n=1024 k=4096"), std::string::npos) << first;
}

TEST_F(TextDumpTest, CsvRoundTripsRowsAndProvenance) {
  const Dump original = source_dump();
  const std::string text = csv_text(original);
  write("a.csv", text);
  const Dump back = read_csv_dump(path("a.csv"));
  ASSERT_EQ(back.runs.size(), 3u);
  Dump sorted = original;
  sorted.normalize();
  for (std::size_t i = 0; i < 3; ++i) {
    RunRecord a = sorted.runs[i].run, b = back.runs[i].run;
    a.id = b.id = 0;
    EXPECT_TRUE(a.same_provenance(b));
  }
  EXPECT_EQ(csv_text(back), text);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "device,source,tool_version,host,started_at,ended_at,notes,key,median_s,min_s,p90_s,stddev_s,n,tflops,"
            "gb_s,algbw_gb_s,busbw_gb_s,link_gb_s,latency_us,efficiency");
}

TEST_F(TextDumpTest, MalformedCsvNamesLineAndFieldAndImportsNothing) {
  const std::string text = csv_text(source_dump());
  // Break the efficiency of the third data row (line 4).
  std::istringstream in(text);
  std::string out, line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n == 4) line = line.substr(0, line.rfind(',')) + ",fast";
    out += line + "\n";
  }
  write("bad.csv", out);
  try {
    read_csv_dump(path("bad.csv"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "line 4, field 'efficiency'") << e.what();
  }
  write("short.csv", text.substr(0, text.find('\n') + 1) + "Test GPU,measured,x\n");
  try {
    read_csv_dump(path("short.csv"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "line 2") << e.what();
  }
  write("badkey.csv", text.substr(0, text.find('\n') + 1) +
                          "Test GPU,measured,,,,,,gemm m=1 n=2,,,,,,,,,,,,0.5\n");
  try {
    read_csv_dump(path("badkey.csv"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "line 2, field 'key'") << e.what();
  }
}

TEST_F(TextDumpTest, MalformedJsonNamesThePathAndImportsNothing) {
  std::string text = json_text(source_dump());
  const auto pos = text.find("\"efficiency\":", text.find("\"rows\""));
  text.replace(pos, 13, "\"efficiency_\":");
  write("bad.json", text);
  auto db = EfficiencyDb::open(path("t.db"), OpenMode::create);
  try {
    merge_into(db, read_any(path("bad.json")));
    FAIL();
  } catch (const InputError& e) {
    // The misspelt field itself, not only the missing one.
    EXPECT_EQ(e.where(), "$.runs[0].rows[0].efficiency_") << e.what();
  }
  // Without the misspelt field the row lacks its efficiency.
  std::string missing = json_text(source_dump());
  const auto at = missing.find(",\"efficiency\":", missing.find("\"rows\""));
  missing.erase(at, missing.find('}', at) - at);
  write("missing.json", missing);
  try {
    merge_into(db, read_any(path("missing.json")));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "$.runs[0].rows[0].efficiency") << e.what();
  }
  EXPECT_TRUE(db.devices().empty());
}

TEST_F(TextDumpTest, MergeKeepsRunsFromDifferentHostsAndCountsDuplicates) {
  // Rank 0 and rank 1 measured the same keys on different hosts.
  for (const char* host : {"rank0", "rank1"}) {
    auto db = EfficiencyDb::open(path(std::string(host) + ".db"), OpenMode::create);
    db.put_device(test_device());
    db.insert_run(run_with("Test GPU", Source::measured, host, "2025-03-01T00:00:00Z", gemm_rows(4)));
  }
  auto out = EfficiencyDb::open(path("merged.db"), OpenMode::create);
  const MergeReport a = merge_into(out, read_any(path("rank0.db")));
  const MergeReport b = merge_into(out, read_any(path("rank1.db")));
  EXPECT_EQ(a.rows_added + b.rows_added, 8);
  EXPECT_EQ(out.runs().size(), 2u);
  const MergeReport again = merge_into(out, read_any(path("rank0.db")));
  EXPECT_EQ(again.rows_added, 0);
  EXPECT_EQ(again.duplicates, 4);
  EXPECT_EQ(again.conflicts, 0);

  // Same run provenance, same key, other numbers: a conflict, the existing row kept.
  Dump changed = read_any(path("rank0.db"));
  changed.runs[0].rows.gemm[0].efficiency = 0.99;
  changed.runs[0].rows.gemm.push_back(gemm_row(7777, 0.5));
  const MergeReport c = merge_into(out, changed);
  EXPECT_EQ(c.conflicts, 1);
  EXPECT_EQ(c.duplicates, 3);
  EXPECT_EQ(c.rows_added, 1);
  ASSERT_EQ(c.messages.size(), 1u);
  EXPECT_DOUBLE_EQ(out.lookup("Test GPU", to_string(gemm_row(64, 0).key)).at(0).row.gemm[0].efficiency, 0.5);
}

TEST_F(TextDumpTest, PublishedFiguresBecomePublishedRuns) {
  auto db = EfficiencyDb::open(path("src.db"), OpenMode::read_write);
  write("pub.csv",
        "device,key,tflops,gb_s,busbw_gb_s,link_gb_s,source,notes\n"
        "Test GPU,gemm m=2048 n=5120 k=6144 batch=1 dtype=bf16 layout=TN acc=0,810,,,,MAMF table,torch 2.5\n"
        "Test GPU,mem kind=copy bytes=1073741824,,1500,,,gpu-stream,\n"
        "Test GPU,coll op=all_reduce bytes=1073741824 ranks=8 per_node=8 dtype=bf16,,,360,450,nccl-tests,\n");
  const auto runs = read_published_csv(path("pub.csv"), db);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].run.source, Source::published);
  // No timing column: every figure is `unknown` (treated as kernel timing), and says so.
  EXPECT_EQ(runs[0].run.notes, "source: MAMF table; timing: unknown; torch 2.5");
  EXPECT_EQ(published_timing(runs[0].run), PublishedTiming::unknown);
  EXPECT_DOUBLE_EQ(runs[0].rows.gemm.at(0).efficiency, 0.81);
  EXPECT_DOUBLE_EQ(runs[1].rows.memory.at(0).efficiency, 0.75);
  EXPECT_DOUBLE_EQ(runs[2].rows.collective.at(0).efficiency, 0.8);
  EXPECT_DOUBLE_EQ(runs[2].rows.collective.at(0).algbw_gb_s, 360 / 1.75);

  write("pub_bad.csv", "device,key,tflops,source\nTest GPU,gemm m=1 n=1 k=1 batch=1 dtype=bf16 layout=TN acc=0,-3,x\n");
  try {
    read_published_csv(path("pub_bad.csv"), db);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "line 2, field 'tflops'") << e.what();
  }
}

TEST_F(TextDumpTest, PublishedTimingColumnIsKeptPerRun) {
  auto db = EfficiencyDb::open(path("src.db"), OpenMode::read_write);
  write("timed.csv",
        "device,key,tflops,source,timing,notes\n"
        "Test GPU,gemm m=1024 n=1024 k=1024 batch=1 dtype=bf16 layout=TN acc=0,200,crowd,eager_loop,torch.matmul\n"
        "Test GPU,gemm m=4096 n=4096 k=4096 batch=1 dtype=bf16 layout=TN acc=0,700,crowd,kernel,torch.matmul\n");
  const auto runs = read_published_csv(path("timed.csv"), db);
  ASSERT_EQ(runs.size(), 2u);  // same source and notes, different timing: two runs
  EXPECT_EQ(runs[0].run.notes, "source: crowd; timing: eager_loop; torch.matmul");
  EXPECT_EQ(published_timing(runs[0].run), PublishedTiming::eager_loop);
  EXPECT_EQ(published_timing(runs[1].run), PublishedTiming::kernel);
  RunRecord measured;
  measured.notes = "timing: eager_loop";  // only published runs carry a figure's timing
  EXPECT_EQ(published_timing(measured), PublishedTiming::kernel);

  write("timed_bad.csv",
        "device,key,tflops,source,timing\n"
        "Test GPU,gemm m=1 n=1 k=1 batch=1 dtype=bf16 layout=TN acc=0,3,x,python\n");
  try {
    read_published_csv(path("timed_bad.csv"), db);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "line 2, field 'timing'") << e.what();
  }
  write("timed_coll.csv",
        "device,key,busbw_gb_s,link_gb_s,source,timing\n"
        "Test GPU,coll op=all_reduce bytes=1073741824 ranks=8 per_node=8 dtype=bf16,360,450,x,eager_loop\n");
  EXPECT_THROW(read_published_csv(path("timed_coll.csv"), db), InputError);
}

// What `db import --from` JSON used to accept without a word, each refused naming this file and
// the JSON path: row numbers the database would refuse (the error used to name the target
// database), a GEMM efficiency that is not a positive number, a dangling alias (silently dropped), a
// fractional sm_count (truncated), unknown fields, a missing "runs", a started_at that is not a
// timestamp, and a row repeated with other numbers (the second used to be dropped as a "conflict").
TEST_F(TextDumpTest, JsonImportRefusesWhatItUsedToDropOrMisstore) {
  const nlohmann::json good = nlohmann::json::parse(json_text(source_dump()));
  // Index of the run of `source` (the export sorts runs by device, source, started_at).
  const auto run_of = [&](const char* source) {
    for (std::size_t i = 0; i < good["runs"].size(); ++i) {
      if (good["runs"][i]["source"] == source && good["runs"][i]["device"] == "Test GPU") return i;
    }
    return std::size_t{0};
  };
  const std::size_t measured = run_of("measured");
  const std::string rows = fmt::format("$.runs[{}].rows", measured);
  const auto refused = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& where,
                           const std::string& problem) {
    nlohmann::json j = good;
    edit(j);
    write("edited.json", j.dump(1));
    auto db = EfficiencyDb::open(path("target.db"), OpenMode::create);
    try {
      merge_into(db, read_any(path("edited.json")));
      ADD_FAILURE() << "accepted: " << where;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path("edited.json")) << e.what();
      EXPECT_EQ(e.where(), where) << e.what();
      EXPECT_NE(e.problem().find(problem), std::string::npos) << e.what();
    }
    EXPECT_TRUE(db.devices().empty()) << "all or nothing";
  };
  // Row 0 of the measured run is a GEMM row (rows are ordered by kind, then key text).
  ASSERT_EQ(good["runs"][measured]["rows"][0]["key"].get<std::string>().rfind("gemm ", 0), 0u);
  refused([&](nlohmann::json& j) { j["runs"][measured]["rows"][0]["efficiency"] = -1; }, rows + "[0].efficiency",
          "is not a finite number above 0");
  refused([&](nlohmann::json& j) { j["runs"][measured]["rows"][0]["efficiency"] = 0; }, rows + "[0].efficiency",
          "is not a finite number above 0");
  refused([&](nlohmann::json& j) { j["runs"][measured]["rows"][0]["median_s"] = -1e-3; }, rows + "[0].median_s",
          ">= 0");
  refused([&](nlohmann::json& j) { j["runs"][measured]["rows"][0]["gb_s"] = 10; }, rows + "[0].gb_s",
          "is not a field of a gemm row");
  refused([&](nlohmann::json& j) { j["aliases"][0]["device"] = "Nope GPU"; }, "$.aliases[0].device",
          "'Nope GPU' is not a device of this file");
  refused([&](nlohmann::json& j) { j["devices"][1]["sm_count"] = 1.5; }, "$.devices[1].sm_count",
          "expected an integer");
  refused([&](nlohmann::json& j) { j["devices"][1]["hbm_gb_s"] = -2; }, "$.devices[1].hbm_gb_s", ">= 0");
  refused([&](nlohmann::json& j) { j["devices"][1]["hbm"] = 2000; }, "$.devices[1].hbm", "unknown field");
  refused([&](nlohmann::json& j) { j["comment"] = "x"; }, "$.comment", "unknown field");
  refused([&](nlohmann::json& j) { j["runs"][0]["host_name"] = "x"; }, "$.runs[0].host_name", "unknown field");
  refused([&](nlohmann::json& j) { j.erase("runs"); }, "$.runs", "is required");
  refused([&](nlohmann::json& j) { j["runs"][0]["started_at"] = "yesterday"; }, "$.runs[0].started_at",
          "is not an ISO 8601 UTC time");
  refused([&](nlohmann::json& j) { j["runs"][0]["ended_at"] = "2025-13-01T00:00:00Z"; }, "$.runs[0].ended_at",
          "ISO 8601");
  refused(
      [&](nlohmann::json& j) {
        nlohmann::json again = j["runs"][measured]["rows"][0];
        again["efficiency"] = 0.11;
        j["runs"][measured]["rows"].push_back(again);
      },
      fmt::format("{}[{}]", rows, good["runs"][measured]["rows"].size()),
      fmt::format("repeats {}[0] of the same run with other numbers (efficiency", rows));

  refused([&](nlohmann::json& j) { j["runs"][0]["started_at"] = "2025-01-02T00:00:00.250Z"; }, "$.runs[0].started_at",
          "ISO 8601");  // sorts before "...00Z" as text, though later

  // Still accepted: an exact repeat (a duplicate, counted), a memory efficiency above 1 (an
  // L2-resident copy can beat HBM), another valid time, and no "aliases" / "devices" at all.
  nlohmann::json j = good;
  j["runs"][measured]["rows"].push_back(j["runs"][measured]["rows"][0]);
  for (auto& row : j["runs"][measured]["rows"]) {
    if (row["key"].get<std::string>().rfind("mem ", 0) == 0) row["efficiency"] = 1.2;
  }
  j["runs"][measured]["started_at"] = "2025-12-31T23:59:59Z";
  write("fine.json", j.dump(1));
  auto db = EfficiencyDb::open(path("fine.db"), OpenMode::create);
  const MergeReport r = merge_into(db, read_any(path("fine.json")));
  EXPECT_EQ(r.duplicates, 1);
  EXPECT_EQ(r.conflicts, 0) << (r.messages.empty() ? "" : r.messages[0]);
  j.erase("aliases");
  j.erase("devices");
  write("bare.json", j.dump(1));
  EXPECT_NO_THROW(read_json_dump(path("bare.json")));
}

// The CSV reader: unknown columns, a conflicting repeated row (both lines named), started_at and
// a GEMM efficiency above 1 are refused by line and field.
TEST_F(TextDumpTest, CsvImportRefusesUnknownColumnsConflictsAndBadTimes) {
  const std::string text = csv_text(source_dump());
  const std::string header = text.substr(0, text.find('\n'));
  std::istringstream in(text);
  std::string line, gemm;
  while (std::getline(in, line)) {
    if (line.find(",gemm m=64 ") != std::string::npos && line.find("Test GPU,measured") == 0) gemm = line;
  }
  ASSERT_FALSE(gemm.empty()) << text;
  const auto refused = [&](const std::string& body, const std::string& where, const std::string& problem) {
    write("edited.csv", body);
    try {
      read_csv_dump(path("edited.csv"));
      ADD_FAILURE() << "accepted: " << body;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
      EXPECT_NE(e.problem().find(problem), std::string::npos) << e.what();
    }
  };
  refused(header + ",extra\n" + gemm + ",1\n", "line 1", "unknown column 'extra'");
  const std::string other = gemm.substr(0, gemm.rfind(',')) + ",0.11";
  refused(header + "\n" + gemm + "\n" + other + "\n", "line 3", "repeats line 2 of the same run with other numbers");
  EXPECT_NO_THROW(read_csv_dump((write("same.csv", header + "\n" + gemm + "\n" + gemm + "\n"), path("same.csv"))));
  std::string late = gemm;
  late.replace(late.find("2025-01-02T00:00:00Z"), 20, "last tuesday");
  refused(header + "\n" + late + "\n", "line 2, field 'started_at'", "is not an ISO 8601 UTC time");
  refused(header + "\n" + gemm.substr(0, gemm.rfind(',')) + ",-0.5\n", "line 2, field 'efficiency'", "above 0");
}

// A device the database knows by name only (as a CSV import leaves it) takes the specs of a
// JSON export merged on top; a device that has specs keeps its own.
TEST_F(TextDumpTest, MergeFillsInTheSpecsOfNameOnlyDevices) {
  write("a.csv", csv_text(source_dump()));
  write("a.json", json_text(source_dump()));
  auto db = EfficiencyDb::open(path("bare.db"), OpenMode::create);
  merge_into(db, read_csv_dump(path("a.csv")));
  EXPECT_EQ(db.device("Test GPU").peak_tflops[static_cast<int>(DType::bf16)], 0);
  const MergeReport r = merge_into(db, read_json_dump(path("a.json")));
  EXPECT_EQ(r.device_specs_filled, 2);
  EXPECT_EQ(r.devices_added, 0);
  EXPECT_EQ(db.device("Test GPU"), test_device());
  EXPECT_EQ(db.device("tg").name, "Test GPU");  // the alias came with it

  Dump other = read_json_dump(path("a.json"));
  other.devices[1].hbm_gb_s = 1;
  const MergeReport again = merge_into(db, other);
  EXPECT_EQ(again.device_specs_filled, 0);
  EXPECT_EQ(db.device("Test GPU").hbm_gb_s, 2000);
  // A dump built in code with an alias of a device nowhere: reported, not silently dropped.
  Dump dangling;
  dangling.aliases.emplace_back("ghost", "Ghost GPU");
  const MergeReport g = merge_into(db, dangling);
  ASSERT_EQ(g.messages.size(), 1u);
  EXPECT_NE(g.messages[0].find("alias 'ghost' names device 'Ghost GPU'"), std::string::npos) << g.messages[0];
}

}  // namespace
}  // namespace calisim::db
