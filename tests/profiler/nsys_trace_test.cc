// read_nsys_sqlite(): Nsight Systems SQLite exports into trace records. The fixture is built here
// with the tables and columns of `nsys export --type sqlite` that the reader uses (StringIds,
// CUPTI_ACTIVITY_KIND_KERNEL / MEMCPY / MEMSET, TARGET_INFO_GPU, TARGET_INFO_CUDA_DEVICE): two
// GPUs of one node, nsys's GPU ids (7, 9) mapped to CUDA ordinals (0, 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "db/sqlite_handle.h"
#include "profiler/nsys_trace.h"

namespace {

using calisim::profiler::NsysTrace;
using calisim::profiler::read_nsys_sqlite;

std::string fixture(const std::string& name, bool with_gpu_info = true) {
  const std::string path = ::testing::TempDir() + name;
  std::filesystem::remove(path);
  calisim::db::Connection c(path, calisim::db::OpenMode::create);
  c.exec(R"sql(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO StringIds VALUES (1, 'nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT'), (2, 'nvjet_hsh'),
      (3, 'void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128> >(Flash_bwd_params)'),
      (4, 'flash_bwd'), (5, 'ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
      (6, 'ncclDevKernel_ReduceScatter');
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
      contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
      demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
      gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
      (1000, 201000, 0, 1, 7, 11, 100, 1, 2, 132, 1, 1, 384, 1, 1),
      (202000, 292000, 0, 1, 7, 12, 100, 3, 4, 32, 16, 1, 128, 1, 1),
      (150000, 350000, 0, 1, 20, 13, 100, 5, 6, 24, 1, 1, 640, 1, 1),
      (0, 0, 0, 1, 7, 14, 100, 1, 2, 1, 1, 1, 1, 1, 1),
      (5000, 105000, 1, 2, 7, 21, 200, 1, 2, 132, 1, 1, 384, 1, 1);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
      contextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, bytes INTEGER NOT NULL,
      copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (400000, 401000, 0, 1, 7, 15, 2000000, 1, 1, 3);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
      contextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, value INTEGER, bytes INTEGER NOT NULL,
      memKind INTEGER NOT NULL);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (402000, 403000, 0, 1, 7, 16, 0, 4096, 3);
  )sql");
  if (with_gpu_info) {
    c.exec(R"sql(
      CREATE TABLE TARGET_INFO_GPU (id INTEGER PRIMARY KEY, name TEXT, busLocation TEXT, totalMemory INTEGER);
      INSERT INTO TARGET_INFO_GPU VALUES (7, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 85520809984),
                                         (9, 'NVIDIA H100 80GB HBM3', '0000:2a:00.0', 85520809984);
      CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER, uuid TEXT);
      INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (7, 0, 100, 'a'), (9, 1, 200, 'b'), (7, 0, 200, 'a');
    )sql");
  }
  return path;
}

std::string error_of(const std::string& path, const std::string& device = "") {
  try {
    read_nsys_sqlite(path, device);
  } catch (const calisim::InputError& e) {
    return e.what();
  }
  return "";
}

std::string error_of_steps(const std::string& path, const std::string& prefix) {
  try {
    read_nsys_sqlite(path, "", prefix);
  } catch (const calisim::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(NsysTrace, ReadsKernelsCopiesAndDevicesOfAllGpus) {
  const NsysTrace t = read_nsys_sqlite(fixture("nsys_two_gpus.sqlite"));
  EXPECT_EQ(t.kernels, 4);
  EXPECT_EQ(t.copies, 2);
  EXPECT_EQ(t.untimed, 1);
  ASSERT_EQ(t.records.size(), 6u);
  EXPECT_TRUE(std::is_sorted(t.records.begin(), t.records.end(),
                             [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; }));
  EXPECT_EQ(t.device_names.at(0), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.device_names.at(1), "NVIDIA H100 80GB HBM3");
  const auto& gemm = t.records[0];
  EXPECT_EQ(gemm.kernel_class, "gemm");
  EXPECT_EQ(gemm.name, "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT");  // the demangled name, not the short one
  EXPECT_EQ(gemm.end_ns - gemm.start_ns, 200'000u);
  EXPECT_EQ(gemm.grid_x, 132);
  EXPECT_EQ(gemm.block_x, 384);
  EXPECT_EQ(t.records[1].device, 1);  // the second GPU's kernel keeps its ordinal
  auto first_of = [&](const std::string& cls) {
    return *std::find_if(t.records.begin(), t.records.end(), [&](const auto& k) { return k.kernel_class == cls; });
  };
  EXPECT_EQ(first_of("nccl").stream, 20);
  EXPECT_EQ(first_of("attention").grid_y, 16);
  EXPECT_EQ(first_of("memcpy").copy_kind, "HtoD");
  EXPECT_EQ(first_of("memcpy").bytes, 2000000);
  EXPECT_EQ(first_of("memset").copy_kind, "device");
  EXPECT_TRUE(std::all_of(t.records.begin(), t.records.end(), [](const auto& k) { return k.nvtx_range.empty(); }));
}

// The program's own NVTX step ranges (--nvtx-steps): nsys's serialised ids (pid = id / 2^24 %
// 2^24), a backward kernel launched from another thread of the process, a nested range, a mark, a
// text through StringIds, a memset table without globalPid (found by its correlation id alone),
// and a second process whose kernel was launched after its only step.
std::string with_nvtx(const std::string& name) {
  const std::string path = fixture(name);
  calisim::db::Connection c(path, calisim::db::OpenMode::read_write);
  c.exec(R"sql(
    UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid * 16777216;
    ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY ADD COLUMN globalPid INTEGER;
    UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET globalPid = 100 * 16777216;
    INSERT INTO StringIds VALUES (40, 'iteration_6');
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT,
      globalTid INTEGER, textId INTEGER);
    INSERT INTO NVTX_EVENTS VALUES
      (0, 300000, 59, 'iteration_5', 100 * 16777216 + 100, NULL),
      (100, 90000, 59, 'forward', 100 * 16777216 + 100, NULL),
      (300000, 700000, 59, NULL, 100 * 16777216 + 100, 40),
      (50, NULL, 34, 'a mark', 100 * 16777216 + 100, NULL),
      (0, 200000, 59, 'iteration_5', 200 * 16777216 + 200, NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
      globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
      (500, 600, 1, 100 * 16777216 + 100, 11, 0), (200500, 200600, 1, 100 * 16777216 + 131, 12, 0),
      (140000, 140100, 1, 100 * 16777216 + 100, 13, 0), (399000, 399100, 1, 100 * 16777216 + 100, 15, 0),
      (650000, 650100, 1, 100 * 16777216 + 100, 16, 0), (250000, 250100, 1, 200 * 16777216 + 200, 21, 0);
  )sql");
  return path;
}

TEST(NsysTrace, NvtxRangesOfTheProgramAreTheSteps) {
  const std::string path = with_nvtx("nsys_nvtx.sqlite");
  const NsysTrace t = read_nsys_sqlite(path, "", "iteration");
  EXPECT_EQ(t.steps, (std::vector<std::string>{"iteration_5", "iteration_6"}));
  EXPECT_EQ(t.outside_steps, 1);  // the second process's kernel, launched after its step
  auto step_of = [&](const std::string& cls, int device) {
    return std::find_if(t.records.begin(), t.records.end(),
                        [&](const auto& k) { return k.kernel_class == cls && k.device == device; })
        ->nvtx_range;
  };
  EXPECT_EQ(step_of("gemm", 0), "ProfilerStep#1");
  EXPECT_EQ(step_of("attention", 0), "ProfilerStep#1");  // launched by the backward thread
  EXPECT_EQ(step_of("nccl", 0), "ProfilerStep#1");
  EXPECT_EQ(step_of("memcpy", 0), "ProfilerStep#2");
  EXPECT_EQ(step_of("memset", 0), "ProfilerStep#2");  // by its correlation id alone
  EXPECT_EQ(step_of("gemm", 1), "");

  const std::string none = error_of_steps(path, "step");
  EXPECT_NE(none.find("no NVTX range whose text starts with 'step'"), std::string::npos) << none;
  EXPECT_NE(none.find("iteration_5"), std::string::npos) << none;
  const std::string no_nvtx = error_of_steps(fixture("nsys_no_nvtx.sqlite"), "iteration");
  EXPECT_NE(no_nvtx.find("--trace=cuda,nvtx"), std::string::npos) << no_nvtx;
  // Without a prefix the report has no steps, as before.
  const NsysTrace plain = read_nsys_sqlite(path);
  EXPECT_TRUE(plain.steps.empty());
  EXPECT_TRUE(std::all_of(plain.records.begin(), plain.records.end(), [](const auto& k) { return k.nvtx_range.empty(); }));
}

TEST(NsysTrace, DevicesTheReportDoesNotNameNeedAName) {
  const std::string path = fixture("nsys_no_gpu_info.sqlite", false);
  const std::string err = error_of(path);
  EXPECT_NE(err.find("TARGET_INFO_GPU"), std::string::npos) << err;
  EXPECT_NE(err.find("--device"), std::string::npos) << err;
  EXPECT_EQ(read_nsys_sqlite(path, "NVIDIA H200").device_names.at(1), "NVIDIA H200");
}

TEST(NsysTrace, WhatIsNotAReportIsRefusedWithTheReason) {
  EXPECT_NE(error_of(::testing::TempDir() + "nsys_missing.sqlite").find("no such report file"), std::string::npos);
  const std::string text = ::testing::TempDir() + "nsys_text.sqlite";
  std::ofstream(text) << "not a database at all, just some text long enough to have a header";
  EXPECT_NE(error_of(text).find("not"), std::string::npos) << error_of(text);
  const std::string other = ::testing::TempDir() + "nsys_other.sqlite";
  std::filesystem::remove(other);
  {
    calisim::db::Connection c(other, calisim::db::OpenMode::create);
    c.exec("CREATE TABLE t (x INTEGER)");
  }
  EXPECT_NE(error_of(other).find("not an Nsight Systems SQLite export"), std::string::npos) << error_of(other);
  const std::string no_kernels = ::testing::TempDir() + "nsys_no_kernels.sqlite";
  std::filesystem::remove(no_kernels);
  {
    calisim::db::Connection c(no_kernels, calisim::db::OpenMode::create);
    c.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
  }
  EXPECT_NE(error_of(no_kernels).find("--trace=cuda"), std::string::npos) << error_of(no_kernels);
}

}  // namespace
