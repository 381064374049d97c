#include "profiler/operator_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "profiler/statistics.h"

namespace calisim::profiler {
namespace {

// The calls of one key.
struct KeyCalls {
  OperatorKey key;
  std::set<std::string> operators;
  std::vector<double> isolated_s, all_s;
  double total_s = 0;
};

std::string key_text(const OperatorKey& k) {
  return k.kind == OperatorKey::Kind::gemm ? to_string(k.gemm) : to_string(k.attention);
}

double key_flops(const OperatorKey& k) {
  return k.kind == OperatorKey::Kind::gemm ? k.gemm.flops() : k.attention.flops();
}

DType key_dtype(const OperatorKey& k) {
  return k.kind == OperatorKey::Kind::gemm ? k.gemm.dtype : k.attention.dtype;
}

}  // namespace

OperatorRows operator_rows(const std::vector<TracedOperator>& operators, int device, const db::DeviceRecord& record) {
  OperatorRows out;
  std::vector<std::string> order;  // keys in first-seen order (ties in the final sort stay stable)
  std::unordered_map<std::string, KeyCalls> by_key;
  for (const TracedOperator& op : operators) {
    if (op.device != device) continue;
    ++out.calls;
    if (op.key.kind == OperatorKey::Kind::none) {
      ++out.not_keyed[op.key.reason];
      continue;
    }
    const std::string text = key_text(op.key);
    auto [it, fresh] = by_key.try_emplace(text);
    if (fresh) {
      it->second.key = op.key;
      order.push_back(text);
    }
    KeyCalls& c = it->second;
    c.operators.insert(op.name);
    c.all_s.push_back(op.gpu_s);
    if (!op.overlaps_communication) c.isolated_s.push_back(op.gpu_s);
    c.total_s += op.gpu_s;
  }

  for (const std::string& text : order) {
    const KeyCalls& c = by_key.at(text);
    const std::int64_t calls = static_cast<std::int64_t>(c.all_s.size());
    const double peak = record.peak_tflops[static_cast<std::size_t>(key_dtype(c.key))];
    if (!(peak > 0)) {
      out.not_keyed[fmt::format("no peak for {} on {}", to_string(key_dtype(c.key)), record.name)] += calls;
      continue;
    }
    const bool overlapped = c.isolated_s.empty();
    const SampleSummary s = summarize(overlapped ? c.all_s : c.isolated_s);
    if (!(s.median_s > 0)) {
      out.not_keyed["kernels of zero duration"] += calls;
      continue;
    }
    const double tflops = key_flops(c.key) / s.median_s * 1e-12;
    const double efficiency = tflops / peak;
    if (efficiency > 1.05) {
      out.not_keyed["faster than the device's peak (another GPU or clock than the record's?)"] += calls;
      continue;
    }
    if (c.key.kind == OperatorKey::Kind::gemm) {
      out.rows.gemm.push_back(db::GemmRow{c.key.gemm, s.to_stats(), tflops, efficiency});
    } else {
      out.rows.attention.push_back(db::AttentionRow{c.key.attention, s.to_stats(), tflops, efficiency});
    }
    std::string names;
    for (const auto& n : c.operators) names += (names.empty() ? "" : ", ") + n;
    out.info.push_back(OperatorRowInfo{text, names, calls, s.n, c.total_s, s.median_s, efficiency});
    out.keyed_s += c.total_s;
    out.overlapped_keys += overlapped ? 1 : 0;
  }
  std::stable_sort(out.info.begin(), out.info.end(),
                   [](const OperatorRowInfo& a, const OperatorRowInfo& b) { return a.total_s > b.total_s; });
  return out;
}

}  // namespace calisim::profiler
