// The EfficiencyModel backed by the efficiency database.
//
// Loading reads every row of one device once into hash maps; after that no call touches SQLite,
// allocates (memory-op lookups hash the kind string but do not copy it) or locks, so one
// instance serves many simulator threads. Resolution, per ARCHITECTURE.md:
//   1. an exact key measured on this device              -> source `measured`
//      (several rows for one key: the best by db::Source order, then newest run, then most samples)
//      GEMMs also match a row measured at m, n, k padded up to multiples of 8 (same tile grid, so the
//      same time; efficiency scaled by the FLOP ratio)
//   2. memory ops and collectives only: a size-independent bandwidth fit of this device
//      (memory: the op's kind, else "default"; collectives: the op over the tier the group
//      spans, for its group size, else any size), evaluated at the key's size, latency
//      included                                          -> source `interpolated`
//   3. anything else                                     -> `fallback`'s answer, unchanged.
// Stored efficiencies above 1 (possible in imported tables) are capped at 1; collective answers
// re-expressed against a CollectiveLinkFn (below) are not capped after that rescaling.
// Rows and fits of runs of source `predicted` (written by `calisim predict`) answer with source
// `scaled` instead of `measured` / `interpolated`, and with an origin id (core/efficiency_model.h)
// naming the device(s) they were predicted from, read from the run's notes ("predicted from A, B
// by ..."); origin(id) returns that text. Fallback answers keep the fallback's origin id.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/efficiency_model.h"
#include "db/records.h"

namespace calisim {

// The per-GPU link bandwidth (GB/s) the caller multiplies a collective efficiency by for a key
// (the simulator: link_for(key, system).gb_s, simulator/comm_model.h). A stored collective
// efficiency is relative to the link its row was measured or fitted on (CollectiveRow::link_gb_s,
// CollectiveFit::link_gb_s: SimuMax's 30 GB/s, a profiler's tier bandwidth), not to the system
// file's. Given this function, the model answers collectives with achieved busbw / link(key)
// (not capped), so the caller's wire bytes / (link × value) is wire bytes / achieved busbw: a
// measured row reproduces its own time on any system. Empty: efficiencies relative to the row's
// own link, as stored.
using CollectiveLinkFn = std::function<double(const CollectiveKey&)>;

// Loads every row for `device_name` (the system file's device.name, or an alias stored on import)
// into an in-memory index. Lookups that miss go to `fallback` (the roofline model), whose answer
// is returned unchanged. Throws InputError when the file cannot be read or holds no such device
// (the message lists the devices it holds). `fallback` must not be null.
std::unique_ptr<calisim::EfficiencyModel> load_db_efficiency_model(
    const std::string& db_path, const std::string& device_name,
    std::shared_ptr<const calisim::EfficiencyModel> fallback, CollectiveLinkFn collective_link = {});

// The device names a database file holds, sorted, each followed by its aliases in parentheses
// when it has any, e.g. "NVIDIA A100 PCIe 80GB (a100_pcie_bf16)". Throws InputError like above.
std::vector<std::string> list_db_devices(const std::string& db_path);

namespace db {

// Builds the index from rows already in memory (tests, benchmarks and merge previews use it
// without a file). Efficiencies of memory fits are taken as stored; collective ones as stored or
// re-expressed against collective_link (above).
std::unique_ptr<EfficiencyModel> make_db_efficiency_model(const DeviceRecord& device,
                                                          const std::vector<RunBatch>& runs,
                                                          std::shared_ptr<const EfficiencyModel> fallback,
                                                          CollectiveLinkFn collective_link = {});

}  // namespace db
}  // namespace calisim
