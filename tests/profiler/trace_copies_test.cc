// Memory copies and memsets in a trace, without a GPU: CUPTI's copy / memory kinds named, records
// built and classified as memcpy / memset, stored with their bytes and summarised by kind.
#include <gtest/gtest.h>

#include <filesystem>

#include "db/trace_store.h"
#include "profiler/kernel_class.h"
#include "profiler/trace_copies.h"
#include "profiler/trace_writer.h"

namespace calisim::profiler {
namespace {

TEST(TraceCopies, NamesCuptiCopyAndMemoryKinds) {
  // CUpti_ActivityMemcpyKind values (trace_injection.cc static_asserts them against the headers).
  EXPECT_EQ(copy_direction_name(1), "HtoD");
  EXPECT_EQ(copy_direction_name(2), "DtoH");
  EXPECT_EQ(copy_direction_name(8), "DtoD");
  EXPECT_EQ(copy_direction_name(9), "HtoH");
  EXPECT_EQ(copy_direction_name(10), "PtoP");
  EXPECT_EQ(copy_direction_name(3), "HtoA");
  EXPECT_EQ(copy_direction_name(0), "unknown");
  EXPECT_EQ(copy_direction_name(11), "unknown");
  EXPECT_EQ(copy_direction_name(-1), "unknown");
  // CUpti_ActivityMemoryKind values.
  EXPECT_EQ(memory_kind_name(2), "pinned");
  EXPECT_EQ(memory_kind_name(3), "device");
  EXPECT_EQ(memory_kind_name(5), "managed");
  EXPECT_EQ(memory_kind_name(99), "unknown");
}

TEST(TraceCopies, RecognisesDriverCopyAndMemsetCalls) {
  EXPECT_TRUE(is_copy_api("cuMemcpyHtoD_v2"));
  EXPECT_TRUE(is_copy_api("cuMemcpyAsync"));
  EXPECT_TRUE(is_copy_api("cuMemcpyPeerAsync"));
  EXPECT_TRUE(is_copy_api("cuMemsetD32Async"));
  EXPECT_FALSE(is_copy_api("cuLaunchKernel"));
  EXPECT_FALSE(is_copy_api("cuMemAlloc_v2"));
  EXPECT_FALSE(is_copy_api("cudaMemcpy"));  // runtime calls: matched at their driver call
  EXPECT_FALSE(is_copy_api(""));
}

TEST(TraceCopies, BuildsClassifiedRecordsWithBytesAndKind) {
  const db::TraceKernel h2d = copy_record({1, 1 << 20, 1000, 1500, 0, 7, -1, -1});
  EXPECT_EQ(h2d.name, "[CUDA memcpy HtoD]");
  EXPECT_EQ(h2d.kernel_class, "memcpy");
  EXPECT_EQ(h2d.copy_kind, "HtoD");
  EXPECT_EQ(h2d.bytes, 1 << 20);
  EXPECT_EQ(h2d.stream, 7);
  EXPECT_EQ(h2d.grid_x, 0);  // not a kernel
  EXPECT_EQ(h2d.block_x, 0);
  EXPECT_DOUBLE_EQ(h2d.duration_s(), 500e-9);

  const db::TraceKernel peer = copy_record({10, 4096, 10, 20, 1, 3, 1, 0});
  EXPECT_EQ(peer.name, "[CUDA memcpy PtoP 1->0]");
  EXPECT_EQ(peer.device, 1);

  const db::TraceKernel set = memset_record({3, 256, 50, 40, 0, 9});  // end before start: CUPTI had no timing
  EXPECT_EQ(set.name, "[CUDA memset device]");
  EXPECT_EQ(set.kernel_class, "memset");
  EXPECT_EQ(set.copy_kind, "device");
  EXPECT_EQ(set.end_ns, set.start_ns);
}

TEST(TraceCopies, EveryProfilerClassIsOneTheDatabaseAccepts) {
  for (int i = 0; i < kKernelClassCount; ++i) {
    EXPECT_TRUE(db::is_trace_class(to_string(static_cast<KernelClass>(i)))) << i;
  }
  EXPECT_EQ(db::trace_classes().size(), static_cast<std::size_t>(kKernelClassCount));
  EXPECT_FALSE(db::is_trace_class("copy"));
}

TEST(TraceCopies, StoredWithKernelsAndSummarisedByKind) {
  const auto p = std::filesystem::temp_directory_path() / "calisim_trace_copies.db";
  std::filesystem::remove(p);
  std::filesystem::remove(p.string() + "-wal");
  std::filesystem::remove(p.string() + "-shm");
  db::TraceKernel gemm;
  gemm.name = "nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NNT";
  gemm.start_ns = 2000, gemm.end_ns = 6000;
  finish_trace_kernel(gemm);
  const std::vector<db::TraceKernel> records = {
      copy_record({1, 3'000'000, 0, 1000, 0, 7, -1, -1}),        // HtoD 3 MB in 1 us = 3000 GB/s
      copy_record({1, 1'000'000, 1000, 2000, 0, 7, -1, -1}),     // HtoD 1 MB in 1 us
      gemm,
      memset_record({3, 8'000'000, 6000, 8000, 0, 7}),           // memset 8 MB in 2 us
      copy_record({2, 500, 8000, 8500, 0, 7, -1, -1}),           // DtoH
  };
  const auto written = store_trace(p.string(), records, {{0, "NVIDIA H100 80GB HBM3"}},
                                   {"copies test", "2026-01-01T00:00:00Z"});
  ASSERT_EQ(written.run_by_device.size(), 1u);
  auto db = db::EfficiencyDb::open(p.string(), db::OpenMode::read_only);
  const std::int64_t run = written.run_by_device.at(0);
  EXPECT_NE(db.load_runs().at(0).run.notes.find("1 kernels, 4 copies / memsets"), std::string::npos)
      << db.load_runs().at(0).run.notes;
  const db::TraceSummary s = db::summarize_trace(db, run);
  EXPECT_EQ(s.kernels, 5);
  ASSERT_EQ(s.classes.size(), 3u);
  EXPECT_EQ(s.classes[0].kernel_class, "gemm");  // 4 us
  EXPECT_EQ(s.classes[1].kernel_class, "memcpy");  // 2.5 us
  EXPECT_EQ(s.classes[1].count, 3);
  EXPECT_EQ(s.classes[1].bytes, 4'000'500);
  EXPECT_EQ(s.classes[2].kernel_class, "memset");
  ASSERT_EQ(s.copies.size(), 3u);
  EXPECT_EQ(s.copies[0].copy_kind, "HtoD");
  EXPECT_EQ(s.copies[0].count, 2);
  EXPECT_DOUBLE_EQ(s.copies[0].gb_s(), 4e6 / 2e-6 * 1e-9);
  EXPECT_EQ(s.copies[1].kernel_class, "memset");
  EXPECT_DOUBLE_EQ(s.copies[1].gb_s(), 8e6 / 2e-6 * 1e-9);
  EXPECT_EQ(s.copies[2].copy_kind, "DtoH");
  EXPECT_EQ(db::load_trace_kernels(db, run), records);  // stored whole, in start order
}

}  // namespace
}  // namespace calisim::profiler
