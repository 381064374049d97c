#include "predictor/scaled_model.h"

#include <cmath>
#include <stdexcept>

#include "predictor/cross_device.h"

namespace calisim::predictor {
namespace {

bool has_peak(const DeviceProfile& p, DType t) { return p.spec.peak_tflops[static_cast<int>(t)] > 0; }

class ScaledModel final : public EfficiencyModel {
 public:
  ScaledModel(std::vector<SourceDevice> sources, DeviceProfile target, std::shared_ptr<const EfficiencyModel> fallback)
      : sources_(std::move(sources)), target_(std::move(target)), fallback_(std::move(fallback)) {
    if (!fallback_) throw std::invalid_argument("make_scaled_model: fallback must not be null");
    for (const auto& s : sources_) {
      if (!s.model) throw std::invalid_argument("make_scaled_model: source model must not be null");
    }
  }

  Efficiency gemm(const GemmKey& key) const override {
    return combine(key, &EfficiencyModel::gemm, [&](double e, const DeviceProfile& s) -> double {
      if (!has_peak(s, key.dtype) || !has_peak(target_, key.dtype)) return 0;
      return scale_gemm(e, key, s, target_).efficiency;
    });
  }
  Efficiency attention(const AttentionKey& key) const override {
    return combine(key, &EfficiencyModel::attention, [&](double e, const DeviceProfile& s) -> double {
      if (!has_peak(s, key.dtype) || !has_peak(target_, key.dtype)) return 0;
      return scale_attention(e, key, s, target_).efficiency;
    });
  }
  Efficiency memory_op(const MemoryOpKey& key) const override {
    return combine(key, &EfficiencyModel::memory_op,
                   [&](double e, const DeviceProfile& s) { return scale_memory_op(e, s, target_); });
  }
  Efficiency collective(const CollectiveKey& key) const override {
    return combine(key, &EfficiencyModel::collective, [&](double e, const DeviceProfile& s) -> double {
      if (s.tier(collective_tier(key)).gpu_gb_s <= 0) return 0;  // efficiency relative to an unknown link
      if (!collectives_transfer(s, target_)) return 0;            // another fabric: not predicted
      return scale_collective(e, key, s, target_);
    });
  }

 private:
  // Geometric mean over the sources that answer from data; `scale` returns 0 to skip a source.
  template <class Key, class Scale>
  Efficiency combine(const Key& key, Efficiency (EfficiencyModel::*ask)(const Key&) const, Scale scale) const {
    double log_sum = 0;
    int count = 0;
    for (const auto& s : sources_) {
      const Efficiency e = (s.model.get()->*ask)(key);
      if (e.source == EfficiencySource::roofline || !(e.value > 0)) continue;
      const double v = scale(e.value, s.profile);
      if (!(v > 0)) continue;
      log_sum += std::log(v);
      ++count;
    }
    if (count == 0) return (fallback_.get()->*ask)(key);
    return {std::exp(log_sum / count), EfficiencySource::scaled};
  }

  std::vector<SourceDevice> sources_;
  DeviceProfile target_;
  std::shared_ptr<const EfficiencyModel> fallback_;
};

}  // namespace

std::unique_ptr<EfficiencyModel> make_scaled_model(std::vector<SourceDevice> sources, DeviceProfile target,
                                                   std::shared_ptr<const EfficiencyModel> fallback) {
  return std::make_unique<ScaledModel>(std::move(sources), std::move(target), std::move(fallback));
}

}  // namespace calisim::predictor
