// End to end through the `calisim` executable: `calibrate` without a GPU on the SimuMax
// A100-PCIe table, and `predict` -> `simulate` saying which ops were scaled from which device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <string>

#include "tests/support/command_output.h"

namespace {

namespace fs = std::filesystem;
using CmdResult = calisim::testing_support::CommandResult;
using calisim::testing_support::run_calisim;
using calisim::testing_support::run_calisim_stdout;

class CalibrateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("calibrate_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));  // other build trees run the same tests at the same time
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "a100.db").string();
    const CmdResult r = run_calisim("db import " + db_ + " --simumax " + std::string(CALISIM_TEST_DATA_DIR) +
                            "/simumax/system/a100_pcie.json --device \"NVIDIA A100 PCIe 80GB\"");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
  std::string db_;
};

const std::string kConfig = "--model llama3-8b --strategy tp2_pp2_dp2_mbs1";

TEST_F(CalibrateCli, WithoutAGpuListsWhatIsMissingFitsAndWritesASystemThatSimulates) {
  const std::string out = path("sys/a100-cal.json"), plan = path("missing.json");
  fs::create_directories(dir_ / "sys");
  const CmdResult r = run_calisim_stdout("calibrate --system a100-pcie-80g " + kConfig + " --db " + db_ + " --out " + out +
                                 " --plan-out " + plan + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["profiling"]["ran"].get<bool>());
  EXPECT_FALSE(j["profiling"]["note"].get<std::string>().empty());
  ASSERT_EQ(j["missing"].size(), 4u);
  EXPECT_EQ(j["missing"][2]["family"], "memory");
  EXPECT_EQ(j["missing"][2]["count"], j["planned"]["memory"]);  // the table has memory fits, no rows
  EXPECT_FALSE(j["missing"][2]["first_keys"].empty());
  EXPECT_EQ(j["efficiency_db"], "../a100.db");
  bool memory_fitted = false;
  for (const auto& d : j["calibration"]["defaults"]) {
    if (d["field"] == "efficiency.memory_bound") memory_fitted = !d["fitted"].is_null();
  }
  EXPECT_TRUE(memory_fitted);
  EXPECT_TRUE(fs::exists(plan));
  const auto& total = j["calibration"]["coverage"].back();
  EXPECT_EQ(total["family"], "total");
  EXPECT_EQ(total["planned"].get<int>(), total["measured"].get<int>() + total["interpolated"].get<int>() +
                                             total["scaled"].get<int>() + total["roofline"].get<int>());

  // The written system simulates from its own efficiency_db, unlike the datasheet system.
  const CmdResult cal = run_calisim_stdout("simulate " + kConfig + " --system " + out + " --json");
  ASSERT_EQ(cal.code, 0) << cal.out;
  const auto c = nlohmann::json::parse(cal.out);
  EXPECT_FALSE(c["efficiency_sources"]["database"].is_null());
  EXPECT_GT(c["efficiency_sources"]["kernels_per_source"]["measured"].get<int>(), 0);
  const CmdResult plain = run_calisim_stdout("simulate " + kConfig + " --system a100-pcie-80g --json");
  ASSERT_EQ(plain.code, 0) << plain.out;
  const auto p = nlohmann::json::parse(plain.out);
  EXPECT_NE(c["cost"]["duration_time_per_iter_s"].get<double>(), p["cost"]["duration_time_per_iter_s"].get<double>());

  // The missing kernels as a profile plan for `calisim profile run --plan`.
  std::ifstream plan_in(plan);
  const auto plan_doc = nlohmann::json::parse(plan_in);
  EXPECT_EQ(plan_doc["calisim_profile_plan"], 1);
  EXPECT_EQ(plan_doc["memory"].size(), j["missing"][2]["count"].get<std::size_t>());

  const CmdResult text = run_calisim("calibrate --system a100-pcie-80g " + kConfig + " --db " + db_ + " --out " + out);
  ASSERT_EQ(text.code, 0) << text.out;
  for (const char* s : {"profiling: not run", "missing:", "leave-one-out", "system defaults", "coverage", "wrote"}) {
    EXPECT_NE(text.out.find(s), std::string::npos) << s << "\n" << text.out;
  }
}

TEST_F(CalibrateCli, ADatabaseWithoutTheDeviceIsAnInputError) {
  const CmdResult r = run_calisim("calibrate --system h100-sxm " + kConfig + " --db " + db_ + " --out " + path("x.json"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no device or alias 'NVIDIA H100 SXM5 80GB'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NVIDIA A100 PCIe 80GB"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(path("x.json")));
  // The error says why nothing was measured and how to get the rows.
  EXPECT_NE(r.out.find("nothing was measured ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--plan-out FILE writes the"), std::string::npos) << r.out;
  const CmdResult missing = run_calisim("calibrate --system a100-pcie-80g " + kConfig + " --db " + path("none.db"));
  EXPECT_EQ(missing.code, 2) << missing.out;
  // With --plan-out the plan of every planned kernel is written before stopping, for `profile run`.
  const CmdResult planned = run_calisim("calibrate --system h100-sxm " + kConfig + " --db " + db_ + " --out " +
                                path("x.json") + " --plan-out " + path("plan.json"));
  EXPECT_EQ(planned.code, 2) << planned.out;
  EXPECT_NE(planned.out.find("calisim profile run --plan " + path("plan.json")), std::string::npos) << planned.out;
  std::ifstream plan(path("plan.json"));
  ASSERT_TRUE(plan.good());
  const auto j = nlohmann::json::parse(plan);
  EXPECT_EQ(j.value("calisim_profile_plan", 0), 1);
  EXPECT_FALSE(j["gemm"].empty());
  EXPECT_FALSE(fs::exists(path("x.json")));
}

TEST_F(CalibrateCli, SimulateSaysWhichOpsWereScaledFromWhichDevice) {
  const CmdResult p = run_calisim("predict --from \"NVIDIA A100 PCIe 80GB\" --to h100-sxm --db " + db_);
  ASSERT_EQ(p.code, 0) << p.out;
  const std::string sim = "simulate --model llama3-70b --set model.layer_num=4 --strategy tp2_pp2_dp2_mbs1 --db " + db_;

  const CmdResult b = run_calisim_stdout(sim + " --system h100-sxm --json");
  ASSERT_EQ(b.code, 0) << b.out;
  const auto jb = nlohmann::json::parse(b.out);
  const auto& origins = jb["efficiency_sources"]["kernels_per_origin"];
  ASSERT_EQ(origins.size(), 1u) << origins;
  EXPECT_EQ(origins[0]["origin"], "NVIDIA A100 PCIe 80GB");
  EXPECT_EQ(origins[0]["kernels"], jb["efficiency_sources"]["kernels_per_source"]["scaled"]);
  EXPECT_GT(origins[0]["kernels"].get<int>(), 0);
  int scaled_gemms = 0;
  for (const auto& op : jb["ops"]) {
    if (op["source"] == "scaled") {
      EXPECT_EQ(op["origin"], "NVIDIA A100 PCIe 80GB");
      scaled_gemms += op["kind"] == "gemm" ? 1 : 0;
    }
  }
  EXPECT_GT(scaled_gemms, 0);
  const CmdResult bt = run_calisim(sim + " --system h100-sxm");
  ASSERT_EQ(bt.code, 0) << bt.out;
  EXPECT_NE(bt.out.find("scaled (from NVIDIA A100 PCIe 80GB)"), std::string::npos) << bt.out;
  EXPECT_NE(bt.out.find("kernel lookups scaled from NVIDIA A100 PCIe 80GB"), std::string::npos) << bt.out;

  // On the measured device itself: its own rows, no origin.
  const CmdResult a = run_calisim_stdout(sim + " --system a100-pcie-80g --json");
  ASSERT_EQ(a.code, 0) << a.out;
  const auto ja = nlohmann::json::parse(a.out);
  EXPECT_TRUE(ja["efficiency_sources"]["kernels_per_origin"].empty());
  EXPECT_EQ(ja["efficiency_sources"]["kernels_per_source"]["scaled"], 0);
  int measured = 0;
  for (const auto& op : ja["ops"]) {
    EXPECT_TRUE(op["origin"].is_null());
    measured += op["source"] == "measured" ? 1 : 0;
  }
  EXPECT_GT(measured, 0);
}

// --to takes several systems: one run of predicted rows per target (a repeated name once), --json
// an array of the per-target documents; a name that is no system exits 2 naming --to before
// anything is written.
TEST_F(CalibrateCli, PredictWritesOneRunPerTargetSystem) {
  const std::string out = path("targets.db");
  const CmdResult p = run_calisim_stdout("predict --from \"NVIDIA A100 PCIe 80GB\" --to h100-sxm,b200,h100-sxm --db " +
                                         db_ + " --out " + out + " --json");
  ASSERT_EQ(p.code, 0) << p.out;
  const auto docs = nlohmann::json::parse(p.out);
  ASSERT_TRUE(docs.is_array()) << p.out;
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["target"], "NVIDIA H100 SXM5 80GB");
  EXPECT_EQ(docs[1]["target"], "NVIDIA B200");
  EXPECT_NE(docs[0]["run"], docs[1]["run"]);
  auto devices = [&] {
    const CmdResult l = run_calisim_stdout("db list " + out + " --json");
    EXPECT_EQ(l.code, 0) << l.out;
    std::map<std::string, int> runs;
    for (const auto& d : nlohmann::json::parse(l.out)) runs[d["device"]] = d["runs"].get<int>();
    return runs;
  };
  const std::map<std::string, int> written = devices();
  EXPECT_EQ(written, (std::map<std::string, int>{{"NVIDIA B200", 1}, {"NVIDIA H100 SXM5 80GB", 1}}));
  for (const auto& d : docs) EXPECT_GT(d["rows"].get<int>(), 0) << d.dump();

  const CmdResult bad = run_calisim("predict --from \"NVIDIA A100 PCIe 80GB\" --to a100-sxm-80g,h100-sxn --db " + db_ +
                                    " --out " + out);
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--to: no shipped systems config named 'h100-sxn'"), std::string::npos) << bad.out;
  EXPECT_EQ(devices(), written) << "a refused target list wrote rows";
  // One target: the single document, as before.
  const CmdResult one = run_calisim_stdout("predict --from \"NVIDIA A100 PCIe 80GB\" --to a100-sxm-80g --db " + db_ +
                                           " --out " + out + " --json");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_TRUE(nlohmann::json::parse(one.out).is_object());
}

// A CSV export carries no device specs or aliases: the export says so on stderr, and predict /
// calibrate on a database imported from it refuse with exit 2 naming the device (they used to
// stop with an internal error, exit 1, about a "system file"). Importing the JSON export on top
// fills the name-only devices' specs in, after which both run.
TEST_F(CalibrateCli, RowsImportedFromCsvWithoutSpecsAreRefusedNamingTheDevice) {
  const std::string csv = path("rows.csv"), json = path("all.json"), bare = path("bare.db");
  const CmdResult exp = run_calisim("db export " + db_ + " " + csv);
  ASSERT_EQ(exp.code, 0) << exp.out;
  EXPECT_NE(exp.out.find("warning: CSV has no columns for device specs or aliases: 1 device(s) with specs"),
            std::string::npos)
      << exp.out;
  EXPECT_NE(exp.out.find("1 alias(es)"), std::string::npos) << exp.out;
  // JSON keeps them: no warning.
  const CmdResult expj = run_calisim("db export " + db_ + " " + json);
  ASSERT_EQ(expj.code, 0) << expj.out;
  EXPECT_EQ(expj.out.find("warning"), std::string::npos) << expj.out;

  ASSERT_EQ(run_calisim("db import " + bare + " --from " + csv).code, 0);
  const CmdResult ev = run_calisim("predict --evaluate --db " + bare);
  EXPECT_EQ(ev.code, 2) << ev.out;
  EXPECT_NE(ev.out.find("device 'NVIDIA A100 PCIe 80GB': its specs are missing"), std::string::npos) << ev.out;
  EXPECT_EQ(ev.out.find("internal error"), std::string::npos) << ev.out;
  const CmdResult pr = run_calisim("predict --from \"NVIDIA A100 PCIe 80GB\" --to h100-sxm --db " + bare);
  EXPECT_EQ(pr.code, 2) << pr.out;
  EXPECT_NE(pr.out.find("its specs are missing"), std::string::npos) << pr.out;
  const CmdResult cal = run_calisim("calibrate --system a100-pcie-80g " + kConfig + " --db " + bare + " --out " +
                            path("c.json"));
  EXPECT_EQ(cal.code, 2) << cal.out;
  EXPECT_NE(cal.out.find("device 'NVIDIA A100 PCIe 80GB': its specs are missing"), std::string::npos) << cal.out;

  // simulate --db on the spec-less database: the fits take the system file's peaks (the same
  // device) and say so, instead of being skipped without a word.
  const std::string sim = "simulate --system a100-pcie-80g " + kConfig + " --no-ops --json --db ";
  const CmdResult s_bare = run_calisim(sim + bare);
  ASSERT_EQ(s_bare.code, 0) << s_bare.out;
  EXPECT_NE(s_bare.out.find("has no specs for device 'NVIDIA A100 PCIe 80GB'"), std::string::npos) << s_bare.out;

  const CmdResult fill = run_calisim("db import " + bare + " --from " + json);
  ASSERT_EQ(fill.code, 0) << fill.out;
  EXPECT_NE(fill.out.find("specs filled in for 1 device(s)"), std::string::npos) << fill.out;
  EXPECT_EQ(run_calisim("predict --evaluate --db " + bare).code, 0);
  // --rows lists every scored row, leave-one-out ones too; --json carries them as many as `n` says.
  const CmdResult rows = run_calisim("predict --evaluate --rows --db " + bare);
  ASSERT_EQ(rows.code, 0) << rows.out;
  EXPECT_NE(rows.out.find("leave-one-out on NVIDIA A100 PCIe 80GB, gemm bf16: every row"), std::string::npos)
      << rows.out.substr(0, 2000);
  const CmdResult evj = run_calisim("predict --evaluate --json --db " + bare + " 2>/dev/null");
  ASSERT_EQ(evj.code, 0) << evj.out;
  const auto loo = nlohmann::json::parse(evj.out)["leave_one_out"];
  ASSERT_FALSE(loo.empty());
  for (const auto& g : loo) {
    ASSERT_EQ(g["rows"].size(), g["n"].get<std::size_t>()) << g["family"];
    for (const auto& r : g["rows"]) EXPECT_GT(r["actual"].get<double>(), 0) << r.dump();
  }
  // With its specs stored the database answers as the one it was exported from, note gone.
  const CmdResult s_full = run_calisim(sim + bare), s_orig = run_calisim(sim + db_);
  ASSERT_EQ(s_full.code, 0) << s_full.out;
  EXPECT_EQ(s_full.out.find("has no specs"), std::string::npos) << s_full.out;
  const auto step = [](const std::string& out) {
    return nlohmann::json::parse(out)["cost"]["duration_time_per_iter_s"].get<double>();
  };
  EXPECT_DOUBLE_EQ(step(s_full.out), step(s_orig.out));
  // The system file describes the same device, up to the figures each source quotes: within 0.1 %.
  EXPECT_NEAR(step(s_bare.out), step(s_orig.out), 1e-3 * step(s_orig.out));
}

// A failed import creates no database file; one that existed is left as it was.
TEST_F(CalibrateCli, AFailedImportLeavesNoNewDatabase) {
  std::ofstream(path("bad.json")) << R"({"format": "calisim-efficiency-db", "version": 1, "devices": []})";
  for (const std::string& from : {path("bad.json"), path("nonexistent.json")}) {
    const CmdResult r = run_calisim("db import " + path("new.db") + " --from " + from);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_FALSE(fs::exists(path("new.db"))) << from;
    EXPECT_FALSE(fs::exists(path("new.db-wal"))) << from;
  }
  const CmdResult sm = run_calisim("db import " + path("new.db") + " --simumax " + path("bad.json") + " --device X");
  EXPECT_EQ(sm.code, 2) << sm.out;
  EXPECT_FALSE(fs::exists(path("new.db")));
  const CmdResult pub = run_calisim("db import " + path("new.db") + " --published " + path("bad.json"));
  EXPECT_EQ(pub.code, 2) << pub.out;
  EXPECT_FALSE(fs::exists(path("new.db")));
  // The existing database stays.
  const CmdResult old = run_calisim("db import " + db_ + " --from " + path("bad.json"));
  EXPECT_EQ(old.code, 2) << old.out;
  EXPECT_TRUE(fs::exists(db_));
  EXPECT_EQ(run_calisim("db list " + db_).code, 0);
}

// An output database under a path whose "directory" is a regular file: said as such (the
// database layer used to say the directory "does not exist").
TEST_F(CalibrateCli, AnOutputUnderARegularFileSaysItIsNotADirectory) {
  std::ofstream(path("s02.json")) << "{}\n";
  const std::string under = path("s02.json") + "/x.db";
  const CmdResult pr = run_calisim("predict --from \"NVIDIA A100 PCIe 80GB\" --to h100-sxm --db " + db_ + " --out " + under);
  EXPECT_EQ(pr.code, 2) << pr.out;
  EXPECT_NE(pr.out.find("is a file, not a directory"), std::string::npos) << pr.out;
  EXPECT_EQ(pr.out.find("does not exist"), std::string::npos) << pr.out;
  const CmdResult imp = run_calisim("db import " + under + " --from " + db_);
  EXPECT_EQ(imp.code, 2) << imp.out;
  EXPECT_NE(imp.out.find("is a file, not a directory"), std::string::npos) << imp.out;
}

// The follow-up `simulate` command reproduces the calibrated configuration: it carries the
// model / strategy --set options (quoted), not the system ones (already in the written file).
TEST_F(CalibrateCli, SimulateHintKeepsTheSetOptions) {
  const std::string out = path("cal.json");
  const CmdResult r = run_calisim_stdout("calibrate --system a100-pcie-80g " + kConfig + " --db " + db_ + " --out " + out +
                                 " --set strategy.global_batch_size=16 --set system.efficiency.attention=0.5");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string hint = "simulate with it: calisim simulate --model llama3-8b --strategy tp2_pp2_dp2_mbs1 --system " +
                           out + " --set 'strategy.global_batch_size=16'\n";
  EXPECT_NE(r.out.find(hint), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--set 'system."), std::string::npos) << r.out;
  // Pasted into a shell, it runs with the override.
  const std::string cmd = hint.substr(hint.find("calisim simulate") + 8);
  const CmdResult sim = run_calisim(cmd.substr(0, cmd.size() - 1));
  EXPECT_EQ(sim.code, 0) << sim.out;
  EXPECT_NE(sim.out.find("gbs 16"), std::string::npos) << sim.out;
}


// --sequence REPORT: the sustained kernel speed a `profile sequence` report measured goes into the
// calibrated file, with its provenance, and the simulation takes it (compute kernels 1 / 0.87 x as
// long); a dry-run report or a speed out of range exits 2 naming the field.
TEST_F(CalibrateCli, ASequenceReportSetsTheSustainedKernelSpeed) {
  auto report = [&](const std::string& name, const nlohmann::json& j) {
    std::ofstream(path(name)) << j.dump();
    return path(name);
  };
  nlohmann::json measured = {{"calisim_sequence", 1},
                             {"description", "llama3-8b dense layer"},
                             {"device", {{"name", "NVIDIA A100 80GB PCIe"}}},
                             {"sustain_s", 20},
                             {"runs", nlohmann::json::array({nlohmann::json::object()})},
                             {"alone_sum_over_sustained", 0.87}};
  const std::string out = path("a100-seq.json"), plain = path("a100-plain.json");
  const CmdResult r = run_calisim("calibrate --system a100-pcie-80g " + kConfig + " --db " + db_ + " --out " + out +
                                  " --sequence " + report("seq.json", measured));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("efficiency.sustained_kernel_speed 0.870"), std::string::npos) << r.out;
  std::ifstream f(out);
  const auto sys = nlohmann::json::parse(f);
  EXPECT_DOUBLE_EQ(sys["efficiency"]["sustained_kernel_speed"].get<double>(), 0.87);
  EXPECT_NE(sys["source"].get<std::string>().find("seq.json"), std::string::npos);
  ASSERT_EQ(run_calisim("calibrate --system a100-pcie-80g " + kConfig + " --db " + db_ + " --out " + plain).code, 0);
  const CmdResult slow = run_calisim_stdout("simulate " + kConfig + " --system " + out + " --json --no-ops");
  const CmdResult fast = run_calisim_stdout("simulate " + kConfig + " --system " + plain + " --json --no-ops");
  ASSERT_EQ(slow.code, 0) << slow.out;
  ASSERT_EQ(fast.code, 0) << fast.out;
  const double t_slow = nlohmann::json::parse(slow.out)["cost"]["duration_time_per_iter_s"].get<double>();
  const double t_fast = nlohmann::json::parse(fast.out)["cost"]["duration_time_per_iter_s"].get<double>();
  EXPECT_GT(t_slow, t_fast * 1.05);
  EXPECT_LT(t_slow, t_fast / 0.87 * 1.001);

  nlohmann::json dry = measured;
  dry.erase("runs");
  const CmdResult d = run_calisim("calibrate --system a100-pcie-80g " + kConfig + " --db " + db_ + " --out " +
                                  path("x.json") + " --sequence " + report("dry.json", dry));
  EXPECT_EQ(d.code, 2) << d.out;
  EXPECT_NE(d.out.find("runs"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("--dry-run"), std::string::npos) << d.out;
  // Refused before anything else: a missing database is not what it reports.
  const CmdResult early = run_calisim("calibrate --system a100-pcie-80g " + kConfig + " --db " + path("none.db") +
                                      " --sequence " + path("dry.json"));
  EXPECT_EQ(early.code, 2) << early.out;
  EXPECT_NE(early.out.find("dry.json: runs"), std::string::npos) << early.out;
  nlohmann::json fast_report = measured;
  fast_report["alone_sum_over_sustained"] = 3;
  const CmdResult e = run_calisim("calibrate --system a100-pcie-80g " + kConfig + " --db " + db_ + " --out " +
                                  path("y.json") + " --sequence " + report("bad.json", fast_report));
  EXPECT_EQ(e.code, 2) << e.out;
  EXPECT_NE(e.out.find("alone_sum_over_sustained: expected a number in (0, 2]"), std::string::npos) << e.out;
}

}  // namespace
