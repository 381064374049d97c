// NvmlMonitor: reads SM / memory clocks, temperature, power and clocks-event (throttle) reasons
// of one GPU through NVML.
//
// NVML is loaded at run time (dlopen of the driver's libnvidia-ml.so.1): the toolkit ships no
// NVML headers or import library here, and a missing NVML must not stop a measurement. When it
// cannot be loaded, or the GPU is not found, read() returns GpuState{valid = false} and
// unavailable_reason() says why.
#pragma once

#include <string>

#include "profiler/gpu_state.h"

namespace calisim::profiler {

class NvmlMonitor {
 public:
  // `cuda_device`: the CUDA ordinal; the GPU is found by PCI bus id, so CUDA_VISIBLE_DEVICES
  // reordering cannot make NVML read another GPU.
  explicit NvmlMonitor(int cuda_device);
  ~NvmlMonitor();
  NvmlMonitor(const NvmlMonitor&) = delete;
  NvmlMonitor& operator=(const NvmlMonitor&) = delete;

  GpuState read() const;
  bool available() const { return device_ != nullptr; }
  const std::string& unavailable_reason() const { return why_; }
  const std::string& driver_version() const { return driver_; }

 private:
  struct Api;
  Api* api_ = nullptr;
  void* device_ = nullptr;  // nvmlDevice_t
  bool initialized_ = false;
  std::string why_, driver_;
};

}  // namespace calisim::profiler
