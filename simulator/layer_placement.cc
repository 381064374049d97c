#include "simulator/layer_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

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

namespace {

// Layers of [first, first + n) inside [lo, hi).
int overlap(int first, int n, int lo, int hi) { return std::max(0, std::min(first + n, hi) - std::max(first, lo)); }

}  // namespace

ChunkPrecision chunk_precision(const ChunkLayers& c, const ModelConfig& m, const StrategyConfig& st) {
  ChunkPrecision p;
  if (!st.has_bf16_layers()) return p;
  const int L = static_cast<int>(m.layer_num);
  const int start = st.num_layers_at_start_in_bf16, end_lo = L - st.num_layers_at_end_in_bf16;
  auto bf16_in = [&](int first, int n) { return overlap(first, n, 0, start) + overlap(first, n, std::max(start, end_lo), L); };
  p.dense_bf16 = bf16_in(c.first_layer, c.dense);
  p.moe_bf16 = bf16_in(c.first_layer + c.dense, c.moe);
  return p;
}

LayerCounts recomputed_layer_counts(const ChunkLayers& c, const ChunkPrecision& p, int recomputed,
                                    const ModelConfig& m, const StrategyConfig& st) {
  LayerCounts r;
  const int n = std::min(recomputed, c.total());
  if (p.dense_bf16 == 0 && p.moe_bf16 == 0) {
    r.dense = std::min(n, c.dense);
    r.moe = n - r.dense;
    return r;
  }
  const int L = static_cast<int>(m.layer_num);
  for (int i = 0; i < n; ++i) {
    const int layer = c.first_layer + i;
    const bool fp8 = st.fp8_layer(layer, L);
    if (i < c.dense) (fp8 ? r.dense : r.dense_bf16) += 1;
    else (fp8 ? r.moe : r.moe_bf16) += 1;
  }
  return r;
}

namespace {

// A layout this long cannot describe a real model (DeepSeek-V3's is under 200 characters once
// expanded); the cap keeps "t*999999999" from exhausting memory.
constexpr std::size_t kMaxExpandedChars = 1'000'000;

// Reads the digits after '*' at text[pos]; pos ends past them.
std::size_t read_count(std::string_view text, std::size_t& pos, std::string_view what) {
  const std::size_t start = pos;
  std::size_t n = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    n = n * 10 + static_cast<std::size_t>(text[pos] - '0');
    if (n > kMaxExpandedChars) throw std::invalid_argument(fmt::format("repeat count after '{}*' is too large", what));
    ++pos;
  }
  if (pos == start) throw std::invalid_argument(fmt::format("expected a repeat count after '{}*'", what));
  return n;
}

void append_repeated(std::string& out, std::string_view unit, std::size_t n) {
  if (out.size() + unit.size() * n > kMaxExpandedChars) {
    throw std::invalid_argument(fmt::format("expands to more than {} characters", kMaxExpandedChars));
  }
  for (std::size_t i = 0; i < n; ++i) out.append(unit);
}

// Megatron unrolls "(group)*n" first, then "x*n"; groups do not nest.
std::string expand(std::string_view raw) {
  std::string s;
  for (char c : raw) {
    if (c != ',') s.push_back(c);
  }
  std::string groups;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '(') {
      const std::size_t close = s.find(')', i + 1);
      if (close == std::string::npos) throw std::invalid_argument("'(' without a matching ')'");
      const std::string_view body(s.data() + i + 1, close - i - 1);
      if (body.empty()) throw std::invalid_argument("empty group '()'");
      if (body.find('(') != std::string_view::npos) throw std::invalid_argument("nested groups are not supported");
      std::size_t pos = close + 1;
      if (pos >= s.size() || s[pos] != '*') {
        throw std::invalid_argument(fmt::format("group '({})' must be followed by '*n'", body));
      }
      ++pos;
      const std::size_t n = read_count(s, pos, fmt::format("({})", body));
      append_repeated(groups, body, n);
      i = pos;
    } else if (s[i] == ')') {
      throw std::invalid_argument("')' without a matching '('");
    } else {
      groups.push_back(s[i++]);
    }
  }
  std::string out;
  for (std::size_t i = 0; i < groups.size();) {
    const char c = groups[i];
    if (c == '*') throw std::invalid_argument("'*' with nothing to repeat");
    std::size_t pos = i + 1;
    if (pos < groups.size() && groups[pos] == '*') {
      ++pos;
      const std::size_t n = read_count(groups, pos, std::string(1, c));
      append_repeated(out, std::string_view(&c, 1), n);
      i = pos;
    } else {
      out.push_back(c);
      ++i;
    }
  }
  return out;
}

}  // namespace

std::vector<LayoutStage> parse_pipeline_layout(std::string_view text) {
  if (text.empty()) throw std::invalid_argument("empty layout");
  const std::string flat = expand(text);
  std::vector<LayoutStage> stages(1);
  for (char c : flat) {
    LayoutStage& st = stages.back();
    switch (c) {
      case '|': stages.emplace_back(); continue;
      case 'E': ++st.embedding; break;
      case 'L': ++st.loss; break;
      case 't': ++st.decoder; break;
      case 'm': ++st.mtp; break;
      default:
        throw std::invalid_argument(fmt::format("invalid layer character '{}' in stage {} (known: E embedding, "
                                                "t transformer layer, m MTP layer, L loss, '|' stage boundary)",
                                                c, stages.size() - 1));
    }
    st.text.push_back(c);
  }
  return stages;
}

std::string check_pipeline_layout(const std::vector<LayoutStage>& stages, int p, int v, int layer_num, int mtp) {
  const int n = static_cast<int>(stages.size());
  if (n != p * v) {
    return fmt::format("has {} virtual stages ('|'-separated); expected pp_size * interleaving_size = {} * {} = {} "
                       "(Megatron derives the virtual pipeline size from the layout: stages / pp_size)",
                       n, p, v, p * v);
  }
  int e = 0, l = 0, t = 0, m = 0;
  for (const LayoutStage& s : stages) e += s.embedding, l += s.loss, t += s.decoder, m += s.mtp;
  if (e != 1) return fmt::format("needs exactly one embedding 'E', has {}", e);
  if (l != 1) return fmt::format("needs exactly one loss 'L', has {}", l);
  // Megatron: the first layer of the flattened layout is the embedding, the last the loss.
  std::string flat;
  for (const LayoutStage& s : stages) flat += s.text;
  if (flat.front() != 'E') return "the first layer must be the embedding 'E'";
  if (flat.back() != 'L') return "the last layer must be the loss 'L'";
  if (stages.front().embedding != 1) {
    return "the embedding 'E' must be in the first virtual stage (calisim places it on stage 0)";
  }
  if (stages.back().loss != 1) return "the loss 'L' must be in the last virtual stage";
  if (t != layer_num) return fmt::format("has {} transformer layers 't'; the model's layer_num is {}", t, layer_num);
  if (m != mtp) return fmt::format("has {} MTP layers 'm'; the model's mtp_num_layers is {}", m, mtp);
  if (m > 0) {
    if (flat.find('t', flat.find('m')) != std::string::npos) return "transformer layers 't' must all come before MTP 'm'";
    int holder = -1;
    for (int j = 0; j < n; ++j) {
      if (stages[j].mtp == 0) continue;
      if (stages[j].mtp != m) return "all MTP layers 'm' must be in the same virtual stage";
      holder = j;
    }
    if (holder / p != v - 1) return "MTP layers 'm' must be in the last model chunk of a rank (Megatron)";
    if (holder != n - 1) {
      return "MTP layers 'm' on a rank other than the loss's (Megatron's standalone MTP stage) are not modelled; "
             "put them in the last virtual stage with 'L'";
    }
  }
  return "";
}

}  // namespace calisim
