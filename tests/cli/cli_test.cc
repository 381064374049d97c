// End-to-end tests of the `calisim` executable: exit codes, messages, JSON output.
#include <gtest/gtest.h>

#include "tests/support/command_output.h"
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

namespace {

using CmdResult = calisim::testing_support::CommandResult;
using calisim::testing_support::run_calisim;
using calisim::testing_support::run_calisim_stdout;
using calisim::testing_support::write_temp_file;

TEST(Cli, FlagshipSimulationPrintsTables) {
  const CmdResult r = run_calisim("simulate --model llama3-70b --strategy llama3-70b-64gpu --system h100-sxm");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("duration_time_per_iter"), std::string::npos);
  EXPECT_NE(r.out.find("MFU"), std::string::npos);
  EXPECT_NE(r.out.find("qkv_proj"), std::string::npos);
  EXPECT_NE(r.out.find("roofline"), std::string::npos);
}

// The layout line names Megatron's recompute modules (it said "selective (nothing)" for them).
TEST(Cli, LayoutLineNamesMegatronRecomputeModules) {
  const CmdResult r = run_calisim("simulate --model deepseek-v3 --strategy deepseek-v3-1024gpu --system h100-sxm --no-ops");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("recompute selective (recompute_modules layernorm, mla_up_proj, moe_act, mlp, moe), 4 layer(s)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("(nothing)"), std::string::npos);
}

// The interleaved schedule's micro-batch groups: named on the layout line when not Megatron's
// default (pp), and always in the JSON layout (0 without interleaving).
TEST(Cli, LayoutShowsTheInterleavedMicroBatchGroups) {
  const std::string cmd = "simulate --model llama3-70b --strategy llama3-70b-64gpu --system h100-sxm --no-ops";
  const CmdResult wide = run_calisim(cmd + " --set strategy.microbatch_group_size_per_vp_stage=8");
  ASSERT_EQ(wide.code, 0) << wide.out;
  EXPECT_NE(wide.out.find("layout tp 8 pp 4 vpp 5 (groups of 8) cp 1"), std::string::npos) << wide.out;
  const CmdResult dflt = run_calisim(cmd);
  EXPECT_NE(dflt.out.find("layout tp 8 pp 4 vpp 5 cp 1"), std::string::npos) << dflt.out;
  const CmdResult j = run_calisim_stdout(cmd + " --json --set strategy.microbatch_group_size_per_vp_stage=8");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_EQ(nlohmann::json::parse(j.out)["layout"]["microbatch_group_size_per_vp_stage"].get<int>(), 8);
  const CmdResult flat = run_calisim_stdout("simulate --model llama3-8b --strategy llama3-8b-8gpu --system h100-sxm --json");
  EXPECT_EQ(nlohmann::json::parse(flat.out)["layout"]["microbatch_group_size_per_vp_stage"].get<int>(), 0);
}

TEST(Cli, JsonIsOneDocumentWithSimuMaxFields) {
  const CmdResult r = run_calisim("simulate --model llama3-8b --strategy llama3-8b-8gpu --system h100-sxm --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"duration_time_per_iter_s", "chunk_time_s", "all_tokens_per_iter", "mfu", "mfu_6nd",
                        "mfu_6nd_with_attn", "throughput_per_accelerator"}) {
    EXPECT_TRUE(j["cost"].contains(k)) << k;
  }
  for (const char* k : {"model_mem_bytes", "fwd_activation_cache_per_micro_batch_bytes",
                        "peak_activation_mem_in_1F1B_bytes", "fwd_peak_allocated_mem_bytes",
                        "bwd_peak_allocated_mem_bytes", "peak_mem_bytes", "peak_mem_with_reserved_bytes", "peak_path"}) {
    EXPECT_TRUE(j["stages"][0]["memory"].contains(k)) << k;
  }
  EXPECT_GT(j["efficiency_sources"]["kernels_per_source"]["roofline"].get<int>(), 0);
}

TEST(Cli, SetOverridesAField) {
  const CmdResult a = run_calisim("simulate --model llama3-8b --strategy llama3-8b-8gpu --system h100-sxm --json");
  const CmdResult b = run_calisim("simulate --model llama3-8b --strategy llama3-8b-8gpu --system h100-sxm --json "
                    "--set system.device.peak_tflops.bf16=1978");
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_LT(nlohmann::json::parse(b.out)["cost"]["duration_time_per_iter_s"].get<double>(),
            nlohmann::json::parse(a.out)["cost"]["duration_time_per_iter_s"].get<double>());
}

TEST(Cli, TraceFileIsChromeTraceJson) {
  const std::string path = ::testing::TempDir() + "calisim_trace.json";
  const CmdResult r = run_calisim("simulate --model llama3-70b --strategy llama3-70b-64gpu --system h100-sxm --no-ops --trace " + path);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_GT(j["traceEvents"].size(), 100u);
}

TEST(Cli, BadInputExitsTwoWithFileFieldAndExpectation) {
  const std::string bad = write_temp_file("bad_strategy.json", R"({"seq_len": 4096, "micro_batch_num": 4, "tp_size": "8"})");
  CmdResult r = run_calisim("simulate --model llama3-8b --strategy " + bad + " --system h100-sxm");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bad_strategy.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tp_size"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected an integer"), std::string::npos) << r.out;

  r = run_calisim("simulate --model llama3-8b --strategy llama3-8b-8gpu --system h100-sxm --set strategy.tp_size=3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("divisible"), std::string::npos) << r.out;

  r = run_calisim("simulate --model no-such-model --strategy llama3-8b-8gpu --system h100-sxm");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no shipped models config named 'no-such-model'"), std::string::npos) << r.out;

  r = run_calisim("simulate --model llama3-8b --strategy llama3-8b-8gpu");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--system"), std::string::npos) << r.out;
}

TEST(Cli, ConfigsListShowVersionHelp) {
  CmdResult r = run_calisim("configs list systems");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("h100-sxm"), std::string::npos);
  r = run_calisim("configs show llama3-70b");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("70.55"), std::string::npos) << r.out;
  r = run_calisim("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("calisim"), std::string::npos);
  // The build's features, without loading the CUDA plugin.
  EXPECT_NE(r.out.find("CUDA profiler: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" | MPI: "), std::string::npos) << r.out;
  r = run_calisim("simulate --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--strategy"), std::string::npos);
}

}  // namespace

namespace {

// The calibrated path end to end: import SimuMax's measured A100-PCIe table into a database and
// simulate a run of the same machine with it; every kernel must come from the database.
TEST(Cli, SimulateWithDatabaseUsesMeasuredEfficiencies) {
  const std::string db = ::testing::TempDir() + "calisim_cli_a100.db";
  std::remove(db.c_str());
  CmdResult r = run_calisim("db import " + db + " --simumax " + std::string(CALISIM_TEST_DATA_DIR) +
                    "/simumax/system/a100_pcie.json --device \"NVIDIA A100 PCIe 80GB\"");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string strategy = write_temp_file(
      "a100_tp1_pp2.json",
      R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8, "pp_size": 2})");
  const std::string base =
      "simulate --model llama3-70b --set model.layer_num=12 --strategy " + strategy + " --system a100-pcie-80g --json";
  r = run_calisim(base + " --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const auto& src = j["efficiency_sources"]["kernels_per_source"];
  EXPECT_GT(src["measured"].get<int>(), 0);
  EXPECT_EQ(src["roofline"].get<int>(), 0) << j["efficiency_sources"]["roofline_keys"].dump();
  EXPECT_EQ(j["efficiency_sources"]["database"].get<std::string>(), db);
  // Without the database the same run is all roofline.
  const auto plain = nlohmann::json::parse(run_calisim(base).out);
  EXPECT_EQ(plain["efficiency_sources"]["kernels_per_source"]["measured"].get<int>(), 0);
  // A device the database does not hold is a clear input error.
  r = run_calisim("simulate --model llama3-8b --strategy llama3-8b-8gpu --system h100-sxm --db " + db);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("NVIDIA A100 PCIe 80GB"), std::string::npos) << r.out;
}

}  // namespace

namespace {

const std::string kSmallSearch =
    "search --model llama3-8b --system h100-sxm --world-size 16 --global-batch-size 32 --seq-len 4096 "
    "--tp 1,2,4 --pp 1,2,4 --vpp 1,2 --mbs 1,2 --recompute none,attn+mlp,full --zero 0,1,3 --top 5";

std::vector<std::uint64_t> top_indices(const nlohmann::json& j) {
  std::vector<std::uint64_t> out;
  for (const auto& c : j["top"]) out.push_back(c["index"].get<std::uint64_t>());
  return out;
}

// search --accuracy: the best layout's step time beside the validated H100 dense bf16 runs; the
// text names the layout it judges; without the flag no "accuracy" field.
TEST(CliSearch, AccuracyOfTheBestLayout) {
  const CmdResult r = run_calisim(kSmallSearch + " --json --accuracy");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("accuracy")) << r.out.substr(0, 300);
  const auto& a = j["accuracy"];
  ASSERT_TRUE(a["available"].get<bool>()) << a.dump();
  EXPECT_EQ(a["matched_on"], (nlohmann::json{"system h100-sxm", "dense", "bf16"}));
  const double best = j["top"][0]["step_time_s"].get<double>();
  EXPECT_DOUBLE_EQ(a["simulated_step_s"].get<double>(), best);
  EXPECT_NEAR(a["expected_step_s"].get<double>(), best / (1 + a["median_error"].get<double>()), 1e-9 * best);
  EXPECT_FALSE(nlohmann::json::parse(run_calisim(kSmallSearch + " --json").out).contains("accuracy"));
  const CmdResult text = run_calisim(kSmallSearch + " --accuracy");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("step time those errors imply for the best layout (#1)"), std::string::npos) << text.out;
}

TEST(CliSearch, JsonTopAndCounts) {
  const CmdResult r = run_calisim(kSmallSearch + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["top"].size(), 5u);
  const auto& n = j["counts"];
  EXPECT_EQ(n["illegal"].get<int>() + n["equivalent_placement"].get<int>() + n["over_memory"].get<int>() +
                n["dominated_recompute"].get<int>() + n["feasible"].get<int>(),
            n["candidates"].get<int>());
  for (std::size_t i = 1; i < j["top"].size(); ++i) {
    EXPECT_LE(j["top"][i - 1]["step_time_s"].get<double>(), j["top"][i]["step_time_s"].get<double>());
  }
}

TEST(CliSearch, ShardsMergeToTheWholeSearch) {
  const std::string dir = ::testing::TempDir();
  const auto whole = nlohmann::json::parse(run_calisim(kSmallSearch + " --json").out);
  std::string files;
  for (int i = 0; i < 3; ++i) {
    const std::string out = dir + "calisim_shard" + std::to_string(i) + ".csv";
    const CmdResult r = run_calisim(kSmallSearch + " --shard " + std::to_string(i) + "/3 --out " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    files += " " + out;
  }
  const CmdResult m = run_calisim("search merge --top 5 --json" + files);
  ASSERT_EQ(m.code, 0) << m.out;
  const auto merged = nlohmann::json::parse(m.out);
  std::vector<std::uint64_t> got;
  for (const auto& c : merged) got.push_back(c["index"].get<std::uint64_t>());
  EXPECT_EQ(got, top_indices(whole));
}

// `search` with --out, then `search merge` of that file, gives the same top list as --json, field
// `field` included; returns the --json top list.
nlohmann::json expect_merge_keeps(const std::string& search, const std::string& top, const char* field,
                                  const std::string& file) {
  const CmdResult r = run_calisim(search + " --json");
  EXPECT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const std::string out = ::testing::TempDir() + file;
  EXPECT_EQ(run_calisim(search + " --out " + out).code, 0);
  const CmdResult m = run_calisim("search merge --top " + top + " --json " + out);
  EXPECT_EQ(m.code, 0) << m.out;
  const auto merged = nlohmann::json::parse(m.out);
  EXPECT_EQ(merged.size(), j["top"].size());
  for (std::size_t i = 0; i < std::min(merged.size(), j["top"].size()); ++i) {
    EXPECT_EQ(merged[i][field], j["top"][i][field]) << i;
  }
  return j["top"];
}

// --etp searches expert tensor parallelism: shown in the layout, in the JSON and through --out /
// search merge; a value below 1 is a command-line error.
TEST(CliSearch, ExpertTensorParallelSizesAreSearchedAndMerged) {
  const std::string moe =
      "search --model mixtral-8x7b --system h100-sxm --world-size 16 --global-batch-size 64 --seq-len 4096 "
      "--tp 2 --pp 1,2 --vpp 1 --ep 2,4,8 --etp 1,2 --mbs 1 --recompute full --top 10";
  const auto top = expect_merge_keeps(moe, "10", "etp", "calisim_etp.csv");
  std::set<int> etps;
  for (const auto& c : top) etps.insert(c["etp"].get<int>());
  EXPECT_EQ(etps, (std::set<int>{1, 2}));
  const CmdResult text = run_calisim(moe);
  EXPECT_NE(text.out.find(" etp2 dp"), std::string::npos) << text.out;
  const CmdResult bad = run_calisim(moe + " --etp 0");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--etp"), std::string::npos) << bad.out;
}

// --recompute takes Megatron's recompute modules (modules:NAME+NAME): shown in the table, in the
// JSON and through --out / search merge; an unknown module is a command-line error naming it.
TEST(CliSearch, MegatronRecomputeModulesAreSearchedAndMerged) {
  const std::string moe =
      "search --model qwen3-30b-a3b --system h200 --world-size 8 --global-batch-size 64 --seq-len 4096 "
      "--tp 1 --pp 1 --vpp 1 --ep 8 --mbs 1,2 --recompute none,modules:moe_act+layernorm "
      "--set strategy.moe_grouped_gemm=true --top 5";
  const auto top = expect_merge_keeps(moe, "5", "recompute", "calisim_modules.csv");
  ASSERT_FALSE(top.empty());
  EXPECT_EQ(top[0]["recompute"], "modules:layernorm+moe_act");
  EXPECT_NE(run_calisim(moe).out.find("modules:layernorm+moe_act"), std::string::npos);
  const CmdResult bad = run_calisim(moe + " --recompute modules:layernorm+attn");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("unknown Megatron recompute module 'attn'"), std::string::npos) << bad.out;
}

// --cp-comm-type tries several CP communication types: JSON, layout text and merge carry them.
TEST(CliSearch, CpCommunicationTypesAreSearchedAndMerged) {
  const std::string cp =
      "search --model llama3-8b --system h100-sxm --world-size 16 --global-batch-size 16 --seq-len 32768 "
      "--tp 1,2 --pp 1 --vpp 1 --cp 2,4 --mbs 1 --recompute full --cp-comm-type p2p,a2a,allgather --top 20";
  const auto top = expect_merge_keeps(cp, "20", "cp_comm_type", "calisim_cp_comm.csv");
  std::set<std::string> kinds;
  for (const auto& c : top) kinds.insert(c["cp_comm_type"].get<std::string>());
  EXPECT_EQ(kinds, (std::set<std::string>{"a2a", "allgather", "p2p"}));
  EXPECT_NE(run_calisim(cp).out.find("/allgather"), std::string::npos);
  const CmdResult bad = run_calisim(cp + " --cp-comm-type ring");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("expected p2p, a2a or allgather, got 'ring'"), std::string::npos) << bad.out;
}

// --dispatcher tries MoE token dispatchers: JSON, layout text ("ep8/flex") and merge carry them.
TEST(CliSearch, MoeDispatchersAreSearchedAndMerged) {
  const std::string moe =
      "search --model qwen3-30b-a3b --system b200 --world-size 8 --global-batch-size 64 --seq-len 4096 "
      "--tp 1 --pp 1 --vpp 1 --ep 4,8 --mbs 1 --recompute none --dispatcher alltoall,flex --top 20";
  const auto top = expect_merge_keeps(moe, "20", "moe_dispatcher", "calisim_dispatcher.csv");
  std::set<std::string> kinds;
  for (const auto& c : top) kinds.insert(c["moe_dispatcher"].get<std::string>());
  EXPECT_EQ(kinds, (std::set<std::string>{"alltoall", "flex"}));
  EXPECT_NE(run_calisim(moe).out.find("/flex dp"), std::string::npos);
  const CmdResult bad = run_calisim(moe + " --dispatcher deepep");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("expected alltoall, allgather or flex, got 'deepep'"), std::string::npos) << bad.out;
}

// --dp-replicate tries hybrid-sharding replica counts: JSON, layout text ("dp16/r4") and merge
// carry them; a count below 1 is a command-line error, and one that needs a sharded state says so.
TEST(CliSearch, HybridShardingReplicasAreSearchedAndMerged) {
  const std::string hsdp =
      "search --model llama3-8b --system h100-sxm --world-size 32 --global-batch-size 64 --seq-len 4096 "
      "--tp 1,2 --pp 1 --vpp 1 --mbs 1 --recompute full --zero 3 --dp-replicate 1,4 --top 20";
  const auto top = expect_merge_keeps(hsdp, "20", "dp_replicate_size", "calisim_replicas.csv");
  std::set<int> counts;
  for (const auto& c : top) counts.insert(c["dp_replicate_size"].get<int>());
  EXPECT_EQ(counts, (std::set<int>{1, 4}));
  EXPECT_NE(run_calisim(hsdp).out.find(" dp32/r4 "), std::string::npos);
  const CmdResult bad = run_calisim(hsdp + " --dp-replicate 0");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--dp-replicate"), std::string::npos) << bad.out;
  // Replicas of a replicated state (ZeRO-0) are illegal: with nothing else in the space the search
  // finds no layout and names the rule, not only the divisibility ones.
  const CmdResult zero0 = run_calisim(
      "search --model llama3-8b --system h100-sxm --world-size 32 --global-batch-size 64 --seq-len 4096 "
      "--tp 2 --pp 1 --vpp 1 --mbs 1 --recompute full --zero 0 --dp-replicate 4");
  EXPECT_EQ(zero0.code, 2) << zero0.out;
  EXPECT_NE(zero0.out.find("no legal layout in the space"), std::string::npos) << zero0.out;
  EXPECT_NE(zero0.out.find("replicas of a sharded state need zero_state 1, 2 or 3"), std::string::npos) << zero0.out;
}

TEST(CliSearch, CsvHasEveryFeasibleCandidate) {
  const std::string csv = ::testing::TempDir() + "calisim_all.csv";
  const CmdResult r = run_calisim(kSmallSearch + " --csv " + csv);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(run_calisim(kSmallSearch + " --json").out);
  std::ifstream in(csv);
  std::string line;
  int rows = -1;  // header
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, j["counts"]["feasible"].get<int>());
}

TEST(CliSearch, NothingFitsIsExplained) {
  const CmdResult r = run_calisim("search --model llama3-405b --system h100-sxm --world-size 64 --global-batch-size 64 "
                          "--seq-len 8192");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no layout fits in 85.5 GB: the smallest needs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at tp "), std::string::npos) << r.out;
}

TEST(CliSearch, BadArgumentsExitTwo) {
  EXPECT_EQ(run_calisim(kSmallSearch + " --shard 3/3").code, 2);
  EXPECT_EQ(run_calisim(kSmallSearch + " --recompute sometimes").code, 2);
  EXPECT_EQ(run_calisim(kSmallSearch + " --zero 4").code, 2);
  EXPECT_EQ(run_calisim("search --model llama3-8b --system h100-sxm").code, 2);
  const std::string bad = write_temp_file("bad_result.csv", "not,a,result\n");
  const CmdResult r = run_calisim("search merge " + bad);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bad_result.csv"), std::string::npos) << r.out;
}

TEST(CliSearch, MpirunRanksShardTheSpaceAndRankZeroMerges) {
#ifndef CALISIM_MPIEXEC
  GTEST_SKIP() << "calisim was built without MPI (install libopenmpi-dev and openmpi-bin to run this test)";
#else
  const auto whole = nlohmann::json::parse(run_calisim(kSmallSearch + " --json").out);
  const std::string cmd = std::string(CALISIM_MPIEXEC) + " --allow-run-as-root --oversubscribe -np 2 " +
                          std::string(CALISIM_EXE) + " " + kSmallSearch + " --json 2>&1";
  const CmdResult mpi = calisim::testing_support::run_shell(cmd);
  const std::string& out = mpi.out;
  ASSERT_EQ(mpi.code, 0) << out;
  const auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(top_indices(j), top_indices(whole));
  EXPECT_EQ(j["counts"]["candidates"], whole["counts"]["candidates"]);
  EXPECT_EQ(j["counts"]["feasible"], whole["counts"]["feasible"]);
#endif
}

}  // namespace

namespace {

TEST(CliSweep, HardwareScaleAndLayoutWriteTablesCsvAndSvg) {
  const std::string dir = ::testing::TempDir();
  const std::string common = " --model llama3-8b --seq-len 4096 --tp 1,2,4 --mbs 1,2 --recompute none,full";
  CmdResult r = run_calisim("sweep hardware --system h100-sxm --world-size 16 --global-batch-size 32 --vary "
                    "peak_bf16=0.5x..2x --points 3 --svg " + dir + "hw.svg --csv " + dir + "hw.csv" + common);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("limited by"), std::string::npos);
  std::ifstream svg(dir + "hw.svg");
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("<svg", 0), 0u);
  EXPECT_NE(text.find("<polyline"), std::string::npos);
  EXPECT_EQ(text.find("<script"), std::string::npos);  // self-contained, nothing to run or fetch
  r = run_calisim("sweep scale --systems a100-sxm-80g,h100-sxm --gpus 8..32 --global-batch-size 32 --json" + common);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["points"].size(), 6u);
  r = run_calisim("sweep layout --system h100-sxm --world-size 16 --global-batch-size 32" + common);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(best)"), std::string::npos);
  EXPECT_EQ(run_calisim("sweep hardware --system h100-sxm --world-size 16 --global-batch-size 32 --vary flops=2x" + common)
                .code,
            2);
}

}  // namespace
