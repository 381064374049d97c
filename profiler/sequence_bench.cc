#include "profiler/sequence_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include "profiler/background_copy.h"
#include "profiler/gpu_error.h"

namespace calisim::profiler {
namespace {

constexpr double kMinGroupS = 5e-3;   // a group of passes holds at least this much GPU work
constexpr int kMaxGroups = 20000;     // events per sustained run at most
constexpr int kMinGroups = 5;

// CUPTI's kernel records off for the scope (a sequence is timed with events only), on again after.
struct RecordsOff {
  CudaBench& bench;
  explicit RecordsOff(CudaBench& b) : bench(b) { bench.set_kernel_records(false); }
  ~RecordsOff() { bench.set_kernel_records(true); }
};

// NVML read every period on a second thread until stopped.
class NvmlSampler {
 public:
  NvmlSampler(const NvmlMonitor& nvml, double period_s) : nvml_(nvml), period_s_(period_s) {
    thread_ = std::thread([this] {
      while (!stop_) {
        states_.push_back(nvml_.read());
        std::this_thread::sleep_for(std::chrono::duration<double>(period_s_));
      }
    });
  }
  ~NvmlSampler() { finish(); }
  std::vector<GpuState> finish() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
    }
    return states_;
  }

 private:
  const NvmlMonitor& nvml_;
  double period_s_;
  std::atomic<bool> stop_{false};
  std::vector<GpuState> states_;
  std::thread thread_;
};

struct Events {
  std::vector<cudaEvent_t> e;
  explicit Events(std::size_t n) : e(n, nullptr) {
    for (auto& ev : e) check_cuda(cudaEventCreate(&ev), "cudaEventCreate");
  }
  ~Events() {
    for (auto ev : e) {
      if (ev) cudaEventDestroy(ev);
    }
  }
  double seconds(std::size_t a, std::size_t b) const {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, e[a], e[b]), "cudaEventElapsedTime");
    return ms / 1e3;
  }
};

class Sequence {
 public:
  Sequence(std::vector<PreparedKernel*> steps, cudaStream_t stream) : steps_(std::move(steps)), stream_(stream) {}

  void pass() const {
    for (PreparedKernel* k : steps_) {
      if (k->has_prepare_run()) k->prepare_run(stream_);
      k->run(stream_);
    }
  }

  double one_pass_s() const {
    Events ev(2);
    check_cuda(cudaEventRecord(ev.e[0], stream_), "cudaEventRecord");
    pass();
    check_cuda(cudaEventRecord(ev.e[1], stream_), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(ev.e[1]), "sequence pass");
    return ev.seconds(0, 1);
  }

  // Groups of `per_group` passes, an event between groups; returns the mean pass time per group.
  std::vector<double> sustained(int groups, int per_group) const {
    Events ev(static_cast<std::size_t>(groups) + 1);
    check_cuda(cudaEventRecord(ev.e[0], stream_), "cudaEventRecord");
    for (int g = 0; g < groups; ++g) {
      for (int p = 0; p < per_group; ++p) pass();
      check_cuda(cudaEventRecord(ev.e[g + 1], stream_), "cudaEventRecord");
    }
    check_cuda(cudaEventSynchronize(ev.e[groups]), "sustained sequence");
    check_cuda(cudaGetLastError(), "sustained sequence launches");
    std::vector<double> out;
    out.reserve(groups);
    for (int g = 0; g < groups; ++g) out.push_back(ev.seconds(g, g + 1) / per_group);
    return out;
  }

 private:
  std::vector<PreparedKernel*> steps_;
  cudaStream_t stream_;
};

}  // namespace

SequenceMeasurement measure_sequence(CudaBench& bench, const std::vector<PlannedKernel>& kernels,
                                     const SequenceOptions& options) {
  if (kernels.empty()) throw std::invalid_argument("the sequence holds no kernel");
  if (!(options.sustain_s > 0)) throw std::invalid_argument("sustain_s must be positive");
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  SequenceMeasurement out;
  std::map<std::string, std::size_t> index;
  std::vector<const PlannedKernel*> distinct;
  for (const PlannedKernel& k : kernels) {
    if (!index.emplace(k.key, distinct.size()).second) continue;
    distinct.push_back(&k);
    out.distinct_keys.push_back(k.key);
  }

  // 1. Prepare every distinct kernel (all of them stay alive: the sequence needs them at once).
  std::vector<std::unique_ptr<PreparedKernel>> prepared;
  for (std::size_t i = 0; i < distinct.size(); ++i) {
    say(fmt::format("preparing {}/{}: {}", i + 1, distinct.size(), distinct[i]->key));
    Prepared p = bench.prepare(*distinct[i]);
    if (!p.kernel) throw std::runtime_error(fmt::format("cannot run {} here: {}", distinct[i]->key, p.skip_reason));
    prepared.push_back(std::move(p.kernel));
  }

  // 2. Each alone, as profile run times it.
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    say(fmt::format("alone {}/{}: {}", i + 1, prepared.size(), out.distinct_keys[i]));
    out.isolated.push_back(bench.measure_prepared(*prepared[i]));
  }

  // 3, 4. Back to back, sustained; alone, then beside each background copy.
  std::vector<PreparedKernel*> steps;
  for (const PlannedKernel& k : kernels) steps.push_back(prepared[index.at(k.key)].get());
  const cudaStream_t stream = bench.stream();
  const Sequence seq(steps, stream);
  RecordsOff records_off(bench);
  for (int p = 0; p < std::max(1, options.warmup_passes); ++p) seq.pass();
  check_cuda(cudaStreamSynchronize(stream), "sequence warm-up");
  const double pass_s = seq.one_pass_s();
  const int per_group = std::max(1, static_cast<int>(std::ceil(kMinGroupS / std::max(pass_s, 1e-9))));
  const int groups = std::clamp(static_cast<int>(std::ceil(options.sustain_s / (per_group * pass_s))), kMinGroups,
                                kMaxGroups);

  std::vector<int> backgrounds{0};
  backgrounds.insert(backgrounds.end(), options.background_ctas.begin(), options.background_ctas.end());
  cudaStream_t side = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreate");
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } side_guard{side};
  for (int ctas : backgrounds) {
    say(ctas == 0 ? fmt::format("back to back: {} groups of {} passes ({:.1f} ms a pass)", groups, per_group,
                                pass_s * 1e3)
                  : fmt::format("back to back beside a copy kernel on {} SMs", ctas));
    SustainedRun run;
    run.background_ctas = ctas;
    run.passes_per_group = per_group;
    // A copy kernel left running by an exception is stopped by its destructor.
    std::unique_ptr<BackgroundCopy> copy;
    if (ctas > 0) {
      copy = std::make_unique<BackgroundCopy>(ctas);
      // Bounded at four times the sequence's length at 10 TB/s, in case the stop flag is missed.
      const double expected_s = groups * per_group * pass_s;
      copy->start(side, static_cast<std::int64_t>(std::ceil(4 * expected_s * 10e12 / copy->bytes_per_sweep())) + 16);
    }
    NvmlSampler sampler(bench.nvml(), options.nvml_period_s);
    run.pass_s = seq.sustained(groups, per_group);
    run.states = sampler.finish();
    if (copy) {
      const BackgroundCopy::Result r = copy->stop();
      run.background_bytes = r.bytes;
      run.background_s = r.seconds;
      run.background_hit_cap = r.hit_max_sweeps;
    }
    out.runs.push_back(std::move(run));
  }
  return out;
}

}  // namespace calisim::profiler
