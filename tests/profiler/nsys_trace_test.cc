// read_nsys_sqlite(): Nsight Systems SQLite exports into trace records. The fixture is built here
// with the tables and columns of `nsys export --type sqlite` that the reader uses (StringIds,
// CUPTI_ACTIVITY_KIND_KERNEL / MEMCPY / MEMSET, TARGET_INFO_GPU, TARGET_INFO_CUDA_DEVICE): two
// GPUs of one node, nsys's GPU ids (7, 9) mapped to CUDA ordinals (0, 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

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
