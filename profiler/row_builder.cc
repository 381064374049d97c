#include "profiler/row_builder.h"

#include <stdexcept>

#include "core/error.h"
#include "db/key_text.h"
#include "profiler/collective_sizes.h"

namespace calisim::profiler {

std::string_view to_string(MeasurementStatus s) { return s == MeasurementStatus::measured ? "measured" : "skipped"; }

std::string_view to_string(TimerKind t) {
  switch (t) {
    case TimerKind::cupti: return "cupti";
    case TimerKind::cuda_events: return "cuda_events";
    case TimerKind::host_wall: return "host_wall";
  }
  return "cupti";
}

namespace {

// GEMM and attention rows: TFLOP/s from the key's FLOP count, efficiency against the dtype's peak.
template <class Row, class Key, class Peak>
Row compute_row(const Key& key, const db::SampleStats& stats, double median_s, const Peak& peak) {
  Row r;
  r.key = key;
  r.stats = stats;
  r.tflops = key.flops() / median_s / 1e12;
  r.efficiency = r.tflops / peak(key.dtype);
  return r;
}

}  // namespace

db::MeasurementSet rows_for(const PlannedKernel& kernel, const Measurement& m, const DeviceSpec& device,
                            const LinkBandwidth& links) {
  if (m.status != MeasurementStatus::measured || !(m.summary.median_s > 0)) {
    throw std::invalid_argument("rows_for needs a measured kernel with a positive median time");
  }
  const db::SampleStats stats = m.summary.to_stats();
  const double t = m.summary.median_s;
  auto peak = [&](DType dt) {
    const double p = device.peak_tflops[static_cast<int>(dt)];
    if (!(p > 0)) {
      throw InputError(device.name, kernel.key,
                       "the device has no dense peak for " + std::string(calisim::to_string(dt)) +
                           " in its system file, so no efficiency can be computed");
    }
    return p;
  };
  db::MeasurementSet set;
  switch (kernel.kind) {
    case db::KeyKind::gemm:
      set.gemm.push_back(compute_row<db::GemmRow>(db::parse_gemm_key(kernel.key), stats, t, peak));
      break;
    case db::KeyKind::attention:
      set.attention.push_back(compute_row<db::AttentionRow>(db::parse_attention_key(kernel.key), stats, t, peak));
      break;
    case db::KeyKind::memory: {
      db::MemoryOpRow r;
      r.key = db::parse_memory_key(kernel.key);
      r.stats = stats;
      r.gb_s = static_cast<double>(r.key.bytes) / t / 1e9;
      if (!(device.hbm_gb_s > 0)) throw InputError(device.name, kernel.key, "the device has no HBM bandwidth");
      r.efficiency = r.gb_s / device.hbm_gb_s;
      set.memory.push_back(r);
      break;
    }
    case db::KeyKind::collective: {
      db::CollectiveRow r;
      r.key = db::parse_collective_key(kernel.key);
      r.stats = stats;
      r.algbw_gb_s = algbw_gb_s(r.key, t);
      r.busbw_gb_s = busbw_gb_s(r.key, t);
      r.link_gb_s = r.key.ranks_per_node >= r.key.ranks ? links.intra_node_gb_s : links.inter_node_gb_s;
      if (!(r.link_gb_s > 0)) throw InputError(device.name, kernel.key, "no link bandwidth known for this group");
      r.efficiency = r.busbw_gb_s / r.link_gb_s;
      set.collective.push_back(r);
      break;
    }
    default:
      throw std::invalid_argument("a plan holds only gemm, attention, memory and collective keys");
  }
  return set;
}

}  // namespace calisim::profiler
