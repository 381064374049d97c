// End-to-end: what `calisim search`, `calisim sweep` and `calisim configs` say about their inputs
// and how their tables, JSON and CSV agree (warnings, infeasible points, 2D labels, kinds).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/command_output.h"

namespace {

using CmdResult = calisim::testing_support::CommandResult;
using calisim::testing_support::run_calisim;
using calisim::testing_support::run_calisim_stdout;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kSmallSearch =
    "--model llama3-8b --system h100-sxm --world-size 16 --global-batch-size 32 --seq-len 4096 --tp 1,2,4 "
    "--mbs 1 --recompute none,full";

// A strategy field accepted for SimuMax but not modeled is said by search and sweep as simulate
// says it: a warning on stderr, and in `warnings` of --json.
TEST(CliStudyInputs, NotModeledFieldsAreWarnedBySearchAndSweep) {
  const std::string set = " --set 'strategy.tp_net=\"x\"'";
  const std::string expected = "strategy field 'tp_net' is accepted for SimuMax compatibility but not modeled";
  CmdResult r = run_calisim("search " + kSmallSearch + " --top 2" + set);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: " + expected), std::string::npos) << r.out;
  r = run_calisim_stdout("search " + kSmallSearch + " --top 2 --json" + set);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["warnings"].is_array());
  EXPECT_NE(j["warnings"].dump().find(expected), std::string::npos) << j["warnings"];
  // Without the field: no such warning.
  EXPECT_EQ(nlohmann::json::parse(run_calisim_stdout("search " + kSmallSearch + " --top 2 --json").out)["warnings"].dump().find(
                "tp_net"),
            std::string::npos);

  r = run_calisim("sweep hardware " + kSmallSearch + " --vary peak_bf16=1x" + set);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: " + expected), std::string::npos) << r.out;
  for (const std::string& cmd : {"sweep hardware " + kSmallSearch + " --vary peak_bf16=1x",
                                "sweep layout " + kSmallSearch,
                                std::string("sweep scale --model llama3-8b --system h100-sxm --gpus 8,16 "
                                            "--global-batch-size 32 --seq-len 4096 --tp 1,2 --mbs 1 "
                                            "--recompute full")}) {
    r = run_calisim_stdout(cmd + " --json" + set);
    ASSERT_EQ(r.code, 0) << cmd << "\n" << r.out;
    EXPECT_NE(nlohmann::json::parse(r.out)["warnings"].dump().find(expected), std::string::npos) << cmd;
  }
}

// search --json: 1D grids are 0, 0 as in the CSV; feasible and smallest are null unless they
// apply (the Python API gives the same document).
TEST(CliStudyInputs, SearchJsonGridsAndNullsMatchTheDocs) {
  const std::string csv = ::testing::TempDir() + "calisim_study_search.csv";
  CmdResult r = run_calisim_stdout("search " + kSmallSearch + " --top 3 --json --out " + csv);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["feasible"].is_null());
  EXPECT_TRUE(j["smallest"].is_null());
  for (const auto& c : j["top"]) {
    EXPECT_EQ(c["tensor_parallel_mode"], "1d");
    EXPECT_EQ(c["tp_2d_rows"], 0);
    EXPECT_EQ(c["tp_2d_cols"], 0);
    EXPECT_EQ(c["cp_2d_rows"], 0);
    EXPECT_EQ(c["cp_2d_cols"], 0);
    EXPECT_TRUE(c["ranks_per_domain"].contains("dp_cp")) << c;
  }
  // The CSV of the same layouts says 0,0 too (the last columns: ...,tp_2d_rows,tp_2d_cols,cp_2d_rows,
  // cp_2d_cols,etp,cp_comm_type,moe_dispatcher).
  std::ifstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_NE(row.find(",0,0,0,0,1,p2p,alltoall"), std::string::npos) << row;

  // Nothing fits: the JSON names the smallest layout, and the exit code is 2.
  r = run_calisim_stdout("search --model llama3-70b --system a100-pcie-80g --world-size 8 --global-batch-size 8 --seq-len 8192 "
              "--tp 1 --pp 1 --json");
  EXPECT_EQ(r.code, 2);
  const auto none = nlohmann::json::parse(r.out);
  EXPECT_TRUE(none["top"].empty());
  ASSERT_TRUE(none["smallest"].is_object()) << none;
  EXPECT_EQ(none["smallest"]["tp"], 1);
}

// Bad numbers in sweep options are refused with the option's name, before any search runs.
TEST(CliStudyInputs, SweepRejectsBadNumbers) {
  const std::string scale = "sweep scale --model llama3-8b --system h100-sxm --global-batch-size 32 --seq-len 4096 "
                            "--tp 1,2 --mbs 1 --recompute full";
  for (const char* tokens : {"-1", "0", "nan", "inf"}) {
    const CmdResult r = run_calisim(scale + " --gpus 8 --train-tokens " + tokens);
    EXPECT_EQ(r.code, 2) << tokens << "\n" << r.out;
    EXPECT_NE(r.out.find("--train-tokens"), std::string::npos) << r.out;
  }
  for (const char* gpus : {"8abc", "0,8", "16..8", "1e3", "x..8"}) {
    const CmdResult r = run_calisim(scale + " --gpus " + gpus);
    EXPECT_EQ(r.code, 2) << gpus << "\n" << r.out;
    EXPECT_NE(r.out.find("--gpus"), std::string::npos) << r.out;
  }
  // Weak scaling to a batch that is not a whole number of sequences.
  CmdResult r = run_calisim(scale + " --gpus 3,4 --weak");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--weak"), std::string::npos) << r.out;

  const std::string hw = "sweep hardware " + kSmallSearch;
  for (const char* vary : {"peak_bf16=inf", "peak_bf16=0", "peak_bf16=-2x", "scaleup_domain=8.5", "memory_gb=1e999"}) {
    r = run_calisim(hw + " --vary " + vary);
    EXPECT_EQ(r.code, 2) << vary << "\n" << r.out;
    EXPECT_NE(r.out.find("--vary"), std::string::npos) << r.out;
  }
  r = run_calisim(hw + " --vary peak_bf16=1x..2x --points 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--points"), std::string::npos) << r.out;
  // --points only spreads ranges: with a list it would be ignored, so it is refused.
  r = run_calisim(hw + " --vary peak_bf16=1x,2x --points 3");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--points"), std::string::npos) << r.out;
}

// A GPU count no layout can use (100 GPUs, batch 32: dp must divide 32, leaving tp x pp = 25 or
// more, which tp <= 2 and 32 layers cannot give) is "no legal layout", not "nothing fits"; its
// numbers are null in JSON and empty in the CSV.
TEST(CliStudyInputs, IllegalScalePointSaysWhyAndHasNoNumbers) {
  const std::string csv = ::testing::TempDir() + "calisim_study_scale.csv";
  const std::string cmd = "sweep scale --model llama3-8b --system h100-sxm --gpus 8,100 --global-batch-size 32 "
                          "--seq-len 4096 --tp 1,2 --mbs 1 --recompute full --csv " + csv;
  CmdResult r = run_calisim(cmd);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("no legal layout"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nothing fits"), std::string::npos) << r.out;
  const std::string text = read_file(csv);
  EXPECT_NE(text.find("\"h100-sxm\",100,32,0,,,,,,\"\",,"), std::string::npos) << text;
  r = run_calisim_stdout(cmd + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 2u);
  const auto& ok = j["points"][0];
  const auto& bad = j["points"][1];
  EXPECT_TRUE(ok["feasible"].get<bool>());
  EXPECT_FALSE(ok["in_domain"].get<std::string>().empty());
  EXPECT_GT(ok["tokens_per_s_per_gpu"].get<double>(), 0);
  EXPECT_FALSE(bad["feasible"].get<bool>());
  EXPECT_FALSE(bad["legal"].get<bool>());
  for (const char* k : {"step_time_s", "mfu", "tokens_per_s_per_gpu", "time_to_train_s", "gpu_hours", "layout",
                        "in_domain", "best"}) {
    EXPECT_TRUE(bad[k].is_null()) << k << ": " << bad[k];
  }
  EXPECT_NE(bad["explanation"].get<std::string>().find("no legal layout"), std::string::npos) << bad;

  // A legal space where nothing fits in memory still says memory.
  r = run_calisim_stdout("sweep hardware --model llama3-70b --system a100-pcie-80g --world-size 8 --global-batch-size 8 "
              "--seq-len 8192 --tp 1 --pp 1 --vary memory_gb=40 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto mem = nlohmann::json::parse(r.out);
  const auto& p = mem["points"][0];
  EXPECT_TRUE(p["legal"].get<bool>());
  EXPECT_TRUE(p["step_time_s"].is_null());
  EXPECT_NE(p["limit"].get<std::string>().find("nothing fits"), std::string::npos) << p;
}

// Sweeps search 2D TP grids when asked, and label the winner as search does.
TEST(CliStudyInputs, SweepLabelsTwoDimensionalLayoutsAsSearchDoes) {
  const std::string space = "--model llama3-70b --system h100-sxm --world-size 1024 --global-batch-size 1024 "
                            "--seq-len 8192 --tp-2d-rows 2 --tp 8 --pp 8 --vpp 5 --recompute none --mbs 1";
  const CmdResult s = run_calisim_stdout("search " + space + " --top 1 --json");
  ASSERT_EQ(s.code, 0) << s.out;
  const auto best = nlohmann::json::parse(s.out)["top"][0];
  ASSERT_EQ(best["tensor_parallel_mode"], "2d") << best;  // the case this test is about
  EXPECT_EQ(best["tp_2d_rows"], 2);
  EXPECT_EQ(best["tp_2d_cols"], 4);
  const CmdResult table = run_calisim("search " + space + " --top 1");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("tp8(2x4 2d)"), std::string::npos) << table.out;

  const CmdResult w = run_calisim_stdout("sweep hardware " + space + " --vary peak_bf16=1x --json");
  ASSERT_EQ(w.code, 0) << w.out;
  const auto p = nlohmann::json::parse(w.out)["points"][0];
  EXPECT_EQ(p["best"], best);
  EXPECT_EQ(p["step_time_s"], best["step_time_s"]);
  EXPECT_EQ(p["layout"].get<std::string>().rfind("tp8(2x4 2d) pp8 vpp5 cp1 ep1 dp16 mbs1 none | domain ", 0), 0u)
      << p["layout"];
  const CmdResult wt = run_calisim("sweep hardware " + space + " --vary peak_bf16=1x");
  EXPECT_NE(wt.out.find("tp8(2x4 2d)"), std::string::npos) << wt.out;

  // The layout walk walks the grid rows too, the best marked.
  const CmdResult l = run_calisim_stdout("sweep layout " + space + " --json");
  ASSERT_EQ(l.code, 0) << l.out;
  const auto lj = nlohmann::json::parse(l.out);
  EXPECT_EQ(lj["best"]["tp_2d_rows"], 2);
  int grid_steps = 0;
  for (const auto& st : lj["steps"]) {
    if (st["dimension"] != "tp_2d_rows") continue;
    ++grid_steps;
    EXPECT_EQ(st["best"].get<bool>(), st["value"] == "2") << st;
  }
  EXPECT_EQ(grid_steps, 2);  // 0 (1D) and 2
}

// The JSON of each study carries the columns of its table.
TEST(CliStudyInputs, SweepJsonCarriesTheTableColumns) {
  CmdResult r = run_calisim_stdout("sweep hardware " + kSmallSearch + " --vary peak_bf16=1x,2x --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 2u);
  for (const auto& p : j["points"]) {
    EXPECT_GT(p["tokens_per_s_per_gpu"].get<double>(), 0) << p;
    EXPECT_EQ(p["tokens_per_s_per_gpu"], p["best"]["tokens_per_s_per_gpu"]);
    EXPECT_FALSE(p["limit"].get<std::string>().empty());
  }

  r = run_calisim_stdout("sweep layout " + kSmallSearch + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  const double best_s = j["best"]["step_time_s"].get<double>();
  EXPECT_FALSE(j["best"]["layout"].get<std::string>().empty());
  EXPECT_FALSE(j["best"]["limit"].get<std::string>().empty());
  int legal = 0, illegal = 0;
  for (const auto& s : j["steps"]) {
    for (const char* k : {"step_time_s", "vs_best", "bubble_fraction", "tp_comm_s", "dp_comm_s", "recompute_s",
                          "max_peak_gb", "headroom_gb"}) {
      ASSERT_TRUE(s.contains(k)) << k;
      EXPECT_EQ(s[k].is_null(), !s["legal"].get<bool>()) << k << ": " << s;
    }
    if (!s["legal"].get<bool>()) {
      ++illegal;
      continue;
    }
    ++legal;
    EXPECT_NEAR(s["vs_best"].get<double>(), s["step_time_s"].get<double>() / best_s - 1, 1e-12);
    EXPECT_NEAR(s["headroom_gb"].get<double>(),
                j["memory_capacity_gb"].get<double>() - s["max_peak_gb"].get<double>(), 1e-9);
    if (s["best"].get<bool>()) {
      EXPECT_DOUBLE_EQ(s["vs_best"].get<double>(), 0.0);
    }
  }
  EXPECT_GT(legal, 0);
  EXPECT_GT(illegal, 0);  // tp 4 x 4 heads... at least one neighbour breaks a rule in this space
}

TEST(CliConfigs, ShowDetectsTheKindOfAFile) {
  const std::string root = std::string(CALISIM_CONFIG_DIR) + "/";
  CmdResult r = run_calisim_stdout("configs show " + root + "strategies/llama3-8b-8gpu.json --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kind"], "strategies");
  r = run_calisim_stdout("configs show " + root + "systems/h100-sxm.json --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kind"], "systems");
  r = run_calisim_stdout("configs show " + root + "models/llama3-70b.json --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kind"], "models");

  // Outside the shipped folders the fields tell; --kind says it outright.
  const std::string copy = ::testing::TempDir() + "my-strategy.json";
  std::ofstream(copy) << read_file(root + "strategies/llama3-8b-8gpu.json");
  r = run_calisim_stdout("configs show " + copy + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kind"], "strategies");
  r = run_calisim("configs show " + copy + " --kind model");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("hidden_size"), std::string::npos) << r.out;
  const std::string odd = ::testing::TempDir() + "odd.json";
  std::ofstream(odd) << "{\"name\": \"x\"}";
  r = run_calisim("configs show " + odd);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--kind"), std::string::npos) << r.out;

  // A path that does not exist is a missing file, not an unknown shipped name.
  r = run_calisim("configs show llama3-70b.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("llama3-70b.json: file not found"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no shipped"), std::string::npos) << r.out;
  r = run_calisim("configs show llama3-70b --kind bogus");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--kind"), std::string::npos) << r.out;
}

TEST(CliConfigs, ListTakesSingularAndPlural) {
  const CmdResult plural = run_calisim_stdout("configs list models --json");
  const CmdResult singular = run_calisim_stdout("configs list model --json");
  ASSERT_EQ(plural.code, 0) << plural.out;
  ASSERT_EQ(singular.code, 0) << singular.out;
  EXPECT_EQ(plural.out, singular.out);
  const CmdResult bad = run_calisim("configs list bogus");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("strategy/strategies"), std::string::npos) << bad.out;
}

}  // namespace
