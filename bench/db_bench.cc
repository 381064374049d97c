// Speed of the efficiency database's hot paths (targets from the issue):
//   cached lookup through the DB-backed EfficiencyModel  < 100 ns
//   loading 100k rows from a file into the in-memory index < 1 s
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <unistd.h>

#include "db/db_efficiency_model.h"
#include "db/efficiency_db.h"

namespace {

using namespace calisim;
using namespace calisim::db;

constexpr int kRows = 100'000;

class Roofline final : public EfficiencyModel {
 public:
  Efficiency gemm(const GemmKey&) const override { return {}; }
  Efficiency attention(const AttentionKey&) const override { return {}; }
  Efficiency memory_op(const MemoryOpKey&) const override { return {}; }
  Efficiency collective(const CollectiveKey&) const override { return {}; }
};

DeviceRecord bench_device() {
  DeviceRecord d;
  d.name = "Bench GPU";
  d.peak_tflops[static_cast<int>(DType::bf16)] = 989;
  d.hbm_gb_s = 3350;
  return d;
}

GemmKey key_of(int i) { return GemmKey{64 + i, 4096, 8192, 1, DType::bf16, GemmLayout::TN, false}; }

// 100k rows: 90k GEMMs and 10k memory ops.
RunBatch bench_batch() {
  RunBatch b;
  b.run.device = "Bench GPU";
  b.run.source = Source::measured;
  for (int i = 0; i < kRows * 9 / 10; ++i) {
    GemmRow r;
    r.key = key_of(i);
    r.efficiency = 0.5 + (i % 100) * 0.004;
    r.stats = SampleStats{1e-3, 1e-3, 1e-3, 0, 10};
    b.rows.gemm.push_back(r);
  }
  for (int i = 0; i < kRows / 10; ++i) {
    MemoryOpRow r;
    r.key = MemoryOpKey{"rmsnorm_fwd", 4096 + i * 256};
    r.efficiency = 0.8;
    b.rows.memory.push_back(r);
  }
  return b;
}

// The database file, written once per process.
const std::string& bench_file() {
  static const std::string path = [] {
    const auto p = std::filesystem::temp_directory_path() / ("calisim_db_bench_" + std::to_string(getpid()) + ".db");
    std::filesystem::remove(p);
    auto db = EfficiencyDb::open(p.string(), OpenMode::create);
    db.put_device(bench_device());
    db.insert_run(bench_batch());
    std::atexit([] {
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(bench_file() + suffix, ec);
    });
    return p.string();
  }();
  return path;
}

const EfficiencyModel& loaded_model() {
  static const auto model = make_db_efficiency_model(bench_device(), {bench_batch()}, std::make_shared<Roofline>());
  return *model;
}

void BM_CachedGemmLookup(benchmark::State& state) {
  const EfficiencyModel& m = loaded_model();
  std::vector<GemmKey> keys;
  for (int i = 0; i < 1024; ++i) keys.push_back(key_of((i * 7919) % (kRows * 9 / 10)));
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.gemm(keys[i++ & 1023]));
  }
}
BENCHMARK(BM_CachedGemmLookup);

void BM_CachedMemoryOpLookup(benchmark::State& state) {
  const EfficiencyModel& m = loaded_model();
  const MemoryOpKey key{"rmsnorm_fwd", 4096 + 777 * 256};
  for (auto _ : state) benchmark::DoNotOptimize(m.memory_op(key));
}
BENCHMARK(BM_CachedMemoryOpLookup);

void BM_GemmLookupMissToFallback(benchmark::State& state) {
  const EfficiencyModel& m = loaded_model();
  const GemmKey key{3, 5, 7, 1, DType::bf16, GemmLayout::NN, false};
  for (auto _ : state) benchmark::DoNotOptimize(m.gemm(key));
}
BENCHMARK(BM_GemmLookupMissToFallback);

void BM_Load100kRowsIntoIndex(benchmark::State& state) {
  const std::string& path = bench_file();
  auto fallback = std::make_shared<Roofline>();
  for (auto _ : state) {
    auto model = load_db_efficiency_model(path, "Bench GPU", fallback);
    benchmark::DoNotOptimize(model.get());
  }
  state.counters["rows"] = kRows;
}
BENCHMARK(BM_Load100kRowsIntoIndex)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
