#include "cli/validate_fit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "calibration/measured_runs.h"
#include "cli/config_catalog.h"
#include "cli/progress_bar.h"
#include "calibration/validation.h"
#include "cli/table.h"
#include "core/error.h"

namespace calisim::cli {
namespace {

using namespace calisim::calibration;

FitStats stats_of(const std::vector<FittedRow>& rows, double FittedRow::*sim) {
  std::vector<double> measured, model;
  for (const auto& r : rows) {
    measured.push_back(r.measured_step_s);
    model.push_back(r.*sim);
  }
  return step_errors(measured, model);
}

std::string pct(double f) { return fmt::format("{:+.1f}%", 100 * f); }

std::string factors_text(const FitFactors& f) {
  std::string out;
  for (std::size_t i = 0; i < f.groups.size(); ++i) {
    out += fmt::format("{}{} x{:.3f}", i ? ", " : "", to_string(f.groups[i]), f.factor[i]);
  }
  return out;
}

nlohmann::json factors_json(const FitFactors& f) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < f.groups.size(); ++i) j[to_string(f.groups[i])] = f.factor[i];
  return j;
}

const char* cross_validation(const RunFitResult& r) {
  return r.folds.empty() ? "none (one row)" : r.by_group ? "leave one source out" : "leave one row out";
}

// The shipped file of `f.system` with the fitted efficiencies and a sentence saying how.
void write_fitted_system(const FitArgs& a, SystemFit& f, const std::string& path) {
  const std::string file = resolve_config(ConfigKind::system, f.system);
  std::ifstream in(file);
  nlohmann::ordered_json doc = apply_factors(nlohmann::ordered_json::parse(in), f.result.factors);
  const RunFitResult& r = f.result;
  const std::string how = fmt::format(
      " Fitted to measured step times by calisim validate --runs {} --fit-system {} --fit {}{}: {} on {} rows ({} "
      "folds, {}); step-time MAPE {:.1f}% with the file's defaults, {:.1f}% fitted, {:.1f}% held out.",
      calibration::runs_files_label(a.runs_files, " --runs "), a.system, fmt::join(a.groups, ","),
      a.source.empty() ? "" : " --source '" + a.source + "'", factors_text(r.factors), r.rows.size(), r.folds.size(),
      cross_validation(r), 100 * f.before.mape, 100 * f.fitted.mape, 100 * f.held_out.mape);
  doc["description"] = doc.value("description", std::string()) + how;
  std::ofstream out(path);
  if (!out || !(out << doc.dump(2) << "\n")) throw InputError(path, "--fit-out", "cannot write the file");
  f.written = path;
}

}  // namespace

nlohmann::json stats_json(const FitStats& s) { return {{"mape", s.mape}, {"median", s.median}, {"bias", s.bias}}; }

FitStats step_errors(const std::vector<double>& measured_s, const std::vector<double>& model_s) {
  FitStats s;
  if (measured_s.empty()) return s;
  std::vector<double> abs;
  for (std::size_t i = 0; i < measured_s.size(); ++i) {
    const double e = (model_s[i] - measured_s[i]) / measured_s[i];
    s.mape += std::abs(e);
    s.bias += e;
    abs.push_back(std::abs(e));
  }
  const auto n = static_cast<double>(measured_s.size());
  s.mape /= n;
  s.bias /= n;
  std::sort(abs.begin(), abs.end());
  const std::size_t m = abs.size();
  s.median = m % 2 ? abs[m / 2] : (abs[m / 2 - 1] + abs[m / 2]) / 2;
  return s;
}

FitReport run_fits(const FitArgs& a, const std::vector<std::pair<std::string, FitRow>>& rows) {
  RunFitOptions o;
  o.groups.clear();
  for (const auto& g : a.groups) {
    try {
      const FitGroup parsed = parse_fit_group(g);
      if (std::find(o.groups.begin(), o.groups.end(), parsed) == o.groups.end()) o.groups.push_back(parsed);
    } catch (const std::invalid_argument& e) {
      throw InputError("<command line>", "--fit", e.what());
    }
  }
  std::vector<std::string> order;
  for (const auto& [name, row] : rows)
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  const bool all = a.system == "all";
  if (!all && std::find(order.begin(), order.end(), a.system) == order.end()) {
    throw InputError(fmt::format("{}", fmt::join(a.runs_files, ", ")), "--fit-system",
                     fmt::format("no simulated row maps to system '{}' (rows map to: {})", a.system,
                                 order.empty() ? "none" : fmt::format("{}", fmt::join(order, ", "))));
  }
  if (all && !a.out.empty()) {
    // A path through a regular file, or one without permission, is the user's to fix (exit 2).
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    if (ec || !std::filesystem::is_directory(a.out)) {
      throw InputError(a.out, "--fit-out",
                       fmt::format("cannot create the directory for the fitted system files ({})",
                                   ec ? ec.message() : "a file of that name exists"));
    }
  }

  FitReport rep;
  std::vector<FittedRow> every;
  for (const auto& name : order) {
    if (!all && name != a.system) continue;
    std::vector<FitRow> mine;
    for (const auto& [n, row] : rows)
      if (n == name) mine.push_back(row);
    SystemFit f;
    f.system = name;
    ProgressBar bar("validate: fitting " + name);
    f.result = fit_runs(mine, o, [&bar](int done, int total) {
      bar.update(static_cast<std::uint64_t>(done), static_cast<std::uint64_t>(total));
    });
    bar.finish();
    f.before = stats_of(f.result.rows, &FittedRow::default_step_s);
    f.fitted = stats_of(f.result.rows, &FittedRow::fitted_step_s);
    f.held_out = stats_of(f.result.rows, &FittedRow::held_out_step_s);
    f.at_cap = efficiencies_at_cap(mine.front().system, f.result.factors);
    if (!a.out.empty()) write_fitted_system(a, f, all ? (std::filesystem::path(a.out) / (name + "-fit.json")).string() : a.out);
    every.insert(every.end(), f.result.rows.begin(), f.result.rows.end());
    rep.systems.push_back(std::move(f));
  }
  rep.rows = every.size();
  rep.before = stats_of(every, &FittedRow::default_step_s);
  rep.fitted = stats_of(every, &FittedRow::fitted_step_s);
  rep.held_out = stats_of(every, &FittedRow::held_out_step_s);
  return rep;
}

nlohmann::json fit_json(const FitArgs& a, const FitReport& rep) {
  nlohmann::json out;
  out["system"] = a.system;
  out["groups"] = a.groups;
  out["rows"] = rep.rows;
  out["step_time"] = {{"defaults", stats_json(rep.before)}, {"fitted", stats_json(rep.fitted)},
                      {"held_out", stats_json(rep.held_out)}};
  out["systems"] = nlohmann::json::array();
  for (const auto& f : rep.systems) {
    nlohmann::json j;
    j["system"] = f.system;
    j["factors"] = factors_json(f.result.factors);
    j["at_cap"] = f.at_cap;
    j["rows"] = f.result.rows.size();
    j["cross_validation"] = cross_validation(f.result);
    j["step_time"] = {{"defaults", stats_json(f.before)}, {"fitted", stats_json(f.fitted)},
                      {"held_out", stats_json(f.held_out)}};
    j["folds"] = nlohmann::json::array();
    for (std::size_t i = 0; i < f.result.folds.size(); ++i) {
      j["folds"].push_back({{"left_out", f.result.folds[i]}, {"factors", factors_json(f.result.held_out[i])}});
    }
    j["per_row"] = nlohmann::json::array();
    for (const auto& r : f.result.rows) {
      j["per_row"].push_back({{"run_id", r.run_id}, {"fold", r.group}, {"measured_step_s", r.measured_step_s},
                              {"default_step_s", r.default_step_s}, {"fitted_step_s", r.fitted_step_s},
                              {"held_out_step_s", r.held_out_step_s}});
    }
    j["simulations"] = f.result.simulations;
    if (!f.written.empty()) j["written"] = f.written;
    out["systems"].push_back(j);
  }
  return out;
}

std::string fit_text(const FitArgs& a, const FitReport& rep) {
  std::string out;
  auto stats_table = [](const FitStats& before, const FitStats& fitted, const FitStats* held, const char* held_label) {
    Table t({"step time", "MAPE", "median", "bias"});
    auto add = [&t](const char* name, const FitStats& s) {
      t.add_row({name, fmt::format("{:.1f}%", 100 * s.mape), fmt::format("{:.1f}%", 100 * s.median), pct(s.bias)});
    };
    add("system file defaults", before);
    add("fitted on every row", fitted);
    if (held) add(held_label, *held);
    return t.render();
  };
  for (const auto& f : rep.systems) {
    const RunFitResult& r = f.result;
    out += fmt::format("\nfit of {}'s efficiencies to its {} rows ({}): {}\n", f.system, r.rows.size(),
                       fmt::join(a.groups, ", "), factors_text(r.factors));
    if (!f.at_cap.empty()) {
      out += fmt::format("  warning: the factors put {} at the cap of 1.0 of peak, which no kernel reaches: they "
                         "absorb something the rows differ in besides kernel speed\n",
                         fmt::join(f.at_cap, ", "));
    }
    out += stats_table(f.before, f.fitted, r.folds.empty() ? nullptr : &f.held_out,
                       r.by_group ? "held out (each source fitted on the others)"
                                  : "held out (each row fitted on the others)");
    if (r.by_group) {
      Table folds({"source left out", "rows", "its factors", "its MAPE held out"});
      for (std::size_t i = 0; i < r.folds.size(); ++i) {
        std::vector<FittedRow> mine;
        for (const auto& row : r.rows)
          if (row.group == r.folds[i]) mine.push_back(row);
        // Long source names are cut, a joined fold's "(+ N sources ...)" kept.
        const std::string& name = r.folds[i];
        const std::size_t joined = name.find(" (+ ");
        const std::string shown = joined == std::string::npos
                                      ? name.substr(0, 70)
                                      : name.substr(0, std::min<std::size_t>(joined, 45)) + name.substr(joined);
        folds.add_row({shown, std::to_string(mine.size()), factors_text(r.held_out[i]),
                       fmt::format("{:.1f}%", 100 * stats_of(mine, &FittedRow::held_out_step_s).mape)});
      }
      out += '\n';
      out += folds.render();
    }
    if (!f.written.empty()) out += fmt::format("fitted system file written to {}\n", f.written);
  }
  if (rep.systems.size() > 1) {
    out += fmt::format("\nall {} fitted rows, each system fitted on its own rows:\n", rep.rows);
    out += stats_table(rep.before, rep.fitted, &rep.held_out, "held out (as each system's rows above)");
  }
  out += "(the fitted factors scale the roofline defaults; a held-out error is what to expect on runs the fit has "
         "not seen)\n";
  return out;
}

std::string fit_html(const FitArgs& a, const FitReport& rep) {
  auto pct1 = [](double f) { return fmt::format("{:.1f}%", 100 * f); };
  auto stats_rows = [&](const FitStats& before, const FitStats& fitted, const FitStats* held) {
    std::string h = "<table><tr><th>step time</th><th>MAPE</th><th>median</th><th>bias</th></tr>\n";
    auto row = [&](const char* name, const FitStats& s) {
      h += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                       name, pct1(s.mape), pct1(s.median), pct(s.bias));
    };
    row("system file defaults", before);
    row("fitted on every row", fitted);
    if (held) row("held out", *held);
    return h + "</table>\n";
  };
  std::string h = fmt::format("<h2>Fit of the systems' efficiencies to their rows ({})</h2>\n",
                              calibration::html_escape(fmt::format("{}", fmt::join(a.groups, ", "))));
  for (const auto& f : rep.systems) {
    const RunFitResult& r = f.result;
    h += fmt::format("<h3>{}: {} rows, {}; {}</h3>\n", calibration::html_escape(f.system), r.rows.size(),
                     calibration::html_escape(factors_text(r.factors)), cross_validation(r));
    h += stats_rows(f.before, f.fitted, r.folds.empty() ? nullptr : &f.held_out);
    if (r.by_group) {
      h += "<table><tr><th>source left out</th><th>its factors</th></tr>\n";
      for (std::size_t i = 0; i < r.folds.size(); ++i) {
        h += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", calibration::html_escape(r.folds[i]),
                         calibration::html_escape(factors_text(r.held_out[i])));
      }
      h += "</table>\n";
    }
  }
  if (rep.systems.size() > 1) {
    h += fmt::format("<h3>All {} fitted rows</h3>\n", rep.rows);
    h += stats_rows(rep.before, rep.fitted, &rep.held_out);
  }
  return h;
}

}  // namespace calisim::cli
