#include "db/text_dump.h"

#include <gtest/gtest.h>

#include <fstream>
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

}  // namespace
}  // namespace calisim::db
