#include "profiler/nccl_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "profiler/collective_sizes.h"
#include "profiler/device_buffer.h"
#include "profiler/fill_random.h"
#include "profiler/gpu_error.h"
#include "profiler/nccl_common.h"
#include "profiler/statistics.h"

namespace calisim::profiler {
namespace {

struct RankBuffers {
  DeviceBuffer send, recv;
};

}  // namespace

std::string NcclBench::library_version() {
  int v = 0;
  ncclGetVersion(&v);
  return fmt::format("nccl {}", v);
}

NcclBench::NcclBench(std::vector<int> devices, StoppingRule rule, const NvmlMonitor& nvml)
    : devices_(std::move(devices)), rule_(rule), nvml_(nvml) {
  comms_.resize(devices_.size());
  check_nccl(ncclCommInitAll(comms_.data(), static_cast<int>(devices_.size()), devices_.data()), "ncclCommInitAll");
  for (int d : devices_) {
    check_cuda(cudaSetDevice(d), "cudaSetDevice");
    cudaStream_t s = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    streams_.push_back(s);
  }
  check_cuda(cudaSetDevice(devices_.front()), "cudaSetDevice");
}

NcclBench::~NcclBench() {
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    cudaSetDevice(devices_[i]);
    if (i < streams_.size()) cudaStreamDestroy(streams_[i]);
    if (comms_[i]) ncclCommDestroy(comms_[i]);
  }
  if (!devices_.empty()) cudaSetDevice(devices_.front());
}

Measurement NcclBench::measure(const CollectiveKey& key) {
  const int n = ranks();
  if (key.ranks != n) {
    return Measurement::skipped_because(fmt::format(
        "needs {} GPUs in one group; this process drives {} (run under mpirun across nodes, or on a node with {} GPUs)",
        key.ranks, n, key.ranks));
  }
  if (key.ranks_per_node < key.ranks) {
    return Measurement::skipped_because("spans several nodes; single-process NCCL only forms groups inside one node");
  }
  CollectiveBuffers sizes;
  try {
    sizes = collective_buffers(key);
  } catch (const std::invalid_argument& e) {
    return Measurement::skipped_because(e.what());
  }
  std::vector<RankBuffers> bufs(n);
  try {
    for (int r = 0; r < n; ++r) {
      check_cuda(cudaSetDevice(devices_[r]), "cudaSetDevice");
      bufs[r].send = DeviceBuffer(sizes.send_bytes);
      bufs[r].recv = DeviceBuffer(sizes.recv_bytes);
      fill_random(bufs[r].send.get(), sizes.send_bytes / static_cast<std::int64_t>(bytes_per_element(key.dtype)),
                  key.dtype, 500 + r, 1.0f, streams_[r]);
    }
  } catch (const GpuError& e) {
    check_cuda(cudaSetDevice(devices_.front()), "cudaSetDevice");
    if (e.out_of_memory()) return Measurement::skipped_because(e.what());
    throw;
  }
  const ncclDataType_t type = nccl_type(key.dtype);
  const auto elt = static_cast<std::size_t>(bytes_per_element(key.dtype));
  auto launch_all = [&]() {
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < n; ++r) {
      const void* s = bufs[r].send.get();
      void* d = bufs[r].recv.get();
      const auto count = static_cast<std::size_t>(sizes.count);
      switch (key.op) {
        case CollectiveOp::all_reduce:
          check_nccl(ncclAllReduce(s, d, count, type, ncclSum, comms_[r], streams_[r]), "ncclAllReduce");
          break;
        case CollectiveOp::all_gather:
          check_nccl(ncclAllGather(s, d, count, type, comms_[r], streams_[r]), "ncclAllGather");
          break;
        case CollectiveOp::reduce_scatter:
          check_nccl(ncclReduceScatter(s, d, count, type, ncclSum, comms_[r], streams_[r]), "ncclReduceScatter");
          break;
        case CollectiveOp::all_to_all:  // grouped send / recv: works on every NCCL 2.x (nccl_common.h)
          nccl_all_to_all(s, d, count, type, elt, comms_[r], streams_[r]);
          break;
        case CollectiveOp::send_recv:
          check_nccl(ncclSend(s, count, type, (r + 1) % n, comms_[r], streams_[r]), "ncclSend");
          check_nccl(ncclRecv(d, count, type, (r + n - 1) % n, comms_[r], streams_[r]), "ncclRecv");
          break;
      }
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  };
  auto sync_all = [&]() {
    for (int r = 0; r < n; ++r) check_cuda(cudaStreamSynchronize(streams_[r]), "cudaStreamSynchronize");
  };
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // Warm-up (connection set-up happens on first use), then size the loop so one sample lasts
  // about a millisecond: enough to amortise the host-side launch and synchronisation.
  launch_all();
  sync_all();
  const auto w0 = Clock::now();
  launch_all();
  sync_all();
  const double one_s = std::chrono::duration<double>(Clock::now() - w0).count();
  const int iters = std::clamp(static_cast<int>(std::ceil(1e-3 / std::max(one_s, 1e-7))), 1, 200);

  Measurement m;
  m.status = MeasurementStatus::measured;
  m.timer = TimerKind::host_wall;
  m.timer_note = fmt::format("nccl-tests method: wall time of {} iterations / {}", iters, iters);
  m.cold_l2 = false;
  m.warmup_runs = 2;
  m.before = nvml_.read();
  StdRelCriterion criterion(rule_);
  std::vector<double> samples;
  StopReason stop = StopReason::running;
  while (stop == StopReason::running) {
    const auto s0 = Clock::now();
    for (int i = 0; i < iters; ++i) launch_all();
    sync_all();
    const double t = std::chrono::duration<double>(Clock::now() - s0).count() / iters;
    samples.push_back(t);
    criterion.add(t);
    stop = criterion.check(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  m.after = nvml_.read();
  m.throttle = judge_throttling(m.after);
  m.stop = stop;
  m.summary = summarize(samples);
  m.algorithm = fmt::format("{} ranks, count {} per call", n, sizes.count);
  m.library = library_version();
  check_cuda(cudaSetDevice(devices_.front()), "cudaSetDevice");
  return m;
}

double NcclBench::check_all_reduce(std::int64_t bytes) {
  const int n = ranks();
  const std::int64_t count = bytes / 2;
  std::vector<RankBuffers> bufs(n);
  for (int r = 0; r < n; ++r) {
    check_cuda(cudaSetDevice(devices_[r]), "cudaSetDevice");
    bufs[r].send = DeviceBuffer(count * 2);
    bufs[r].recv = DeviceBuffer(count * 2);
    fill_random(bufs[r].send.get(), count, DType::bf16, 900 + r, 1.0f, streams_[r]);
    check_cuda(cudaMemsetAsync(bufs[r].recv.get(), 0xFF, count * 2, streams_[r]), "poison");
  }
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < n; ++r) {
    check_nccl(ncclAllReduce(bufs[r].send.get(), bufs[r].recv.get(), count, ncclBfloat16, ncclSum, comms_[r], streams_[r]),
               "ncclAllReduce");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  std::vector<double> ref(count, 0.0), tmp(count);
  for (int r = 0; r < n; ++r) {
    check_cuda(cudaSetDevice(devices_[r]), "cudaSetDevice");
    check_cuda(cudaStreamSynchronize(streams_[r]), "sync");
    copy_to_host_as_double(bufs[r].send.get(), count, DType::bf16, tmp.data());
    for (std::int64_t i = 0; i < count; ++i) ref[i] += tmp[i];
  }
  double worst = 0;
  for (int r = 0; r < n; ++r) {
    check_cuda(cudaSetDevice(devices_[r]), "cudaSetDevice");
    copy_to_host_as_double(bufs[r].recv.get(), count, DType::bf16, tmp.data());
    double err = 0, norm = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      if (!std::isfinite(tmp[i])) return INFINITY;
      err += (tmp[i] - ref[i]) * (tmp[i] - ref[i]);
      norm += ref[i] * ref[i];
    }
    worst = std::max(worst, std::sqrt(err / std::max(norm, 1e-300)));
  }
  check_cuda(cudaSetDevice(devices_.front()), "cudaSetDevice");
  return worst;
}

std::int64_t NcclBench::check_all_to_all(std::int64_t count_per_peer) {
  const int n = ranks();
  const std::int64_t total = count_per_peer * n;
  std::vector<RankBuffers> bufs(n);
  for (int r = 0; r < n; ++r) {
    check_cuda(cudaSetDevice(devices_[r]), "cudaSetDevice");
    bufs[r].send = DeviceBuffer(total * 2);
    bufs[r].recv = DeviceBuffer(total * 2);
    fill_random(bufs[r].send.get(), total, DType::bf16, 950 + r, 1.0f, streams_[r]);
    check_cuda(cudaMemsetAsync(bufs[r].recv.get(), 0xFF, total * 2, streams_[r]), "poison");
  }
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < n; ++r) {
    nccl_all_to_all(bufs[r].send.get(), bufs[r].recv.get(), static_cast<std::size_t>(count_per_peer), ncclBfloat16, 2,
                    comms_[r], streams_[r]);
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  std::vector<std::vector<double>> sent(n, std::vector<double>(total));
  for (int r = 0; r < n; ++r) {
    check_cuda(cudaSetDevice(devices_[r]), "cudaSetDevice");
    check_cuda(cudaStreamSynchronize(streams_[r]), "sync");
    copy_to_host_as_double(bufs[r].send.get(), total, DType::bf16, sent[r].data());
  }
  // Rank q's share j of recv is what rank j held at its share q of send.
  std::int64_t wrong = 0;
  std::vector<double> got(total);
  for (int q = 0; q < n; ++q) {
    check_cuda(cudaSetDevice(devices_[q]), "cudaSetDevice");
    copy_to_host_as_double(bufs[q].recv.get(), total, DType::bf16, got.data());
    for (int j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < count_per_peer; ++i) {
        if (got[j * count_per_peer + i] != sent[j][q * count_per_peer + i]) ++wrong;  // NaN != anything
      }
    }
  }
  check_cuda(cudaSetDevice(devices_.front()), "cudaSetDevice");
  return wrong;
}

}  // namespace calisim::profiler
