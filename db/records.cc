#include "db/records.h"

#include <algorithm>

#include <ctime>
#include <stdexcept>
#include <string>

namespace calisim::db {

std::string_view to_string(Source s) {
  switch (s) {
    case Source::measured: return "measured";
    case Source::trace: return "trace";
    case Source::imported: return "imported";
    case Source::published: return "published";
    case Source::predicted: return "predicted";
  }
  return "measured";
}

Source parse_source(std::string_view s) {
  for (int i = 0; i < kSourceCount; ++i) {
    if (to_string(static_cast<Source>(i)) == s) return static_cast<Source>(i);
  }
  throw std::invalid_argument("unknown source '" + std::string(s) +
                              "' (expected measured, trace, imported, published or predicted)");
}

std::string_view to_string(LinkTier t) { return t == LinkTier::intra_node ? "intra_node" : "inter_node"; }

LinkTier parse_link_tier(std::string_view s) {
  if (s == "intra_node") return LinkTier::intra_node;
  if (s == "inter_node") return LinkTier::inter_node;
  throw std::invalid_argument("unknown link tier '" + std::string(s) + "' (expected intra_node or inter_node)");
}

DeviceSpec DeviceRecord::to_spec() const {
  DeviceSpec spec;
  spec.name = name;
  spec.peak_tflops = peak_tflops;
  spec.memory_gb = memory_gb;
  spec.hbm_gb_s = hbm_gb_s;
  spec.sm_count = sm_count;
  spec.l2_mb = l2_mb;
  return spec;
}

DeviceRecord DeviceRecord::from_spec(const DeviceSpec& spec) {
  DeviceRecord r;
  r.name = spec.name;
  r.peak_tflops = spec.peak_tflops;
  r.memory_gb = spec.memory_gb;
  r.hbm_gb_s = spec.hbm_gb_s;
  r.sm_count = spec.sm_count;
  r.l2_mb = spec.l2_mb;
  return r;
}

bool DeviceRecord::has_peaks() const {
  return std::any_of(peak_tflops.begin(), peak_tflops.end(), [](double p) { return p > 0; });
}

bool RunRecord::same_provenance(const RunRecord& o) const {
  return device == o.device && source == o.source && tool_version == o.tool_version && host == o.host &&
         started_at == o.started_at && ended_at == o.ended_at && notes == o.notes;
}

std::string now_utc_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

#ifndef CALISIM_DB_VERSION
#define CALISIM_DB_VERSION "0.0.0"
#endif
std::string tool_version() { return std::string("calisim ") + CALISIM_DB_VERSION; }

double bus_factor(CollectiveOp op, int ranks) {
  if (ranks <= 1) return op == CollectiveOp::send_recv ? 1.0 : 0.0;
  const double n = ranks;
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * (n - 1) / n;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all: return (n - 1) / n;
    case CollectiveOp::send_recv: return 1.0;
  }
  return 1.0;
}

}  // namespace calisim::db
