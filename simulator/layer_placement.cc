#include "simulator/layer_placement.h"

#include <algorithm>

namespace calisim {

std::vector<ChunkLayers> chunk_layers(const ModelConfig& m, const StrategyConfig& st) {
  std::vector<ChunkLayers> out(st.layers_per_chunk.size());
  const int dense_prefix = m.is_moe ? static_cast<int>(m.dense_layers) : static_cast<int>(m.layer_num);
  int first = 0;
  for (std::size_t j = 0; j < out.size(); ++j) {
    const int n = st.layers_per_chunk[j];
    out[j].first_layer = first;
    out[j].dense = std::clamp(dense_prefix - first, 0, n);
    out[j].moe = n - out[j].dense;
    first += n;
  }
  return out;
}

}  // namespace calisim
