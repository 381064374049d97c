// The roofline fallback EfficiencyModel: the system file's default efficiencies, source `roofline`.
//
// This is the answer when no database is given or a key is missing from it; it needs no CUDA and
// no data, so every simulation can run.
#pragma once

#include "core/efficiency_model.h"
#include "simulator/system_config.h"

namespace calisim {

class DefaultEfficiencyModel final : public EfficiencyModel {
 public:
  explicit DefaultEfficiencyModel(const SystemConfig& system) : sys_(system) {}
  Efficiency gemm(const GemmKey&) const override { return {sys_.matmul_efficiency, EfficiencySource::roofline}; }
  Efficiency attention(const AttentionKey&) const override {
    return {sys_.attention_efficiency, EfficiencySource::roofline};
  }
  Efficiency memory_op(const MemoryOpKey&) const override {
    return {sys_.memory_efficiency, EfficiencySource::roofline};
  }
  Efficiency collective(const CollectiveKey& key) const override {
    const bool inside = key.ranks_per_node >= key.ranks;
    const NetworkTier& t = inside ? sys_.scale_up : sys_.scale_out;
    return {t.efficiency[static_cast<int>(key.op)], EfficiencySource::roofline};
  }

 private:
  SystemConfig sys_;
};

}  // namespace calisim
