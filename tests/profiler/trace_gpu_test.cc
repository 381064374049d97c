// libcalisim_trace.so on a real GPU: runs tests/profiler/trace_target.cc under
// CUDA_INJECTION64_PATH and checks the trace run it leaves in the database: every kernel the
// program launched, classified, with grid, duration and the NVTX range around it, and its memory
// copies and memset with their bytes and kind. Skips, naming why, without a CUDA device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "db/trace_store.h"
#include "profiler/cuda_bench.h"

namespace calisim::profiler {
namespace {

// The build's paths, unless the environment names others: a bundle carried to a GPU machine
// (scripts/profiler_bundle.sh) holds both files elsewhere, and the run script says where.
std::string path_from_env(const char* name, const char* build_path) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : build_path;
}

TEST(GpuTrace, InjectionRecordsEveryKernelWithClassAndNvtxRange) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  const auto path = (std::filesystem::temp_directory_path() / "calisim_trace_gpu.db").string();
  std::filesystem::remove(path);
  const std::string lib = path_from_env("CALISIM_TRACE_LIB", CALISIM_TRACE_LIB);
  const std::string target = path_from_env("CALISIM_TRACE_TARGET", CALISIM_TRACE_TARGET);
  for (const auto& f : {lib, target}) {
    ASSERT_TRUE(std::filesystem::exists(f)) << f << " is missing (CALISIM_TRACE_LIB / CALISIM_TRACE_TARGET name "
                                            << "the library and the program where they are not the build's)";
  }
  const std::string cmd = "CUDA_INJECTION64_PATH='" + lib + "' CALISIM_TRACE_DB='" + path + "' '" + target + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ASSERT_TRUE(std::filesystem::exists(path)) << "the injection wrote no database";
  auto database = db::EfficiencyDb::open(path, db::OpenMode::read_only);
  const auto runs = database.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].source, db::Source::trace);
  const auto kernels = db::load_trace_kernels(database, runs[0].id);
  int gemm = 0, stream_in_range = 0, stream_outside = 0, h2d = 0, d2h = 0, memset = 0, copies_in_range = 0;
  for (const auto& k : kernels) {
    if (k.kernel_class == "memcpy" || k.kernel_class == "memset") {
      EXPECT_GE(k.end_ns, k.start_ns) << k.name;
      EXPECT_GT(k.bytes, 0) << k.name;
      h2d += k.kernel_class == "memcpy" && k.copy_kind == "HtoD" && k.bytes == (1 << 20);
      d2h += k.kernel_class == "memcpy" && k.copy_kind == "DtoH" && k.bytes == 4096;
      memset += k.kernel_class == "memset" && k.copy_kind == "device" && k.bytes == (1 << 20);
      copies_in_range += k.nvtx_range == "calisim_trace_target";
      if (k.bytes == (1 << 20) || k.bytes == 4096) {
        EXPECT_EQ(k.nvtx_range, "") << k.name << " ran outside the range";
      }
      continue;
    }
    EXPECT_GT(k.end_ns, k.start_ns) << k.name;
    EXPECT_GT(k.grid_x * k.grid_y * k.grid_z, 0) << k.name;
    if (k.kernel_class == "gemm") {
      ++gemm;
      EXPECT_EQ(k.nvtx_range, "calisim_trace_target") << k.name;
    }
    if (k.name.find("stream_kernel") != std::string::npos) {
      (k.nvtx_range == "calisim_trace_target" ? stream_in_range : stream_outside) += 1;
    }
  }
  EXPECT_GE(gemm, 1) << "the cuBLASLt GEMM was not classified as gemm";
  EXPECT_EQ(stream_in_range, 5);
  EXPECT_EQ(stream_outside, 1);
  EXPECT_EQ(h2d, 1) << "the 1 MiB host-to-device copy";
  EXPECT_EQ(d2h, 1) << "the 4 KiB device-to-host copy";
  EXPECT_EQ(memset, 1) << "the 1 MiB device memset";
  EXPECT_GE(copies_in_range, 1) << "the GEMM check's copies ran inside the NVTX range";
  const db::TraceSummary s = db::summarize_trace(database, runs[0].id);
  EXPECT_EQ(s.kernels, static_cast<std::int64_t>(kernels.size()));
  EXPECT_GT(s.total_s, 0);
  EXPECT_FALSE(s.copies.empty());
}

}  // namespace
}  // namespace calisim::profiler
