// `calisim profile` end to end: plan files, and `run` refusing cleanly where it cannot measure.
#include <gtest/gtest.h>

#include "tests/support/command_output.h"
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "db/sqlite_handle.h"
#include "profiler/profile_plan.h"
#include "profiler/trace_copies.h"
#include "profiler/trace_writer.h"

namespace {

using CmdResult = calisim::testing_support::CommandResult;
using calisim::testing_support::expect_refused;
using calisim::testing_support::run_calisim;

// A trace directory and a database under the test's temporary folder, both emptied, and the
// Kineto fixture `fixture` (tests/data/kineto/) the test derives its rank traces from.
struct KinetoRanks {
  std::string dir, db;
  nlohmann::json base;
};
KinetoRanks kineto_ranks(const std::string& name, const std::string& fixture) {
  KinetoRanks k{::testing::TempDir() + name, ::testing::TempDir() + name + ".db", {}};
  std::filesystem::remove_all(k.dir);
  std::filesystem::create_directories(k.dir);
  std::remove(k.db.c_str());
  std::ifstream in(std::string(CALISIM_TEST_DATA_DIR) + "/kineto/" + fixture);
  k.base = nlohmann::json::parse(in);
  return k;
}

TEST(ProfileCli, PlanWritesAReadablePlanFile) {
  const std::string path = ::testing::TempDir() + "cli_plan.json";
  const CmdResult r = run_calisim("profile plan --model llama3-8b --strategy tp2_pp2_dp2_mbs1 --system h100-sxm -o " + path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("GEMM"), std::string::npos) << r.out;
  const calisim::profiler::ProfilePlan plan = calisim::profiler::read_plan_file(path);
  EXPECT_GT(plan.count(calisim::db::KeyKind::gemm), 0u);
  EXPECT_GT(plan.count(calisim::db::KeyKind::collective), 0u);
}

// `profile plan --runs`: the kernels of the rows calisim validate maps to one system. The fixture
// has one H100 row (R0287), one A100 row (R0021) and one validate cannot simulate (R0145): the plan
// holds the H100 row's kernels only, the summary counts the other two; the plan is the one the
// row's dumped configs give; a system no row maps to, or --runs with --model, exits 2.
TEST(ProfileCli, PlanFromMeasuredRunsTakesTheRowsOfOneSystem) {
  const std::string runs = std::string(CALISIM_TEST_DATA_DIR) + "/validation/three_runs.csv";
  const std::string path = ::testing::TempDir() + "cli_runs_plan.json";
  const CmdResult r = run_calisim("profile plan --runs " + runs + " --system h100-sxm -o " + path + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"planned\": 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"other_system\": 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"not_simulated\": 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"R0145\""), std::string::npos) << r.out;  // which one, for validate to explain
  const calisim::profiler::ProfilePlan plan = calisim::profiler::read_plan_file(path);
  EXPECT_GT(plan.count(calisim::db::KeyKind::gemm), 0u);
  EXPECT_GT(plan.count(calisim::db::KeyKind::attention), 0u);
  // The same kernels as planning the row's own configs, dumped by validate.
  const std::string dir = ::testing::TempDir() + "cli_runs_plan_dump";
  ASSERT_EQ(run_calisim("validate --runs " + runs + " --source torchtitan --dump-inputs " + dir).code, 0);
  const std::string direct = ::testing::TempDir() + "cli_runs_plan_direct.json";
  const CmdResult d = run_calisim("profile plan --model " + dir + "/R0287.model.json --strategy " + dir +
                          "/R0287.strategy.json --system " + dir + "/R0287.system.json -o " + direct);
  ASSERT_EQ(d.code, 0) << d.out;
  EXPECT_EQ(calisim::profiler::read_plan_file(direct).kernels, plan.kernels);
  const CmdResult none = run_calisim("profile plan --runs " + runs + " --system mi300x");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.out.find("no simulated row maps to system 'mi300x'"), std::string::npos) << none.out;
  EXPECT_EQ(run_calisim("profile plan --runs " + runs + " --model llama3-8b").code, 2);
  EXPECT_EQ(run_calisim("profile plan --model llama3-8b").code, 2);
}

TEST(ProfileCli, RunWithoutAUsableGpuExplainsWhy) {
  const std::string db = ::testing::TempDir() + "cli_run.db";
  const CmdResult r = run_calisim("profile run --sweep memory --db " + db);
#ifdef CALISIM_TEST_HAVE_CUDA
  if (r.code == 0) GTEST_SKIP() << "a GPU is present: the sweep ran";
  expect_refused(r, "no CUDA device");
#else
  expect_refused(r, "built without CUDA");
  EXPECT_NE(r.out.find("CALISIM_CUDA=ON"), std::string::npos) << r.out;
#endif
}

// `profile sequence --dry-run` lists one layer's kernels and the simulator's time for each, in any
// build: JSON with the layer, the counts and every kernel; the table's sum; --out writes the same
// document. A layer kind the model lacks and a half config choice exit 2.
TEST(ProfileCli, SequenceDryRunListsTheLayersKernelsWithSimulatedTimes) {
  const std::string out = ::testing::TempDir() + "cli_sequence.json";
  std::remove(out.c_str());
  const CmdResult r = calisim::testing_support::run_calisim_stdout(
      "profile sequence --model llama3-70b --strategy llama3-70b-64gpu --system h100-sxm --dry-run --json -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["calisim_sequence"], 1);
  EXPECT_EQ(j["layer"], "dense");
  const auto& k = j["kernels"];
  ASSERT_EQ(k.size(), j["forward_kernels"].get<std::size_t>() + j["backward_kernels"].get<std::size_t>());
  EXPECT_GT(j["collectives_left_out"].get<int>(), 0);  // tp 8 with sequence parallelism
  double sum = 0;
  for (const auto& e : k) {
    EXPECT_GT(e["simulated_s"].get<double>(), 0) << e["key"];
    sum += e["simulated_s"].get<double>();
  }
  EXPECT_NEAR(j["simulated_s"].get<double>(), sum, 1e-12);
  EXPECT_EQ(k.front()["role"], "fwd");
  EXPECT_EQ(k.back()["role"], "bwd");
  std::ifstream f(out);
  ASSERT_TRUE(f.good());
  EXPECT_EQ(nlohmann::json::parse(f), j);

  const CmdResult table = run_calisim("profile sequence --model llama3-70b --strategy llama3-70b-64gpu --dry-run");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("core_attention"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(" sum "), std::string::npos) << table.out;

  expect_refused(run_calisim("profile sequence --model llama3-70b --strategy llama3-70b-64gpu --layer moe --dry-run"),
                 "no MoE layer");
  expect_refused(run_calisim("profile sequence --model llama3-70b --strategy llama3-70b-64gpu --layer mlp --dry-run"),
                 "expected auto, dense or moe");
  expect_refused(run_calisim("profile sequence --model llama3-70b --dry-run"), "--strategy");
}

// Without a GPU (or without CUDA) the measured sequence is refused, saying what --dry-run does.
TEST(ProfileCli, SequenceWithoutAUsableGpuExplainsWhy) {
  const CmdResult r = run_calisim("profile sequence --model llama3-8b --strategy llama3-8b-8gpu --sustain-s 1");
#ifdef CALISIM_TEST_HAVE_CUDA
  if (r.code == 0) GTEST_SKIP() << "a GPU is present: the sequence ran";
  expect_refused(r, "no CUDA device");
#else
  expect_refused(r, "built without CUDA");
#endif
  EXPECT_NE(r.out.find("--dry-run"), std::string::npos) << r.out;
}

// `calisim db show` summarises a trace run (libcalisim_trace.so's output) by kernel class.
TEST(ProfileCli, DbShowSummarisesATraceRunByClass) {
  const std::string db = ::testing::TempDir() + "cli_trace.db";
  std::remove(db.c_str());
  std::vector<calisim::db::TraceKernel> ks(3);
  ks[0].name = "nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NNT";
  ks[0].start_ns = 0, ks[0].end_ns = 3000;
  ks[1].name = "ncclDevKernel_AllGather_RING_LL";
  ks[1].start_ns = 1000, ks[1].end_ns = 2000;
  ks[2].name = "_ZN5flash16flash_fwd_kernelILi128EEEvv";
  ks[2].start_ns = 3000, ks[2].end_ns = 4000;
  for (auto& k : ks) calisim::profiler::finish_trace_kernel(k);
  calisim::profiler::store_trace(db, ks, {{0, "NVIDIA H100 80GB HBM3"}},
                                 {"cli test", "2026-01-01T00:00:00Z"});
  const CmdResult r = run_calisim("db show " + db + " 'NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("trace run 1: 3 kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gemm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("60.0%"), std::string::npos) << "gemm is 3 of 5 us: " << r.out;
  EXPECT_NE(r.out.find("attention"), std::string::npos) << r.out;
  const CmdResult j = run_calisim("db show --json " + db + " 'NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find("\"traces\""), std::string::npos) << j.out;
}

// A trace with copies and memsets: `db show` lists them by kind with their bandwidth; `db export`
// carries the trace in JSON (and `db import` brings it back whole); CSV refuses unless told to
// leave the trace out.
TEST(ProfileCli, TraceCopiesAreShownAndTravelThroughJsonExport) {
  const std::string db = ::testing::TempDir() + "cli_trace_copies.db";
  const std::string copy_db = ::testing::TempDir() + "cli_trace_copies_back.db";
  const std::string json = ::testing::TempDir() + "cli_trace_copies.json";
  const std::string csv = ::testing::TempDir() + "cli_trace_copies.csv";
  for (const auto& f : {db, copy_db}) std::remove(f.c_str());
  calisim::db::TraceKernel gemm;
  gemm.name = "nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NNT";
  gemm.start_ns = 2000, gemm.end_ns = 4000;
  calisim::profiler::finish_trace_kernel(gemm);
  const std::vector<calisim::db::TraceKernel> ks = {
      calisim::profiler::copy_record({1, 2'000'000, 0, 1000, 0, 7, -1, -1}), gemm,
      calisim::profiler::memset_record({3, 1'000'000, 4000, 5000, 0, 7})};
  calisim::profiler::store_trace(db, ks, {{0, "NVIDIA H100 80GB HBM3"}},
                                 {"cli test", "2026-01-01T00:00:00Z"});
  const CmdResult show = run_calisim("db show " + db + " 'NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("trace run 1: 1 kernels, 2 copies / memsets"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("HtoD"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("2000"), std::string::npos) << "2 MB in 1 us = 2000 GB/s: " << show.out;
  EXPECT_NE(show.out.find("memset"), std::string::npos) << show.out;

  const CmdResult exp = run_calisim("db export " + db + " " + json);
  ASSERT_EQ(exp.code, 0) << exp.out;
  EXPECT_NE(exp.out.find("3 trace record(s)"), std::string::npos) << exp.out;
  const CmdResult imp = run_calisim("db import " + copy_db + " --from " + json);
  ASSERT_EQ(imp.code, 0) << imp.out;
  EXPECT_NE(imp.out.find("trace records: 3 added"), std::string::npos) << imp.out;
  const CmdResult show_back = run_calisim("db show " + copy_db + " 'NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(show_back.code, 0) << show_back.out;
  EXPECT_EQ(show_back.out, show.out);  // same device, run, classes and copies (the run id is 1 in both)

  const CmdResult refused = run_calisim("db export " + db + " " + csv);
  expect_refused(refused, "--skip-traces");
  const CmdResult skipped = run_calisim("db export --skip-traces " + db + " " + csv);
  EXPECT_EQ(skipped.code, 0) << skipped.out;
  EXPECT_NE(skipped.out.find("left out 3 trace record(s)"), std::string::npos) << skipped.out;
}

TEST(ProfileCli, RunNeedsExactlyOnePlanSource) {
  const CmdResult r = run_calisim("profile run --db x.db");
  EXPECT_EQ(r.code, 2) << r.out;
}

// A trace recorded with record_shapes=True: its aten GEMM / attention calls become efficiency rows
// of the shipped system's device (source trace), which `simulate --db` then looks up. The rows'
// figures are worked by hand in tests/profiler/operator_rows_test.cc.
TEST(ProfileCli, KinetoTraceWithShapesGivesEfficiencyRowsTheSimulatorUses) {
  const std::string trace = std::string(CALISIM_TEST_DATA_DIR) + "/kineto/record_shapes.json";
  const std::string db = ::testing::TempDir() + "cli_kineto_shapes.db";
  std::remove(db.c_str());
  const CmdResult imp = run_calisim("db import --json " + db + " --kineto " + trace);
  ASSERT_EQ(imp.code, 0) << imp.out;
  const auto doc = nlohmann::json::parse(imp.out);
  const auto& rows = doc.at("kernel_rows");
  EXPECT_TRUE(rows.at("record_shapes").get<bool>());
  ASSERT_EQ(rows.at("devices").size(), 1u);
  const auto& dev = rows.at("devices")[0];
  EXPECT_EQ(dev.at("device"), "NVIDIA H100 SXM5 80GB");
  EXPECT_EQ(dev.at("run"), 2);
  EXPECT_EQ(dev.at("gemm_rows"), 4);
  EXPECT_EQ(dev.at("attention_rows"), 2);
  // The reduce-scatter's record_param_comms, placed on h100-sxm's 8-GPU NVLink domain.
  EXPECT_EQ(dev.at("collective_rows"), 1);
  EXPECT_EQ(dev.at("not_keyed").at("fp32 inputs (whether TF32 ran is not in the trace)"), 2);
  EXPECT_EQ(rows.at("kernels_outside_operators").at("gemm").at("kernels"), 2);

  // --no-kernel-rows: the trace only; the rows are reported, not stored.
  const std::string bare = ::testing::TempDir() + "cli_kineto_shapes_bare.db";
  std::remove(bare.c_str());
  const CmdResult only = run_calisim("db import --json " + bare + " --kineto " + trace + " --no-kernel-rows");
  ASSERT_EQ(only.code, 0) << only.out;
  const auto only_rows = nlohmann::json::parse(only.out).at("kernel_rows");
  EXPECT_FALSE(only_rows.at("stored").get<bool>());
  EXPECT_TRUE(only_rows.at("devices")[0].at("run").is_null());
  EXPECT_EQ(only_rows.at("devices")[0].at("gemm_rows"), 4);
  const CmdResult listed = run_calisim("db list --json " + bare);
  ASSERT_EQ(listed.code, 0) << listed.out;
  EXPECT_EQ(nlohmann::json::parse(listed.out)[0].at("gemm"), 0) << listed.out;
  expect_refused(run_calisim("db import " + bare + " --nsys x.sqlite --no-kernel-rows"), "needs --kineto");

  // profile plan --trace: the traced shapes, to measure in isolation; refused where there are none.
  const std::string plan = ::testing::TempDir() + "cli_kineto_shapes_plan.json";
  const CmdResult planned = run_calisim("profile plan --trace " + db + " -o " + plan + " --json");
  ASSERT_EQ(planned.code, 0) << planned.out;
  const auto pj = nlohmann::json::parse(planned.out);
  EXPECT_EQ(pj.at("gemm"), 4);
  EXPECT_EQ(pj.at("attention"), 2);
  EXPECT_EQ(pj.at("collective"), 1);
  EXPECT_EQ(pj.at("memory"), 0);
  expect_refused(run_calisim("profile plan --trace " + bare), "holds no operator shapes");
  expect_refused(run_calisim("profile plan --trace " + db + " --model llama3-8b --strategy tp1_pp1_dp8_mbs1"),
                 "leave out --model");

  // The row is found under the CUDA name (an alias) and the simulator's device name alike.
  const std::string key = "'gemm m=4096 n=4096 k=4096 batch=1 dtype=bf16 layout=NN acc=0'";
  for (const char* name : {"'NVIDIA H100 80GB HBM3'", "'NVIDIA H100 SXM5 80GB'"}) {
    const CmdResult q = run_calisim("db query --json " + db + " " + name + " " + key);
    ASSERT_EQ(q.code, 0) << q.out;
    EXPECT_NE(q.out.find("\"trace\""), std::string::npos) << q.out;
  }
  const CmdResult show = run_calisim("db show " + db + " 'NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("trace run 1: 22 kernels"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("trace run 2"), std::string::npos) << show.out;  // rows, not kernels

  // Llama 3 8B at 4,096 tokens per micro-batch on one GPU per replica runs these shapes: the output
  // projection's three GEMMs (its weight gradient unfused here, as plain PyTorch's) and attention.
  const CmdResult sim = run_calisim(
      "simulate --json --model llama3-8b --strategy tp1_pp1_dp8_mbs1 --system h100-sxm --db " + db +
      " --set strategy.seq_len=4096 --set strategy.use_fused_grad_accumulation=false");
  ASSERT_EQ(sim.code, 0) << sim.out;
  const auto r = nlohmann::json::parse(sim.out);
  EXPECT_EQ(r.at("efficiency_sources").at("kernels_per_source").at("measured"), 5) << sim.out;

  // --compare-trace sets each traced shape beside the simulation's time for it: from the system's
  // defaults without a database; with the trace's own rows (--db) the same time, marked measured.
  const std::string cmp = "simulate --json --no-ops --model llama3-8b --strategy tp1_pp1_dp8_mbs1 --system h100-sxm "
                          "--set strategy.seq_len=4096 --compare-trace " + db;
  for (const bool with_rows : {false, true}) {
    const CmdResult c = run_calisim(cmp + (with_rows ? " --db " + db : std::string()));
    ASSERT_EQ(c.code, 0) << c.out;
    const auto shapes = nlohmann::json::parse(c.out).at("trace_comparison").at("shapes");
    EXPECT_EQ(shapes.at("run"), 2);
    ASSERT_EQ(shapes.at("keys").size(), 7u);  // 4 GEMM, 2 attention, the reduce-scatter
    double traced = 0, simulated = 0;
    for (const auto& k : shapes.at("keys")) {
      EXPECT_EQ(k.at("simulated_from"), with_rows ? "measured" : "roofline") << k;
      if (with_rows) {
        EXPECT_NEAR(k.at("simulated_s").get<double>(), k.at("traced_s").get<double>(), 1e-12) << k;
      }
      traced += k.at("calls").get<double>() * k.at("traced_s").get<double>();
      simulated += k.at("calls").get<double>() * k.at("simulated_s").get<double>();
    }
    EXPECT_NEAR(shapes.at("simulated_over_traced").get<double>(), simulated / traced, 1e-12);
    EXPECT_EQ(shapes.at("keys")[0].at("key"),
              "attn b=1 hq=32 hkv=8 sq=4096 skv=4096 dqk=128 dv=128 causal=1 dtype=bf16 dir=bwd");
  }
  // The link from the trace run to its rows is the import's fingerprint, not a run id: it holds in
  // a database the two runs were exported to and imported into after another run took id 1.
  const std::string moved = ::testing::TempDir() + "cli_kineto_shapes_moved.db";
  const std::string exported = ::testing::TempDir() + "cli_kineto_shapes.json";
  std::remove(moved.c_str());
  ASSERT_EQ(run_calisim("db import " + moved + " --kineto " + std::string(CALISIM_TEST_DATA_DIR) +
                        "/kineto/two_steps.json").code, 0);
  ASSERT_EQ(run_calisim("db export " + db + " " + exported).code, 0);
  const CmdResult merged = run_calisim("db import " + moved + " --from " + exported);
  ASSERT_EQ(merged.code, 0) << merged.out;
  const std::string moved_cmp = "simulate --json --no-ops --model llama3-8b --strategy tp1_pp1_dp8_mbs1 --system "
                                "h100-sxm --set strategy.seq_len=4096 --compare-trace " + moved;
  // (The import stores the rows run before the trace run: ids 2 and 3.)
  const CmdResult m = run_calisim(moved_cmp + " --trace-run 3");
  ASSERT_EQ(m.code, 0) << m.out;
  const auto mshapes = nlohmann::json::parse(m.out).at("trace_comparison").at("shapes");
  ASSERT_FALSE(mshapes.is_null()) << m.out;
  EXPECT_EQ(mshapes.at("run"), 2);
  EXPECT_EQ(mshapes.at("keys").size(), 7u);
  // The other trace (no shapes) has none.
  const CmdResult other = run_calisim(moved_cmp + " --trace-run 1");
  ASSERT_EQ(other.code, 0) << other.out;
  EXPECT_TRUE(nlohmann::json::parse(other.out).at("trace_comparison").at("shapes").is_null()) << other.out;
  // --trace-run all: a column with each run's calls-weighted simulated / traced shape time ("-" for
  // the run without shapes), the same figure as the single run's JSON.
  const CmdResult all = run_calisim("simulate --no-ops --model llama3-8b --strategy tp1_pp1_dp8_mbs1 --system h100-sxm "
                                    "--set strategy.seq_len=4096 --compare-trace " + moved + " --trace-run all");
  ASSERT_EQ(all.code, 0) << all.out;
  EXPECT_NE(all.out.find("shapes sim / traced"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find(fmt::format("{:.3f}", mshapes.at("simulated_over_traced").get<double>())), std::string::npos)
      << all.out;
}

// A PyTorch profiler trace through the command line: `db import --kineto` stores it as a trace
// run (once: a second import of the same trace is refused), `db show` summarises it, and
// `simulate --compare-trace` sets it beside a simulation by kernel class. The fixture's figures
// per step are worked by hand in tests/calibration/trace_comparison_test.cc.
TEST(ProfileCli, KinetoTraceImportAndComparisonWithASimulation) {
  const std::string trace = std::string(CALISIM_TEST_DATA_DIR) + "/kineto/two_steps.json";
  const std::string db = ::testing::TempDir() + "cli_kineto.db";
  const std::string empty_db = ::testing::TempDir() + "cli_kineto_empty.db";
  for (const auto& f : {db, empty_db}) std::remove(f.c_str());
  const CmdResult imp = run_calisim("db import " + db + " --kineto " + trace);
  ASSERT_EQ(imp.code, 0) << imp.out;
  EXPECT_NE(imp.out.find("13 kernels, 4 copies / memsets"), std::string::npos) << imp.out;
  EXPECT_NE(imp.out.find("2 step(s) ProfilerStep#2 .. ProfilerStep#3 by gpu annotations"), std::string::npos)
      << imp.out;
  EXPECT_NE(imp.out.find("1 record(s) outside them"), std::string::npos) << imp.out;
  EXPECT_NE(imp.out.find("trace run 1"), std::string::npos) << imp.out;
  // The CUDA name is stored as an alias of the shipped system's device, with its peaks.
  EXPECT_NE(imp.out.find("CUDA device 0: device 'NVIDIA H100 SXM5 80GB' has the specs of shipped system h100-sxm"),
            std::string::npos)
      << imp.out;
  // The fixture's aten::mm events carry Input Dims only: no key, said with the reason.
  EXPECT_NE(imp.out.find("not keyed: 2 call(s): no Input Dims / Input type"), std::string::npos) << imp.out;
  const CmdResult again = run_calisim("db import " + db + " --kineto " + trace);
  expect_refused(again, "already imported");

  const CmdResult show = run_calisim("db show " + db + " 'NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("rank 3 of 8"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("trace run 1: 13 kernels, 4 copies / memsets"), std::string::npos) << show.out;

  const std::string sim = "simulate --model llama3-8b --strategy tp1_pp1_dp8_mbs1 --system h100-sxm --no-ops ";
  const CmdResult cmp = run_calisim(sim + "--compare-trace " + db);
  ASSERT_EQ(cmp.code, 0) << cmp.out;
  EXPECT_NE(cmp.out.find("trace comparison: trace run 1 (the latest) of 'NVIDIA H100 SXM5 80GB'"), std::string::npos)
      << cmp.out;
  EXPECT_NE(cmp.out.find("ProfilerStep#2 .. ProfilerStep#3 (2 steps)"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("traced step spans: "), std::string::npos) << cmp.out;
  for (const char* row : {"GEMM kernels", "0.370", "attention kernels", "0.090", "communication (NCCL, userbuffers, DeepEP kernels; peer copies; summed)", "0.200",
                          "communication only (exposed)", "0.010", "idle (nothing on the GPU", "0.088"}) {
    EXPECT_NE(cmp.out.find(row), std::string::npos) << row << "\n" << cmp.out;
  }
  EXPECT_NE(cmp.out.find("the trace's rank 3 of 8"), std::string::npos) << cmp.out;
  EXPECT_EQ(cmp.out.find("operator shapes of the trace"), std::string::npos) << cmp.out;  // none keyed
  const CmdResult steps = run_calisim(sim + "--compare-trace " + db + " --trace-steps 5");
  ASSERT_EQ(steps.code, 0) << steps.out;
  EXPECT_NE(steps.out.find("warning: --trace-steps 5 not used: the trace has its own ProfilerStep ranges"),
            std::string::npos)
      << steps.out;
  EXPECT_NE(cmp.out.find("traced kernels with the most time per step"), std::string::npos) << cmp.out;
  // The trace's rank 3 of 8 runs stage 0 of tp 2 · pp 2 · dp 2 (4 ranks per stage); rank 6 stage 1.
  const std::string pp2 = "simulate --model llama3-8b --strategy tp2_pp2_dp2_mbs1 --system h100-sxm --no-ops ";
  const CmdResult s0 = run_calisim(pp2 + "--compare-trace " + db);
  ASSERT_EQ(s0.code, 0) << s0.out;
  EXPECT_NE(s0.out.find("simulated stage 0 (the trace's rank 3 of 8, order tp-cp-ep-dp-pp)"), std::string::npos)
      << s0.out;
  const CmdResult s1 = run_calisim(pp2 + "--compare-trace " + db + " --trace-rank 6");
  ASSERT_EQ(s1.code, 0) << s1.out;
  EXPECT_NE(s1.out.find("simulated stage 1 (--trace-rank 6"), std::string::npos) << s1.out;
  EXPECT_NE(s1.out.find("warning: trace run 1 is of rank 3, not the --trace-rank 6 simulated here"), std::string::npos)
      << s1.out;
  EXPECT_NE(run_calisim(pp2 + "--compare-trace " + db + " --trace-rank 6 --trace-stage 1").code, 0);
  // A trace of another GPU is compared, with a warning (the fixture ran on an H100).
  const CmdResult other_gpu = run_calisim(
      "simulate --model llama3-8b --strategy tp1_pp1_dp8_mbs1 --system b200 --no-ops --compare-trace " + db);
  ASSERT_EQ(other_gpu.code, 0) << other_gpu.out;
  EXPECT_NE(other_gpu.out.find("warning: the trace ran on 'NVIDIA H100 SXM5 80GB' (h100-sxm), this simulation is of "
                               "'NVIDIA B200' (b200)"),
            std::string::npos)
      << other_gpu.out;
  EXPECT_EQ(cmp.out.find("the trace ran on"), std::string::npos) << cmp.out;
  // A trace of another world size is compared, with a warning.
  const CmdResult other = run_calisim(
      "simulate --model llama3-70b --strategy llama3-70b-64gpu --system h100-sxm --no-ops --compare-trace " + db);
  ASSERT_EQ(other.code, 0) << other.out;
  EXPECT_NE(other.out.find("warning: the trace is of a 8-GPU run; this simulation has 64 GPUs"), std::string::npos)
      << other.out;
  // The system file calibrated to the trace: written, valid, saying how it was made; the fixture's
  // microsecond kernels are far faster than a real step, so every factor is capped and named.
  const std::string fitted = ::testing::TempDir() + "cli_kineto_fit.json";
  std::remove(fitted.c_str());
  const CmdResult fit = run_calisim(sim + "--compare-trace " + db + " --trace-fit-out " + fitted);
  ASSERT_EQ(fit.code, 0) << fit.out;
  EXPECT_NE(fit.out.find("system file calibrated to the trace written to " + fitted), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("capped at 1.0 of peak: efficiency.matmul"), std::string::npos) << fit.out;
  const CmdResult with_fit = run_calisim("simulate --model llama3-8b --strategy tp1_pp1_dp8_mbs1 --no-ops --system " +
                                         fitted);
  ASSERT_EQ(with_fit.code, 0) << with_fit.out;
  std::ifstream fitted_in(fitted);
  const nlohmann::json fitted_doc = nlohmann::json::parse(fitted_in);
  EXPECT_NE(fitted_doc["description"].get<std::string>().find("Kernel efficiencies scaled to a trace"),
            std::string::npos);
  expect_refused(run_calisim(sim + "--compare-trace " + db + " --trace-run all --trace-fit-out " + fitted),
                 "needs one trace run");
  // Efficiencies from a database are not the system file's to scale.
  const std::string a100 = ::testing::TempDir() + "cli_kineto_a100.db";
  std::remove(a100.c_str());
  ASSERT_EQ(run_calisim("db import " + a100 + " --simumax " + std::string(CALISIM_TEST_DATA_DIR) +
                        "/simumax/system/a100_pcie.json --device 'NVIDIA A100 PCIe 80GB'")
                .code,
            0);
  expect_refused(run_calisim("simulate --model llama3-8b --strategy tp1_pp1_dp8_mbs1 --system a100-pcie-80g --no-ops "
                             "--db " + a100 + " --compare-trace " + db + " --trace-fit-out " + fitted),
                 "took kernel efficiencies from the database");
  const CmdResult js = run_calisim(sim + "--json --compare-trace " + db);
  ASSERT_EQ(js.code, 0) << js.out;
  EXPECT_NE(js.out.find("\"trace_comparison\""), std::string::npos) << js.out;
  EXPECT_NE(js.out.find("\"simulated_over_traced\""), std::string::npos) << js.out;
  EXPECT_NE(js.out.find("\"top_kernels\""), std::string::npos) << js.out;

  // What the user can get wrong: a database with no trace, a run that is not a trace, a stage the
  // layout lacks, trace options without --compare-trace, a missing trace file.
  ASSERT_EQ(run_calisim("db init " + empty_db).code, 0);
  const CmdResult none = run_calisim(sim + "--compare-trace " + empty_db);
  expect_refused(none, "holds no trace run: import one (calisim db import " + empty_db + " --kineto trace.json, or --nsys");
  const CmdResult run7 = run_calisim(sim + "--compare-trace " + db + " --trace-run 7");
  expect_refused(run7, "run 7 holds no trace records; trace runs: 1");
  const CmdResult stage = run_calisim(sim + "--compare-trace " + db + " --trace-stage 1");
  expect_refused(stage, "expected a pipeline stage from 0 to 0");
  EXPECT_NE(run_calisim(sim + "--trace-steps 2").code, 0);
  const CmdResult missing = run_calisim("db import " + db + " --kineto /nonexistent/trace.json");
  expect_refused(missing, "cannot open the file");
}

// Two ranks' traces of one job in a directory: the reduce-scatter both ran in each of the two steps
// (the same collective: same group, key and occurrence) takes 400 us on rank 0, which arrived
// early, and 250 us on rank 1; each rank's collective row is timed at 250 us, the transfer without the wait, and the import
// says how much waiting it removed. One rank alone keeps its own time.
TEST(ProfileCli, KinetoDirectoryMatchesCollectivesAcrossRanks) {
  const auto [dir, db, base] = kineto_ranks("cli_kineto_ranks", "record_shapes.json");
  nlohmann::json rank1 = base;
  rank1["distributedInfo"]["rank"] = 1;
  int nccl = 0;
  for (auto& e : rank1["traceEvents"]) {
    if (e.value("cat", "") == "kernel" && e.value("name", "").find("nccl") != std::string::npos) {
      e["dur"] = 250.0;
      ++nccl;
    }
  }
  ASSERT_EQ(nccl, 2) << "the fixture's communication kernel, once per step";
  std::ofstream(dir + "/host.0.pt.trace.json") << base.dump();
  std::ofstream(dir + "/host.1.pt.trace.json") << rank1.dump();

  const CmdResult imp = run_calisim("db import " + db + " --json --kineto " + dir);
  ASSERT_EQ(imp.code, 0) << imp.out;
  const nlohmann::json doc = nlohmann::json::parse(imp.out.substr(imp.out.find('{')));
  const auto& m = doc["collective_matching"];
  EXPECT_EQ(m["ranks"], 2);
  EXPECT_EQ(m["collective_calls"], 4);
  EXPECT_EQ(m["matched_calls"], 4);
  EXPECT_NEAR(m["wait_removed_s"].get<double>(), 2 * 150e-6, 1e-9);
  EXPECT_TRUE(m["not_matched_because"].is_null());
  ASSERT_EQ(doc["imports"].size(), 2u);
  for (const auto& file : doc["imports"]) {
    bool found = false;
    for (const auto& key : file["kernel_rows"]["devices"][0]["keys"]) {
      if (key["key"].get<std::string>().rfind("coll op=reduce_scatter", 0) != 0) continue;
      EXPECT_NEAR(key["median_s"].get<double>(), 250e-6, 1e-9) << file["file"];
      found = true;
    }
    EXPECT_TRUE(found) << file.dump();
  }
  EXPECT_NEAR(doc["imports"][0]["collectives_matched"]["wait_removed_s"].get<double>(), 2 * 150e-6, 1e-9);
  EXPECT_NEAR(doc["imports"][1]["collectives_matched"]["wait_removed_s"].get<double>(), 0, 1e-12);
  // The stored rows say how their collectives were timed.
  const CmdResult runs = run_calisim("db show " + db + " \"NVIDIA H100 SXM5 80GB\"");
  EXPECT_NE(runs.out.find("2 call(s) timed as the fastest rank's call of the same collective"), std::string::npos)
      << runs.out;

  // A damaged rank's file after a good one: the import stops at it, the good one stays stored.
  const std::string broken_dir = dir + "_broken";
  const std::string broken_db = ::testing::TempDir() + "cli_kineto_ranks_broken.db";
  std::filesystem::remove_all(broken_dir);
  std::filesystem::create_directories(broken_dir);
  std::remove(broken_db.c_str());
  std::ofstream(broken_dir + "/host.0.pt.trace.json") << base.dump();
  std::ofstream(broken_dir + "/host.1.pt.trace.json") << "{\"traceEvents\": [";
  const CmdResult broken = run_calisim("db import " + broken_db + " --kineto " + broken_dir);
  EXPECT_NE(broken.code, 0);
  EXPECT_NE(broken.out.find("host.1.pt.trace.json"), std::string::npos) << broken.out;
  const CmdResult kept = run_calisim("db list " + broken_db);
  EXPECT_NE(kept.out.find("NVIDIA H100 SXM5 80GB"), std::string::npos) << kept.out;

  // One trace alone: its own 400 us, waits included.
  const std::string single = ::testing::TempDir() + "cli_kineto_rank0.db";
  std::remove(single.c_str());
  const CmdResult one = run_calisim("db import " + single + " --json --kineto " + dir + "/host.0.pt.trace.json");
  ASSERT_EQ(one.code, 0) << one.out;
  const nlohmann::json one_doc = nlohmann::json::parse(one.out.substr(one.out.find('{')));
  for (const auto& key : one_doc["kernel_rows"]["devices"][0]["keys"]) {
    if (key["key"].get<std::string>().rfind("coll op=reduce_scatter", 0) == 0) {
      EXPECT_NEAR(key["median_s"].get<double>(), 400e-6, 1e-9);
    }
  }
}

// A directory of per-rank traces (what tensorboard_trace_handler writes): every trace file
// imported, other files left alone, a second import skipping what is stored, and --trace-rank
// picking that rank's run for the comparison.
TEST(ProfileCli, KinetoDirectoryImportsEveryRankAndComparesTheOneAsked) {
  const auto [dir, db, base] = kineto_ranks("cli_kineto_dir", "two_steps.json");
  // Rank 6 of 8: the same events 1 ms later (another trace, another fingerprint).
  nlohmann::json rank6 = base;
  rank6["distributedInfo"]["rank"] = 6;
  for (auto& e : rank6["traceEvents"]) {
    if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + 1000.0;
  }
  std::ofstream(dir + "/host.0.pt.trace.json") << base.dump();
  std::ofstream(dir + "/host.1.pt.trace.json") << rank6.dump();
  std::ofstream(dir + "/README.txt") << "not a trace\n";

  const CmdResult imp = run_calisim("db import " + db + " --kineto " + dir);
  ASSERT_EQ(imp.code, 0) << imp.out;
  EXPECT_NE(imp.out.find("2 trace file(s) of " + dir + ": 2 imported, 0 already in"), std::string::npos) << imp.out;
  EXPECT_NE(imp.out.find("trace run 2"), std::string::npos) << imp.out;
  // A rank's file added later: importing the directory again stores it and skips the others.
  nlohmann::json rank7 = rank6;
  rank7["distributedInfo"]["rank"] = 7;
  for (auto& e : rank7["traceEvents"]) {
    if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + 1000.0;
  }
  std::ofstream(dir + "/host.2.pt.trace.json") << rank7.dump();
  const CmdResult again = run_calisim("db import " + db + " --json --kineto " + dir);
  ASSERT_EQ(again.code, 0) << again.out;
  const nlohmann::json doc = nlohmann::json::parse(again.out.substr(again.out.find('{')));
  ASSERT_EQ(doc["imports"].size(), 1u) << again.out;
  EXPECT_EQ(doc["imports"][0]["rank"], 7);
  ASSERT_EQ(doc["skipped"].size(), 2u) << again.out;
  EXPECT_EQ(doc["skipped"][0]["already_imported_as_run"], 1);

  // tp 2 · pp 2 · dp 2: rank 6 runs stage 1, and its own trace (run 2) is the one compared.
  const std::string pp2 = "simulate --model llama3-8b --strategy tp2_pp2_dp2_mbs1 --system h100-sxm --no-ops ";
  const CmdResult r6 = run_calisim(pp2 + "--compare-trace " + db + " --trace-rank 6");
  ASSERT_EQ(r6.code, 0) << r6.out;
  EXPECT_NE(r6.out.find("trace run 2 (the latest of rank 6)"), std::string::npos) << r6.out;
  EXPECT_NE(r6.out.find("simulated stage 1"), std::string::npos) << r6.out;
  EXPECT_EQ(r6.out.find("warning: trace run"), std::string::npos) << r6.out;
  const CmdResult latest = run_calisim(pp2 + "--compare-trace " + db);
  EXPECT_NE(latest.out.find("trace run 3 (the latest)"), std::string::npos) << latest.out;
  // Every rank at once: ranks 3, 6, 7 of tp 2 · pp 2 · dp 2 run stages 0, 1, 1.
  const CmdResult all = run_calisim(pp2 + "--compare-trace " + db + " --trace-run all");
  ASSERT_EQ(all.code, 0) << all.out;
  EXPECT_NE(all.out.find("trace comparison of every trace run in " + db + " (3 runs)"), std::string::npos) << all.out;
  for (const char* row : {"3 of 8", "6 of 8", "7 of 8"}) EXPECT_NE(all.out.find(row), std::string::npos) << row;
  const CmdResult all_json = run_calisim(pp2 + "--json --compare-trace " + db + " --trace-run all");
  ASSERT_EQ(all_json.code, 0) << all_json.out;
  const nlohmann::json runs = nlohmann::json::parse(all_json.out)["trace_comparison"]["runs"];
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0]["stage"], 0);
  EXPECT_EQ(runs[1]["stage"], 1);
  EXPECT_EQ(runs[2]["stage"], 1);
  expect_refused(run_calisim(pp2 + "--compare-trace " + db + " --trace-run all --trace-rank 6"),
                 "not with --trace-run all");
  expect_refused(run_calisim(pp2 + "--compare-trace " + db + " --trace-run latest"),
                 "expected a trace run id >= 1 or all, got 'latest'");

  const std::string empty = ::testing::TempDir() + "cli_kineto_empty_dir";
  std::filesystem::remove_all(empty);
  std::filesystem::create_directories(empty);
  expect_refused(run_calisim("db import " + db + " --kineto " + empty), "holds no trace file (*.json or *.json.gz)");
  // torchtitan's layout: one subdirectory per profiled iteration; the message points at them.
  std::filesystem::create_directories(empty + "/iteration_10");
  std::filesystem::create_directories(empty + "/iteration_20");
  expect_refused(run_calisim("db import " + db + " --kineto " + empty),
                 "it has subdirectories (iteration_10, iteration_20): import one of them");
}

// An Nsight Systems SQLite export with the tables `sql` creates, in the test's temporary directory.
std::string nsys_export(const std::string& name, const char* sql) {
  const std::string path = ::testing::TempDir() + name;
  std::remove(path.c_str());
  calisim::db::Connection c(path, calisim::db::OpenMode::create);
  c.exec(sql);
  return path;
}

// An Nsight Systems SQLite export through the command line: one trace run per GPU of the report,
// compared with a simulation by the number of steps the capture holds (nsys has no ProfilerStep
// ranges).
TEST(ProfileCli, NsysReportImportAndComparison) {
  const std::string db = ::testing::TempDir() + "cli_nsys.db";
  std::remove(db.c_str());
  const std::string report = nsys_export("cli_nsys.sqlite", R"sql(
      CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO StringIds VALUES (1, 'nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT'), (2, 'flash_fwd_kernel');
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
        demangledName INTEGER, shortName INTEGER);
      INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 300000, 0, 7, 1, 1), (310000, 400000, 0, 7, 2, 2),
        (0, 100000, 1, 7, 1, 1);
      CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
      INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3'), (1, 'NVIDIA H100 80GB HBM3');
    )sql");
  const CmdResult imp = run_calisim("db import " + db + " --nsys " + report);
  ASSERT_EQ(imp.code, 0) << imp.out;
  EXPECT_NE(imp.out.find("3 kernels, 0 copies / memsets"), std::string::npos) << imp.out;
  EXPECT_NE(imp.out.find("CUDA device 0 (NVIDIA H100 80GB HBM3): trace run 1"), std::string::npos) << imp.out;
  EXPECT_NE(imp.out.find("CUDA device 1 (NVIDIA H100 80GB HBM3): trace run 2"), std::string::npos) << imp.out;
  EXPECT_NE(run_calisim("db import " + db + " --nsys " + report).out.find("already imported"), std::string::npos);
  const std::string sim = "simulate --model llama3-8b --strategy tp1_pp1_dp8_mbs1 --system h100-sxm --no-ops ";
  const CmdResult unnamed = run_calisim(sim + "--compare-trace " + db + " --trace-run 1");
  expect_refused(unnamed, "--trace-steps");
  const CmdResult cmp = run_calisim(sim + "--compare-trace " + db + " --trace-run 1 --trace-steps 2");
  ASSERT_EQ(cmp.code, 0) << cmp.out;
  EXPECT_NE(cmp.out.find("whole trace as 2 steps"), std::string::npos) << cmp.out;
  EXPECT_NE(cmp.out.find("0.150"), std::string::npos) << "300 us of GEMM over 2 steps: " << cmp.out;
  EXPECT_NE(cmp.out.find("other trace runs in the file (--trace-run): 2"), std::string::npos) << cmp.out;
  EXPECT_EQ(run_calisim("db import " + db + " --nsys " + report + " --kineto x.json").code, 2);
  expect_refused(run_calisim("db import " + db + " --kineto x.json --nvtx-steps iteration"), "needs --nsys");

  // The program's NVTX step ranges: each record in the step whose range holds its launch.
  const std::string stepped_db = ::testing::TempDir() + "cli_nsys_steps.db";
  std::remove(stepped_db.c_str());
  const std::string stepped = nsys_export("cli_nsys_steps.sqlite", R"sql(
      CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO StringIds VALUES (1, 'nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT');
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
        correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);
      INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 301000, 0, 7, 1, 7 * 16777216, 1),
        (401000, 701000, 0, 7, 2, 7 * 16777216, 1);
      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER);
      INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (500, 600, 7 * 16777216 + 7, 1), (400500, 400600, 7 * 16777216 + 7, 2);
      CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER);
      INSERT INTO NVTX_EVENTS VALUES (0, 400000, 59, 'iteration 10', 7 * 16777216 + 7),
        (400000, 800000, 59, 'iteration 11', 7 * 16777216 + 7);
      CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
      INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3');
    )sql");
  const CmdResult steps = run_calisim("db import " + stepped_db + " --nsys " + stepped + " --nvtx-steps iteration");
  ASSERT_EQ(steps.code, 0) << steps.out;
  EXPECT_NE(steps.out.find("2 step(s) by NVTX ranges 'iteration 10' .. 'iteration 11'"), std::string::npos) << steps.out;
  const CmdResult by_step = run_calisim(sim + "--compare-trace " + stepped_db);
  ASSERT_EQ(by_step.code, 0) << by_step.out;
  EXPECT_NE(by_step.out.find("ProfilerStep#1 .. ProfilerStep#2 (2 steps)"), std::string::npos) << by_step.out;
  EXPECT_NE(by_step.out.find("0.300"), std::string::npos) << "300 us of GEMM in each step: " << by_step.out;
  expect_refused(run_calisim("db import " + stepped_db + ".x --nsys " + stepped + " --nvtx-steps step"),
                 "no NVTX range whose text starts with 'step'");

  // A directory of node reports: each imported (a run per GPU), those already stored skipped.
  const std::string nodes = ::testing::TempDir() + "cli_nsys_nodes";
  const std::string nodes_db = ::testing::TempDir() + "cli_nsys_nodes.db";
  std::filesystem::remove_all(nodes);
  std::filesystem::create_directories(nodes);
  std::remove(nodes_db.c_str());
  std::filesystem::copy_file(report, nodes + "/node0.sqlite");
  std::filesystem::copy_file(stepped, nodes + "/node1.sqlite");
  std::ofstream(nodes + "/node0.nsys-rep") << "not an export";
  const CmdResult dir = run_calisim("db import " + nodes_db + " --nsys " + nodes + " --device 'NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(dir.code, 0) << dir.out;
  EXPECT_NE(dir.out.find("2 trace file(s) of " + nodes + ": 2 imported, 0 already in"), std::string::npos) << dir.out;
  EXPECT_NE(dir.out.find("trace run 3"), std::string::npos) << dir.out;  // node0's two GPUs, node1's one
  const CmdResult again = run_calisim("db import " + nodes_db + " --nsys " + nodes);
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("0 imported, 2 already in"), std::string::npos) << again.out;
}

}  // namespace
