// Trace runs are never lost moving between files: JSON export -> import, database -> database
// merge and the schema 3 -> 4 migration carry every kernel, copy and memset with its run's
// provenance; CSV, which has no columns for them, refuses rather than drops them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "db/merge.h"
#include "db/schema.h"
#include "db/text_dump.h"
#include "db/trace_store.h"
#include "db_test_util.h"

namespace calisim::db {
namespace {

using testing::gemm_rows;
using testing::run_with;
using testing::test_device;

TraceKernel kernel(std::string name, std::string cls, std::uint64_t start_ns, std::uint64_t end_ns,
                   std::string range = "") {
  TraceKernel k;
  k.name = std::move(name);
  k.kernel_class = std::move(cls);
  k.stream = 7;
  k.grid_x = 132, k.grid_y = 2;
  k.block_x = 384;
  k.start_ns = start_ns;
  k.end_ns = end_ns;
  k.nvtx_range = std::move(range);
  return k;
}

TraceKernel copy(std::string kind, std::int64_t bytes, std::uint64_t start_ns, std::uint64_t end_ns,
                 std::string cls = "memcpy") {
  TraceKernel k = kernel("[CUDA " + cls + " " + kind + "]", cls, start_ns, end_ns);
  k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 0;
  k.bytes = bytes;
  k.copy_kind = std::move(kind);
  return k;
}

std::vector<TraceKernel> step_trace() {
  return {copy("HtoD", 1 << 20, 100, 600),
          kernel("nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NNT", "gemm", 1000, 7000, "forward"),
          kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "nccl", 6000, 10000),
          kernel("void flash::flash_fwd_kernel<128>()", "attention", 6000, 9000, "forward \"attn\", layer 1"),
          copy("device", 4 << 20, 10000, 10400, "memset"),
          copy("DtoH", 2048, 12000, 12100)};
}

RunRecord trace_run(const std::string& host, const std::string& started_at) {
  RunRecord r;
  r.device = "Test GPU";
  r.source = Source::trace;
  r.tool_version = "libcalisim_trace";
  r.host = host;
  r.started_at = started_at;
  r.ended_at = started_at;
  r.notes = "trace of `python train.py`";
  return r;
}

class TraceDumpTest : public testing::ScratchDir {
 protected:
  // A fixture database: measurements, two trace runs (one with copies and memsets), an alias.
  void SetUp() override {
    ScratchDir::SetUp();
    auto db = EfficiencyDb::open(path("src.db"), OpenMode::create);
    db.put_device(test_device());
    db.add_alias("tg", "Test GPU");
    db.insert_run(run_with("Test GPU", Source::measured, "node1", "2025-01-02T00:00:00Z", gemm_rows(3)));
    write_trace_run(db, trace_run("node1", "2026-01-01T00:00:00Z"), step_trace());
    write_trace_run(db, trace_run("node2", "2026-01-01T00:00:00Z"),
                    {kernel("void at::native::vectorized_elementwise_kernel<4>", "elementwise", 5, 9)});
  }
  static std::string json_text(const Dump& d) {
    std::ostringstream ss;
    write_json(ss, d);
    return ss.str();
  }
  Dump dump_of(const std::string& name) {
    auto db = EfficiencyDb::open(path(name), OpenMode::read_only);
    return dump_database(db);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(path(name)) << text; }
};

TEST_F(TraceDumpTest, JsonExportImportRoundTripsTraceRunsAndTheirRecords) {
  const Dump src = dump_of("src.db");
  ASSERT_EQ(src.traces.size(), 2u);
  EXPECT_EQ(src.trace_kernel_count(), 7u);
  const std::string first = json_text(src);
  EXPECT_NE(first.find("\"version\": 2"), std::string::npos);  // a version-1 reader refuses, not drops
  EXPECT_NE(first.find("\"kernels\": ["), std::string::npos);
  write("a.json", first);
  {
    auto db = EfficiencyDb::open(path("copy.db"), OpenMode::create);
    const MergeReport r = merge_into(db, read_json_dump(path("a.json")));
    EXPECT_EQ(r.runs_added, 3);
    EXPECT_EQ(r.rows_added, 3);
    EXPECT_EQ(r.trace_kernels_added, 7);
    EXPECT_EQ(r.conflicts, 0);
  }
  // Equality: the copy exports to the same text, and each run's records load back equal.
  EXPECT_EQ(json_text(dump_of("copy.db")), first);
  auto a = EfficiencyDb::open(path("src.db"), OpenMode::read_only);
  auto b = EfficiencyDb::open(path("copy.db"), OpenMode::read_only);
  const auto runs_a = a.load_runs(), runs_b = b.load_runs();
  ASSERT_EQ(runs_a.size(), runs_b.size());
  std::size_t traces = 0;
  for (const auto& ra : runs_a) {
    for (const auto& rb : runs_b) {
      if (!ra.run.same_provenance(rb.run)) continue;
      EXPECT_EQ(load_trace_kernels(a, ra.run.id), load_trace_kernels(b, rb.run.id)) << ra.run.host;
      traces += ra.run.source == Source::trace;
    }
  }
  EXPECT_EQ(traces, 2u);
}

TEST_F(TraceDumpTest, SummaryGroupsCopiesAndMemsetsByKindWithTheirBandwidth) {
  auto db = EfficiencyDb::open(path("src.db"), OpenMode::read_only);
  std::int64_t run = 0;
  for (const auto& b : db.load_runs()) {
    if (b.run.source == Source::trace && b.run.host == "node1") run = b.run.id;
  }
  const TraceSummary s = summarize_trace(db, run);
  EXPECT_EQ(s.kernels, 6);
  EXPECT_DOUBLE_EQ(s.wall_s, (12100 - 100) * 1e-9);
  ASSERT_EQ(s.copies.size(), 3u);
  EXPECT_EQ(s.copies[0].kernel_class, "memcpy");  // 500 ns, the longest
  EXPECT_EQ(s.copies[0].copy_kind, "HtoD");
  EXPECT_EQ(s.copies[0].bytes, 1 << 20);
  EXPECT_NEAR(s.copies[0].gb_s(), (1 << 20) / 500e-9 * 1e-9, 1e-6);
  EXPECT_EQ(s.copies[1].kernel_class, "memset");
  EXPECT_EQ(s.copies[1].copy_kind, "device");
  EXPECT_EQ(s.copies[2].copy_kind, "DtoH");
  std::int64_t memcpy_bytes = -1;
  for (const auto& c : s.classes) {
    if (c.kernel_class == "memcpy") memcpy_bytes = c.bytes;
    if (c.kernel_class == "gemm") {
      EXPECT_EQ(c.bytes, 0);
    }
  }
  EXPECT_EQ(memcpy_bytes, (1 << 20) + 2048);
}

TEST_F(TraceDumpTest, TraceFreeExportsStayVersion1) {
  auto db = EfficiencyDb::open(path("plain.db"), OpenMode::create);
  db.put_device(test_device());
  db.insert_run(run_with("Test GPU", Source::measured, "n", "2025-01-01T00:00:00Z", gemm_rows(1)));
  EXPECT_NE(json_text(dump_database(db)).find("\"version\": 1,"), std::string::npos);
}

TEST_F(TraceDumpTest, MergingDatabasesCarriesTracesAndCountsDuplicatesAndConflicts) {
  auto out = EfficiencyDb::open(path("merged.db"), OpenMode::create);
  const MergeReport first = merge_into(out, read_any(path("src.db")));  // a database file as input
  EXPECT_EQ(first.trace_kernels_added, 7);
  const MergeReport again = merge_into(out, read_any(path("src.db")));
  EXPECT_EQ(again.trace_kernels_added, 0);
  EXPECT_EQ(again.trace_kernel_duplicates, 7);
  EXPECT_EQ(again.runs_added, 0);
  EXPECT_EQ(again.conflicts, 0);

  // The same run with other records: one conflict, the existing trace kept whole.
  Dump changed = read_any(path("src.db"));
  for (auto& t : changed.traces) t.kernels.back().end_ns += 1;
  const MergeReport c = merge_into(out, changed);
  EXPECT_EQ(c.conflicts, 2);
  EXPECT_EQ(c.trace_kernels_added, 0);
  ASSERT_FALSE(c.messages.empty());
  EXPECT_NE(c.messages[0].find("kept the existing trace"), std::string::npos) << c.messages[0];
  EXPECT_EQ(json_text(dump_database(out)), json_text(dump_of("src.db")));

  // A trace entry without its run is a programming error, refused before anything is written.
  Dump orphan;
  orphan.traces.push_back(TraceRecords{trace_run("elsewhere", "2027-01-01T00:00:00Z"), step_trace()});
  EXPECT_THROW(merge_into(out, orphan), std::invalid_argument);
}

TEST_F(TraceDumpTest, PerDeviceExportKeepsOnlyThatDevicesTraces) {
  auto db = EfficiencyDb::open(path("src.db"), OpenMode::read_write);
  db.put_device(test_device("B GPU"));
  RunRecord other = trace_run("node3", "2026-02-01T00:00:00Z");
  other.device = "B GPU";
  write_trace_run(db, other, {kernel("k", "other", 1, 2)});
  EXPECT_EQ(dump_database(db, "B GPU").trace_kernel_count(), 1u);
  EXPECT_EQ(dump_database(db, "tg").trace_kernel_count(), 7u);
}

TEST_F(TraceDumpTest, CsvRefusesTraceRecordsInsteadOfDroppingThem) {
  std::ostringstream ss;
  EXPECT_THROW(write_csv(ss, dump_of("src.db")), std::invalid_argument);
  Dump without = dump_of("src.db");
  without.traces.clear();
  EXPECT_NO_THROW(write_csv(ss, without));
}

TEST_F(TraceDumpTest, MalformedTraceRecordsNameTheJsonPath) {
  const std::string good = json_text(dump_of("src.db"));
  const auto expect_where = [&](std::string text, const std::string& where) {
    write("bad.json", text);
    try {
      read_json_dump(path("bad.json"));
      FAIL() << "expected InputError at " << where;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
    }
  };
  std::string bad_class = good;
  bad_class.replace(bad_class.find("\"class\":\"memcpy\""), 16, "\"class\":\"copy\"");
  expect_where(bad_class, "$.runs[1].kernels[0].class");
  std::string bad_grid = good;
  bad_grid.replace(bad_grid.find("\"grid\":[0,0,0]"), 14, "\"grid\":[0,0]");
  expect_where(bad_grid, "$.runs[1].kernels[0].grid");
  std::string backwards = good;
  backwards.replace(backwards.find("\"end_ns\":600"), 12, "\"end_ns\":50");
  expect_where(backwards, "$.runs[1].kernels[0].end_ns");
  std::string not_trace = good;
  const auto trace_source = not_trace.find("\"source\":\"trace\"");
  not_trace.replace(trace_source, 16, "\"source\":\"imported\"");
  expect_where(not_trace, "$.runs[1].kernels");
}

TEST_F(TraceDumpTest, MigrationFromVersion3KeepsKernelsAndAddsCopyColumns) {
  {
    Connection conn(path("v3.db"), OpenMode::create);
    migrate_to(conn, 3);
    conn.exec(
        "INSERT INTO devices (name) VALUES ('Old GPU');"
        "INSERT INTO runs (device_id, source) VALUES (1, 'trace');"
        "INSERT INTO trace_kernels (run_id, name, class, device, stream, grid_x, grid_y, grid_z, block_x, block_y, "
        "block_z, start_ns, end_ns, duration_s, nvtx_range) VALUES (1, 'gemm_k', 'gemm', 0, 7, 1, 2, 3, 4, 5, 6, 10, "
        "30, 2e-8, 'fwd')");
    EXPECT_EQ(schema_version(conn), 3);
  }
  auto db = EfficiencyDb::open(path("v3.db"), OpenMode::read_write);
  EXPECT_EQ(schema_version(db.connection()), kSchemaVersion);
  const auto ks = load_trace_kernels(db, 1);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].name, "gemm_k");
  EXPECT_EQ(ks[0].grid_z, 3);
  EXPECT_EQ(ks[0].nvtx_range, "fwd");
  EXPECT_EQ(ks[0].bytes, 0);
  append_trace_kernels(db, 1, {copy("device", 64, 40, 50, "memset")});  // a version-4 class
  const TraceSummary s = summarize_trace(db, 1);
  EXPECT_EQ(s.kernels, 2);
  ASSERT_EQ(s.copies.size(), 1u);
  EXPECT_EQ(s.copies[0].kernel_class, "memset");
  EXPECT_EQ(s.copies[0].bytes, 64);
}

}  // namespace
}  // namespace calisim::db
