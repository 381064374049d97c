#include "predictor/kernel_overhead.h"

#include <algorithm>

namespace calisim::predictor {

double kernel_overhead_s(const DeviceProfile& profile) {
  return (profile.kernel_overhead_us > 0 ? profile.kernel_overhead_us : kOverheadPriorUs) * 1e-6;
}

double add_overhead(double r, double flops, double peak, double t0) {
  if (!(flops > 0) || !(peak > 0) || !(r > 0) || t0 <= 0) return r;
  return 1.0 / (1.0 / r + peak * t0 / flops);
}

double remove_overhead(double e, double flops, double peak, double t0) {
  if (!(flops > 0) || !(peak > 0) || !(e > 0) || t0 <= 0) return e;
  const double t = flops / (peak * e);
  const double work = std::max(t - t0, 0.1 * t);
  return flops / (peak * work);
}

bool is_hopper(const DeviceSpec& spec) {
  const std::string& n = spec.name;
  for (const char* tag : {"H100", "H200", "H800", "H20 ", "GH200"}) {
    if (n.find(tag) != std::string::npos) return true;
  }
  return n.size() >= 3 && n.compare(n.size() - 3, 3, "H20") == 0;
}

namespace {
bool is_ampere(const DeviceSpec& spec) {
  const std::string& n = spec.name;
  for (const char* tag : {"A100", "A800", "A30", "A40", "A10", "A6000", "RTX 30"}) {
    if (n.find(tag) != std::string::npos) return true;
  }
  return false;
}
}  // namespace

std::optional<double> attention_kernel_share(const DeviceSpec& spec, AttentionKernel kernel) {
  if (kernel == AttentionKernel::best) return 1.0;
  if (is_hopper(spec)) return kHopperFlash2Share;
  if (is_ampere(spec)) return 1.0;
  return std::nullopt;
}

const char* to_string(AttentionKernel k) { return k == AttentionKernel::flash2 ? "FA2" : "best kernel"; }

}  // namespace calisim::predictor
