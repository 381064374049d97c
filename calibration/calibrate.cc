#include "calibration/calibrate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <unordered_set>

#include "calibration/system_profile.h"
#include "db/db_efficiency_model.h"
#include "db/efficiency_db.h"
#include "predictor/device_fit.h"
#include "predictor/device_profile.h"
#include "predictor/evaluate.h"
#include "predictor/interpolating_model.h"
#include "simulator/comm_model.h"
#include "simulator/default_efficiency.h"

namespace calisim::calibration {
namespace {

bool predicted(const db::RunBatch& b) { return b.run.source == db::Source::predicted; }

// Exact keys of the device's own rows (predicted runs left out), as canonical strings.
std::unordered_set<std::string> own_keys(const DeviceRows& rows) {
  std::unordered_set<std::string> keys;
  for (const auto& b : rows.runs) {
    if (predicted(b)) continue;
    for (const auto& r : b.rows.gemm) keys.insert(to_string(r.key));
    for (const auto& r : b.rows.attention) keys.insert(to_string(r.key));
    for (const auto& r : b.rows.collective) keys.insert(to_string(r.key));
    for (const auto& r : b.rows.memory) keys.insert(to_string(r.key));
  }
  return keys;
}

// The record's profile with what it lacks (SM count, L2, efficiencies, links) from the system
// being calibrated, as `calisim predict` enriches devices from their shipped system: the fits
// then see the same quantization features there and here.
predictor::DeviceProfile profile_of(const DeviceRows& rows, const SystemConfig& sys) {
  return predictor::enrich_profile(predictor::profile_from_record(rows.record), profile_of_system(sys));
}

std::vector<FitQuality> fit_quality(const DeviceRows& rows, const predictor::DeviceProfile& profile) {
  predictor::DeviceData d;
  d.record = rows.record;
  d.runs = rows.runs;
  d.profile = profile;
  std::vector<FitQuality> out;
  for (const auto& e : predictor::evaluate({d}).leave_one_out) {
    out.push_back({e.family, e.n, e.mape_pct, e.max_ape_pct});
  }
  return out;
}

// ---- collectives -------------------------------------------------------------------------------

struct CollectiveCandidate {
  int ranks = 0, ranks_per_node = 0;  // ranks 0: a stored fit for any group size
  bool from_rows = false;
  std::size_t rows = 0;
  double alpha_s = 0, beta_b_s = 0, link_gb_s = 0;
};

bool better(const CollectiveCandidate& a, const CollectiveCandidate& b) {
  if (a.from_rows != b.from_rows) return a.from_rows;
  if (a.ranks != b.ranks) return a.ranks > b.ranks;
  return a.rows > b.rows;
}

db::LinkTier tier_of(int ranks, int ranks_per_node) {
  return ranks > ranks_per_node ? db::LinkTier::inter_node : db::LinkTier::intra_node;
}

// The best candidate per (tier, op), and every candidate as a reported fit.
using CollectiveChoice = std::array<std::array<std::optional<CollectiveCandidate>, kCollectiveOpCount>, 2>;

CollectiveChoice collective_candidates(const DeviceRows& rows, const SystemConfig& sys,
                                       std::vector<BandwidthFit>& report) {
  CollectiveChoice best;
  auto offer = [&](CollectiveOp op, db::LinkTier tier, const CollectiveCandidate& c) {
    auto& slot = best[static_cast<int>(tier)][static_cast<int>(op)];
    if (!slot || better(c, *slot)) slot = c;
    report.push_back({fmt::format("{} ranks={} per node={} ({})", to_string(op), c.ranks ? std::to_string(c.ranks) : "any",
                                  c.ranks_per_node ? std::to_string(c.ranks_per_node) : "-", to_string(tier)),
                      c.from_rows ? fmt::format("{} rows", c.rows) : "stored fit", c.alpha_s * 1e6,
                      c.beta_b_s / 1e9, c.link_gb_s > 0 ? c.beta_b_s / (c.link_gb_s * 1e9) : 0});
  };
  const predictor::GroupedRows groups = predictor::group_rows(rows.runs);
  std::map<std::string, const std::vector<db::CollectiveRow>*> ordered;  // deterministic report order
  for (const auto& [code, group] : groups.collective) {
    if (!group.empty()) ordered.emplace(to_string(group.front().key), &group);
  }
  for (const auto& [name, group] : ordered) {
    const CollectiveKey& k = group->front().key;
    if (k.ranks < 2) continue;
    const predictor::CollectiveCurve curve = predictor::fit_collective(*group);
    CollectiveCandidate c{k.ranks, k.ranks_per_node, true, group->size(), curve.time.alpha_s, curve.time.beta_per_s,
                          curve.link_gb_s};
    offer(k.op, tier_of(k.ranks, k.ranks_per_node), c);
  }
  // Stored size-independent fits (SimuMax tables): the newest run's fit per (op, tier, ranks).
  std::map<std::tuple<int, int, int>, db::CollectiveFit> fits;
  for (const auto& b : rows.runs) {
    if (predicted(b)) continue;
    for (const auto& f : b.rows.collective_fits) {
      fits[{static_cast<int>(f.op), static_cast<int>(f.tier), f.ranks}] = f;
    }
  }
  for (const auto& [code, f] : fits) {
    CollectiveCandidate c;
    c.ranks = f.ranks;
    c.ranks_per_node = f.tier == db::LinkTier::intra_node ? f.ranks : sys.gpus_per_node;
    c.alpha_s = f.latency_us * 1e-6;
    c.beta_b_s = f.efficiency * f.link_gb_s * 1e9;
    c.link_gb_s = f.link_gb_s;
    offer(f.op, f.tier, c);
  }
  return best;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void collective_defaults(const CollectiveChoice& best, const SystemConfig& sys, std::vector<FittedValue>& out) {
  const char* tier_field[2] = {"network.scale_up", "network.scale_out"};
  const NetworkTier* tiers[2] = {&sys.scale_up, &sys.scale_out};
  for (int t = 0; t < 2; ++t) {
    std::vector<double> step_latencies_us;
    std::vector<std::string> latency_basis;
    for (int o = 0; o < kCollectiveOpCount; ++o) {
      const auto op = static_cast<CollectiveOp>(o);
      FittedValue v{fmt::format("{}.efficiency.{}", tier_field[t], to_string(op)), tiers[t]->efficiency[o], {}, ""};
      const auto& c = best[t][o];
      if (!c) {
        v.basis = "no rows or stored fit of this op in this tier";
        out.push_back(std::move(v));
        continue;
      }
      // The group the fit describes, as the simulator would price it (stored fits for any size:
      // two nodes' worth of ranks, or the whole domain).
      CollectiveKey key;
      key.op = op;
      key.bytes = std::int64_t{1} << 30;
      key.ranks = c->ranks > 0 ? c->ranks : (t == 0 ? sys.scale_up_domain_size : 2 * sys.gpus_per_node);
      key.ranks_per_node = c->ranks > 0 ? c->ranks_per_node : (t == 0 ? key.ranks : sys.gpus_per_node);
      const double link_gb_s = link_for(key, sys).gb_s;
      if (!(link_gb_s > 0) || !(c->beta_b_s > 0)) {
        v.basis = "the system file gives this tier no bandwidth";
        out.push_back(std::move(v));
        continue;
      }
      const double e = c->beta_b_s / (link_gb_s * 1e9);
      v.fitted = std::min(e, 1.0);
      v.basis = fmt::format("{} of {} ranks ({} per node): busbw {:.2f} GB/s / link {:.2f} GB/s{}",
                            c->from_rows ? fmt::format("alpha-beta fit of {} rows", c->rows) : "stored fit",
                            c->ranks > 0 ? std::to_string(c->ranks) : "any number of", key.ranks_per_node,
                            c->beta_b_s / 1e9, link_gb_s, e > 1 ? " (above 1: capped)" : "");
      out.push_back(std::move(v));
      if (c->ranks >= 2 && c->alpha_s > 0) {
        step_latencies_us.push_back(c->alpha_s * 1e6 / ring_steps(op, c->ranks));
        latency_basis.push_back(fmt::format("{} {:.2f}", to_string(op), step_latencies_us.back()));
      }
    }
    FittedValue lat{fmt::format("{}.latency_us", tier_field[t]), tiers[t]->latency_us, {}, ""};
    if (step_latencies_us.empty()) {
      lat.basis = "no fitted op of this tier has a latency and a group size";
    } else {
      lat.fitted = median(step_latencies_us);
      std::string list;
      for (const auto& s : latency_basis) list += (list.empty() ? "" : ", ") + s;
      lat.basis = fmt::format("median per-step latency alpha / ring steps over {} op(s): {} us", latency_basis.size(),
                              list);
    }
    out.push_back(std::move(lat));
  }
}

// ---- memory ------------------------------------------------------------------------------------

struct MemoryCurve {
  double beta_b_s = 0;
  std::string basis;
};

std::map<std::string, MemoryCurve> memory_curves(const DeviceRows& rows, std::vector<BandwidthFit>& report) {
  std::map<std::string, MemoryCurve> curves;
  const double hbm = rows.record.hbm_gb_s * 1e9;
  std::map<std::string, db::MemoryFit> stored;
  for (const auto& b : rows.runs) {
    if (predicted(b)) continue;
    for (const auto& f : b.rows.memory_fits) stored[f.kind] = f;
  }
  for (const auto& [kind, f] : stored) {
    const double beta = f.efficiency * f.bandwidth_gb_s * 1e9;
    curves[kind] = {beta, "stored fit"};
    report.push_back({"memory kind=" + kind, "stored fit", f.latency_us, beta / 1e9, hbm > 0 ? beta / hbm : 0});
  }
  const predictor::GroupedRows groups = predictor::group_rows(rows.runs);
  std::map<std::string, const std::vector<db::MemoryOpRow>*> ordered;  // deterministic report order
  for (const auto& [kind, group] : groups.memory) {
    if (!group.empty()) ordered.emplace(kind, &group);
  }
  for (const auto& [kind, group] : ordered) {
    const predictor::AlphaBetaFit fit = predictor::fit_memory(*group);
    const std::string basis = fmt::format("{} rows", group->size());
    curves[kind] = {fit.beta_per_s, basis};  // rows beat a stored fit of the same kind
    report.push_back({"memory kind=" + kind, basis, fit.alpha_s * 1e6, fit.beta_per_s / 1e9,
                      hbm > 0 ? fit.beta_per_s / hbm : 0});
  }
  return curves;
}

FittedValue memory_default(const KernelPlan& plan, const SystemConfig& sys, const std::map<std::string, MemoryCurve>& curves) {
  FittedValue v{"efficiency.memory_bound", sys.memory_efficiency, {}, ""};
  const double hbm = sys.device.hbm_bytes_per_s();
  double bytes = 0, ideal_time = 0;
  std::size_t used = 0;
  std::map<std::string, std::size_t> basis_count;
  for (const auto& k : plan.memory) {
    if (k.bytes <= 0) continue;
    auto it = curves.find(k.kind);
    if (it == curves.end()) it = curves.find("default");
    if (it == curves.end() || !(it->second.beta_b_s > 0)) continue;
    const double e = std::min(1.0, it->second.beta_b_s / hbm);
    bytes += static_cast<double>(k.bytes);
    ideal_time += static_cast<double>(k.bytes) / e;
    ++used;
    ++basis_count[it->first + " (" + it->second.basis + ")"];
  }
  if (used == 0) {
    v.basis = plan.memory.empty() ? "the configuration plans no memory-bound kernel"
                                  : "no memory rows or stored fit covers the planned kinds";
    return v;
  }
  v.fitted = bytes / ideal_time;
  std::string list;
  for (const auto& [b, n] : basis_count) list += fmt::format("{}{} x{}", list.empty() ? "" : ", ", b, n);
  v.basis = fmt::format("byte-weighted over {} of {} planned memory kernels, large-transfer beta / HBM of: {}", used,
                        plan.memory.size(), list);
  return v;
}

// ---- GEMM / attention --------------------------------------------------------------------------

// The system-file figure that makes the roofline default reproduce the planned kernels' total
// time: the default model prices key k at figure · shape(k) (GEMMs: wave/tile utilization;
// attention: forward/backward split and shape curves; simulator/default_efficiency.h), so with
// measured or fitted efficiencies e_k the figure is Σ t_k/shape(k) / Σ t_k/e_k, t_k the key's
// time at peak. Dividing the shape back out keeps a calibrated figure from counting the
// quantization loss twice (once in the rows, once in the default model).
template <class Key, class Ask, class Shape>
FittedValue compute_default(const char* field, double datasheet, const char* what, const std::vector<Key>& keys,
                            const SystemConfig& sys, const std::unordered_set<std::string>& exact, Ask ask,
                            Shape shape) {
  FittedValue v{field, datasheet, {}, ""};
  double ideal = 0, actual = 0;
  std::size_t from_rows = 0, from_fit = 0;
  for (const Key& k : keys) {
    if (sys.device.peak_tflops[static_cast<int>(k.dtype)] <= 0) continue;
    const Efficiency e = ask(k);
    if (e.source == EfficiencySource::roofline || !(e.value > 0)) continue;
    const double t_ideal = k.flops() / sys.device.peak_flops_per_s(k.dtype);
    ideal += t_ideal / shape(k);
    actual += t_ideal / e.value;
    ++(exact.count(to_string(k)) ? from_rows : from_fit);
  }
  if (from_rows + from_fit == 0) {
    v.basis = keys.empty() ? fmt::format("the configuration plans no {}", what)
                           : fmt::format("no row or predictor fit answers any of the {} planned {}", keys.size(), what);
    return v;
  }
  v.fitted = ideal / actual;
  v.basis = fmt::format("time-weighted over {} of {} planned {}: {} exact rows, {} from the predictor's fit; "
                        "the default model's per-shape factor divided out",
                        from_rows + from_fit, keys.size(), what, from_rows, from_fit);
  return v;
}

// ---- coverage ----------------------------------------------------------------------------------

template <class Key, class Ask, class AskFit>
CoverageRow cover(const char* family, const std::vector<Key>& keys, Ask ask, AskFit ask_fit) {
  CoverageRow row{family};
  for (const Key& k : keys) {
    ++row.planned;
    switch (ask(k).source) {
      case EfficiencySource::measured: ++row.measured; break;
      case EfficiencySource::interpolated: ++row.interpolated; break;
      case EfficiencySource::scaled: ++row.scaled; break;
      case EfficiencySource::roofline:
        ++row.roofline;
        if (ask_fit(k).source != EfficiencySource::roofline) ++row.roofline_predictor_covers;
        break;
    }
  }
  return row;
}

}  // namespace

std::size_t DeviceRows::row_count() const {
  std::size_t n = 0;
  for (const auto& b : runs) {
    if (!predicted(b)) n += b.rows.size();
  }
  return n;
}

std::size_t Calibration::fitted_count() const {
  std::size_t n = 0;
  for (const auto& d : defaults) n += d.fitted ? 1 : 0;
  return n;
}

DeviceRows load_device_rows(const std::string& db_path, const std::string& device_name) {
  auto file = db::EfficiencyDb::open(db_path, db::OpenMode::read_only);
  DeviceRows rows;
  rows.record = file.device(device_name);
  rows.runs = file.load_runs(rows.record.name);
  return rows;
}

profiler::ProfilePlan missing_kernels(const KernelPlan& plan, const DeviceRows& rows) {
  const std::unordered_set<std::string> have = own_keys(rows);
  profiler::ProfilePlan out;
  out.description = "planned kernels without a row of " + rows.record.name;
  for (const auto& k : plan.gemm) {
    if (!have.count(to_string(k))) out.add(k);
  }
  for (const auto& k : plan.attention) {
    if (!have.count(to_string(k))) out.add(k);
  }
  for (const auto& k : plan.memory) {
    if (!have.count(to_string(k))) out.add(k);
  }
  for (const auto& k : plan.collective) {
    if (!have.count(to_string(k))) out.add(k);
  }
  return out;
}

std::vector<MissingFamily> summarize_missing(const profiler::ProfilePlan& missing, std::size_t first_n) {
  const std::pair<db::KeyKind, const char*> kinds[] = {{db::KeyKind::gemm, "gemm"},
                                                       {db::KeyKind::attention, "attention"},
                                                       {db::KeyKind::memory, "memory"},
                                                       {db::KeyKind::collective, "collective"}};
  std::vector<MissingFamily> out;
  for (const auto& [kind, name] : kinds) {
    MissingFamily f{name, 0, {}};
    for (const auto& k : missing.kernels) {
      if (k.kind != kind) continue;
      if (f.count++ < first_n) f.first_keys.push_back(k.key);
    }
    out.push_back(std::move(f));
  }
  return out;
}

Calibration calibrate(const KernelPlan& plan, const SystemConfig& system, const DeviceRows& rows, StepCallback on_step,
                      void* user) {
  constexpr int kSteps = 4;
  auto step = [&](int done) {
    if (on_step) on_step(user, done, kSteps);
  };
  Calibration c;
  c.device = rows.record.name;
  c.rows_used = rows.row_count();
  step(0);
  const predictor::DeviceProfile profile = profile_of(rows, system);
  c.fit_quality = fit_quality(rows, profile);
  step(1);

  const CollectiveChoice best = collective_candidates(rows, system, c.bandwidth_fits);
  const std::map<std::string, MemoryCurve> memory = memory_curves(rows, c.bandwidth_fits);
  step(2);

  // The answers `simulate` gets (rows and stored fits; fallback "no data") and the predictor's.
  const auto db_model = db::make_db_efficiency_model(rows.record, rows.runs, predictor::no_data_model());
  const auto fit_model =
      predictor::make_interpolating_model(profile.spec, rows.record, rows.runs, predictor::no_data_model());
  // Rows of predicted runs are scaled values, not data of this device: the fitted defaults use
  // only answers the device's own data gives.
  auto own = [](Efficiency e) {
    if (e.source == EfficiencySource::scaled) e.source = EfficiencySource::roofline;
    return e;
  };
  const std::unordered_set<std::string> exact = own_keys(rows);
  // FP8 GEMMs have their own system-file figure (efficiency.matmul_by_dtype.fp8, a fraction of the
  // FP8 peak), so they are fitted apart from efficiency.matmul, and only when the plan has any.
  std::vector<GemmKey> gemm_other, gemm_fp8;
  for (const GemmKey& k : plan.gemm) {
    (k.dtype == DType::fp8_e4m3 || k.dtype == DType::fp8_e5m2 ? gemm_fp8 : gemm_other).push_back(k);
  }
  const auto ask_gemm = [&](const GemmKey& k) { return own(fit_model->gemm(k)); };
  const DefaultEfficiencyModel roofline(system);
  const auto gemm_shape = [&](const GemmKey& k) {
    return roofline.gemm(k).value / system.matmul_efficiency_for(k.dtype);
  };
  const auto attention_shape = [&](const AttentionKey& k) {
    return roofline.attention(k).value / system.attention_efficiency;
  };
  c.defaults.push_back(compute_default("efficiency.matmul", system.matmul_efficiency,
                                       gemm_fp8.empty() ? "GEMMs" : "non-FP8 GEMMs", gemm_other, system, exact,
                                       ask_gemm, gemm_shape));
  if (!gemm_fp8.empty()) {
    c.defaults.push_back(compute_default("efficiency.matmul_by_dtype.fp8",
                                         system.matmul_efficiency_for(DType::fp8_e4m3), "FP8 GEMMs", gemm_fp8, system,
                                         exact, ask_gemm, gemm_shape));
  }
  c.defaults.push_back(compute_default("efficiency.attention", system.attention_efficiency, "attention kernels",
                                       plan.attention, system, exact,
                                       [&](const AttentionKey& k) { return own(fit_model->attention(k)); },
                                       attention_shape));
  c.defaults.push_back(memory_default(plan, system, memory));
  collective_defaults(best, system, c.defaults);
  step(3);

  c.coverage.push_back(cover(
      "gemm", plan.gemm, [&](const GemmKey& k) { return db_model->gemm(k); },
      [&](const GemmKey& k) { return own(fit_model->gemm(k)); }));
  c.coverage.push_back(cover(
      "attention", plan.attention, [&](const AttentionKey& k) { return db_model->attention(k); },
      [&](const AttentionKey& k) { return own(fit_model->attention(k)); }));
  c.coverage.push_back(cover(
      "memory", plan.memory, [&](const MemoryOpKey& k) { return db_model->memory_op(k); },
      [&](const MemoryOpKey& k) { return own(fit_model->memory_op(k)); }));
  c.coverage.push_back(cover(
      "collective", plan.collective, [&](const CollectiveKey& k) { return db_model->collective(k); },
      [&](const CollectiveKey& k) { return own(fit_model->collective(k)); }));
  CoverageRow total{"total"};
  for (const auto& r : c.coverage) {
    total.planned += r.planned;
    total.measured += r.measured;
    total.interpolated += r.interpolated;
    total.scaled += r.scaled;
    total.roofline += r.roofline;
    total.roofline_predictor_covers += r.roofline_predictor_covers;
  }
  c.coverage.push_back(total);
  step(4);
  return c;
}

}  // namespace calisim::calibration
