#include "db/db_efficiency_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "db/efficiency_db.h"

namespace calisim {
namespace db {
namespace {

// Preference among rows for one key: lower is better.
struct Rank {
  int source;
  std::string started_at;
  std::int64_t n;
  bool better_than(const Rank& o) const {
    if (source != o.source) return source < o.source;
    if (started_at != o.started_at) return started_at > o.started_at;
    return n > o.n;
  }
};

template <class Key, class Value>
class BestOf {
 public:
  void offer(const Key& key, Value v, Rank rank) {
    auto [it, inserted] = entries_.try_emplace(key, std::move(v), rank);
    if (!inserted && rank.better_than(it->second.second)) it->second = {std::move(v), std::move(rank)};
  }
  template <class Map>
  void move_into(Map& out) {
    out.reserve(entries_.size());
    for (auto& [k, e] : entries_) out.emplace(k, std::move(e.first));
  }

 private:
  std::unordered_map<Key, std::pair<Value, Rank>> entries_;
};

double capped(double e) { return std::min(e, 1.0); }

// The device list of a predicted run's notes ("predicted from A, B by calisim-predictor-2; ...",
// predictor/prediction_rows.h); the whole first clause when the notes do not follow that form.
std::string predicted_from(const RunRecord& run) {
  constexpr std::string_view kFrom = "predicted from ";
  const std::string& n = run.notes;
  if (n.rfind(kFrom, 0) == 0) {
    const auto by = n.find(" by ", kFrom.size());
    if (by != std::string::npos && by > kFrom.size()) return n.substr(kFrom.size(), by - kFrom.size());
  }
  const std::string first = n.substr(0, n.find(';'));
  return first.empty() ? "another device (predicted run " + std::to_string(run.id) + ", no notes)" : first;
}

// Origin ids of the distinct predicted-from texts: 1, 2, ... up to kOriginIdCount - 1, the last
// id shared (its text joins every further origin with "; ").
class OriginTable {
 public:
  OriginTable() : names_(1) {}
  std::uint16_t id_of(const std::string& name) {
    for (std::size_t i = 1; i < names_.size(); ++i) {
      if (names_[i] == name) return static_cast<std::uint16_t>(i);
    }
    if (names_.size() < static_cast<std::size_t>(kOriginIdCount)) {
      names_.push_back(name);
    } else {
      names_.back() += "; " + name;
    }
    return static_cast<std::uint16_t>(names_.size() - 1);
  }
  std::string_view name(std::uint32_t id) const { return id < names_.size() ? names_[id] : std::string_view(); }

 private:
  std::vector<std::string> names_;  // [0] unused (no origin)
};

// A stored fit and how its answers are labelled.
template <class Fit>
struct Labelled {
  Fit fit;
  EfficiencySource source = EfficiencySource::interpolated;
  std::uint16_t origin = 0;
};

// Collective fits are indexed by (op, tier, ranks) packed into one integer.
std::uint64_t fit_code(CollectiveOp op, LinkTier tier, int ranks) {
  return (static_cast<std::uint64_t>(op) << 40) | (static_cast<std::uint64_t>(tier) << 32) |
         static_cast<std::uint32_t>(ranks);
}

class DbEfficiencyModel final : public EfficiencyModel {
 public:
  DbEfficiencyModel(const DeviceRecord& device, const std::vector<RunBatch>& runs,
                    std::shared_ptr<const EfficiencyModel> fallback, CollectiveLinkFn collective_link)
      : fallback_(std::move(fallback)), collective_link_(std::move(collective_link)), hbm_gb_s_(device.hbm_gb_s) {
    if (!fallback_) throw std::invalid_argument("load_db_efficiency_model: fallback must not be null");
    BestOf<GemmKey, Efficiency> gemm;
    BestOf<AttentionKey, Efficiency> attention;
    BestOf<CollectiveKey, Efficiency> collective;
    BestOf<MemoryOpKey, Efficiency> memory;
    BestOf<std::string, Labelled<MemoryFit>> memory_fits;
    BestOf<std::uint64_t, Labelled<CollectiveFit>> collective_fits;
    for (const RunBatch& b : runs) {
      const auto rank = [&](std::int64_t n) { return Rank{static_cast<int>(b.run.source), b.run.started_at, n}; };
      const bool predicted = b.run.source == Source::predicted;
      const std::uint16_t origin = predicted ? origins_.id_of(predicted_from(b.run)) : 0;
      const EfficiencySource row_source = predicted ? EfficiencySource::scaled : EfficiencySource::measured;
      const EfficiencySource fit_source = predicted ? EfficiencySource::scaled : EfficiencySource::interpolated;
      const auto eff = [&](double e) { return Efficiency{capped(e), row_source, origin}; };
      for (const auto& r : b.rows.gemm) gemm.offer(r.key, eff(r.efficiency), rank(r.stats.n));
      for (const auto& r : b.rows.attention) attention.offer(r.key, eff(r.efficiency), rank(r.stats.n));
      for (const auto& r : b.rows.collective) {
        // Re-expressed against the caller's link once here: the lookup stays a hash hit.
        Efficiency e = eff(r.efficiency);
        const double link = collective_link_ && r.link_gb_s > 0 ? collective_link_(r.key) : 0.0;
        if (link > 0) e.value *= r.link_gb_s / link;
        collective.offer(r.key, e, rank(r.stats.n));
      }
      for (const auto& r : b.rows.memory) memory.offer(r.key, eff(r.efficiency), rank(r.stats.n));
      for (const auto& f : b.rows.memory_fits) memory_fits.offer(f.kind, {f, fit_source, origin}, rank(0));
      for (const auto& f : b.rows.collective_fits) {
        collective_fits.offer(fit_code(f.op, f.tier, f.ranks), {f, fit_source, origin}, rank(0));
      }
    }
    gemm.move_into(gemm_);
    attention.move_into(attention_);
    collective.move_into(collective_);
    memory.move_into(memory_);
    memory_fits.move_into(memory_fits_);
    collective_fits.move_into(collective_fits_);
  }

  Efficiency gemm(const GemmKey& key) const override {
    if (auto it = gemm_.find(key); it != gemm_.end()) return it->second;
    // A shape measured with its dimensions padded up to a multiple of 8 (SimuMax's grouped-GEMM
    // tables round tokens per expert so) runs the same tile grid: the extra rows are masked lanes of
    // the last tile. Same time, so the efficiency scales by the FLOP ratio.
    GemmKey padded = key;
    for (std::int64_t* dim : {&padded.m, &padded.n, &padded.k}) *dim = (*dim + 7) / 8 * 8;
    if (padded == key) return fallback_->gemm(key);
    auto it = gemm_.find(padded);
    if (it == gemm_.end()) return fallback_->gemm(key);
    Efficiency e = it->second;
    e.value *= key.flops() / padded.flops();
    return e;
  }

  Efficiency attention(const AttentionKey& key) const override {
    return exact(attention_, key, &EfficiencyModel::attention);
  }

  Efficiency memory_op(const MemoryOpKey& key) const override {
    if (auto it = memory_.find(key); it != memory_.end()) return it->second;
    auto fit = memory_fits_.find(key.kind);
    if (fit == memory_fits_.end()) fit = memory_fits_.find("default");
    if (fit == memory_fits_.end() || key.bytes <= 0) return fallback_->memory_op(key);
    const MemoryFit& f = fit->second.fit;
    const double bytes = static_cast<double>(key.bytes);
    const double t = f.latency_us * 1e-6 + bytes / (f.efficiency * f.bandwidth_gb_s * 1e9);
    const double ceiling_gb_s = hbm_gb_s_ > 0 ? hbm_gb_s_ : f.bandwidth_gb_s;
    return {capped(bytes / t / (ceiling_gb_s * 1e9)), fit->second.source, fit->second.origin};
  }

  Efficiency collective(const CollectiveKey& key) const override {
    if (auto it = collective_.find(key); it != collective_.end()) return it->second;
    const LinkTier tier = key.ranks > key.ranks_per_node ? LinkTier::inter_node : LinkTier::intra_node;
    auto fit = collective_fits_.find(fit_code(key.op, tier, key.ranks));
    if (fit == collective_fits_.end()) {
      fit = collective_fits_.find(fit_code(key.op, tier, 0));
    }
    if (fit == collective_fits_.end() || key.bytes <= 0) return fallback_->collective(key);
    const CollectiveFit& f = fit->second.fit;
    const double wire_bytes = static_cast<double>(key.bytes) * bus_factor(key.op, key.ranks);
    if (wire_bytes <= 0) return {capped(f.efficiency), fit->second.source, fit->second.origin};
    const double t = f.latency_us * 1e-6 + wire_bytes / (f.efficiency * f.link_gb_s * 1e9);
    const double link = collective_link_ ? collective_link_(key) : 0.0;
    if (link > 0) return {wire_bytes / t / (link * 1e9), fit->second.source, fit->second.origin};
    return {capped(wire_bytes / t / (f.link_gb_s * 1e9)), fit->second.source, fit->second.origin};
  }

  std::string_view origin(std::uint32_t id) const override { return origins_.name(id); }

 private:
  template <class Map, class Key>
  Efficiency exact(const Map& map, const Key& key, Efficiency (EfficiencyModel::*miss)(const Key&) const) const {
    if (auto it = map.find(key); it != map.end()) return it->second;
    return (fallback_.get()->*miss)(key);
  }

  std::shared_ptr<const EfficiencyModel> fallback_;
  CollectiveLinkFn collective_link_;  // empty: collective efficiencies relative to the row's link
  double hbm_gb_s_;
  OriginTable origins_;  // filled before the maps (the constructor's loop assigns the ids)
  std::unordered_map<GemmKey, Efficiency> gemm_;
  std::unordered_map<AttentionKey, Efficiency> attention_;
  std::unordered_map<CollectiveKey, Efficiency> collective_;
  std::unordered_map<MemoryOpKey, Efficiency> memory_;
  std::unordered_map<std::string, Labelled<MemoryFit>> memory_fits_;
  std::unordered_map<std::uint64_t, Labelled<CollectiveFit>> collective_fits_;
};

}  // namespace

std::unique_ptr<EfficiencyModel> make_db_efficiency_model(const DeviceRecord& device,
                                                          const std::vector<RunBatch>& runs,
                                                          std::shared_ptr<const EfficiencyModel> fallback,
                                                          CollectiveLinkFn collective_link) {
  return std::make_unique<DbEfficiencyModel>(device, runs, std::move(fallback), std::move(collective_link));
}

}  // namespace db

std::unique_ptr<EfficiencyModel> load_db_efficiency_model(const std::string& db_path, const std::string& device_name,
                                                          std::shared_ptr<const EfficiencyModel> fallback,
                                                          CollectiveLinkFn collective_link) {
  auto file = db::EfficiencyDb::open(db_path, db::OpenMode::read_only);
  const db::DeviceRecord device = file.device(device_name);
  return db::make_db_efficiency_model(device, file.load_runs(device.name), std::move(fallback),
                                      std::move(collective_link));
}

std::vector<std::string> list_db_devices(const std::string& db_path) {
  auto file = db::EfficiencyDb::open(db_path, db::OpenMode::read_only);
  std::vector<std::string> out;
  for (const auto& d : file.devices()) {
    std::string line = d.name;
    const auto aliases = file.aliases(d.name);
    for (std::size_t i = 0; i < aliases.size(); ++i) line += (i ? ", " : " (") + aliases[i];
    if (!aliases.empty()) line += ")";
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace calisim
