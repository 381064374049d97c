// Predictor speed: fitting a device's GEMM table (issue goal: 10k rows < 1 s) and answering one
// key (goal: < 1 µs) from the fit (interpolated) and from a scaled source (cross-device); building
// the simulator's model (served_model.h, once per `calisim simulate --db`) and one lookup through it.
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "predictor/device_fit.h"
#include "predictor/interpolating_model.h"
#include "predictor/scaled_model.h"
#include "predictor/served_model.h"

namespace {

using namespace calisim;
using namespace calisim::predictor;

DeviceProfile profile(double tflops, double hbm_gb_s, int sms, double matmul) {
  DeviceProfile p;
  p.spec.name = "bench GPU";
  p.spec.peak_tflops[static_cast<int>(DType::bf16)] = tflops;
  p.spec.hbm_gb_s = hbm_gb_s;
  p.spec.sm_count = sms;
  p.matmul_efficiency = matmul;
  p.memory_efficiency = 0.9;
  return p;
}

// Synthetic rows over a log-uniform shape range with a smooth efficiency surface plus noise.
GroupedRows synthetic_rows(std::size_t n) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> log_dim(8.0, 15.0);
  std::normal_distribution<double> noise(0.0, 0.02);
  GroupedRows g;
  auto& rows = g.gemm[static_cast<int>(DType::bf16)];
  for (std::size_t i = 0; i < n; ++i) {
    db::GemmRow r;
    r.key = GemmKey{static_cast<std::int64_t>(std::exp2(log_dim(rng))), static_cast<std::int64_t>(std::exp2(log_dim(rng))),
                    static_cast<std::int64_t>(std::exp2(log_dim(rng))), 1, DType::bf16,
                    static_cast<GemmLayout>(i % 3), i % 3 == 2};
    r.efficiency = std::clamp(0.75 - 0.3 * std::exp(-std::log2(static_cast<double>(r.key.n)) / 3.0) + noise(rng), 0.05, 0.95);
    rows.push_back(r);
  }
  return g;
}

void BM_FitGemm10kRows(benchmark::State& state) {
  const GroupedRows rows = synthetic_rows(static_cast<std::size_t>(state.range(0)));
  const DeviceSpec spec = profile(312, 2039, 108, 0.78).spec;
  for (auto _ : state) {
    DeviceFit fit(spec, rows);
    benchmark::DoNotOptimize(fit);
  }
}
BENCHMARK(BM_FitGemm10kRows)->Arg(10000)->Unit(benchmark::kMillisecond);

std::vector<GemmKey> query_keys() {
  std::vector<GemmKey> keys;
  for (std::int64_t m : {512, 1000, 4096, 12345}) {
    for (std::int64_t n : {768, 3000, 8192}) keys.push_back(GemmKey{m, n, 4096, 1, DType::bf16, GemmLayout::TN, false});
  }
  return keys;
}

void BM_InterpolatedGemm(benchmark::State& state) {
  const DeviceProfile source = profile(312, 2039, 108, 0.78);
  const auto model = make_fit_model(std::make_shared<const DeviceFit>(source.spec, synthetic_rows(2000)), no_data_model());
  const auto keys = query_keys();
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(model->gemm(keys[i++ % keys.size()]));
}
BENCHMARK(BM_InterpolatedGemm);

void BM_ScaledGemm(benchmark::State& state) {
  const DeviceProfile source = profile(312, 2039, 108, 0.78);
  std::shared_ptr<const EfficiencyModel> fits =
      make_fit_model(std::make_shared<const DeviceFit>(source.spec, synthetic_rows(2000)), no_data_model());
  const auto model = make_scaled_model({SourceDevice{source, fits}}, profile(989, 3350, 132, 0.72), no_data_model());
  const auto keys = query_keys();
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(model->gemm(keys[i++ % keys.size()]));
}
BENCHMARK(BM_ScaledGemm);

// A measured device of n GEMM rows as the database gives it to served_model.h.
std::vector<db::RunBatch> synthetic_runs(std::size_t n) {
  db::RunBatch b;
  b.run.device = "bench GPU";
  b.run.source = db::Source::measured;
  b.rows.gemm = synthetic_rows(n).gemm[static_cast<int>(DType::bf16)];
  return {b};
}

db::DeviceRecord bench_record() {
  db::DeviceRecord r;
  r.name = "bench GPU";
  r.peak_tflops[static_cast<int>(DType::bf16)] = 312;
  r.hbm_gb_s = 2039;
  r.sm_count = 108;
  return r;
}

void BM_BuildServedModel(benchmark::State& state) {
  const auto runs = synthetic_runs(static_cast<std::size_t>(state.range(0)));
  const db::DeviceRecord record = bench_record();
  for (auto _ : state) benchmark::DoNotOptimize(make_served_model(record.to_spec(), record, runs, no_data_model()));
}
BENCHMARK(BM_BuildServedModel)->Arg(250)->Arg(2000)->Unit(benchmark::kMillisecond);

// An unmeasured key: the row lookup and padded lookup miss, the guarded fit answers.
void BM_ServedUnmeasuredGemm(benchmark::State& state) {
  const db::DeviceRecord record = bench_record();
  const auto model = make_served_model(record.to_spec(), record, synthetic_runs(2000), no_data_model());
  const auto keys = query_keys();
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(model->gemm(keys[i++ % keys.size()]));
}
BENCHMARK(BM_ServedUnmeasuredGemm);

}  // namespace
