// Trace runs without a GPU: kernel records of libcalisim_trace.so (demangled, classified) into the
// database and the per-class summary `calisim db show` prints.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <stdexcept>

#include "db/trace_store.h"
#include "profiler/trace_writer.h"

namespace calisim::profiler {
namespace {

std::string temp_db(const char* name) {
  const auto p = std::filesystem::temp_directory_path() / (std::string("calisim_trace_") + name + ".db");
  std::filesystem::remove(p);
  std::filesystem::remove(p.string() + "-wal");
  std::filesystem::remove(p.string() + "-shm");
  return p.string();
}

db::TraceKernel raw(std::string name, int device, std::uint64_t start_ns, std::uint64_t end_ns,
                    std::string range = "") {
  db::TraceKernel k;
  k.name = std::move(name);
  k.device = device;
  k.stream = 7;
  k.grid_x = 132;
  k.block_x = 384;
  k.start_ns = start_ns;
  k.end_ns = end_ns;
  k.nvtx_range = std::move(range);
  return k;
}

TEST(TraceWriter, DemanglesAndClassifies) {
  EXPECT_EQ(demangle_kernel_name("_Z13stream_kernelPKfPfl"), "stream_kernel(float const*, float*, long)");
  EXPECT_EQ(demangle_kernel_name("nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NNT"),
            "nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NNT");
  EXPECT_EQ(demangle_kernel_name("_Znot a name"), "_Znot a name");
  db::TraceKernel k = raw("_ZN5flash16flash_fwd_kernelILi128EEEvv", 0, 0, 1);
  finish_trace_kernel(k);
  EXPECT_EQ(k.name, "void flash::flash_fwd_kernel<128>()");
  EXPECT_EQ(k.kernel_class, "attention");
  k = raw("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, 0, 1);
  finish_trace_kernel(k);
  EXPECT_EQ(k.kernel_class, "nccl");
}

TEST(TraceWriter, StoresOneRunPerDeviceAndSummarisesByClass) {
  const std::string path = temp_db("store");
  std::vector<db::TraceKernel> ks = {
      raw("nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NNT", 0, 1000, 7000, "forward"),  // gemm 6 us
      raw("nvjet_tst_128x128_64x4_1x2_h_bz_coopB_TNT", 0, 8000, 11000, "backward"),  // gemm 3 us
      raw("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, 6000, 10000),                // nccl 4 us, overlaps
      raw("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", 0, 12000, 13000),
      raw("my_custom_sort", 0, 13000, 13500),                                          // other 0.5 us
      raw("nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NNT", 1, 500, 2500),                  // device 1
  };
  for (auto& k : ks) finish_trace_kernel(k);
  const auto r = store_trace(path, ks, {{0, "NVIDIA H100 80GB HBM3"}, {1, "NVIDIA H100 80GB HBM3"}}, {"test", "t0"});
  ASSERT_EQ(r.run_by_device.size(), 2u);
  EXPECT_EQ(r.warnings.size(), 1u) << "the device is added once, with a warning";

  auto database = db::EfficiencyDb::open(path, db::OpenMode::read_only);
  const db::TraceSummary s = db::summarize_trace(database, r.run_by_device.at(0));
  EXPECT_EQ(s.kernels, 5);
  EXPECT_NEAR(s.total_s, 14.5e-6, 1e-12);
  EXPECT_NEAR(s.wall_s, 12.5e-6, 1e-12);
  ASSERT_EQ(s.classes.size(), 4u);
  EXPECT_EQ(s.classes[0].kernel_class, "gemm");
  EXPECT_EQ(s.classes[0].count, 2);
  EXPECT_NEAR(s.classes[0].total_s, 9e-6, 1e-12);
  EXPECT_NEAR(s.classes[0].share, 9.0 / 14.5, 1e-9);
  EXPECT_EQ(s.classes[1].kernel_class, "nccl");
  EXPECT_EQ(s.classes[2].kernel_class, "elementwise");
  EXPECT_EQ(s.classes[3].kernel_class, "other");
  double shares = 0;
  for (const auto& c : s.classes) shares += c.share;
  EXPECT_NEAR(shares, 1.0, 1e-12);

  const auto kernels = db::load_trace_kernels(database, r.run_by_device.at(0));
  ASSERT_EQ(kernels.size(), 5u);
  EXPECT_EQ(kernels[0].nvtx_range, "forward");
  EXPECT_EQ(kernels[0].grid_x, 132);
  EXPECT_EQ(kernels[0].block_x, 384);
  EXPECT_EQ(kernels[0].stream, 7);
  const auto runs = database.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].source, db::Source::trace);
  EXPECT_NE(runs[0].notes.find("5 kernels"), std::string::npos) << runs[0].notes;
  EXPECT_EQ(db::summarize_trace(database, r.run_by_device.at(1)).kernels, 1);
}

TEST(TraceWriter, AKnownDeviceOrAliasIsReusedAndDeletingTheRunDropsItsKernels) {
  const std::string path = temp_db("alias");
  {
    auto database = db::EfficiencyDb::open(path, db::OpenMode::create);
    db::DeviceRecord d;
    d.name = "H100-SXM";
    database.put_device(d);
    database.add_alias("NVIDIA H100 80GB HBM3", "H100-SXM");
  }
  std::vector<db::TraceKernel> ks = {raw("gemm_kernel", 0, 0, 10)};
  for (auto& k : ks) finish_trace_kernel(k);
  const auto r = store_trace(path, ks, {{0, "NVIDIA H100 80GB HBM3"}}, {"test", "t0"});
  EXPECT_TRUE(r.warnings.empty());
  auto database = db::EfficiencyDb::open(path, db::OpenMode::read_write);
  ASSERT_EQ(database.runs("H100-SXM").size(), 1u);
  EXPECT_TRUE(database.delete_run(r.run_by_device.at(0)));
  EXPECT_EQ(database.connection().query_int("SELECT COUNT(*) FROM trace_kernels"), 0);
}

TEST(TraceStore, RejectsWrongSourceAndBackwardsTimes) {
  const std::string path = temp_db("reject");
  auto database = db::EfficiencyDb::open(path, db::OpenMode::create);
  db::DeviceRecord d;
  d.name = "gpu";
  database.put_device(d);
  db::RunRecord run;
  run.device = "gpu";
  run.source = db::Source::measured;
  EXPECT_THROW(db::write_trace_run(database, run, {}), std::invalid_argument);
  run.source = db::Source::trace;
  EXPECT_THROW(db::write_trace_run(database, run, {raw("k", 0, 10, 5)}), std::invalid_argument);
  EXPECT_TRUE(database.runs().empty()) << "nothing is written when a kernel is rejected";
}

// The traced process's rank, from whichever launcher started it; torchrun's variables first.
TEST(TraceStore, LauncherRankFromTheEnvironment) {
  auto env_of = [](std::map<std::string, std::string> vars) {
    return [vars = std::move(vars)](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_EQ(launcher_rank(env_of({})), std::nullopt);
  EXPECT_EQ(launcher_rank(env_of({{"RANK", "5"}, {"WORLD_SIZE", "16"}})), (std::pair{5, 16}));
  EXPECT_EQ(launcher_rank(env_of({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}})), (std::pair{3, 8}));
  EXPECT_EQ(launcher_rank(env_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"PMI_RANK", "0"}, {"PMI_SIZE", "4"}})),
            (std::pair{1, 2}));
  // Unusable pairs are skipped: a rank outside the world, text that is not a number, half a pair.
  EXPECT_EQ(launcher_rank(env_of({{"RANK", "8"}, {"WORLD_SIZE", "8"}, {"PMI_RANK", "2"}, {"PMI_SIZE", "4"}})),
            (std::pair{2, 4}));
  EXPECT_EQ(launcher_rank(env_of({{"RANK", "x"}, {"WORLD_SIZE", "8"}})), std::nullopt);
  EXPECT_EQ(launcher_rank(env_of({{"RANK", "1"}})), std::nullopt);
}

}  // namespace
}  // namespace calisim::profiler
