#include "profiler/cuda_bench.h"

#include <cudnn.h>
#include <fmt/format.h>

#include <optional>

#include "db/key_text.h"
#include "profiler/attention_bench.h"
#include "profiler/cuda_timer.h"
#include "profiler/cupti_timer.h"
#include "profiler/gemm_bench.h"
#include "profiler/gpu_error.h"
#include "profiler/memory_bench.h"
#include "profiler/nccl_bench.h"

namespace calisim::profiler {

int cuda_device_count(std::string* why_none) {
  int n = 0;
  const cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess) {
    cudaGetLastError();
    if (why_none) *why_none = fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(st));
    return 0;
  }
  if (n == 0 && why_none) *why_none = "cudaGetDeviceCount reports no CUDA device";
  return n;
}

CudaEnvironment describe_cuda(int device) {
  CudaEnvironment e;
  e.device = device;
  e.device_count = cuda_device_count();
  cudaDeviceProp p{};
  check_cuda(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  e.name = p.name;
  e.sm_count = p.multiProcessorCount;
  e.compute_capability = p.major * 10 + p.minor;
  e.l2_mb = p.l2CacheSize / 1e6;
  e.memory_gb = static_cast<double>(p.totalGlobalMem) / 1e9;
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  e.cuda_version = fmt::format("{}.{}", rt / 1000, (rt % 1000) / 10);
  NvmlMonitor nvml(device);
  e.driver_version = !nvml.driver_version().empty() ? nvml.driver_version()
                                                    : fmt::format("CUDA driver API {}.{}", drv / 1000, (drv % 1000) / 10);
  e.library_versions = fmt::format("{}; cudnn {}; {}", GemmBench::library_version(), cudnnGetVersion(),
                                   NcclBench::library_version());
  return e;
}

struct CudaBench::State {
  CudaBenchOptions options;
  cudaStream_t stream = nullptr;
  std::unique_ptr<SampleTimer> timer;
  CuptiTimer* cupti = nullptr;  // `timer` when it is the CUPTI timer
  std::string timer_note;
  std::unique_ptr<NvmlMonitor> nvml;
  std::unique_ptr<L2Flush> flush;
  std::unique_ptr<MeasureLoop> loop;
  std::unique_ptr<GemmBench> gemm;
  std::unique_ptr<AttentionBench> attention;
  std::unique_ptr<MemoryBench> memory;
  std::unique_ptr<NcclBench> nccl;
  std::string nccl_unavailable;  // set once NCCL failed to start
};

CudaBench::CudaBench(const CudaBenchOptions& options) : s_(std::make_unique<State>()) {
  s_->options = options;
  // CUPTI first: it must subscribe before the work it is to see.
  if (options.allow_cupti) {
    std::string why;
    std::unique_ptr<CuptiTimer> cupti = CuptiTimer::create(&why);
    s_->cupti = cupti.get();
    s_->timer = std::move(cupti);
    if (!s_->timer) s_->timer_note = "CUPTI unavailable: " + why;
  } else {
    s_->timer_note = "CUPTI disabled by --timer events";
  }
  if (!s_->timer) s_->timer = std::make_unique<CudaEventTimer>();
  check_cuda(cudaSetDevice(options.device), "cudaSetDevice");
  check_cuda(cudaStreamCreateWithFlags(&s_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  s_->nvml = std::make_unique<NvmlMonitor>(options.device);
  s_->flush = std::make_unique<L2Flush>(options.device);
  s_->loop = std::make_unique<MeasureLoop>(s_->stream, *s_->timer, *s_->nvml, *s_->flush, options.loop);
  s_->gemm = std::make_unique<GemmBench>(*s_->loop);
  s_->attention = std::make_unique<AttentionBench>(*s_->loop);
  s_->memory = std::make_unique<MemoryBench>(*s_->loop);
}

CudaBench::~CudaBench() {
  s_->nccl.reset();
  s_->gemm.reset();
  s_->attention.reset();
  if (s_->stream) cudaStreamDestroy(s_->stream);
}

std::string CudaBench::timer_description() const {
  return s_->timer_note.empty() ? std::string(to_string(s_->timer->kind()))
                                : fmt::format("{} ({})", to_string(s_->timer->kind()), s_->timer_note);
}

Measurement CudaBench::measure(const PlannedKernel& kernel) {
  Measurement m;
  switch (kernel.kind) {
    case db::KeyKind::gemm:
      m = s_->gemm->measure(db::parse_gemm_key(kernel.key));
      break;
    case db::KeyKind::memory:
      m = s_->memory->measure(db::parse_memory_key(kernel.key));
      break;
    case db::KeyKind::attention:
      m = s_->attention->measure(db::parse_attention_key(kernel.key));
      break;
    case db::KeyKind::collective: {
      const int gpus = cuda_device_count();
      const CollectiveKey key = db::parse_collective_key(kernel.key);
      if (gpus < 2) {
        return Measurement::skipped_because(fmt::format(
            "this node has {} GPU: a {}-rank collective needs {} GPUs (single process) or mpirun across nodes",
            gpus, key.ranks, key.ranks));
      }
      // CUPTI's activity collection is process-wide: left on, it records every runtime and
      // driver call of NCCL's host-timed launch loop and inflates small-message latency. It is
      // off while NCCL starts and measures, and back on for the next kernel measurement.
      if (s_->cupti) s_->cupti->set_collecting(false);
      try {
        if (!s_->nccl && s_->nccl_unavailable.empty()) {
          try {
            std::vector<int> devices(gpus);
            for (int i = 0; i < gpus; ++i) devices[i] = i;
            s_->nccl = std::make_unique<NcclBench>(devices, s_->options.loop.rule, *s_->nvml);
          } catch (const GpuError& e) {
            s_->nccl_unavailable = e.what();
          }
        }
        m = s_->nccl ? s_->nccl->measure(key)
                     : Measurement::skipped_because("NCCL could not start: " + s_->nccl_unavailable);
      } catch (...) {
        if (s_->cupti) s_->cupti->set_collecting(true);
        throw;
      }
      if (s_->cupti) s_->cupti->set_collecting(true);
      return m;
    }
    default:
      throw std::invalid_argument("not a measurable key: " + kernel.key);
  }
  if (m.status == MeasurementStatus::measured && m.timer != TimerKind::cupti) m.timer_note = s_->timer_note;
  return m;
}

Prepared CudaBench::prepare(const PlannedKernel& kernel) {
  switch (kernel.kind) {
    case db::KeyKind::gemm:
      return s_->gemm->prepare(db::parse_gemm_key(kernel.key));
    case db::KeyKind::memory:
      return s_->memory->prepare(db::parse_memory_key(kernel.key));
    case db::KeyKind::attention:
      return s_->attention->prepare(db::parse_attention_key(kernel.key));
    default:
      throw std::invalid_argument("not a single-GPU kernel key: " + kernel.key);
  }
}

Measurement CudaBench::measure_prepared(PreparedKernel& kernel) {
  Measurement m = profiler::measure_prepared(*s_->loop, kernel);
  if (m.timer != TimerKind::cupti) m.timer_note = s_->timer_note;
  return m;
}

cudaStream_t CudaBench::stream() const { return s_->stream; }

const NvmlMonitor& CudaBench::nvml() const { return *s_->nvml; }

void CudaBench::set_kernel_records(bool on) {
  if (s_->cupti) s_->cupti->set_collecting(on);
}

}  // namespace calisim::profiler
