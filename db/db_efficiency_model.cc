#include "db/db_efficiency_model.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

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

// Collective fits are indexed by (op, tier, ranks) packed into one integer.
std::uint64_t fit_code(CollectiveOp op, LinkTier tier, int ranks) {
  return (static_cast<std::uint64_t>(op) << 40) | (static_cast<std::uint64_t>(tier) << 32) |
         static_cast<std::uint32_t>(ranks);
}

class DbEfficiencyModel final : public EfficiencyModel {
 public:
  DbEfficiencyModel(const DeviceRecord& device, const std::vector<RunBatch>& runs,
                    std::shared_ptr<const EfficiencyModel> fallback)
      : fallback_(std::move(fallback)), hbm_gb_s_(device.hbm_gb_s) {
    if (!fallback_) throw std::invalid_argument("load_db_efficiency_model: fallback must not be null");
    BestOf<GemmKey, double> gemm;
    BestOf<AttentionKey, double> attention;
    BestOf<CollectiveKey, double> collective;
    BestOf<MemoryOpKey, double> memory;
    BestOf<std::string, MemoryFit> memory_fits;
    BestOf<std::uint64_t, CollectiveFit> collective_fits;
    for (const RunBatch& b : runs) {
      const auto rank = [&](std::int64_t n) { return Rank{static_cast<int>(b.run.source), b.run.started_at, n}; };
      for (const auto& r : b.rows.gemm) gemm.offer(r.key, capped(r.efficiency), rank(r.stats.n));
      for (const auto& r : b.rows.attention) attention.offer(r.key, capped(r.efficiency), rank(r.stats.n));
      for (const auto& r : b.rows.collective) collective.offer(r.key, capped(r.efficiency), rank(r.stats.n));
      for (const auto& r : b.rows.memory) memory.offer(r.key, capped(r.efficiency), rank(r.stats.n));
      for (const auto& f : b.rows.memory_fits) memory_fits.offer(f.kind, f, rank(0));
      for (const auto& f : b.rows.collective_fits) {
        collective_fits.offer(fit_code(f.op, f.tier, f.ranks), f, rank(0));
      }
    }
    gemm.move_into(gemm_);
    attention.move_into(attention_);
    collective.move_into(collective_);
    memory.move_into(memory_);
    memory_fits.move_into(memory_fits_);
    collective_fits.move_into(collective_fits_);
  }

  Efficiency gemm(const GemmKey& key) const override { return exact(gemm_, key, &EfficiencyModel::gemm); }

  Efficiency attention(const AttentionKey& key) const override {
    return exact(attention_, key, &EfficiencyModel::attention);
  }

  Efficiency memory_op(const MemoryOpKey& key) const override {
    if (auto it = memory_.find(key); it != memory_.end()) return {it->second, EfficiencySource::measured};
    auto fit = memory_fits_.find(key.kind);
    if (fit == memory_fits_.end()) fit = memory_fits_.find("default");
    if (fit == memory_fits_.end() || key.bytes <= 0) return fallback_->memory_op(key);
    const MemoryFit& f = fit->second;
    const double bytes = static_cast<double>(key.bytes);
    const double t = f.latency_us * 1e-6 + bytes / (f.efficiency * f.bandwidth_gb_s * 1e9);
    const double ceiling_gb_s = hbm_gb_s_ > 0 ? hbm_gb_s_ : f.bandwidth_gb_s;
    return {capped(bytes / t / (ceiling_gb_s * 1e9)), EfficiencySource::interpolated};
  }

  Efficiency collective(const CollectiveKey& key) const override {
    if (auto it = collective_.find(key); it != collective_.end()) return {it->second, EfficiencySource::measured};
    const LinkTier tier = key.ranks > key.ranks_per_node ? LinkTier::inter_node : LinkTier::intra_node;
    auto fit = collective_fits_.find(fit_code(key.op, tier, key.ranks));
    if (fit == collective_fits_.end()) {
      fit = collective_fits_.find(fit_code(key.op, tier, 0));
    }
    if (fit == collective_fits_.end() || key.bytes <= 0) return fallback_->collective(key);
    const CollectiveFit& f = fit->second;
    const double wire_bytes = static_cast<double>(key.bytes) * bus_factor(key.op, key.ranks);
    if (wire_bytes <= 0) return {capped(f.efficiency), EfficiencySource::interpolated};
    const double t = f.latency_us * 1e-6 + wire_bytes / (f.efficiency * f.link_gb_s * 1e9);
    return {capped(wire_bytes / t / (f.link_gb_s * 1e9)), EfficiencySource::interpolated};
  }

 private:
  template <class Map, class Key>
  Efficiency exact(const Map& map, const Key& key, Efficiency (EfficiencyModel::*miss)(const Key&) const) const {
    if (auto it = map.find(key); it != map.end()) return {it->second, EfficiencySource::measured};
    return (fallback_.get()->*miss)(key);
  }

  std::shared_ptr<const EfficiencyModel> fallback_;
  double hbm_gb_s_;
  std::unordered_map<GemmKey, double> gemm_;
  std::unordered_map<AttentionKey, double> attention_;
  std::unordered_map<CollectiveKey, double> collective_;
  std::unordered_map<MemoryOpKey, double> memory_;
  std::unordered_map<std::string, MemoryFit> memory_fits_;
  std::unordered_map<std::uint64_t, CollectiveFit> collective_fits_;
};

}  // namespace

std::unique_ptr<EfficiencyModel> make_db_efficiency_model(const DeviceRecord& device,
                                                          const std::vector<RunBatch>& runs,
                                                          std::shared_ptr<const EfficiencyModel> fallback) {
  return std::make_unique<DbEfficiencyModel>(device, runs, std::move(fallback));
}

}  // namespace db

std::unique_ptr<EfficiencyModel> load_db_efficiency_model(const std::string& db_path, const std::string& device_name,
                                                          std::shared_ptr<const EfficiencyModel> fallback) {
  auto file = db::EfficiencyDb::open(db_path, db::OpenMode::read_only);
  const db::DeviceRecord device = file.device(device_name);
  return db::make_db_efficiency_model(device, file.load_runs(device.name), std::move(fallback));
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
