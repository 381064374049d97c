#include "predictor/served_model.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "db/efficiency_db.h"
#include "predictor/device_fit.h"
#include "predictor/interpolating_model.h"

namespace calisim::predictor {
namespace {

// The span of one size over a group's rows; covers() widens it by `margin` either way.
struct Span {
  double lo = std::numeric_limits<double>::infinity();
  double hi = 0;
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool covers(double v, double margin) const { return v >= lo / margin && v <= hi * margin; }
};

struct GemmCover {
  Span m, n, k, batch;
  bool covers(const GemmKey& key) const {
    constexpr double f = kGemmSizeMargin;
    return m.covers(static_cast<double>(key.m), f) && n.covers(static_cast<double>(key.n), f) &&
           k.covers(static_cast<double>(key.k), f) && batch.covers(static_cast<double>(key.batch), f);
  }
};

struct AttentionCover {
  Span seq_q, seq_kv, head_dim, batch_heads;
  bool covers(const AttentionKey& key) const {
    constexpr double f = kAttentionSizeMargin;
    return seq_q.covers(static_cast<double>(key.seq_q), f) && seq_kv.covers(static_cast<double>(key.seq_kv), f) &&
           head_dim.covers(static_cast<double>(key.head_dim_qk), f) &&
           batch_heads.covers(static_cast<double>(key.batch * key.heads_q), f);
  }
};

// How a served group answers: its label and, for predicted rows, the origin id the database
// model gives those rows (so the outer model's origin() names the device they came from).
struct Served {
  bool on = false;
  std::uint16_t origin = 0;
};

// One DeviceFit with the guard rails of served_model.h; answers nullopt where it must not serve.
class GuardedFit {
 public:
  // `label`: interpolated (own rows) or scaled (predicted rows). `labels` gives a group's origin
  // id: the database model's answer for one of the group's own keys.
  GuardedFit(const DeviceSpec& device, const GroupedRows& rows, EfficiencySource label,
             const EfficiencyModel& labels, const CollectiveLinkFn& collective_link)
      : fit_(device, rows), label_(label), collective_link_(collective_link) {
    const auto origin_of = [&](const auto& group, auto ask) -> std::uint16_t {
      if (label_ != EfficiencySource::scaled) return 0;
      for (const auto& r : group) {
        const Efficiency e = (labels.*ask)(r.key);
        if (e.source == EfficiencySource::scaled) return e.origin;
      }
      return 0;
    };
    for (int i = 0; i < kDTypeCount; ++i) {
      const auto& group = rows.gemm[i];
      if (group.size() < kMinGemmRowsToServe) continue;
      gemm_[i] = {true, origin_of(group, &EfficiencyModel::gemm)};
      for (const auto& r : group) {
        gemm_cover_[i].m.add(static_cast<double>(r.key.m));
        gemm_cover_[i].n.add(static_cast<double>(r.key.n));
        gemm_cover_[i].k.add(static_cast<double>(r.key.k));
        gemm_cover_[i].batch.add(static_cast<double>(r.key.batch));
      }
    }
    for (int i = 0; i < 2 * kDTypeCount; ++i) {
      const auto& group = rows.attention[i];
      if (group.size() < kMinAttentionRowsToServe) continue;
      attention_[i] = {true, origin_of(group, &EfficiencyModel::attention)};
      for (const auto& r : group) {
        attention_cover_[i].seq_q.add(static_cast<double>(r.key.seq_q));
        attention_cover_[i].seq_kv.add(static_cast<double>(r.key.seq_kv));
        attention_cover_[i].head_dim.add(static_cast<double>(r.key.head_dim_qk));
        attention_cover_[i].batch_heads.add(static_cast<double>(r.key.batch * r.key.heads_q));
      }
    }
    for (const auto& [code, group] : rows.collective) {
      if (group.size() < kMinCurveRowsToServe) continue;
      // The link the curve's efficiencies are relative to (device_fit.h: the rows' median link).
      collective_.emplace(code, std::make_pair(Served{true, origin_of(group, &EfficiencyModel::collective)},
                                               fit_collective(group).link_gb_s));
    }
    for (const auto& [kind, group] : rows.memory) {
      if (group.size() < kMinCurveRowsToServe) continue;
      memory_.emplace(kind, Served{true, origin_of(group, &EfficiencyModel::memory_op)});
    }
  }

  std::optional<Efficiency> gemm(const GemmKey& key) const {
    const int g = static_cast<int>(key.dtype);
    if (!gemm_[g].on || !gemm_cover_[g].covers(key)) return std::nullopt;
    return label(fit_.gemm(key), gemm_[g]);
  }
  std::optional<Efficiency> attention(const AttentionKey& key) const {
    const int g = attention_group(key.dtype, key.direction);
    if (!attention_[g].on || !attention_cover_[g].covers(key)) return std::nullopt;
    return label(fit_.attention(key), attention_[g]);
  }
  std::optional<Efficiency> memory_op(const MemoryOpKey& key) const {
    const auto it = memory_.find(key.kind);
    if (it == memory_.end()) return std::nullopt;
    return label(fit_.memory_op(key), it->second);
  }
  std::optional<Efficiency> collective(const CollectiveKey& key) const {
    const auto it = collective_.find(collective_group(key));
    if (it == collective_.end()) return std::nullopt;
    std::optional<Efficiency> e = label(fit_.collective(key), it->second.first);
    // As db_efficiency_model.h: relative to the caller's link, so wire bytes / (link x value) is
    // the fitted time on any system (not capped after the rescaling).
    const double link = collective_link_ ? collective_link_(key) : 0.0;
    if (e && link > 0 && it->second.second > 0) e->value *= it->second.second / link;
    return e;
  }

 private:
  std::optional<Efficiency> label(std::optional<double> v, Served s) const {
    if (!v || !(*v > 0)) return std::nullopt;
    return Efficiency{*v, label_, s.origin};
  }

  DeviceFit fit_;
  EfficiencySource label_;
  const CollectiveLinkFn& collective_link_;  // owned by FitChain, which owns this
  std::array<Served, kDTypeCount> gemm_{};
  std::array<GemmCover, kDTypeCount> gemm_cover_{};
  std::array<Served, 2 * kDTypeCount> attention_{};
  std::array<AttentionCover, 2 * kDTypeCount> attention_cover_{};
  std::unordered_map<std::uint64_t, std::pair<Served, double>> collective_;  // with the curve's link
  std::unordered_map<std::string, Served> memory_;
};

// Steps 2-4 of served_model.h: own fit, predicted fit, fallback.
class FitChain final : public EfficiencyModel {
 public:
  FitChain(const DeviceSpec& device, const GroupedRows& own, const GroupedRows& predicted,
           const EfficiencyModel& labels, std::shared_ptr<const EfficiencyModel> fallback,
           CollectiveLinkFn collective_link)
      : collective_link_(std::move(collective_link)),
        own_(device, own, EfficiencySource::interpolated, labels, collective_link_),
        predicted_(device, predicted, EfficiencySource::scaled, labels, collective_link_),
        fallback_(std::move(fallback)) {}
  FitChain(const FitChain&) = delete;
  FitChain& operator=(const FitChain&) = delete;

  Efficiency gemm(const GemmKey& key) const override { return ask(key, &GuardedFit::gemm, &EfficiencyModel::gemm); }
  Efficiency attention(const AttentionKey& key) const override {
    return ask(key, &GuardedFit::attention, &EfficiencyModel::attention);
  }
  Efficiency memory_op(const MemoryOpKey& key) const override {
    return ask(key, &GuardedFit::memory_op, &EfficiencyModel::memory_op);
  }
  Efficiency collective(const CollectiveKey& key) const override {
    return ask(key, &GuardedFit::collective, &EfficiencyModel::collective);
  }

 private:
  template <class Key>
  Efficiency ask(const Key& key, std::optional<Efficiency> (GuardedFit::*fit)(const Key&) const,
                 Efficiency (EfficiencyModel::*miss)(const Key&) const) const {
    if (auto e = (own_.*fit)(key)) return *e;
    if (auto e = (predicted_.*fit)(key)) return *e;
    return (fallback_.get()->*miss)(key);
  }

  CollectiveLinkFn collective_link_;  // declared first: the fits keep a reference to it
  GuardedFit own_;
  GuardedFit predicted_;
  std::shared_ptr<const EfficiencyModel> fallback_;
};

// The device's runs of source `predicted`, relabelled so group_rows (which leaves predicted rows
// out of the device's own fits) groups them for the separate, `scaled` fit.
std::vector<db::RunBatch> predicted_runs_as_rows(const std::vector<db::RunBatch>& runs) {
  std::vector<db::RunBatch> out;
  for (const auto& b : runs) {
    if (b.run.source != db::Source::predicted) continue;
    out.push_back(b);
    out.back().run.source = db::Source::measured;
  }
  return out;
}

}  // namespace

std::unique_ptr<EfficiencyModel> make_served_model(const DeviceSpec& device, const db::DeviceRecord& record,
                                                   const std::vector<db::RunBatch>& runs,
                                                   std::shared_ptr<const EfficiencyModel> fallback,
                                                   CollectiveLinkFn collective_link) {
  if (!fallback) throw std::invalid_argument("make_served_model: fallback must not be null");
  // The database model over the same runs in the same order assigns the same origin ids as the
  // outer one below: this one labels the predicted fit's groups.
  const auto labels = db::make_db_efficiency_model(record, runs, no_data_model());
  auto chain = std::make_shared<const FitChain>(device, group_rows(runs), group_rows(predicted_runs_as_rows(runs)),
                                                *labels, std::move(fallback), collective_link);
  return db::make_db_efficiency_model(record, runs, std::move(chain), std::move(collective_link));
}

std::unique_ptr<EfficiencyModel> load_served_model(const std::string& db_path, const std::string& device_name,
                                                   std::shared_ptr<const EfficiencyModel> fallback,
                                                   CollectiveLinkFn collective_link, const DeviceSpec& system_spec,
                                                   std::vector<std::string>* notes) {
  auto file = db::EfficiencyDb::open(db_path, db::OpenMode::read_only);
  const db::DeviceRecord record = file.device(device_name);
  DeviceSpec spec = record.to_spec();
  if (spec.sm_count <= 0) spec.sm_count = system_spec.sm_count;
  const bool any_peak = std::any_of(spec.peak_tflops.begin(), spec.peak_tflops.end(), [](double p) { return p > 0; });
  if (!any_peak) {
    spec.peak_tflops = system_spec.peak_tflops;
    if (spec.hbm_gb_s <= 0) spec.hbm_gb_s = system_spec.hbm_gb_s;
    if (notes) {
      notes->push_back("database " + db_path + " has no specs for device '" + record.name +
                       "' (a CSV import carries none): its fits use the system file's peaks and bandwidth (import "
                       "the database's JSON export to store them)");
    }
  }
  return make_served_model(spec, record, file.load_runs(record.name), std::move(fallback), std::move(collective_link));
}

}  // namespace calisim::predictor
