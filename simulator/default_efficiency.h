// The roofline fallback EfficiencyModel: the system file's default efficiencies, source `roofline`
// (GEMMs at the efficiency of their input dtype times their wave/tile utilization on the
// device's SMs, attention shaped per kernel by simulator/attention_shape.h).
//
// This is the answer when no database is given or a key is missing from it; it needs no CUDA and
// no data, so every simulation can run.
#pragma once

#include <algorithm>

#include "core/efficiency_model.h"
#include "core/tile_quantization.h"
#include "simulator/attention_shape.h"
#include "simulator/system_config.h"

namespace calisim {

class DefaultEfficiencyModel final : public EfficiencyModel {
 public:
  explicit DefaultEfficiencyModel(const SystemConfig& system) : sys_(system) {}
  // GEMMs: the system's matmul efficiency for the key's input dtype (efficiency.matmul_by_dtype,
  // else efficiency.matmul), so FP8 GEMMs get the FP8 figure, times the best tile/wave
  // utilization of the output grid on the device's SMs (core/tile_quantization.h). Why: the
  // matmul figure is a best-shape figure, where the grid fills whole waves; a GEMM whose tiles
  // leave the last wave half empty (small expert GEMMs, a narrow tensor-parallel shard) takes
  // as long as one that fills it.
  Efficiency gemm(const GemmKey& key) const override {
    return {sys_.matmul_efficiency_for(key.dtype) * gemm_quantization(key.m, key.n, key.batch, sys_.device.sm_count),
            EfficiencySource::roofline};
  }
  // Attention: the system's fwd+bwd reference split by direction, then shaped by mask, kernel
  // sequence length and head dimension from published FlashAttention-2/3 and cuDNN figures
  // (simulator/attention_shape.h), capped at 1.
  Efficiency attention(const AttentionKey& key) const override {
    const AttentionReference ref = attention_reference_split(sys_.attention_efficiency, sys_.attention_backward_ratio);
    const double base = key.direction == AttentionDirection::forward ? ref.forward : ref.backward;
    return {std::min(1.0, base * attention_shape_factor(key) * attention_grid_factor(key, sys_.device.sm_count)),
            EfficiencySource::roofline};
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
