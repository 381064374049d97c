// End-to-end: Megatron-LM launch scripts through `configs import-megatron`, `simulate --megatron`
// and `search --megatron`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "tests/support/command_output.h"

namespace {

using calisim::testing_support::CommandResult;
using calisim::testing_support::expect_refused;
using calisim::testing_support::run_calisim;
using calisim::testing_support::run_calisim_stdout;
using calisim::testing_support::write_temp_file;


const std::string kLlamaScript = std::string(CALISIM_TEST_DATA_DIR) + "/../../examples/megatron/llama3_70b_64gpu.sh";
const std::string kMixtralScript =
    std::string(CALISIM_TEST_DATA_DIR) + "/../../examples/megatron/mixtral_8x7b_64gpu.sh";

// The width, depth and batch flags of a small run (16 heads), on one line; the tests add what
// they are about.
const std::string kSmallModel =
    "--hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --bf16";

nlohmann::json json_of(const std::string& args) {
  const CommandResult r = run_calisim_stdout(args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  return nlohmann::json::parse(r.out);
}

double step_s(const nlohmann::json& simulation) { return simulation["cost"]["duration_time_per_iter_s"].get<double>(); }

// The example script is the flagship's run written as Megatron-LM flags: the same step and memory.
TEST(CliMegatron, TheFlagshipScriptSimulatesAsTheShippedConfigs) {
  const nlohmann::json shipped =
      json_of("simulate --model llama3-70b --strategy llama3-70b-64gpu --system h100-sxm --json");
  const nlohmann::json script =
      json_of("simulate --megatron " + kLlamaScript + " --system h100-sxm --set model.vocab_size=128256 --json");
  EXPECT_DOUBLE_EQ(step_s(script), step_s(shipped));
  EXPECT_DOUBLE_EQ(script["stages"][0]["memory"]["peak_mem_bytes"].get<double>(),
                   shipped["stages"][0]["memory"]["peak_mem_bytes"].get<double>());
  EXPECT_EQ(script["layout"], shipped["layout"]);
}

TEST(CliMegatron, ImportWritesConfigsThatSimulateLoads) {
  const std::string model = ::testing::TempDir() + "mixtral.model.json";
  const std::string strategy = ::testing::TempDir() + "mixtral.strategy.json";
  const CommandResult imp = run_calisim("configs import-megatron " + kMixtralScript +
                                        " --vocab-size 32000 --model-out " + model + " --strategy-out " + strategy);
  ASSERT_EQ(imp.code, 0) << imp.out;
  EXPECT_NE(imp.out.find("model.expert_num"), std::string::npos) << imp.out;
  EXPECT_NE(imp.out.find("--num-experts (line 33)"), std::string::npos) << imp.out;
  EXPECT_NE(imp.out.find("--expert-tensor-parallel-size (line 37)"), std::string::npos) << imp.out;
  EXPECT_NE(imp.out.find("layout: dp 8 x tp 2 x pp 4 x cp 1 = 64 GPUs"), std::string::npos) << imp.out;
  const nlohmann::json files = json_of("simulate --model " + model + " --strategy " + strategy + " --system h100-sxm --json");
  const nlohmann::json direct = json_of("simulate --megatron " + kMixtralScript +
                                        " --system h100-sxm --set model.vocab_size=32000 --json");
  EXPECT_DOUBLE_EQ(step_s(files), step_s(direct));
  // The script's FP8 branch, chosen with --var.
  const nlohmann::json fp8 = json_of("simulate --megatron " + kMixtralScript +
                                     " --system h100-sxm --set model.vocab_size=32000 --var PRECISION=fp8 --json");
  EXPECT_EQ(fp8["layout"]["precision"], "bf16 + fp8 tensorwise (TransformerEngine, fp8 params)");
  EXPECT_LT(step_s(fp8), step_s(direct));
}

TEST(CliMegatron, ImportJsonListsOriginsAndWhatWasNotRead) {
  const nlohmann::json doc = json_of("configs import-megatron " + kLlamaScript + " --vocab-size 128256 --json");
  EXPECT_EQ(doc["strategy"]["interleaving_size"], 5);
  EXPECT_EQ(doc["dp_size"], 2);
  bool found = false;
  for (const auto& s : doc["settings"]) {
    if (s["field"] == "strategy.interleaving_size") {
      found = true;
      EXPECT_EQ(s["from"], "--num-layers-per-virtual-pipeline-stage (line 59): 80 layers / pp 4 / 4 per chunk "
                           "(Megatron's rule)");
    }
  }
  EXPECT_TRUE(found);
  const auto& not_read = doc["not_read"];
  EXPECT_NE(std::find(not_read.begin(), not_read.end(), "--lr"), not_read.end());
  EXPECT_EQ(std::find(not_read.begin(), not_read.end(), "--num-layers"), not_read.end());
}

TEST(CliMegatron, ErrorsNameTheScriptLineAndFlag) {
  // A layout the loader refuses: named by the Megatron flag and line that set it.
  const std::string bad = write_temp_file(
      "bad_tp.sh",
      "torchrun --nproc_per_node 6 pretrain_gpt.py \\\n"
      "  --num-layers 4 \\\n"
      "  " + kSmallModel + " --vocab-size 32000 \\\n"
      "  --tensor-model-parallel-size 3\n");
  const CommandResult r = run_calisim("simulate --megatron " + bad + " --system h100-sxm");
  expect_refused(r, "bad_tp.sh (Megatron arguments): line 4: --tensor-model-parallel-size (strategy.tp_size):");
  const CommandResult both = run_calisim("simulate --megatron " + bad + " --model llama3-8b --system h100-sxm");
  expect_refused(both, "--megatron gives the model and the strategy");
  const CommandResult neither = run_calisim("simulate --system h100-sxm");
  expect_refused(neither, "give --model and --strategy, or --megatron SCRIPT");
  const CommandResult var = run_calisim("configs import-megatron " + bad + " --var 9x=1");
  expect_refused(var, "--var 9x=1: expected NAME=VALUE");
  const CommandResult missing = run_calisim("configs import-megatron /nonexistent/run.sh");
  expect_refused(missing, "/nonexistent/run.sh: file not found");
}

// A sourced file beside the script is read; its flags' errors name it and its line.
TEST(CliMegatron, SourcedFilesAreReadBesideTheScript) {
  const std::string dir = ::testing::TempDir() + "megatron_source/";
  ASSERT_EQ(calisim::testing_support::run_shell("mkdir -p " + dir).code, 0);
  write_temp_file("megatron_source/model.sh", "NUM_LAYERS=8\nPARALLEL=(--tensor-model-parallel-size 3)\n");
  write_temp_file("megatron_source/run.sh",
                  "source model.sh\n"
                  "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers $NUM_LAYERS \\\n"
                  "  " + kSmallModel + " --vocab-size 32000 \\\n"
                  "  \"${PARALLEL[@]}\"\n");
  const CommandResult r = run_calisim("configs import-megatron " + dir + "run.sh --world-size 24");
  expect_refused(r, "run.sh (Megatron arguments): model.sh line 2: --tensor-model-parallel-size (strategy.tp_size): "
                 "head_num (16");
  const CommandResult ok = run_calisim("configs import-megatron " + dir + "run.sh --set strategy.tp_size=2");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("--num-layers (line 2)"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("--tensor-model-parallel-size (model.sh line 2)"), std::string::npos) << ok.out;
}

// A Hugging Face tokenizer whose tokenizer.json is readable is counted as Megatron counts it
// (len(tokenizer): the largest id + 1, added tokens included); --vocab-size is then not needed.
TEST(CliMegatron, TheVocabularyIsCountedFromALocalTokenizer) {
  const std::string dir = ::testing::TempDir() + "megatron_tok/";
  ASSERT_EQ(calisim::testing_support::run_shell("mkdir -p " + dir + "bpe " + dir + "unigram").code, 0);
  write_temp_file("megatron_tok/bpe/tokenizer.json",
                  R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2}},
                      "added_tokens": [{"id": 3, "content": "<s>"}, {"id": 6, "content": "<eot>"}]})");
  write_temp_file("megatron_tok/unigram/tokenizer.json",
                  R"({"model": {"type": "Unigram", "vocab": [["a", 0.0], ["b", -1.0], ["c", -2.0], ["d", -3.0]]}})");
  const std::string args =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 " + kSmallModel +
      " --tokenizer-type HuggingFaceTokenizer ";
  write_temp_file("megatron_tok/bpe.sh", args + "--tokenizer-model bpe --vocab-size 5\n");  // beside the script
  write_temp_file("megatron_tok/unigram.sh", args + "--tokenizer-model " + dir + "unigram\n");
  const nlohmann::json bpe = json_of("configs import-megatron " + dir + "bpe.sh --json");
  EXPECT_EQ(bpe["model"]["vocab_size"], 7);
  EXPECT_NE(bpe["warnings"].dump().find("--vocab-size (line 1) differs from the tokenizer's 7 tokens"),
            std::string::npos)
      << bpe["warnings"].dump();
  EXPECT_EQ(json_of("configs import-megatron " + dir + "unigram.sh --json")["model"]["vocab_size"], 4);
  write_temp_file("megatron_tok/hub.sh", args + "--tokenizer-model meta-llama/Meta-Llama-3-8B\n");
  const CommandResult hub = run_calisim("configs import-megatron " + dir + "hub.sh");
  expect_refused(hub, "and no tokenizer.json is readable at meta-llama/Meta-Llama-3-8B: give it with --vocab-size");
}

// profile plan and calibrate take the script too: the flagship's script plans the shipped
// configs' kernels.
TEST(CliMegatron, ProfilePlanAndCalibrateTakeTheScript) {
  const std::string script_plan = ::testing::TempDir() + "megatron_plan.json";
  const std::string shipped_plan = ::testing::TempDir() + "shipped_plan.json";
  ASSERT_EQ(run_calisim("profile plan --megatron " + kLlamaScript + " --set model.vocab_size=128256 -o " + script_plan)
                .code,
            0);
  ASSERT_EQ(run_calisim("profile plan --model llama3-70b --strategy llama3-70b-64gpu -o " + shipped_plan).code, 0);
  nlohmann::json a = nlohmann::json::parse(calisim::testing_support::run_shell("cat " + script_plan).out);
  nlohmann::json b = nlohmann::json::parse(calisim::testing_support::run_shell("cat " + shipped_plan).out);
  EXPECT_NE(a["description"].get<std::string>().find("Megatron script"), std::string::npos);
  a.erase("description");
  b.erase("description");
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a["gemm"].empty());
  const CommandResult mixed =
      run_calisim("calibrate --system h100-sxm --megatron " + kLlamaScript + " --model llama3-70b --db x.db");
  expect_refused(mixed, "--megatron gives the model and the strategy");
  const CommandResult runs = run_calisim("profile plan --megatron " + kLlamaScript + " --runs x.csv");
  expect_refused(runs, "leave out --model, --strategy and --megatron");
}

TEST(CliMegatron, SearchTakesTheScriptsRun) {
  const nlohmann::json doc = json_of("search --megatron " + kLlamaScript +
                                     " --system h100-sxm --set model.vocab_size=128256 --top 3 --tp 8 --pp 4 --json");
  ASSERT_FALSE(doc["top"].empty());
  EXPECT_EQ(doc["world_size"], 64);
  EXPECT_EQ(doc["global_batch_size"], 128);
  EXPECT_EQ(doc["seq_len"], 8192);
}

}  // namespace
