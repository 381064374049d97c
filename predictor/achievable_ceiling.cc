#include "predictor/achievable_ceiling.h"

#include <algorithm>
#include <cmath>

#include "predictor/device_fit.h"
#include "predictor/kernel_overhead.h"

namespace calisim::predictor {

std::optional<double> gemm_ceiling(const std::vector<db::GemmRow>& rows, const DeviceProfile& device,
                                   double overhead_s) {
  const DeviceSpec& d = device.spec;
  std::vector<double> work;
  for (const auto& r : rows) {
    const double peak = d.peak_flops_per_s(r.key.dtype);
    const double flops = r.key.flops(), bytes = r.key.bytes();
    const double e = std::min(r.efficiency, 1.0);
    if (!(peak > 0) || !(flops > 0) || !(e > 0)) continue;
    // Compute-bound on the device's own achievable roofline (1 where a figure is unknown).
    const double a_c_known = device.matmul_efficiency_for(r.key.dtype);
    const double a_c = a_c_known > 0 ? a_c_known : 1.0;
    const double a_m = device.memory_efficiency > 0 ? device.memory_efficiency : 1.0;
    const double compute_s = flops / (peak * a_c);
    const double memory_s = d.hbm_gb_s > 0 && bytes > 0 ? bytes / (d.hbm_bytes_per_s() * a_m) : 0.0;
    if (compute_s < memory_s) continue;
    const double r_work = remove_overhead(e, flops, peak, overhead_s);
    if (flops / (peak * r_work) < kShortRowFactor * overhead_s) continue;
    work.push_back(r_work);
  }
  if (work.size() < kMinCeilingRows) return std::nullopt;
  std::sort(work.begin(), work.end());
  // Nearest rank: the smallest value with at least kCeilingQuantile of the rows at or below it.
  const auto rank = static_cast<std::size_t>(std::ceil(kCeilingQuantile * static_cast<double>(work.size())));
  return work[std::clamp<std::size_t>(rank, 1, work.size()) - 1];
}

DeviceProfile with_gemm_ceilings(DeviceProfile profile, const std::vector<db::RunBatch>& runs, double overhead_s) {
  const GroupedRows g = group_rows(runs);
  for (int t = 0; t < kDTypeCount; ++t) {
    profile.matmul_ceiling[t] = gemm_ceiling(g.gemm[t], profile, overhead_s).value_or(0.0);
  }
  return profile;
}

MatmulPair matmul_pair(const DeviceProfile& s, const DeviceProfile& t, DType dtype) {
  const double ceiling = s.matmul_ceiling[static_cast<int>(dtype)];
  const double target = t.matmul_efficiency_for(dtype);
  if (ceiling > 0 && target > 0) {
    return {ceiling, std::min(target / kSystemMatmulShareOfMamf, 1.0), true};
  }
  return {s.matmul_efficiency_for(dtype), target, false};
}

DeviceProfile with_attention_level(DeviceProfile profile, const DeviceFit& fit) {
  profile.attention_level = 0;
  if (profile.attention_kernel != AttentionKernel::best) return profile;
  for (DType dtype : {DType::bf16, DType::fp16}) {
    double sum = 0;
    int n = 0;
    for (std::int64_t seq : {4096, 8192}) {
      const auto fwd = fit.attention(flash_benchmark_key(seq, 128, true, dtype, AttentionDirection::forward));
      const auto bwd = fit.attention(flash_benchmark_key(seq, 128, true, dtype, AttentionDirection::backward));
      if (!fwd || !bwd || !(*fwd > 0) || !(*bwd > 0)) break;
      sum += 3.5 / (1.0 / *fwd + 2.5 / *bwd);
      ++n;
    }
    if (n == 2) {
      profile.attention_level = sum / n;
      return profile;
    }
  }
  return profile;
}

}  // namespace calisim::predictor
