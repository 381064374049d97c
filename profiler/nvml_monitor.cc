#include "profiler/nvml_monitor.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

namespace calisim::profiler {

// The few NVML entry points used, declared by their documented C signatures (return 0 = success).
// Clock types: 1 = SM, 2 = memory; temperature sensor 0 = GPU die.
struct NvmlMonitor::Api {
  void* lib = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*by_pci)(const char*, void**) = nullptr;
  int (*clock)(void*, int, unsigned*) = nullptr;
  int (*max_clock)(void*, int, unsigned*) = nullptr;
  int (*temperature)(void*, int, unsigned*) = nullptr;
  int (*power_mw)(void*, unsigned*) = nullptr;
  int (*reasons)(void*, unsigned long long*) = nullptr;
  int (*driver)(char*, unsigned) = nullptr;

  template <class F>
  bool bind(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }
};

NvmlMonitor::NvmlMonitor(int cuda_device) {
  auto* api = new Api();
  api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    why_ = std::string("cannot load libnvidia-ml.so.1: ") + dlerror();
    delete api;
    return;
  }
  api_ = api;
  const bool ok = api->bind(api->init, "nvmlInit_v2") && api->bind(api->shutdown, "nvmlShutdown") &&
                  api->bind(api->by_pci, "nvmlDeviceGetHandleByPciBusId_v2") &&
                  api->bind(api->clock, "nvmlDeviceGetClockInfo") &&
                  api->bind(api->max_clock, "nvmlDeviceGetMaxClockInfo") &&
                  api->bind(api->temperature, "nvmlDeviceGetTemperature") &&
                  api->bind(api->power_mw, "nvmlDeviceGetPowerUsage") &&
                  api->bind(api->driver, "nvmlSystemGetDriverVersion");
  // The reasons call was renamed (throttle -> clocks event) in newer drivers; take either.
  if (!api->bind(api->reasons, "nvmlDeviceGetCurrentClocksEventReasons")) {
    api->bind(api->reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  if (!ok || api->init() != 0) {
    why_ = "NVML is present but could not be initialised";
    return;
  }
  initialized_ = true;
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess) {
    cudaGetLastError();
    why_ = "cudaDeviceGetPCIBusId failed";
    return;
  }
  if (api->by_pci(bus, &device_) != 0) {
    device_ = nullptr;
    why_ = std::string("NVML does not know the GPU at ") + bus;
    return;
  }
  char drv[96] = {};
  if (api->driver(drv, sizeof drv) == 0) driver_ = drv;
}

NvmlMonitor::~NvmlMonitor() {
  if (!api_) return;
  if (initialized_) api_->shutdown();
  dlclose(api_->lib);
  delete api_;
}

GpuState NvmlMonitor::read() const {
  GpuState s;
  if (!device_) return s;
  unsigned v = 0;
  if (api_->clock(device_, 1, &v) == 0) s.sm_clock_mhz = v;
  if (api_->clock(device_, 2, &v) == 0) s.mem_clock_mhz = v;
  if (api_->max_clock(device_, 1, &v) == 0) s.max_sm_clock_mhz = v;
  if (api_->temperature(device_, 0, &v) == 0) s.temperature_c = v;
  if (api_->power_mw(device_, &v) == 0) s.power_w = v / 1000.0;
  unsigned long long r = 0;
  if (api_->reasons && api_->reasons(device_, &r) == 0) s.event_reasons = r;
  s.valid = s.sm_clock_mhz > 0;
  return s;
}

}  // namespace calisim::profiler
