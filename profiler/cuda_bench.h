// CudaBench: the KernelBench of a CUDA build, and a description of the machine it runs on.
//
// It owns one measuring stream on `device`, the sample timer (CUPTI when this process can
// subscribe, else CUDA events, and every row says which and why), NVML, the L2 flush and the
// GEMM / attention (cuDNN SDPA) / memory benchmarks; the NCCL benchmark over all visible GPUs is
// created on the first collective. CUPTI's activity collection is turned off while NCCL starts
// and measures (its timing is host wall clock, which collection would slow) and back on after.
#pragma once

#include <memory>
#include <string>

#include "profiler/gpu_runtime.h"
#include "profiler/measure_loop.h"
#include "profiler/nvml_monitor.h"
#include "profiler/prepared_kernel.h"
#include "profiler/runner.h"

namespace calisim::profiler {

// Number of CUDA devices; 0 when there is no device or no driver (never throws).
int cuda_device_count(std::string* why_none = nullptr);
// Throws GpuError when the device does not exist.
CudaEnvironment describe_cuda(int device);

class CudaBench final : public KernelBench {
 public:
  explicit CudaBench(const CudaBenchOptions& options);
  ~CudaBench() override;

  Measurement measure(const PlannedKernel& kernel) override;
  // "cupti" or "cuda_events (CUPTI unavailable: ...)".
  std::string timer_description() const;

  // For `profile sequence` (sequence_bench.h): a GEMM, attention or memory key prepared to run
  // again (collectives are refused: std::invalid_argument), its measurement as measure() would
  // time it, the measuring stream, NVML, and CUPTI's kernel records off (false) while a sequence
  // runs untimed by it and on again after.
  Prepared prepare(const PlannedKernel& kernel);
  Measurement measure_prepared(PreparedKernel& kernel);
  cudaStream_t stream() const;
  const NvmlMonitor& nvml() const;
  void set_kernel_records(bool on);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace calisim::profiler
