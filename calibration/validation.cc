#include "calibration/validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include "simulator/result_json.h"

namespace calisim::calibration {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

RowResult base_row(const MeasuredRun& run, const MappedRun& mapped) {
  RowResult r;
  r.line = run.line;
  r.run_id = run.run_id;
  r.source = run.source;
  r.model = run.model;
  r.gpu_type = run.gpu_type;
  r.system = mapped.system;
  r.layout = mapped.layout;
  r.inferred = mapped.inferred;
  r.warnings = mapped.warnings;
  // The GPU count as an int, range-checked before the cast (0 = not known: a count past INT_MAX
  // is a row the mapping refuses, and must not wrap round into a negative count here).
  const auto gpu_count = [](std::optional<double> v) {
    return v && *v >= 0 && *v <= std::numeric_limits<int>::max() ? static_cast<int>(*v) : 0;
  };
  if (run.format == RunFormat::published) {
    r.gpus = gpu_count(run.number("num_gpus"));
  } else {
    r.gpus = gpu_count(*run.number("tp") * *run.number("pp") * *run.number("dp"));
  }
  return r;
}

std::string pct(double f) { return fmt::format("{:+.1f}%", 100 * f); }

}  // namespace

RowResult not_simulated(const MeasuredRun& run, const MappedRun& mapped, const std::string& reason) {
  RowResult r = base_row(run, mapped);
  r.simulated = false;
  r.reason = reason;
  return r;
}

RowResult score_run(const MeasuredRun& run, const MappedRun& mapped, const SimulationResult& res) {
  RowResult r = base_row(run, mapped);
  r.simulated = true;
  r.simulated_step_s = res.duration_time_per_iter_s;
  r.fits_in_memory = res.fits_in_memory;
  r.kernels_per_source = res.kernels_per_source;
  r.breakdown = breakdown_json(res);
  r.compute_split = compute_split_json(res);
  r.parts_s = step_parts(res);
  r.warnings.insert(r.warnings.end(), res.warnings.begin(), res.warnings.end());
  const double sim = res.duration_time_per_iter_s;
  if (run.format == RunFormat::simumax) {
    // SimuMax's FLOPs per step = its TFLOP/s × its step time; the FLOP convention cancels.
    const double flops = *run.number("simumax_tflops_per_gpu") * *run.number("simumax_step_time_s");
    r.measured_step_s = flops / *run.number("measured_tflops_per_gpu");
    r.measured_from = "measured_tflops_per_gpu (SimuMax FLOP count)";
  } else if (run.number("step_time_s")) {
    r.measured_step_s = *run.number("step_time_s");
    r.measured_from = "step_time_s";
  } else if (run.number("tokens_per_sec_per_gpu")) {
    r.measured_step_s = res.all_tokens_per_iter / (*run.number("tokens_per_sec_per_gpu") * res.world_size);
    r.measured_from = "tokens_per_sec_per_gpu";
  } else if (run.number("tflops_per_gpu") && res.tflops_per_gpu > 0) {
    // A row that publishes HFU and no MFU counts hardware FLOPs: Narayanan et al. 2021's
    // 96·B·s·l·h²(1 + s/6h + V/16lh) includes the recomputed forward of every layer (4 passes,
    // the LM head 3), which is calisim's HFU count (model FLOPs + recomputed forward FLOPs).
    const bool hardware_flops = run.number("hfu_pct") && !run.number("mfu_pct") && res.mfu > 0;
    const double sim_tflops = hardware_flops ? res.tflops_per_gpu * res.hfu / res.mfu : res.tflops_per_gpu;
    r.measured_step_s = sim * sim_tflops / *run.number("tflops_per_gpu");
    r.measured_from = hardware_flops
                          ? "tflops_per_gpu (hardware FLOPs: recomputed forward included, non-causal attention)"
                          : "tflops_per_gpu (Megatron model FLOPs, non-causal attention)";
  } else {
    throw std::invalid_argument("no step time, tokens/s/GPU or TFLOP/s/GPU to compare with");
  }
  r.step_error = (sim - r.measured_step_s) / r.measured_step_s;
  r.throughput_error = r.measured_step_s / sim - 1;

  double alloc = 0, reserved = 0;
  for (const auto& s : res.stages) {
    alloc = std::max(alloc, s.peak_mem_bytes);
    reserved = std::max(reserved, s.peak_mem_with_reserved_bytes);
  }
  std::optional<double> measured_mem;
  if (run.format == RunFormat::simumax && run.number("measured_peak_mem_gb")) {
    measured_mem = run.number("measured_peak_mem_gb");
    r.mem_kind = "allocated";
  } else if (run.number("peak_mem_alloc_gib")) {
    measured_mem = run.number("peak_mem_alloc_gib");
    r.mem_kind = "allocated";
  } else if (run.number("peak_mem_reserved_gib")) {
    measured_mem = run.number("peak_mem_reserved_gib");
    r.mem_kind = "reserved";
  }
  if (measured_mem && *measured_mem > 0) {
    r.mem_measured_gib = measured_mem;
    r.mem_simulated_gib = (r.mem_kind == "allocated" ? alloc : reserved) / kGiB;
    r.mem_error = (*r.mem_simulated_gib - *measured_mem) / *measured_mem;
  }
  // MFU scales with throughput: the measured run's MFU in calisim's convention is the simulated
  // MFU × simulated step / measured step.
  const double ratio = sim / r.measured_step_s;
  r.mfu_simulated_pct = 100 * res.mfu;
  r.mfu_measured_pct = 100 * res.mfu * ratio;
  r.mfu_measured_causal_pct = 100 * res.mfu_causal * ratio;
  if (run.number("mfu_pct")) r.mfu_published_pct = run.number("mfu_pct");
  return r;
}

ErrorStats error_stats(const std::string& group, const std::vector<std::pair<std::string, double>>& errors) {
  ErrorStats s;
  s.group = group;
  s.count = static_cast<int>(errors.size());
  if (errors.empty()) return s;
  std::vector<double> abs, signed_errors;
  double sum_abs = 0, sum = 0, worst_abs = -1;
  for (const auto& [id, e] : errors) {
    abs.push_back(std::fabs(e));
    signed_errors.push_back(e);
    sum_abs += std::fabs(e);
    sum += e;
    if (e > 0) ++s.over;
    if (e < 0) ++s.under;
    if (std::fabs(e) > worst_abs) {
      worst_abs = std::fabs(e);
      s.worst = e;
      s.worst_run = id;
    }
  }
  std::sort(abs.begin(), abs.end());
  const std::size_t n = abs.size();
  s.median = n % 2 ? abs[n / 2] : (abs[n / 2 - 1] + abs[n / 2]) / 2;
  s.mape = sum_abs / static_cast<double>(n);
  s.bias = sum / static_cast<double>(n);
  s.p10 = percentile(signed_errors, 0.1);
  s.p50 = percentile(signed_errors, 0.5);
  s.p90 = percentile(signed_errors, 0.9);
  return s;
}

std::string bias_label(double bias) {
  if (bias > 0) return "simulation slower";
  if (bias < 0) return "simulation faster";
  return "none";
}

std::string bias_label(const ErrorStats& s) {
  if (s.metric == "throughput") return bias_label(-s.bias);
  if (s.metric == "memory") return s.bias > 0 ? "simulation higher" : s.bias < 0 ? "simulation lower" : "none";
  return bias_label(s.bias);
}

ValidationSummary summarize(const std::vector<RowResult>& rows) {
  ValidationSummary out;
  std::vector<std::pair<std::string, double>> all, tput, mem;
  std::map<std::string, std::vector<std::pair<std::string, double>>> by_source, by_gpu, by_class;
  for (const RowResult& r : rows) {
    if (!r.simulated) continue;
    all.emplace_back(r.run_id, r.step_error);
    tput.emplace_back(r.run_id, r.throughput_error);
    if (r.mem_error) mem.emplace_back(r.run_id, *r.mem_error);
    by_source[r.source].emplace_back(r.run_id, r.step_error);
    by_gpu[r.system].emplace_back(r.run_id, r.step_error);
    if (!r.cls.model_class.empty()) {
      by_class[r.cls.system + " " + r.cls.model_class + " " + r.cls.precision].emplace_back(r.run_id, r.step_error);
    }
    out.worst.push_back(&r);
    if (!r.fits_in_memory) out.not_fitting.push_back(&r);
    auto& per_gpu = out.kernels_per_source_by_gpu[r.system];
    for (std::size_t i = 0; i < r.kernels_per_source.size(); ++i) {
      out.kernels_per_source[i] += r.kernels_per_source[i];
      per_gpu[i] += r.kernels_per_source[i];
    }
  }
  out.all = error_stats("all", all);
  out.all_throughput = error_stats("all (throughput)", tput);
  out.memory = error_stats("memory", mem);
  out.all_throughput.metric = "throughput";
  out.memory.metric = "memory";
  for (const auto& [k, v] : by_source) out.by_source.push_back(error_stats(k, v));
  for (const auto& [k, v] : by_gpu) out.by_gpu.push_back(error_stats(k, v));
  for (const auto& [k, v] : by_class) out.by_class.push_back(error_stats(k, v));
  std::stable_sort(out.worst.begin(), out.worst.end(), [](const RowResult* a, const RowResult* b) {
    return std::fabs(a->step_error) > std::fabs(b->step_error);
  });
  if (out.worst.size() > 10) out.worst.resize(10);
  return out;
}

nlohmann::json kernel_sources_json(const std::array<long long, kEfficiencySourceCount>& counts) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < counts.size(); ++i) j[std::string(to_string(static_cast<EfficiencySource>(i)))] = counts[i];
  return j;
}

std::string kernel_sources_text(const std::array<long long, kEfficiencySourceCount>& counts) {
  long long total = 0;
  for (long long c : counts) total += c;
  std::string out;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out += fmt::format("{}{} {} ({:.1f}%)", i ? ", " : "", counts[i], to_string(static_cast<EfficiencySource>(i)),
                       total > 0 ? 100.0 * static_cast<double>(counts[i]) / static_cast<double>(total) : 0.0);
  }
  return out;
}

nlohmann::json to_json(const RowResult& r) {
  nlohmann::json j = {{"run_id", r.run_id}, {"line", r.line},           {"source", r.source},
                      {"model", r.model},   {"gpu_type", r.gpu_type},   {"system", r.system},
                      {"gpus", r.gpus},     {"layout", r.layout},       {"inferred", r.inferred},
                      {"simulated", r.simulated}};
  if (!r.simulated) {
    j["reason"] = r.reason;
    return j;
  }
  j["model_class"] = r.cls.model_class;
  j["precision"] = r.cls.precision;
  j["measured_from"] = r.measured_from;
  j["measured_step_s"] = r.measured_step_s;
  j["simulated_step_s"] = r.simulated_step_s;
  j["step_error"] = r.step_error;
  j["throughput_error"] = r.throughput_error;
  j["memory"] = nullptr;
  if (r.mem_error) {
    j["memory"] = {{"kind", r.mem_kind},
                   {"measured_gib", *r.mem_measured_gib},
                   {"simulated_gib", *r.mem_simulated_gib},
                   {"error", *r.mem_error}};
  }
  j["mfu"] = {{"published_pct", r.mfu_published_pct ? nlohmann::json(*r.mfu_published_pct) : nlohmann::json()},
              {"measured_pct", r.mfu_measured_pct},
              {"measured_causal_pct", r.mfu_measured_causal_pct},
              {"simulated_pct", r.mfu_simulated_pct}};
  j["fits_in_memory"] = r.fits_in_memory;
  std::array<long long, kEfficiencySourceCount> counts{};
  std::copy(r.kernels_per_source.begin(), r.kernels_per_source.end(), counts.begin());
  j["kernels_per_source"] = kernel_sources_json(counts);
  j["breakdown"] = r.breakdown;
  j["compute_split"] = r.compute_split;
  j["warnings"] = r.warnings;
  return j;
}

nlohmann::json to_json(const ErrorStats& s) {
  return {{"group", s.group}, {"count", s.count},         {"mape", s.mape},
          {"median", s.median}, {"worst", s.worst},       {"worst_run", s.worst_run},
          {"bias", s.bias},   {"bias_sign", bias_label(s)}, {"metric", s.metric}, {"over", s.over},
          {"under", s.under}, {"p10", s.p10}, {"p50", s.p50}, {"p90", s.p90}};
}

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string scatter_svg(const std::vector<RowResult>& rows) {
  const double W = 520, H = 520, m = 60;
  double lo = 1e300, hi = 0;
  for (const auto& r : rows) {
    if (!r.simulated) continue;
    lo = std::min({lo, r.measured_step_s, r.simulated_step_s});
    hi = std::max({hi, r.measured_step_s, r.simulated_step_s});
  }
  std::string s = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img">)", W, H);
  s += "<title>simulated vs measured step time</title>";
  if (hi <= 0) return s + "<text x=\"20\" y=\"40\">no simulated rows</text></svg>";
  const double l0 = std::floor(std::log10(lo)), l1 = std::ceil(std::log10(hi)) + (lo == hi ? 1 : 0);
  const auto X = [&](double v) { return m + (std::log10(v) - l0) / (l1 - l0) * (W - 2 * m); };
  const auto Y = [&](double v) { return H - m - (std::log10(v) - l0) / (l1 - l0) * (H - 2 * m); };
  s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)", m, m, W - 2 * m,
                   H - 2 * m);
  for (double d = l0; d <= l1; d += 1) {
    const double v = std::pow(10.0, d);
    s += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle">{:g}</text>)", X(v), H - m + 16, v);
    s += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{:g}</text>)", m - 6, Y(v) + 4, v);
  }
  s += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#c33" stroke-dasharray="4 3"/>)",
                   X(std::pow(10.0, l0)), Y(std::pow(10.0, l0)), X(std::pow(10.0, l1)), Y(std::pow(10.0, l1)));
  for (const auto& r : rows) {
    if (!r.simulated) continue;
    s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="#2766c4" fill-opacity="0.7"><title>{} {}: )"
                     R"(measured {:.3g} s, simulated {:.3g} s ({})</title></circle>)",
                     X(r.measured_step_s), Y(r.simulated_step_s), html_escape(r.run_id), html_escape(r.model),
                     r.measured_step_s, r.simulated_step_s, pct(r.step_error));
  }
  s += fmt::format(R"(<text x="{}" y="{}" font-size="12" text-anchor="middle">measured step time (s, log)</text>)",
                   W / 2, H - 16);
  s += fmt::format(R"x(<text x="16" y="{}" font-size="12" text-anchor="middle" transform="rotate(-90 16 {})">)x"
                   R"(simulated step time (s, log)</text>)",
                   H / 2, H / 2);
  return s + "</svg>";
}

std::string histogram_svg(const std::vector<RowResult>& rows) {
  // 5% bins from −50% to +50%; the outer bins collect everything beyond.
  const int bins = 20;
  std::vector<int> count(bins, 0);
  for (const auto& r : rows) {
    if (!r.simulated) continue;
    int b = static_cast<int>(std::floor((r.step_error + 0.5) / 0.05));
    count[std::clamp(b, 0, bins - 1)]++;
  }
  const int peak = std::max(1, *std::max_element(count.begin(), count.end()));
  const double W = 620, H = 300, m = 45, bw = (W - 2 * m) / bins;
  std::string s = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img">)", W, H);
  s += "<title>step-time error distribution</title>";
  for (int b = 0; b < bins; ++b) {
    const double h = (H - 2 * m) * count[b] / peak;
    s += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="#2766c4"><title>{}% to {}%: )"
                     R"({} rows</title></rect>)",
                     m + b * bw + 1, H - m - h, bw - 2, h, -50 + 5 * b, -45 + 5 * b, count[b]);
    if (b % 2 == 0) {
      s += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle">{}%</text>)", m + b * bw,
                       H - m + 16, -50 + 5 * b);
    }
  }
  s += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle">+50%</text>)", W - m, H - m + 16);
  s += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>)", m - 4, m + 4, peak);
  s += fmt::format(R"(<text x="{}" y="{}" font-size="12" text-anchor="middle">step-time error (simulated − measured) / )"
                   R"(measured; outer bins hold everything beyond ±50%</text>)",
                   W / 2, H - 10);
  return s + "</svg>";
}

std::string stats_table(const std::string& caption, const std::vector<ErrorStats>& stats) {
  std::string s = "<h2>" + html_escape(caption) + "</h2>\n<table><tr><th>group</th><th>rows</th><th>MAPE</th>"
                  "<th>median |err|</th><th>worst</th><th>bias</th></tr>\n";
  for (const auto& st : stats) {
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.1f}%</td><td>{:.1f}%</td><td>{} ({})</td><td>{} ({})</td></tr>\n",
                     html_escape(st.group), st.count, 100 * st.mape, 100 * st.median, pct(st.worst),
                     html_escape(st.worst_run), pct(st.bias), bias_label(st));
  }
  return s + "</table>\n";
}

}  // namespace

std::string html_report(const std::vector<RowResult>& rows, const ValidationSummary& sum, const std::string& title,
                        const std::string& appendix) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(title) +
                  "</title>\n<style>body{font-family:sans-serif;margin:24px}table{border-collapse:collapse;"
                  "font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
                  ".num{text-align:right}</style></head><body>\n";
  h += "<h1>" + html_escape(title) + "</h1>\n";
  int skipped = 0;
  for (const auto& r : rows) skipped += r.simulated ? 0 : 1;
  h += fmt::format("<p>{} rows: {} simulated, {} not simulated. Step-time MAPE {:.1f}%, median {:.1f}%, worst {} ({}), "
                   "bias {} ({}). Error = (simulated − measured) / measured.</p>\n",
                   rows.size(), rows.size() - skipped, skipped, 100 * sum.all.mape, 100 * sum.all.median,
                   pct(sum.all.worst), html_escape(sum.all.worst_run), pct(sum.all.bias), bias_label(sum.all.bias));
  std::string not_fitting;
  for (const RowResult* r : sum.not_fitting) not_fitting += (not_fitting.empty() ? "" : ", ") + html_escape(r->run_id);
  h += fmt::format("<p>Memory fit check: {} of {} simulated rows do not fit their GPU's memory in the simulation, although "
                   "every measured run ran{}{}.</p>\n",
                   sum.not_fitting.size(), sum.all.count, not_fitting.empty() ? "" : ": ", not_fitting);
  h += fmt::format("<p>Kernel lookups of the simulated rows by efficiency source: {}.</p>\n",
                   html_escape(kernel_sources_text(sum.kernels_per_source)));
  h += "<h2>Simulated vs measured step time</h2>\n" + scatter_svg(rows) + "\n";
  h += "<h2>Error distribution</h2>\n" + histogram_svg(rows) + "\n";
  h += stats_table("Per source", sum.by_source);
  h += stats_table("Per GPU (system)", sum.by_gpu);
  if (!sum.by_class.empty()) h += stats_table("Per class (system, model, precision)", sum.by_class);
  h += "<h2>Rows</h2>\n<table><tr><th>run</th><th>model</th><th>GPUs</th><th>system</th><th>layout</th>"
       "<th>measured s</th><th>simulated s</th><th>error</th><th>memory error</th><th>warnings; inferred / reason</th>"
       "</tr>\n";
  for (const auto& r : rows) {
    std::string inferred;
    for (const auto& w : r.warnings) inferred += (inferred.empty() ? "warning: " : "; warning: ") + w;
    for (const auto& i : r.inferred) inferred += (inferred.empty() ? "" : "; ") + i;
    if (!r.simulated) {
      h += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td colspan=\"4\">"
                       "not simulated: {}</td><td>{}</td></tr>\n",
                       html_escape(r.run_id), html_escape(r.model), r.gpus, html_escape(r.system),
                       html_escape(r.layout), html_escape(r.reason), html_escape(inferred));
      continue;
    }
    h += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{:.4g}"
                     "</td><td class=\"num\">{:.4g}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>"
                     "</tr>\n",
                     html_escape(r.run_id), html_escape(r.model), r.gpus, html_escape(r.system),
                     html_escape(r.layout), r.measured_step_s, r.simulated_step_s, pct(r.step_error),
                     r.mem_error ? pct(*r.mem_error) : "", html_escape(inferred));
  }
  h += "</table>\n" + appendix + "</body></html>\n";
  return h;
}

}  // namespace calisim::calibration
