#include "predictor/prediction_rows.h"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "core/error.h"
#include "predictor/achievable_ceiling.h"
#include "predictor/cross_device.h"
#include "predictor/interpolating_model.h"
#include "predictor/kernel_overhead.h"
#include "predictor/scaled_model.h"
#include "predictor/source_fit.h"

namespace calisim::predictor {
namespace {

// Running means for the summary table.
struct Tally {
  std::size_t n = 0;
  double source_sum = 0, predicted_sum = 0;
  void add(double source, double predicted) {
    ++n;
    source_sum += source;
    predicted_sum += predicted;
  }
  FamilySummary summary(const char* family) const {
    return {family, n, n ? source_sum / n : 0.0, n ? predicted_sum / n : 0.0};
  }
};

std::vector<std::string> unknown_ratio_warnings(const std::vector<DeviceData>& sources, const DeviceProfile& t) {
  std::vector<std::string> out;
  const auto check = [&](const char* what, double target, double source, const std::string& name) {
    if (!(target > 0 && source > 0)) {
      out.push_back(fmt::format("{} efficiency of {} unknown: {} ratio taken as 1", what,
                                target > 0 ? name : t.spec.name, what));
    }
  };
  for (const auto& s : sources) {
    check("matmul", t.matmul_efficiency, s.profile.matmul_efficiency, s.profile.spec.name);
    check("attention", t.attention_efficiency, s.profile.attention_efficiency, s.profile.spec.name);
    check("memory", t.memory_efficiency, s.profile.memory_efficiency, s.profile.spec.name);
    if (s.profile.spec.sm_count <= 0 || t.spec.sm_count <= 0) {
      out.push_back(fmt::format("SM count of {} unknown: wave quantization not rescaled",
                                s.profile.spec.sm_count <= 0 ? s.profile.spec.name : t.spec.name));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Rows of one kind, keyed so each key is predicted once; the first source holding it supplies the
// "source efficiency" of the summary.
template <class Row, class Emit>
void for_each_new_key(const std::vector<DeviceData>& sources, std::vector<Row> db::MeasurementSet::*table,
                      Emit emit) {
  using Key = decltype(Row{}.key);
  std::unordered_set<Key> seen;
  for (const auto& s : sources) {
    for (const auto& b : s.runs) {
      if (b.run.source == db::Source::predicted) continue;
      for (const Row& r : b.rows.*table) {
        if (seen.insert(r.key).second) emit(r);
      }
    }
  }
}

}  // namespace

Prediction predict_target(const std::vector<DeviceData>& sources, const DeviceProfile& target,
                          const std::map<std::string, double>& op_dispatch_s) {
  if (sources.empty()) throw std::invalid_argument("predict_target: no source devices");
  std::vector<SourceDevice> models;
  std::vector<std::string> provenance, unknown_share;
  std::string from;
  for (const auto& s : sources) {
    if (s.record.name == target.spec.name) {
      throw InputError("--to", "", "the target device '" + target.spec.name +
                                       "' is also a source; predict a device from other devices");
    }
    const auto dispatch = op_dispatch_s.find(s.record.name);
    const SourceFit fitted = fit_source(s, dispatch == op_dispatch_s.end() ? 0.0 : dispatch->second);
    const DeviceProfile& profile = fitted.source.profile;
    const bool t0 = fitted.overhead_fitted;
    models.push_back(fitted.source);
    provenance.push_back(fmt::format("per-call overhead {:.1f} us on {} ({}) -> {:.1f} us on {}",
                                     kernel_overhead_s(profile) * 1e6, s.record.name, t0 ? "fitted" : "prior",
                                     kernel_overhead_s(target) * 1e6, target.spec.name));
    if (fitted.gemm_left_out + fitted.attention_left_out > 0) {
      provenance.push_back(fmt::format(
          "fit of {} skips {} host-bound eager-loop row(s) ({} GEMM, {} attention): their kernel, as the fit of "
          "the other rows predicts it, is shorter than the host's {:.1f} us op dispatch",
          s.record.name, fitted.gemm_left_out + fitted.attention_left_out, fitted.gemm_left_out,
          fitted.attention_left_out, dispatch->second * 1e6));
    }
    if (profile.attention_kernel == AttentionKernel::flash2) {
      const auto share = attention_kernel_share(target.spec, AttentionKernel::flash2);
      provenance.push_back(fmt::format(
          "attention rows of {} are FlashAttention-2: predicted as FlashAttention-2 on {} (share {} of its "
          "best kernel's efficiency)",
          s.record.name, target.spec.name, share ? fmt::format("{:.3f}", *share) : std::string("unknown")));
      if (!share) {
        unknown_share.push_back(fmt::format(
            "FlashAttention-2's share of the best attention kernel on {} unknown: taken as 1", target.spec.name));
      }
    }
    const double ceiling = profile.matmul_ceiling[static_cast<int>(DType::bf16)];
    const MatmulPair pair = matmul_pair(profile, target, DType::bf16);
    if (pair.anchored) {
      provenance.push_back(fmt::format(
          "GEMM bf16 rows of {} reach a ceiling of {:.3f} of peak (q{:.0f} of its long compute-bound rows): "
          "scaled onto the MAMF of {} ({:.3f} = efficiency.matmul / {:.1f}), i.e. best-case benchmark conditions",
          s.record.name, ceiling, kCeilingQuantile * 100, target.spec.name, pair.target,
          kSystemMatmulShareOfMamf));
    }
    if (!collectives_transfer(profile, target)) {
      unknown_share.push_back(fmt::format(
          "collectives not predicted: scale-up of {} is '{}', of {} '{}' (collective efficiencies belong to the "
          "fabric); the simulator's NCCL model of the target answers them",
          s.record.name, profile.scale_up_kind.empty() ? "unknown" : profile.scale_up_kind, target.spec.name,
          target.scale_up_kind.empty() ? "unknown" : target.scale_up_kind));
    }
    from += (from.empty() ? "" : ", ") + s.record.name;
  }
  const auto scaled = make_scaled_model(models, target, no_data_model());

  Prediction p;
  p.device = record_from_profile(target);
  p.warnings = unknown_ratio_warnings(sources, target);
  p.warnings.insert(p.warnings.end(), unknown_share.begin(), unknown_share.end());
  db::RunRecord& run = p.batch.run;
  run.device = target.spec.name;
  run.source = db::Source::predicted;
  run.tool_version = db::tool_version();
  run.started_at = run.ended_at = db::now_utc_iso8601();
  run.notes = fmt::format("predicted from {} by {}", from, kPredictorModelVersion);
  for (const auto& n : provenance) run.notes += "; " + n;
  for (const auto& w : p.warnings) run.notes += "; " + w;

  db::MeasurementSet& out = p.batch.rows;
  const auto peak = [&](DType t) { return target.spec.peak_tflops[static_cast<int>(t)]; };
  Tally gemm, attention, collective, memory, fits;
  for_each_new_key(sources, &db::MeasurementSet::gemm, [&](const db::GemmRow& r) {
    const Efficiency e = scaled->gemm(r.key);
    if (e.source != EfficiencySource::scaled || peak(r.key.dtype) <= 0) return;
    out.gemm.push_back(db::row_from_tflops<db::GemmRow>(r.key, e.value * peak(r.key.dtype), peak(r.key.dtype)));
    gemm.add(r.efficiency, e.value);
  });
  for_each_new_key(sources, &db::MeasurementSet::attention, [&](const db::AttentionRow& r) {
    const Efficiency e = scaled->attention(r.key);
    if (e.source != EfficiencySource::scaled || peak(r.key.dtype) <= 0) return;
    out.attention.push_back(
        db::row_from_tflops<db::AttentionRow>(r.key, e.value * peak(r.key.dtype), peak(r.key.dtype)));
    attention.add(r.efficiency, e.value);
  });
  for_each_new_key(sources, &db::MeasurementSet::collective, [&](const db::CollectiveRow& r) {
    const Efficiency e = scaled->collective(r.key);
    const double link = target.tier(collective_tier(r.key)).gpu_gb_s;
    const double factor = db::bus_factor(r.key.op, r.key.ranks);
    if (e.source != EfficiencySource::scaled || link <= 0 || factor <= 0 || r.key.bytes <= 0) return;
    db::CollectiveRow row;
    row.key = r.key;
    row.link_gb_s = link;
    row.efficiency = e.value;
    row.busbw_gb_s = e.value * link;
    row.algbw_gb_s = row.busbw_gb_s / factor;
    const double t = static_cast<double>(r.key.bytes) / (row.algbw_gb_s * 1e9);
    row.stats = db::SampleStats{t, t, t, 0.0, 0};
    out.collective.push_back(row);
    collective.add(r.efficiency, e.value);
  });
  for_each_new_key(sources, &db::MeasurementSet::memory, [&](const db::MemoryOpRow& r) {
    const Efficiency e = scaled->memory_op(r.key);
    if (e.source != EfficiencySource::scaled || target.spec.hbm_gb_s <= 0 || r.key.bytes <= 0) return;
    db::MemoryOpRow row;
    row.key = r.key;
    row.efficiency = e.value;
    row.gb_s = e.value * target.spec.hbm_gb_s;
    const double t = static_cast<double>(r.key.bytes) / (row.gb_s * 1e9);
    row.stats = db::SampleStats{t, t, t, 0.0, 0};
    out.memory.push_back(row);
    memory.add(r.efficiency, e.value);
  });

  // Size-independent fits, first source holding each (kind) or (op, tier, ranks).
  std::unordered_set<std::string> fit_seen;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const DeviceProfile& s = models[i].profile;
    for (const auto& b : sources[i].runs) {
      if (b.run.source == db::Source::predicted) continue;
      for (const auto& f : b.rows.memory_fits) {
        if (target.spec.hbm_gb_s <= 0 || !fit_seen.insert("mem " + f.kind).second) continue;
        // As a fraction of the source's HBM (the fit's own bandwidth figure may differ), then scaled.
        const double frac = s.spec.hbm_gb_s > 0 ? f.efficiency * f.bandwidth_gb_s / s.spec.hbm_gb_s : f.efficiency;
        db::MemoryFit g = f;
        g.bandwidth_gb_s = target.spec.hbm_gb_s;
        g.efficiency = scale_memory_op(frac, s, target);
        // The fit's latency is a fixed per-call cost like a GEMM's t0 (kernel_overhead.h): it does not
        // scale, the source's comes off and the target's (its overhead, else the prior) goes on. Carried
        // over, SimuMax's 40 us made every H100 norm 5x slower than its bandwidth allows.
        g.latency_us = kernel_overhead_s(target) * 1e6;
        out.memory_fits.push_back(g);
        fits.add(f.efficiency, g.efficiency);
      }
      for (const auto& f : b.rows.collective_fits) {
        const LinkSpec& lt = target.tier(f.tier);
        const LinkSpec& ls = s.tier(f.tier);
        const std::string code = fmt::format("coll {} {} {}", to_string(f.op), to_string(f.tier), f.ranks);
        if (lt.gpu_gb_s <= 0 || !collectives_transfer(s, target) || !fit_seen.insert(code).second) continue;
        db::CollectiveFit g = f;
        g.link_gb_s = lt.gpu_gb_s;
        const int op = static_cast<int>(f.op);
        g.efficiency = std::clamp(f.efficiency * known_ratio(lt.efficiency[op], ls.efficiency[op]), 1e-6, 1.0);
        g.latency_us = f.latency_us * known_ratio(lt.latency_us, ls.latency_us);
        out.collective_fits.push_back(g);
        fits.add(f.efficiency, g.efficiency);
      }
    }
  }
  p.families = {gemm.summary("gemm"), attention.summary("attention"), collective.summary("collective"),
                memory.summary("memory"), fits.summary("fits")};
  return p;
}

}  // namespace calisim::predictor
