#include "cli/validate_components.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "calibration/calibrated_system.h"
#include "calibration/measured_runs.h"
#include "calibration/run_fit.h"
#include "cli/config_catalog.h"
#include "cli/table.h"
#include "core/efficiency_model.h"
#include "core/error.h"
#include "simulator/config_loader.h"

namespace calisim::cli {
namespace {

using calibration::ComponentFit;
using calibration::ComponentMultipliers;
using calibration::kStepComponents;
using calibration::StepComponent;

constexpr int kCompute = static_cast<int>(StepComponent::compute);
constexpr int kAttention = static_cast<int>(StepComponent::attention);

// A part's multiplier in JSON: its value where fitted (a tied attention part: compute's), null
// where kept as simulated.
nlohmann::json multiplier_json(const ComponentMultipliers& m, int k) {
  const bool tied = k == kAttention && m.attention_tied;
  return m.fitted[k] || tied ? nlohmann::json(m.value[k]) : nlohmann::json();
}

nlohmann::json multipliers_json(const ComponentMultipliers& m) {
  nlohmann::json j = nlohmann::json::object();
  for (int k = 0; k < kStepComponents; ++k) j[json_name(static_cast<StepComponent>(k))] = multiplier_json(m, k);
  return j;
}

// A part's multiplier for the tables: "1.180", "= compute" (a tied attention part), "1 (kept)".
std::string multiplier_text(const ComponentMultipliers& m, int k) {
  if (m.fitted[k]) return fmt::format("{:.3f}", m.value[k]);
  if (k == kAttention && m.attention_tied) return "= compute";
  return "1 (kept)";
}

// The fitted multipliers of one fold as "compute 1.166, bubble 0.950" (parts kept at 1 left out).
std::string fitted_multipliers_text(const ComponentMultipliers& m) {
  std::string out;
  for (int k = 0; k < kStepComponents; ++k) {
    if (!m.fitted[k]) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {:.3f}", to_string(static_cast<StepComponent>(k)), m.value[k]);
  }
  return out.empty() ? "-" : out;
}

// A source name cut for a text table, its head and its tail kept (sources of one publisher differ
// at the end: versions, tables); the JSON and the HTML report keep it whole.
std::string short_source(const std::string& s) {
  constexpr std::size_t kHead = 40, kTail = 21;
  return s.size() <= kHead + kTail + 3 ? s : s.substr(0, kHead) + "..." + s.substr(s.size() - kTail);
}

// The smallest and largest multiplier of part k over the folds that fitted it (none: NaN).
std::pair<double, double> fold_range(const ComponentFit& f, int k) {
  double lo = NAN, hi = NAN;
  for (const auto& m : f.held_out) {
    if (!m.fitted[k]) continue;
    lo = std::isnan(lo) ? m.value[k] : std::min(lo, m.value[k]);
    hi = std::isnan(hi) ? m.value[k] : std::max(hi, m.value[k]);
  }
  return {lo, hi};
}

// The error over every system's rows, each with its own multipliers.
// held_out: only when some system was cross-validated (a system of one row counts its fitted error,
// as in its own table); `uncrossed` systems had no fold.
struct AllRows {
  std::size_t rows = 0;
  FitStats simulated, fitted, held_out;
  bool any_held_out = false;
  int uncrossed = 0;
};
AllRows over_all(const std::vector<SystemComponents>& systems) {
  std::vector<double> measured, simulated, fitted, held;
  for (const auto& s : systems) {
    measured.insert(measured.end(), s.measured_s.begin(), s.measured_s.end());
    simulated.insert(simulated.end(), s.fit.simulated_s.begin(), s.fit.simulated_s.end());
    fitted.insert(fitted.end(), s.fit.fitted_s.begin(), s.fit.fitted_s.end());
    held.insert(held.end(), s.fit.held_out_s.begin(), s.fit.held_out_s.end());
  }
  AllRows all{measured.size(), step_errors(measured, simulated), step_errors(measured, fitted),
              step_errors(measured, held)};
  for (const auto& s : systems) {
    if (s.fit.folds.empty()) ++all.uncrossed;
    else all.any_held_out = true;
  }
  return all;
}

}  // namespace

std::array<bool, calibration::kStepComponents> component_mask(const std::vector<std::string>& parts) {
  std::array<bool, kStepComponents> fit{};
  if (parts.empty()) fit.fill(true);
  for (const auto& p : parts) {
    try {
      fit[static_cast<int>(calibration::parse_step_component(p))] = true;
    } catch (const std::invalid_argument& e) {
      throw InputError("<command line>", "--components", e.what());
    }
  }
  return fit;
}

std::vector<SystemComponents> step_components(const std::vector<calibration::RowResult>& rows,
                                              const std::vector<std::string>& documents,
                                              const std::vector<std::string>& parts, bool select_parts) {
  if (rows.size() != documents.size()) throw std::invalid_argument("one document per validated row is needed");
  const std::array<bool, kStepComponents> fit = component_mask(parts);
  std::vector<SystemComponents> out;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].simulated) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const SystemComponents& s) { return s.system == rows[i].system; });
    if (it == out.end()) {
      out.emplace_back().system = rows[i].system;
      members.emplace_back();
      it = out.end() - 1;
    }
    members[static_cast<std::size_t>(it - out.begin())].push_back(i);
  }
  for (std::size_t s = 0; s < out.size(); ++s) {
    SystemComponents& sys = out[s];
    std::vector<std::string> groups, docs;
    for (std::size_t i : members[s]) {
      groups.push_back(rows[i].source);
      docs.push_back(documents[i]);
    }
    sys.row_folds = calibration::cross_validation_folds(groups, docs);
    std::vector<calibration::ComponentRow> crow;
    for (std::size_t j = 0; j < members[s].size(); ++j) {
      const calibration::RowResult& r = rows[members[s][j]];
      crow.push_back({r.run_id, sys.row_folds[j], r.measured_step_s, r.parts_s});
      sys.run_ids.push_back(r.run_id);
      sys.measured_s.push_back(r.measured_step_s);
      const auto from_data = r.kernels_per_source[static_cast<int>(EfficiencySource::measured)] +
                             r.kernels_per_source[static_cast<int>(EfficiencySource::interpolated)] +
                             r.kernels_per_source[static_cast<int>(EfficiencySource::scaled)];
      sys.database_priced = sys.database_priced || from_data > 0;
    }
    sys.fit = calibration::fit_components(crow, fit, select_parts);
    sys.simulated = step_errors(sys.measured_s, sys.fit.simulated_s);
    sys.fitted = step_errors(sys.measured_s, sys.fit.fitted_s);
    sys.held_out = step_errors(sys.measured_s, sys.fit.held_out_s);
    if (sys.fit.by_fold) {
      for (std::size_t f = 0; f < sys.fit.folds.size(); ++f) {
        std::vector<double> measured, held;
        for (std::size_t i : sys.fit.fold_rows[f]) {
          measured.push_back(sys.measured_s[i]);
          held.push_back(sys.fit.held_out_s[i]);
        }
        sys.source_held_out.push_back(step_errors(measured, held));
      }
    }
  }
  return out;
}

nlohmann::json components_json(const std::vector<SystemComponents>& systems) {
  nlohmann::json j;
  j["model"] = "measured step = sum over parts of multiplier x simulated part (critical stage); relative least "
               "squares, multipliers >= 0; null = kept as simulated (not asked for, not selected, or no row has the "
               "part); attention takes compute's multiplier unless fitted apart (attention_tied)";
  if (!systems.empty()) j["select_parts"] = systems.front().fit.selected;
  j["systems"] = nlohmann::json::array();
  for (const auto& s : systems) {
    nlohmann::json parts = nlohmann::json::array();
    for (int k = 0; k < kStepComponents; ++k) {
      const auto [lo, hi] = fold_range(s.fit, k);
      parts.push_back({{"part", json_name(static_cast<StepComponent>(k))},
                       {"share", s.fit.share[k]},
                       {"multiplier", multiplier_json(s.fit.multipliers, k)},
                       {"held_out_min", std::isnan(lo) ? nlohmann::json() : nlohmann::json(lo)},
                       {"held_out_max", std::isnan(hi) ? nlohmann::json() : nlohmann::json(hi)}});
    }
    nlohmann::json folds = nlohmann::json::array();
    for (std::size_t i = 0; i < s.fit.folds.size(); ++i) {
      nlohmann::json fold = {{"left_out", s.fit.folds[i]},
                             {"multipliers", multipliers_json(s.fit.held_out[i])},
                             {"attention_tied", s.fit.held_out[i].attention_tied},
                             {"rows", s.fit.fold_rows[i].size()}};
      if (i < s.source_held_out.size()) fold["held_out"] = stats_json(s.source_held_out[i]);
      folds.push_back(fold);
    }
    nlohmann::json per_row = nlohmann::json::array();
    for (std::size_t i = 0; i < s.run_ids.size(); ++i) {
      per_row.push_back({{"run_id", s.run_ids[i]},
                         {"fold", s.row_folds[i]},
                         {"measured_step_s", s.measured_s[i]},
                         {"simulated_step_s", s.fit.simulated_s[i]},
                         {"fitted_step_s", s.fit.fitted_s[i]},
                         {"held_out_step_s", s.fit.held_out_s[i]}});
    }
    j["systems"].push_back({{"system", s.system},
                            {"rows", s.run_ids.size()},
                            {"cross_validation", s.fit.folds.empty() ? "none (one row)"
                                                 : s.fit.by_fold     ? "leave one source out"
                                                                     : "leave one row out"},
                            {"parts", parts},
                            {"attention_tied", s.fit.multipliers.attention_tied},
                            {"step_time",
                             {{"simulated", stats_json(s.simulated)},
                              {"fitted", stats_json(s.fitted)},
                              {"held_out", stats_json(s.held_out)}}},
                            {"folds", folds},
                            {"per_row", per_row}});
  }
  if (systems.size() > 1) {
    const auto all = over_all(systems);
    j["all"] = {{"rows", all.rows},
                {"systems_without_cross_validation", all.uncrossed},
                {"step_time",
                 {{"simulated", stats_json(all.simulated)},
                  {"fitted", stats_json(all.fitted)},
                  {"held_out", all.any_held_out ? stats_json(all.held_out) : nlohmann::json()}}}};
  }
  return j;
}

std::string components_text(const std::vector<SystemComponents>& systems) {
  std::string out = "\nstep components (--components): measured step = sum of multiplier x simulated part; relative "
                    "least squares, multipliers >= 0; '1 (kept)': not fitted (not asked for, or no row has it); "
                    "'= compute': attention kernels priced with compute's multiplier\n";
  if (!systems.empty() && systems.front().fit.selected) {
    out += "parts chosen per system by cross-validation (--select-parts): '1 (kept)' also marks a part it dropped; "
           "each held-out source's parts chosen without its rows\n";
  }
  for (const auto& s : systems) {
    out += fmt::format("\n{}: {} rows, {}\n", s.system, s.run_ids.size(),
                       s.fit.folds.empty() ? "no cross-validation (one row)"
                       : s.fit.by_fold     ? fmt::format("held out by source ({} folds)", s.fit.folds.size())
                                           : "held out row by row (one source)");
    Table parts({"part", "share of simulated time", "multiplier", "held-out range"});
    for (int k = 0; k < kStepComponents; ++k) {
      const auto [lo, hi] = fold_range(s.fit, k);
      parts.add_row({to_string(static_cast<StepComponent>(k)), fmt::format("{:.1f}%", 100 * s.fit.share[k]),
                     multiplier_text(s.fit.multipliers, k),
                     std::isnan(lo) ? "-" : fmt::format("{:.3f} - {:.3f}", lo, hi)});
    }
    out += parts.render();
    Table steps({"step time", "MAPE", "median", "bias"});
    auto add = [&steps](const char* name, const FitStats& st) {
      steps.add_row({name, fmt::format("{:.1f}%", 100 * st.mape), fmt::format("{:.1f}%", 100 * st.median),
                     fmt::format("{:+.1f}%", 100 * st.bias)});
    };
    add("simulated (multipliers 1)", s.simulated);
    add("fitted on every row", s.fitted);
    if (!s.fit.folds.empty()) add("held out", s.held_out);
    out += '\n';
    out += steps.render();
    if (!s.source_held_out.empty()) {
      Table sources({"held-out source", "rows", "multipliers without it", "MAPE", "bias"});
      for (std::size_t f = 0; f < s.source_held_out.size(); ++f) {
        const FitStats& st = s.source_held_out[f];
        sources.add_row({short_source(s.fit.folds[f]), std::to_string(s.fit.fold_rows[f].size()),
                         fitted_multipliers_text(s.fit.held_out[f]), fmt::format("{:.1f}%", 100 * st.mape),
                         fmt::format("{:+.1f}%", 100 * st.bias)});
      }
      out += '\n';
      out += sources.render();
    }
  }
  if (systems.size() > 1) {
    const auto all = over_all(systems);
    out += fmt::format("\nall {} rows (each system with its own multipliers): MAPE simulated {:.1f}%, fitted {:.1f}%", all.rows,
                       100 * all.simulated.mape, 100 * all.fitted.mape);
    if (all.any_held_out) out += fmt::format(", held out {:.1f}%", 100 * all.held_out.mape);
    if (all.uncrossed > 0) {
      out += fmt::format(" ({} system(s) of one row: no cross-validation{})", all.uncrossed,
                         all.any_held_out ? ", their fitted error counted" : "");
    }
    out += '\n';
  }
  return out;
}

std::string components_html(const std::vector<SystemComponents>& systems) {
  using calibration::html_escape;
  auto pct = [](double f) { return fmt::format("{:.1f}%", 100 * f); };
  auto steps = [&](const FitStats& sim, const FitStats& fitted, const FitStats* held) {
    std::string h = "<table><tr><th>step time</th><th>MAPE</th><th>median</th><th>bias</th></tr>\n";
    auto row = [&](const char* name, const FitStats& st) {
      h += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:+.1f}%</td></tr>\n",
                       name, pct(st.mape), pct(st.median), 100 * st.bias);
    };
    row("simulated (multipliers 1)", sim);
    row("fitted on every row", fitted);
    if (held) row("held out", *held);
    return h + "</table>\n";
  };
  std::string h = "<h2>Step components: measured step = sum of multiplier &times; simulated part</h2>\n"
                  "<p>Relative least squares, multipliers &ge; 0; &ldquo;1 (kept)&rdquo;: not fitted (not asked for, "
                  "no row has the part";
  h += !systems.empty() && systems.front().fit.selected
           ? ", or dropped by the per-system cross-validation of --select-parts, each held-out source's parts "
             "chosen without its rows"
           : "";
  h += "); &ldquo;= compute&rdquo;: attention kernels priced with compute&rsquo;s multiplier.</p>\n";
  for (const auto& s : systems) {
    h += fmt::format("<h3>{}: {} rows, {}</h3>\n", html_escape(s.system), s.run_ids.size(),
                     s.fit.folds.empty() ? "no cross-validation (one row)"
                     : s.fit.by_fold     ? "held out by source"
                                         : "held out row by row (one source)");
    h += "<table><tr><th>part</th><th>share of simulated time</th><th>multiplier</th><th>held-out range</th></tr>\n";
    for (int k = 0; k < kStepComponents; ++k) {
      const auto [lo, hi] = fold_range(s.fit, k);
      h += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                       to_string(static_cast<StepComponent>(k)), pct(s.fit.share[k]),
                       multiplier_text(s.fit.multipliers, k),
                       std::isnan(lo) ? "-" : fmt::format("{:.3f} &ndash; {:.3f}", lo, hi));
    }
    h += "</table>\n";
    h += steps(s.simulated, s.fitted, s.fit.folds.empty() ? nullptr : &s.held_out);
    if (!s.source_held_out.empty()) {
      h += "<table><tr><th>held-out source</th><th>rows</th><th>multipliers without it</th><th>MAPE</th><th>bias</th></tr>\n";
      for (std::size_t f = 0; f < s.source_held_out.size(); ++f) {
        h += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td "
                         "class=\"num\">{:+.1f}%</td></tr>\n",
                         html_escape(s.fit.folds[f]), s.fit.fold_rows[f].size(), fitted_multipliers_text(s.fit.held_out[f]),
                         pct(s.source_held_out[f].mape), 100 * s.source_held_out[f].bias);
      }
      h += "</table>\n";
    }
  }
  if (systems.size() > 1) {
    const auto all = over_all(systems);
    h += fmt::format("<h3>All {} rows, each system with its own multipliers</h3>\n", all.rows);
    h += steps(all.simulated, all.fitted, all.any_held_out ? &all.held_out : nullptr);
  }
  return h;
}

std::vector<std::pair<std::string, std::string>> write_insitu_systems(const ComponentsOutArgs& a,
                                                                      const std::vector<SystemComponents>& systems) {
  std::vector<std::pair<std::string, std::string>> written;
  for (const auto& s : systems) {
    const std::string path = (std::filesystem::path(a.dir) / (s.system + "-insitu.json")).string();
    const ComponentMultipliers& fit = s.fit.multipliers;
    // A part --select-parts dropped keeps 1 (priced as simulated); one fitted to 0 has no speed.
    const bool apart = fit.fitted[kAttention];
    if (!fit.fitted[kCompute] && !apart && !s.fit.selected) {
      throw InputError(path, "--components-out",
                       fmt::format("no compute multiplier was fitted for {} (its rows have no compute time)", s.system));
    }
    const double m = fit.value[kCompute];
    const std::string file = resolve_config(ConfigKind::system, s.system);
    std::ifstream in(file);
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(in);
    auto number = [&](const char* field, double absent) {
      return doc.contains("efficiency") && doc["efficiency"].contains(field) ? doc["efficiency"][field].get<double>()
                                                                              : absent;
    };
    const double base = number("sustained_kernel_speed", 1.0);
    const double attention_base = number("sustained_attention_speed", base);
    auto speed_of = [&](const char* field, double from, double multiplier, const char* part) {
      const double speed = multiplier > 0 ? from / multiplier : 0.0;
      if (!(speed > 0 && speed <= 2)) {
        throw InputError(path, std::string("efficiency.") + field,
                         fmt::format("the fitted {} multiplier {:.3f} of {} gives {:.3f}, outside (0, 2]", part,
                                     multiplier, s.system, speed));
      }
      return speed;
    };
    const double speed = speed_of("sustained_kernel_speed", base, m, "compute");
    doc["efficiency"]["sustained_kernel_speed"] = std::round(speed * 1e4) / 1e4;
    std::string attention_sentence;
    if (apart) {
      const double ma = fit.value[kAttention];
      const double attention_speed = speed_of("sustained_attention_speed", attention_base, ma, "attention");
      doc["efficiency"]["sustained_attention_speed"] = std::round(attention_speed * 1e4) / 1e4;
      attention_sentence = fmt::format(" The attention kernels took {:.3f}x, so efficiency.sustained_attention_speed "
                                       "{:.4g} = {:.4g} / {:.3f}.",
                                       ma, attention_speed, attention_base, ma);
    } else if (doc["efficiency"].contains("sustained_attention_speed")) {
      // Attention followed compute in the fit: it must run at the compute speed in the file too.
      doc["efficiency"].erase("sustained_attention_speed");
    }
    const bool with_db = !a.db.empty() && s.database_priced;
    if (with_db) doc["efficiency_db"] = calibration::db_reference(a.db, path);
    doc["description"] =
        doc.value("description", std::string()) +
        fmt::format(" In-situ kernel speed fitted to measured step times by calisim validate --runs {}{}{} "
                    "--components {}{}: the rows' {} took {:.3f}x the simulated time ({} rows, {}; step-time "
                    "MAPE {:.1f}% simulated, {:.1f}% fitted, {:.1f}% held out), so efficiency.sustained_kernel_speed "
                    "{:.4g} = {:.4g} / {:.3f}.{}",
                    calibration::runs_files_label(a.runs_files, " --runs "), with_db ? " --db " + a.db : "",
                    a.source.empty() ? "" : " --source '" + a.source + "'",
                    a.attention_asked ? "compute attention" : "compute", s.fit.selected ? " --select-parts" : "",
                    apart ? "other kernels" : "kernels", m, s.run_ids.size(),
                    s.fit.folds.empty() ? "no cross-validation" : s.fit.by_fold ? "held out by source" : "held out by row",
                    100 * s.simulated.mape, 100 * s.fitted.mape, 100 * s.held_out.mape, speed, base, m,
                    attention_sentence);
    // The file must load as `simulate --system` will load it.
    parse_system(nlohmann::json::parse(doc.dump()), path);
    std::ofstream out(path);
    if (!out || !(out << doc.dump(2) << "\n")) throw InputError(path, "--components-out", "cannot write the file");
    written.emplace_back(s.system, path);
  }
  return written;
}

}  // namespace calisim::cli
