// GpuRuntime: what calisim needs from the CUDA half of the profiler, behind an interface that
// includes no CUDA header, and the loader that finds it at run time.
//
// Why: the CUDA half (cudart, cuBLASLt, cuDNN, NCCL, CUPTI) is large. Linked into the `calisim`
// executable it was loaded by every command — about 0.35 s before `calisim --version` printed, on
// each simulate, validate or search call — and a CUDA build did not start at all on a machine
// without those libraries (a login node planning with the binary built on a GPU node). So it lives
// in a plugin, libcalisim_cuda.so, built with the executable in CUDA builds and loaded only by the
// commands that run kernels (`profile run`, `profile sequence`, `profile check`, and `calibrate`
// when kernels are missing).
//
// load_gpu_runtime() looks for the plugin at $CALISIM_CUDA_PLUGIN (a path) when that is set, and
// nowhere else; otherwise, in order: next to the running executable; ../lib/calisim/ from it (the
// installed layout); the build tree's copy. It loads it once per process and returns the same
// runtime (or the same reason) afterwards. It never throws: nullptr and *why say why not — built
// without CUDA, plugin not found (the paths tried), the loader's message (a CUDA library missing
// on this machine), or a plugin of another build.
//
// The plugin is built from the same sources and compiler as the executable, so C++ types cross
// the boundary as they are; a plugin whose interface revision differs from this header's is
// refused (kGpuRuntimeAbi).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "profiler/profile_plan.h"
#include "profiler/runner.h"
#include "profiler/sequence_stats.h"
#include "profiler/stopping_criterion.h"

namespace calisim::profiler {

// The machine's CUDA device as the CUDA runtime and NVML describe it.
struct CudaEnvironment {
  int device = 0;
  int device_count = 0;
  std::string name;            // as CUDA reports it, e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0;
  int compute_capability = 0;  // 90 for sm_90
  double l2_mb = 0, memory_gb = 0;
  std::string driver_version;  // NVML's, e.g. "580.159.04"; else CUDA's driver API version
  std::string cuda_version;    // runtime version, e.g. "13.0"
  std::string library_versions;
};

// How each single-GPU kernel is timed (measure_loop.h).
struct LoopOptions {
  StoppingRule rule;
  bool cold_l2 = true;
  int warmup_runs = 3;
  int batch = 10;
};

struct CudaBenchOptions {
  int device = 0;
  LoopOptions loop;
  bool allow_cupti = true;
};

// `profile sequence` (sequence_bench.h).
struct SequenceOptions {
  double sustain_s = 20;
  int warmup_passes = 3;
  std::vector<int> background_ctas;
  double nvml_period_s = 0.1;
  std::function<void(const std::string&)> progress;
};

// A single-process bench on one GPU (the plugin's CudaBench).
class GpuBench : public KernelBench {
 public:
  // "cupti" or "cuda_events (CUPTI unavailable: ...)".
  virtual std::string timer_description() const = 0;
  // measure_sequence(this bench, kernels, options): sequence_bench.h.
  virtual SequenceMeasurement measure_sequence(const std::vector<PlannedKernel>& kernels,
                                               const SequenceOptions& options) = 0;
};

// One rank of `profile run` under mpirun (the plugin's NcclMpiBench, nccl_mpi_bench.h).
class MpiGpuBench : public KernelBench {
 public:
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_size() const = 0;  // ranks on this node
  virtual int device() const = 0;      // the CUDA device this rank drives
  virtual void serve() = 0;            // ranks other than 0: measure what rank 0 asks, until finish()
  virtual void finish() = 0;           // rank 0: release the serving ranks
};

class GpuRuntime {
 public:
  virtual ~GpuRuntime() = default;
  // Number of CUDA devices; 0 when there is no device or no driver (never throws).
  virtual int device_count(std::string* why_none) const = 0;
  // Throws GpuError when the device does not exist.
  virtual CudaEnvironment describe(int device) const = 0;
  // Subscribes CUPTI when allowed: open it before any other CUDA work of the process.
  virtual std::unique_ptr<GpuBench> open_bench(const CudaBenchOptions& options) const = 0;
  // Whether the plugin was built with Open MPI (NCCL across nodes under mpirun).
  virtual bool has_mpi() const = 0;
  // Initialises MPI; throws std::logic_error when !has_mpi().
  virtual std::unique_ptr<MpiGpuBench> open_mpi_bench(const StoppingRule& rule) const = 0;
};

// Revision of the interface above; bump it with any change to these types.
inline constexpr int kGpuRuntimeAbi = 1;

// The plugin's single exported entry point; nullptr when `abi` is not the plugin's revision.
using GpuRuntimeEntry = const GpuRuntime* (*)(int abi);
inline constexpr const char* kGpuRuntimeSymbol = "calisim_gpu_runtime";

// The loaded runtime, or nullptr with the reason in *why (never throws); *path, when given, is the
// plugin file that was loaded (empty when none was).
const GpuRuntime* load_gpu_runtime(std::string* why, std::string* path = nullptr);

}  // namespace calisim::profiler
