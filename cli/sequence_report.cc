#include "cli/sequence_report.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "cli/table.h"

namespace calisim::cli {
namespace {

namespace prof = calisim::profiler;
using Json = nlohmann::ordered_json;

std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }

struct KernelRow {
  const SequenceKernel* k;
  double alone_s = 0;
  std::string algorithm;
};

// Each kernel of the sequence with its measurement alone (when there is one).
std::vector<KernelRow> kernel_rows(const LayerSequence& seq, const prof::SequenceMeasurement* m) {
  std::map<std::string, std::size_t> index;
  if (m) {
    if (m->isolated.size() != m->distinct_keys.size()) {
      throw std::invalid_argument("sequence measurement: one isolated result per distinct key expected");
    }
    if (m->runs.empty()) throw std::invalid_argument("sequence measurement: no sustained run");
    for (std::size_t i = 0; i < m->distinct_keys.size(); ++i) index[m->distinct_keys[i]] = i;
  }
  std::vector<KernelRow> rows;
  for (const SequenceKernel& k : seq.kernels) {
    KernelRow r{&k, 0, {}};
    if (m) {
      const auto it = index.find(k.key);
      if (it == index.end()) throw std::invalid_argument("sequence measurement lacks kernel " + k.key);
      r.alone_s = m->isolated[it->second].summary.median_s;
      r.algorithm = m->isolated[it->second].algorithm;
    }
    rows.push_back(r);
  }
  return rows;
}

double alone_sum(const std::vector<KernelRow>& rows) {
  double s = 0;
  for (const auto& r : rows) s += r.alone_s;
  return s;
}

double background_gb_s(const prof::SustainedRun& r) {
  return r.background_s > 0 ? r.background_bytes / r.background_s / 1e9 : 0.0;
}

std::string source_text(const SequenceContext& ctx) {
  return ctx.efficiency_source.empty() ? "the system file's roofline defaults" : ctx.efficiency_source;
}

}  // namespace

Json sequence_report_json(const SequenceContext& ctx, const LayerSequence& seq, const SequenceDevice* device,
                          const prof::SequenceMeasurement* m) {
  const std::vector<KernelRow> rows = kernel_rows(seq, m);
  Json j{{"calisim_sequence", 1},
         {"description", ctx.description},
         {"model", ctx.model_file},
         {"strategy", ctx.strategy_file},
         {"system", ctx.system},
         {"efficiency_source", ctx.efficiency_source.empty() ? "roofline defaults of the system file"
                                                             : ctx.efficiency_source},
         {"layer", std::string(to_string(seq.layer))},
         {"forward_kernels", seq.forward_kernels},
         {"backward_kernels", seq.kernels.size() - seq.forward_kernels},
         {"collectives_left_out", seq.collectives_left_out}};
  if (device) {
    j["device"] = {{"name", device->name},       {"sm_count", device->sm_count}, {"driver", device->driver},
                   {"cuda", device->cuda},       {"libraries", device->libraries}, {"timer", device->timer}};
    j["sustain_s"] = device->sustain_s;
  }
  Json kernels = Json::array();
  for (const auto& r : rows) {
    Json k{{"op", r.k->op},   {"role", r.k->role},   {"kind", std::string(to_string(r.k->kind))},
           {"key", r.k->key}, {"flops", r.k->flops}, {"bytes", r.k->bytes},
           {"simulated_s", r.k->simulated_s}};
    if (m) {
      k["alone_s"] = r.alone_s;
      k["algorithm"] = r.algorithm;
    }
    kernels.push_back(k);
  }
  j["kernels"] = kernels;
  j["simulated_s"] = seq.simulated_s();
  if (!m) return j;
  const double alone = alone_sum(rows);
  const double solo_s = prof::summarize_passes(m->runs.front().pass_s).median_s;
  j["alone_sum_s"] = alone;
  j["runs"] = Json::array();
  for (const prof::SustainedRun& r : m->runs) {
    const prof::PassStats p = prof::summarize_passes(r.pass_s);
    const prof::ClockStats c = prof::summarize_states(r.states);
    Json run{{"background_ctas", r.background_ctas},
             {"groups", p.n},
             {"passes_per_group", r.passes_per_group},
             {"pass_median_s", p.median_s},
             {"pass_p10_s", p.p10_s},
             {"pass_p90_s", p.p90_s},
             {"first_tenth_s", p.first_tenth_s},
             {"last_tenth_s", p.last_tenth_s},
             {"drift", p.drift()},
             {"nvml_samples", c.samples},
             {"sm_clock_median_mhz", c.sm_clock_median_mhz},
             {"sm_clock_min_mhz", c.sm_clock_min_mhz},
             {"max_sm_clock_mhz", c.max_sm_clock_mhz},
             {"power_median_w", c.power_median_w},
             {"power_max_w", c.power_max_w},
             {"temperature_max_c", c.temperature_max_c},
             {"slowdown_reasons", prof::describe_reasons(c.slowdown_reasons)}};
    if (r.background_ctas > 0) {
      run["background_gb_s"] = background_gb_s(r);
      run["background_hit_cap"] = r.background_hit_cap;
      run["slowdown"] = p.median_s / solo_s - 1;
    }
    j["runs"].push_back(run);
  }
  // Above 1: back-to-back kernels run faster than their sum alone (warm caches); below 1: the
  // sustained layer is slower (power, clocks, gaps between kernels).
  j["alone_sum_over_sustained"] = alone / solo_s;
  j["simulated_over_sustained"] = seq.simulated_s() / solo_s;
  return j;
}

std::string sequence_report_text(const SequenceContext& ctx, const LayerSequence& seq, const SequenceDevice* device,
                                 const prof::SequenceMeasurement* m) {
  const std::vector<KernelRow> rows = kernel_rows(seq, m);
  std::string out;
  if (m && device) {
    out += fmt::format("calisim profile sequence: {}\n  on {} (system {}); simulated with {}\n", ctx.description,
                       device->name, ctx.system, source_text(ctx));
  } else {
    out += fmt::format("calisim profile sequence --dry-run: {}\n  simulated with {}\n", ctx.description,
                       source_text(ctx));
  }
  out += fmt::format("  {} kernels ({} forward, {} backward); {} collective(s) left out (one GPU)\n\n",
                     seq.kernels.size(), seq.forward_kernels, seq.kernels.size() - seq.forward_kernels,
                     seq.collectives_left_out);
  std::vector<std::string> header{"#", "op", "role", "kind", "simulated ms"};
  if (m) header.insert(header.end(), {"alone ms", "alone / simulated"});
  header.push_back("key");
  Table t(header);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SequenceKernel& k = *rows[i].k;
    std::vector<std::string> row{std::to_string(i + 1), k.op, k.role, std::string(to_string(k.kind)), ms(k.simulated_s)};
    if (m) {
      row.push_back(ms(rows[i].alone_s));
      row.push_back(k.simulated_s > 0 ? fmt::format("{:.3f}", rows[i].alone_s / k.simulated_s) : "-");
    }
    row.push_back(k.key);
    t.add_row(row);
  }
  const double sim = seq.simulated_s(), alone = alone_sum(rows);
  std::vector<std::string> total{"", "sum", "", "", ms(sim)};
  if (m) {
    total.push_back(ms(alone));
    total.push_back(sim > 0 ? fmt::format("{:.3f}", alone / sim) : "-");
  }
  total.push_back("");
  t.add_row(total);
  out += t.render();
  if (!m) return out;

  const double solo_s = prof::summarize_passes(m->runs.front().pass_s).median_s;
  Table runs({"run", "pass ms", "p10 - p90 ms", "drift", "alone sum / pass", "simulated / pass", "SM MHz", "power W",
              "slowdown reasons", "background GB/s", "slowdown"});
  for (const prof::SustainedRun& r : m->runs) {
    const prof::PassStats p = prof::summarize_passes(r.pass_s);
    const prof::ClockStats c = prof::summarize_states(r.states);
    const bool bg = r.background_ctas > 0;
    runs.add_row({bg ? fmt::format("beside a copy on {} SMs", r.background_ctas) : "alone", ms(p.median_s),
                  fmt::format("{} - {}", ms(p.p10_s), ms(p.p90_s)), fmt::format("{:.3f}", p.drift()),
                  fmt::format("{:.3f}", alone / p.median_s), fmt::format("{:.3f}", sim / p.median_s),
                  c.samples ? fmt::format("{:.0f} (min {:.0f})", c.sm_clock_median_mhz, c.sm_clock_min_mhz) : "-",
                  c.samples ? fmt::format("{:.0f}", c.power_median_w) : "-",
                  c.slowdown_reasons ? prof::describe_reasons(c.slowdown_reasons) : "none",
                  bg ? fmt::format("{:.0f}", background_gb_s(r)) : "-",
                  bg ? fmt::format("{:+.1f} %", 100 * (p.median_s / solo_s - 1)) : "-"});
  }
  out += "\n";
  out += runs.render();
  out += fmt::format(
      "\nalone sum / pass below 1: the sustained layer is slower than its kernels alone (clocks, power, gaps);\n"
      "slowdown: what holding SMs and HBM beside the layer costs it (the system's comm_compute_slowdown is {:.2f})\n",
      ctx.comm_compute_slowdown);
  // The run alone as a system setting: simulate at the measured sustained speed.
  out += fmt::format("to simulate at this sustained speed: --set system.efficiency.sustained_kernel_speed={:.3f}\n",
                     alone / solo_s);
  return out;
}

}  // namespace calisim::cli
