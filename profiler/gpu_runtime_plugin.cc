// libcalisim_cuda.so: the GpuRuntime (gpu_runtime.h) of a CUDA build — CudaBench, describe_cuda,
// measure_sequence and, with Open MPI, NcclMpiBench behind the CUDA-free interface. Only
// calisim_gpu_runtime is exported; everything else, the static calisim libraries included, is
// hidden (profiler/CMakeLists.txt).
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/cuda_bench.h"
#include "profiler/gpu_runtime.h"
#include "profiler/sequence_bench.h"
#ifdef CALISIM_HAVE_MPI_PROFILER
#include "profiler/nccl_mpi_bench.h"
#endif

namespace calisim::profiler {
namespace {

class CudaGpuBench final : public GpuBench {
 public:
  explicit CudaGpuBench(const CudaBenchOptions& options) : bench_(options) {}
  Measurement measure(const PlannedKernel& kernel) override { return bench_.measure(kernel); }
  std::string timer_description() const override { return bench_.timer_description(); }
  SequenceMeasurement measure_sequence(const std::vector<PlannedKernel>& kernels,
                                       const SequenceOptions& options) override {
    return profiler::measure_sequence(bench_, kernels, options);
  }

 private:
  CudaBench bench_;
};

#ifdef CALISIM_HAVE_MPI_PROFILER
class NcclMpiGpuBench final : public MpiGpuBench {
 public:
  explicit NcclMpiGpuBench(const StoppingRule& rule) : bench_(rule) {}
  Measurement measure(const PlannedKernel& kernel) override { return bench_.measure(kernel); }
  int rank() const override { return bench_.rank(); }
  int size() const override { return bench_.size(); }
  int local_size() const override { return bench_.local_size(); }
  int device() const override { return bench_.device(); }
  void serve() override { bench_.serve(); }
  void finish() override { bench_.finish(); }

 private:
  NcclMpiBench bench_;
};
#endif

class CudaRuntime final : public GpuRuntime {
 public:
  int device_count(std::string* why_none) const override { return cuda_device_count(why_none); }
  CudaEnvironment describe(int device) const override { return describe_cuda(device); }
  std::unique_ptr<GpuBench> open_bench(const CudaBenchOptions& options) const override {
    return std::make_unique<CudaGpuBench>(options);
  }
#ifdef CALISIM_HAVE_MPI_PROFILER
  bool has_mpi() const override { return true; }
  std::unique_ptr<MpiGpuBench> open_mpi_bench(const StoppingRule& rule) const override {
    return std::make_unique<NcclMpiGpuBench>(rule);
  }
#else
  bool has_mpi() const override { return false; }
  std::unique_ptr<MpiGpuBench> open_mpi_bench(const StoppingRule&) const override {
    throw std::logic_error("this calisim's CUDA plugin was built without MPI");
  }
#endif
};

}  // namespace
}  // namespace calisim::profiler

extern "C" __attribute__((visibility("default"))) const calisim::profiler::GpuRuntime* calisim_gpu_runtime(int abi) {
  static const calisim::profiler::CudaRuntime runtime;
  return abi == calisim::profiler::kGpuRuntimeAbi ? &runtime : nullptr;
}
