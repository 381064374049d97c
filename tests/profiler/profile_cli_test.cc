// `calisim profile` end to end: plan files, and `run` refusing cleanly where it cannot measure.
#include <gtest/gtest.h>

#include "tests/support/command_output.h"
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "profiler/profile_plan.h"

namespace {

using CmdResult = calisim::testing_support::CommandResult;

CmdResult run(const std::string& args) {
  return calisim::testing_support::run_shell(std::string(CALISIM_EXE) + " " + args + " 2>&1");
}

TEST(ProfileCli, PlanWritesAReadablePlanFile) {
  const std::string path = ::testing::TempDir() + "cli_plan.json";
  const CmdResult r = run("profile plan --model llama3-8b --strategy tp2_pp2_dp2_mbs1 --system h100-sxm -o " + path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("GEMM"), std::string::npos) << r.out;
  const calisim::profiler::ProfilePlan plan = calisim::profiler::read_plan_file(path);
  EXPECT_GT(plan.count(calisim::db::KeyKind::gemm), 0u);
  EXPECT_GT(plan.count(calisim::db::KeyKind::collective), 0u);
}

TEST(ProfileCli, RunWithoutAUsableGpuExplainsWhy) {
  const std::string db = ::testing::TempDir() + "cli_run.db";
  const CmdResult r = run("profile run --sweep memory --db " + db);
#ifdef CALISIM_TEST_HAVE_CUDA
  if (r.code == 0) GTEST_SKIP() << "a GPU is present: the sweep ran";
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no CUDA device"), std::string::npos) << r.out;
#else
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("built without CUDA"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CALISIM_CUDA=ON"), std::string::npos) << r.out;
#endif
}

TEST(ProfileCli, RunNeedsExactlyOnePlanSource) {
  const CmdResult r = run("profile run --db x.db");
  EXPECT_EQ(r.code, 2) << r.out;
}

}  // namespace
