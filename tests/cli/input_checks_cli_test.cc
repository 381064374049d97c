// Command-line inputs that used to crash, pass silently or mislead: layout lists with zero or
// negative sizes, repeated list values, the memory margin, duplicate JSON keys, numbers beyond
// double's range, a system without the training dtype's peak.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/command_output.h"

namespace {

using CmdResult = calisim::testing_support::CommandResult;
using calisim::testing_support::run_calisim;
using calisim::testing_support::write_temp_file;

const std::string kSearch =
    "search --model llama3-8b --system h100-sxm --world-size 8 --global-batch-size 8 --seq-len 4096";

bool has(const std::string& out, const std::string& text) { return out.find(text) != std::string::npos; }

// A 0 in --tp divided by zero (SIGFPE) and a negative size asked for a vector of 2^64 elements.
TEST(CliInputChecks, LayoutListsNeedPositiveSizes) {
  for (const char* flag : {"--tp", "--pp", "--vpp", "--cp", "--ep", "--mbs"}) {
    for (const char* v : {"0", "-2", "2,0"}) {
      const CmdResult r = run_calisim(kSearch + " " + flag + " " + v);
      EXPECT_EQ(r.code, 2) << flag << " " << v << ": " << r.out;
      EXPECT_TRUE(has(r.out, std::string(flag) + ": expected a whole number >= 1")) << r.out;
    }
  }
  const CmdResult seq = run_calisim("search --model llama3-8b --system h100-sxm --world-size 8 --global-batch-size 8 --seq-len -5");
  EXPECT_EQ(seq.code, 2);
  EXPECT_TRUE(has(seq.out, "--seq-len: expected a whole number >= 1, got '-5'")) << seq.out;
}

TEST(CliInputChecks, MemoryMarginMustBeFiniteNonNegativeAndBelowTheDevice) {
  for (const char* v : {"-5", "nan", "inf"}) {
    const CmdResult r = run_calisim(kSearch + " --memory-margin-gb " + v);
    EXPECT_EQ(r.code, 2) << v << ": " << r.out;
    EXPECT_TRUE(has(r.out, "--memory-margin-gb: expected a finite number of GB >= 0")) << r.out;
  }
  const CmdResult big = run_calisim(kSearch + " --memory-margin-gb 100");
  EXPECT_EQ(big.code, 2);
  EXPECT_TRUE(has(big.out, "leaves nothing of the 85.52 GB")) << big.out;
}

// A value given twice is one layout, not two identical rows.
TEST(CliInputChecks, RepeatedListValuesAreOneLayout) {
  const CmdResult r =
      run_calisim(kSearch + " --tp 4,4 --pp 1 --mbs 1,1 --recompute none,none --zero 1,1 --orders megatron --json --top 5");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["top"].size(), 1u) << r.out;
}

TEST(CliInputChecks, DuplicateKeysAndOverflowingNumbersInConfigFiles) {
  const std::string dup = write_temp_file("dup_strategy.json",
                                     R"({"tp_size": 2, "pp_size": 2, "tp_size": 4, "world_size": 8,
                                         "global_batch_size": 8, "micro_batch_size": 1, "seq_len": 4096})");
  const CmdResult d = run_calisim("simulate --model llama3-8b --strategy " + dup + " --system h100-sxm --no-ops");
  EXPECT_EQ(d.code, 2) << d.out;
  EXPECT_TRUE(has(d.out, dup + ": tp_size: the key is given twice")) << d.out;
  const std::string big = write_temp_file("overflow_strategy.json", R"({"seq_len": 1e400})");
  const CmdResult o = run_calisim("simulate --model llama3-8b --strategy " + big + " --system h100-sxm");
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_TRUE(has(o.out, big + ": unreadable JSON value")) << o.out;
}

TEST(CliInputChecks, MissingTrainingPeakIsAnInputErrorNamingTheSystemFile) {
  const CmdResult r = run_calisim("simulate --model llama3-8b --strategy tp2_pp2_dp2_mbs1 --system h100-sxm "
                          "--set system.device.peak_tflops.bf16=0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "h100-sxm.json")) << r.out;
  EXPECT_TRUE(has(r.out, "device.peak_tflops.bf16: the strategy trains in bf16")) << r.out;
  EXPECT_FALSE(has(r.out, "internal error")) << r.out;
}

}  // namespace
