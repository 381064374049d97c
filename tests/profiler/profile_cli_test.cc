// `calisim profile` end to end: plan files, and `run` refusing cleanly where it cannot measure.
#include <gtest/gtest.h>

#include "tests/support/command_output.h"
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "profiler/profile_plan.h"
#include "profiler/trace_writer.h"

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
  calisim::profiler::store_trace(db, ks, {{0, "NVIDIA H100 80GB HBM3"}}, "cli test", "2026-01-01T00:00:00Z");
  const CmdResult r = run("db show " + db + " 'NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("trace run 1: 3 kernels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gemm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("60.0%"), std::string::npos) << "gemm is 3 of 5 us: " << r.out;
  EXPECT_NE(r.out.find("attention"), std::string::npos) << r.out;
  const CmdResult j = run("db show --json " + db + " 'NVIDIA H100 80GB HBM3'");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find("\"traces\""), std::string::npos) << j.out;
}

TEST(ProfileCli, RunNeedsExactlyOnePlanSource) {
  const CmdResult r = run("profile run --db x.db");
  EXPECT_EQ(r.code, 2) << r.out;
}

}  // namespace
