// Errors from CUDA and its libraries, as exceptions the benchmarks can sort.
//
// GpuError carries the library, the numeric status and whether it means "out of memory" or "not
// supported", so a benchmark can record those as skipped-with-reason while anything else stops
// the kernel as a failure. The check_* helpers throw GpuError for every non-success status;
// `what` says which call failed.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace calisim::profiler {

class GpuError : public std::runtime_error {
 public:
  enum class Kind { out_of_memory, not_supported, other };
  GpuError(const std::string& message, Kind kind) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }
  bool out_of_memory() const { return kind_ == Kind::out_of_memory; }
  bool not_supported() const { return kind_ == Kind::not_supported; }

 private:
  Kind kind_;
};

void check_cuda(cudaError_t status, const char* what);
void check_cublas(cublasStatus_t status, const char* what);

// Free and total device memory of the current device, bytes.
std::size_t free_device_bytes();

}  // namespace calisim::profiler
