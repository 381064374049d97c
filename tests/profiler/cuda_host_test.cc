// Host-side logic of the CUDA profiler, tested with a fake sample timer and cuBLASLt's host-only
// calls; nothing here needs a GPU. (The loop's dropping of incomplete CUPTI samples goes through
// its stream synchronisation, so those fake-timer tests are GpuTimers.* in gpu_test.cc.)
#include <gtest/gtest.h>

#include <cublasLt.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/gemm_bench.h"
#include "profiler/gpu_error.h"
#include "profiler/measure_loop.h"
#include "tests/profiler/fake_timer.h"

namespace calisim::profiler {
namespace {

using fake::FakeRig;

// An op that throws on its n-th call.
StreamOp throwing_on(int n, int* calls, std::vector<std::string>* log = nullptr) {
  return [=](cudaStream_t) {
    if (log) log->push_back("op");
    if (++*calls == n) throw std::runtime_error("op failed on purpose");
  };
}

TEST(MeasureLoopExceptions, ThrowingOpClosesItsPairAndDiscardsTheBatch) {
  FakeRig rig;
  int calls = 0;
  try {
    rig.loop.quick_median_s(throwing_on(3, &calls), 5);
    FAIL() << "the op's exception was swallowed";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "op failed on purpose");
  }
  // The third pair was closed (events stay paired, CUPTI's id popped) and the two finished
  // pairs forgotten, so the next harvest starts clean.
  EXPECT_EQ(rig.timer.begins, 3);
  EXPECT_EQ(rig.timer.ends, 3);
  EXPECT_FALSE(rig.timer.open);
  EXPECT_EQ(rig.timer.discards, 1);
  EXPECT_EQ(rig.timer.pairs, 0);
  EXPECT_EQ(rig.timer.harvests, 0);
}

TEST(MeasureLoopExceptions, TheOpsErrorSurvivesAFailingEnd) {
  FakeRig rig;
  rig.timer.fail_end = true;
  int calls = 0;
  try {
    rig.loop.quick_median_s(throwing_on(1, &calls), 5);
    FAIL() << "the op's exception was swallowed";
  } catch (const std::runtime_error& e) {  // GpuError is one too: the message tells them apart
    EXPECT_STREQ(e.what(), "op failed on purpose");
  }
  EXPECT_EQ(rig.timer.ends, 1);  // tried once, not again after it failed
  EXPECT_EQ(rig.timer.discards, 1);
  EXPECT_EQ(rig.timer.pairs, 0);
}

TEST(MeasureLoopExceptions, AFailingBeginDiscardsTheEarlierPairs) {
  FakeRig rig;
  rig.timer.fail_begin_at = 3;
  int calls = 0;
  try {
    rig.loop.quick_median_s(throwing_on(-1, &calls), 5);
    FAIL() << "begin()'s exception was swallowed";
  } catch (const GpuError& e) {
    EXPECT_STREQ(e.what(), "begin failed");
  }
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(rig.timer.ends, 2);  // no end() for the begin() that failed
  EXPECT_EQ(rig.timer.discards, 1);
  EXPECT_EQ(rig.timer.pairs, 0);
}

TEST(MeasureLoopExceptions, PrepareRunsBeforeEveryTimedRunOutsideItsPair) {
  FakeRig rig;
  int calls = 0;
  const StreamOp prepare = [&](cudaStream_t) { rig.timer.log.push_back("prepare"); };
  EXPECT_THROW(rig.loop.quick_median_s(throwing_on(2, &calls, &rig.timer.log), 5, prepare), std::runtime_error);
  EXPECT_EQ(rig.timer.log, (std::vector<std::string>{"prepare", "begin", "op", "end", "prepare", "begin", "op", "end",
                                                     "discard"}));
}

// cublasLtMatmulAlgoConfigGetAttribute insists on the attribute's own width (a wrong sizeInBytes
// is CUBLAS_STATUS_INVALID_VALUE, which an 8-byte read of every field turned into zeros). The
// algorithm is filled through cuBLASLt's host-only setter: no GPU needed.
TEST(ProfilerGemmAlgo, DescriptionReadsEachAttributeAtItsOwnWidth) {
  cublasLtMatmulAlgo_t algo{};
  const std::uint32_t tile = CUBLASLT_MATMUL_TILE_128x128, stages = CUBLASLT_MATMUL_STAGES_64x4;
  const std::int32_t splitk = 3;
  ASSERT_EQ(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk),
            CUBLAS_STATUS_SUCCESS);
  // The id is read-only (set by cublasLtMatmulAlgoInit, which needs a handle): 0 in a zeroed algo.
  EXPECT_EQ(describe_cublaslt_algo(algo), "cublasLt algo 0 tile " + std::to_string(tile) + " stages " +
                                              std::to_string(stages) + " splitK 3");
}

}  // namespace
}  // namespace calisim::profiler
