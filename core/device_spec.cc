#include "core/device_spec.h"

#include <stdexcept>
#include <string>

namespace calisim {

double DeviceSpec::peak_tflops_for(DType t) const {
  const double v = peak_tflops[static_cast<int>(t)];
  if (v <= 0) {
    throw std::invalid_argument("device '" + name + "' has no " + std::string(to_string(t)) +
                                " peak in its system file (device.peak_tflops." +
                                std::string(to_string(t)) + ")");
  }
  return v;
}

}  // namespace calisim
