// The run loop against a fake bench: per-measurement commits, resume, skips, interruption.
#include "profiler/runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "db/sqlite_handle.h"
#include "profiler/progress.h"
#include "profiler/sweep.h"

namespace calisim::profiler {
namespace {

// Measures every key in a fixed time, except the ones told to be unsupported or to throw; can
// request a stop after a number of measurements (as Ctrl-C would).
class FakeBench : public KernelBench {
 public:
  Measurement measure(const PlannedKernel& k) override {
    ++calls[k.key];
    if (stop_after && ++measured_count >= stop_after && stop) stop->store(true);
    if (unsupported.count(k.key)) return Measurement::skipped_because("unsupported: " + k.key);
    if (throwing.count(k.key)) throw std::runtime_error("CUDA error: an illegal memory access was encountered");
    Measurement m;
    m.status = MeasurementStatus::measured;
    m.summary = summarize({1e-3, 1.01e-3, 0.99e-3});
    m.stop = StopReason::converged;
    m.algorithm = "algo 7";
    return m;
  }
  std::map<std::string, int> calls;
  std::set<std::string> unsupported, throwing;
  int stop_after = 0, measured_count = 0;
  std::atomic<bool>* stop = nullptr;
};

db::DeviceRecord device_record() {
  db::DeviceRecord d;
  d.name = "NVIDIA H100 SXM5 80GB";
  d.peak_tflops[static_cast<int>(DType::bf16)] = 989;
  d.hbm_gb_s = 3350;
  return d;
}

std::string temp_db(const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::remove(path.c_str());
  std::remove((path + "-wal").c_str());
  std::remove((path + "-shm").c_str());
  return path;
}

ProfilePlan small_plan() {
  ProfilePlan p;
  p.add(GemmKey{1024, 1024, 1024, 1, DType::bf16, GemmLayout::TN, false});
  p.add(GemmKey{1024, 1024, 1024, 1, DType::bf16, GemmLayout::NN, false});
  p.add(GemmKey{1024, 1024, 1024, 1, DType::fp8_e4m3, GemmLayout::TN, false});  // no fp8 peak on this record
  p.add(MemoryOpKey{"copy", 1 << 20});
  p.add(CollectiveKey{CollectiveOp::all_reduce, 1 << 20, 8, 8, DType::bf16});
  return p;
}

std::int64_t count(db::EfficiencyDb& d, const std::string& sql) { return d.connection().query_int(sql); }

TEST(Runner, CommitsEachMeasurementAndResumes) {
  const std::string path = temp_db("runner_resume.db");
  const db::DeviceRecord dev = device_record();
  const ProfilePlan plan = small_plan();
  FakeBench bench;
  bench.unsupported.insert(plan.kernels[1].key);
  {
    ProfileStore store(path, dev, "NVIDIA H100 80GB HBM3", {});
    const RunReport r = run_plan(plan, bench, store, dev.to_spec(), {450, 50});
    EXPECT_EQ(r.planned, 5u);
    EXPECT_EQ(r.measured, 3u);
    EXPECT_EQ(r.skipped, 2u);  // NN unsupported, fp8 without a peak
    EXPECT_EQ(count(store.database(), "SELECT COUNT(*) FROM gemm_measurements"), 1);
    EXPECT_EQ(count(store.database(), "SELECT COUNT(*) FROM memory_measurements"), 1);
    EXPECT_EQ(count(store.database(), "SELECT COUNT(*) FROM collective_measurements"), 1);
    EXPECT_EQ(count(store.database(), "SELECT COUNT(*) FROM calisim_profile_log WHERE status = 'skipped'"), 2);
    EXPECT_EQ(count(store.database(), "SELECT COUNT(*) FROM runs"), 1);
    // The CUDA name resolves to the record as an alias.
    EXPECT_TRUE(store.database().find_device("NVIDIA H100 80GB HBM3").has_value());
  }
  {
    // A rerun measures nothing: measured rows and recorded skips are both done.
    ProfileStore store(path, dev, "NVIDIA H100 80GB HBM3", {});
    const RunReport r = run_plan(plan, bench, store, dev.to_spec(), {450, 50});
    EXPECT_EQ(r.already_done, 5u);
    EXPECT_EQ(r.measured + r.skipped, 0u);
    EXPECT_FALSE(store.run_id().has_value()) << "no empty run for a rerun with nothing to do";
  }
  for (const auto& k : plan.kernels) EXPECT_EQ(bench.calls[k.key], 1) << k.key;
  {
    // --retry-skipped measures the skipped ones again, and only those.
    StoreOptions o;
    o.retry_skipped = true;
    bench.unsupported.clear();
    ProfileStore store(path, dev, "", o);
    const RunReport r = run_plan(plan, bench, store, dev.to_spec(), {450, 50});
    EXPECT_EQ(r.already_done, 3u);
    EXPECT_EQ(r.measured, 1u);
    EXPECT_EQ(bench.calls[plan.kernels[1].key], 2);
    EXPECT_EQ(bench.calls[plan.kernels[0].key], 1);
  }
}

TEST(Runner, InterruptKeepsFinishedWorkAndARerunCompletesIt) {
  const std::string path = temp_db("runner_interrupt.db");
  const db::DeviceRecord dev = device_record();
  const ProfilePlan plan = gemm_sweep({DType::bf16});
  std::atomic<bool> stop{false};
  FakeBench bench;
  bench.stop = &stop;
  bench.stop_after = 4;
  RunnerOptions opt;
  opt.stop_requested = &stop;
  {
    ProfileStore store(path, dev, "", {});
    const RunReport r = run_plan(plan, bench, store, dev.to_spec(), {}, opt);
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(r.measured, 4u) << "the kernel in flight when the stop came is finished and committed";
    EXPECT_EQ(count(store.database(), "SELECT COUNT(*) FROM gemm_measurements"), 4);
  }
  stop = false;
  bench.stop_after = 0;
  {
    ProfileStore store(path, dev, "", {});
    const RunReport r = run_plan(plan, bench, store, dev.to_spec(), {}, opt);
    EXPECT_FALSE(r.interrupted);
    EXPECT_EQ(r.already_done, 4u);
    EXPECT_EQ(r.measured, plan.kernels.size() - 4);
    EXPECT_EQ(count(store.database(), "SELECT COUNT(*) FROM gemm_measurements"),
              static_cast<std::int64_t>(plan.kernels.size()));
    EXPECT_EQ(count(store.database(), "SELECT COUNT(*) FROM runs"), 2);
  }
  for (const auto& k : plan.kernels) EXPECT_EQ(bench.calls[k.key], 1) << k.key;
}

TEST(Runner, BenchExceptionsAreSkipsUntilTooManyInARow) {
  const std::string path = temp_db("runner_fail.db");
  const db::DeviceRecord dev = device_record();
  const ProfilePlan plan = gemm_sweep({DType::bf16});
  FakeBench bench;
  bench.throwing.insert(plan.kernels[0].key);
  for (int i = 2; i < 5; ++i) bench.throwing.insert(plan.kernels[i].key);
  ProfileStore store(path, dev, "", {});
  EXPECT_THROW(run_plan(plan, bench, store, dev.to_spec(), {}), std::runtime_error);
  // kernel 0 failed, 1 measured, 2..4 failed (the third failure in a row stops the run).
  EXPECT_EQ(count(store.database(), "SELECT COUNT(*) FROM gemm_measurements"), 1);
  db::Statement st(store.database().connection(),
                   "SELECT reason FROM calisim_profile_log WHERE status = 'skipped' ORDER BY id");
  int skipped = 0;
  while (st.step()) {
    EXPECT_NE(st.text(0).find("illegal memory access"), std::string::npos);
    ++skipped;
  }
  EXPECT_EQ(skipped, 4);
}

TEST(Runner, CsvMirrorAndDetailsCarryProvenance) {
  const std::string path = temp_db("runner_csv.db");
  const std::string csv = ::testing::TempDir() + "runner_csv.csv";
  std::remove(csv.c_str());
  const db::DeviceRecord dev = device_record();
  FakeBench bench;
  StoreOptions o;
  o.csv_path = csv;
  ProfilePlan plan;
  plan.add(GemmKey{8192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false});
  {
    ProfileStore store(path, dev, "", o);
    run_plan(plan, bench, store, dev.to_spec(), {});
    db::Statement st(store.database().connection(), "SELECT details FROM calisim_profile_log");
    ASSERT_TRUE(st.step());
    EXPECT_NE(st.text(0).find("\"algorithm\":\"algo 7\""), std::string::npos) << st.text(0);
    EXPECT_NE(st.text(0).find("\"stop\":\"converged\""), std::string::npos) << st.text(0);
  }
  std::ifstream in(csv);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  EXPECT_EQ(text.rfind(csv_header(), 0), 0u);
  EXPECT_NE(text.find("gemm m=8192 n=8192 k=8192 batch=1 dtype=bf16 layout=TN acc=0,measured,,0.001,"),
            std::string::npos)
      << text;
}

TEST(Progress, EtaExtrapolatesFromTimedKernelsOnly) {
  ProgressState s;
  s.total = 100;
  s.done = 60;   // 50 resumed + 10 timed
  s.timed = 10;
  s.elapsed_s = 20;
  EXPECT_DOUBLE_EQ(eta_seconds(s), 80);
  EXPECT_EQ(format_duration(80), "1m20s");
  EXPECT_EQ(format_duration(3725), "1h02m");
  EXPECT_EQ(format_duration(-1), "--");
  const std::string line = format_progress(s, 10);
  EXPECT_NE(line.find("[######....] 60/100"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 1m20s"), std::string::npos) << line;
  s.timed = 0;
  EXPECT_LT(eta_seconds(s), 0);
}

}  // namespace
}  // namespace calisim::profiler
