// The records the efficiency database stores: devices, runs (provenance) and typed
// measurements. Plain value types; no SQLite here.
//
// Units are in the names. Efficiencies follow core/efficiency_model.h: GEMM and attention rows
// store the fraction of the device's dense peak for the key's dtype, computed with the FLOP
// count of core/kernel_keys.cc; memory rows the fraction of the device's HBM bandwidth;
// collective rows busbw_gb_s / link_gb_s, where link_gb_s is the per-GPU bandwidth of the link
// tier the measurement ran over (kept so the efficiency can be recomputed against another link).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/device_spec.h"
#include "core/dtype.h"
#include "core/kernel_keys.h"

namespace calisim::db {

// Where a run's numbers came from. The order is the lookup preference when several runs hold
// the same key: a kernel timed on this machine beats one read from a trace, an imported table,
// a published figure, and a prediction.
enum class Source : std::uint8_t { measured, trace, imported, published, predicted };
inline constexpr int kSourceCount = 5;
std::string_view to_string(Source s);
Source parse_source(std::string_view s);  // throws std::invalid_argument

struct DeviceRecord {
  std::string name;                                // unique, e.g. "NVIDIA A100 PCIe 80GB"
  std::string architecture;                        // e.g. "Ampere (GA100)"
  int sm_count = 0;
  double boost_clock_mhz = 0, memory_clock_mhz = 0;
  std::array<double, kDTypeCount> peak_tflops{};   // dense, indexed by DType; 0 = no such mode
  double hbm_gb_s = 0;
  double memory_gb = 0;
  double l2_mb = 0;
  std::string driver_version, cuda_version;
  std::string library_versions;                    // free text, e.g. "cublasLt 12.4.5; cudnn 9.1.0"

  DeviceSpec to_spec() const;
  // The record of a spec (a system file's device): every field to_spec() reads, no versions.
  static DeviceRecord from_spec(const DeviceSpec& spec);
  // Whether any dtype has a dense peak (a record made from a trace's device name alone has none).
  bool has_peaks() const;
  bool operator==(const DeviceRecord&) const = default;
};

struct RunRecord {
  std::int64_t id = 0;  // assigned by the database; 0 before insertion
  std::string device;   // DeviceRecord::name
  Source source = Source::measured;
  std::string tool_version, host;
  std::string started_at, ended_at;  // ISO 8601 UTC, e.g. "2025-06-01T12:00:00Z"; may be empty
  std::string notes;
  // Runs are the same run when everything but the id matches (used by merge to find duplicates).
  bool same_provenance(const RunRecord& o) const;
};

// Timing statistics of one kernel over n samples. n = 0 means the figure came without samples
// (an imported or published number): the times are then derived from the throughput.
struct SampleStats {
  double median_s = 0, min_s = 0, p90_s = 0, stddev_s = 0;
  std::int64_t n = 0;
  bool operator==(const SampleStats&) const = default;
};

struct GemmRow {
  GemmKey key;
  SampleStats stats;
  double tflops = 0;       // key.flops() / median_s
  double efficiency = 0;   // tflops / device dense peak for key.dtype
  bool operator==(const GemmRow&) const = default;
};

struct AttentionRow {
  AttentionKey key;
  SampleStats stats;
  double tflops = 0;
  double efficiency = 0;
  bool operator==(const AttentionRow&) const = default;
};

struct CollectiveRow {
  CollectiveKey key;
  SampleStats stats;
  double algbw_gb_s = 0;   // bytes / median_s
  double busbw_gb_s = 0;   // algbw times the nccl-tests bus factor of op and ranks
  double link_gb_s = 0;    // per-GPU link bandwidth the collective ran over
  double efficiency = 0;   // busbw_gb_s / link_gb_s
  bool operator==(const CollectiveRow&) const = default;
};

struct MemoryOpRow {
  MemoryOpKey key;
  SampleStats stats;
  double gb_s = 0;         // key.bytes / median_s
  double efficiency = 0;   // gb_s / device HBM bandwidth
  bool operator==(const MemoryOpRow&) const = default;
};

// Size-independent bandwidth fits, as SimuMax system files carry them: time(bytes) =
// latency_us + bytes / (efficiency * bandwidth_gb_s). The lookup turns them into an efficiency
// for a given size (source `interpolated`).
struct MemoryFit {
  std::string kind;        // memory-op kind, or "default" for every kind without its own fit
  double bandwidth_gb_s = 0;
  double efficiency = 0;   // fraction of bandwidth_gb_s reached by large transfers
  double latency_us = 0;
  bool operator==(const MemoryFit&) const = default;
};

enum class LinkTier : std::uint8_t { intra_node, inter_node };
std::string_view to_string(LinkTier t);
LinkTier parse_link_tier(std::string_view s);  // throws std::invalid_argument

// time(bytes) = latency_us + bytes * bus_factor(op, ranks) / (efficiency * link_gb_s).
struct CollectiveFit {
  CollectiveOp op = CollectiveOp::all_reduce;
  LinkTier tier = LinkTier::intra_node;
  int ranks = 0;           // group size the fit is for; 0 = any size
  double link_gb_s = 0;
  double efficiency = 0;   // busbw / link_gb_s reached by large messages
  double latency_us = 0;
  bool operator==(const CollectiveFit&) const = default;
};

// nccl-tests bus-bandwidth factor: busbw = algbw * factor (all_reduce 2(n-1)/n; all_gather,
// reduce_scatter, all_to_all (n-1)/n; send_recv 1).
double bus_factor(CollectiveOp op, int ranks);

// The current time as ISO 8601 UTC ("2025-06-01T12:00:00Z"), for RunRecord times.
std::string now_utc_iso8601();

// "calisim <version>", for RunRecord::tool_version.
std::string tool_version();

// Every row of one run, by table.
struct MeasurementSet {
  std::vector<GemmRow> gemm;
  std::vector<AttentionRow> attention;
  std::vector<CollectiveRow> collective;
  std::vector<MemoryOpRow> memory;
  std::vector<MemoryFit> memory_fits;
  std::vector<CollectiveFit> collective_fits;
  std::size_t size() const {
    return gemm.size() + attention.size() + collective.size() + memory.size() + memory_fits.size() +
           collective_fits.size();
  }
};

// A GEMM or attention row for a figure known only as achieved TFLOP/s (imported tables, published
// figures): efficiency = tflops / peak_tflops, the times derived from key.flops(), n = 0.
template <class Row, class Key>
Row row_from_tflops(const Key& key, double tflops, double peak_tflops) {
  Row r;
  r.key = key;
  r.tflops = tflops;
  r.efficiency = tflops / peak_tflops;
  const double t = key.flops() / (tflops * 1e12);
  r.stats = SampleStats{t, t, t, 0.0, 0};
  return r;
}

// One run and its rows: the unit of insertion, export and merge.
struct RunBatch {
  RunRecord run;
  MeasurementSet rows;
};

}  // namespace calisim::db
