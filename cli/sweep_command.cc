// `calisim sweep hardware|scale|layout`: design-space studies, each point a full strategy search.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>

#include "cli/commands.h"
#include "cli/config_catalog.h"
#include "cli/progress_bar.h"
#include "cli/search_csv.h"
#include "cli/search_inputs.h"
#include "cli/svg_plot.h"
#include "cli/table.h"
#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/sweep.h"

namespace calisim::cli {
namespace {

struct SweepArgs {
  SpaceArgs space;
  std::vector<std::string> vary;  // "param=spec"
  int points = 5;
  bool points_given = false;      // --points on the command line (it only shapes ranges)
  bool grid = false;
  std::string gpus = "64..16384";
  std::vector<std::string> systems;
  bool weak = false;
  double train_tokens = 1e12;
  std::string csv, svg;
  bool json = false;
};

// The best layout as search labels it (cli/search_csv.h), then what the layout column of a study
// adds: micro-batch size, recompute and what one scale-up domain holds.
std::string layout(const CandidateResult& r) {
  const Candidate& c = r.candidate;
  return fmt::format("{} mbs{} {} | domain {}", layout_label(r), c.mbs, to_string(c.recompute),
                     domain_summary(r.placement, c.order));
}

// The layout column of a point where no layout fits: which of the two reasons it is.
const char* infeasible_label(bool legal) { return legal ? "nothing fits" : "no legal layout"; }

// Numbers that exist only for a feasible point: JSON null and an empty CSV cell otherwise (0 would
// read as a measurement).
nlohmann::json number_or_null(bool valid, double v) { return valid ? nlohmann::json(v) : nlohmann::json(nullptr); }
std::string csv_number(bool valid, double v) { return valid ? fmt::format("{:.9g}", v) : ""; }

// The placement columns of the hardware and scale CSVs: the rank order and what shares a domain.
std::string placement_cells(bool feasible, const CandidateResult& r) {
  if (!feasible) return ",";
  return fmt::format("{},{}", to_string(r.candidate.order), domain_summary(r.placement, r.candidate.order));
}

// The fields every hardware and scale point carries in --json: the best layout's numbers and
// label, or nulls with the reason when nothing fits.
void add_best_fields(nlohmann::json& j, bool feasible, bool legal, const CandidateResult& best,
                     const std::string& explanation) {
  j["feasible"] = feasible;
  j["legal"] = legal;
  j["step_time_s"] = number_or_null(feasible, best.step_time_s);
  j["mfu"] = number_or_null(feasible, best.mfu);
  j["tokens_per_s_per_gpu"] = number_or_null(feasible, best.tokens_per_s_per_gpu);
  j["layout"] = feasible ? nlohmann::json(layout(best)) : nlohmann::json(nullptr);
  j["order"] = feasible ? nlohmann::json(to_string(best.candidate.order)) : nlohmann::json(nullptr);
  j["in_domain"] = feasible ? nlohmann::json(domain_summary(best.placement, best.candidate.order))
                            : nlohmann::json(nullptr);
  j["explanation"] = feasible ? nlohmann::json(nullptr) : nlohmann::json(explanation);
  j["best"] = feasible ? search_candidate_json(best) : nlohmann::json(nullptr);
}

// Fields accepted but not modeled (search_inputs.h): stderr in text mode, as `calisim search`
// does; --json lists them in `warnings` instead.
void print_warnings(const SpaceInputs& in, bool json) {
  if (json) return;
  for (const auto& w : in.warnings) fmt::print(stderr, "warning: {}\n", w);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw InputError(path, "", "cannot open for writing");
  out << text;
}

SearchOptions options_from(const SpaceArgs& a) {
  SearchOptions o;
  o.threads = a.threads;
  o.memory_margin_gb = a.memory_margin_gb;
  o.use_reserved_memory = !a.allocated_memory;
  return o;
}

void run_hardware(const SweepArgs& a) {
  const SpaceInputs in = load_space_inputs(a.space, true);
  print_warnings(in, a.json);
  if (a.vary.empty()) throw InputError("<command line>", "--vary", "give at least one param=values");
  if (a.points < 2) {
    throw InputError("<command line>", "--points", fmt::format("a range needs at least 2 points, got {}", a.points));
  }
  std::vector<HardwareParam> params;
  std::vector<std::vector<double>> values;
  bool any_range = false;
  for (const auto& v : a.vary) {
    const auto eq = v.find('=');
    try {
      if (eq == std::string::npos) throw std::invalid_argument("expected param=values, got '" + v + "'");
      const HardwareParam p = parse_hardware_param(v.substr(0, eq));
      params.push_back(p);
      values.push_back(parse_sweep_values(v.substr(eq + 1), hardware_value(in.system, p), a.points));
      any_range = any_range || v.find("..", eq) != std::string::npos;
      // Checked before any search runs: a bad value (a fractional domain) fails at once.
      for (double x : values.back()) with_hardware(in.system, p, x);
    } catch (const std::invalid_argument& e) {
      throw InputError("<command line>", "--vary " + v, e.what());
    }
  }
  if (a.points_given && !any_range) {
    throw InputError("<command line>", "--points", "only spreads a range a..b of --vary; no --vary gives a range");
  }
  if (a.grid && params.size() != 2) throw InputError("<command line>", "--grid", "a grid needs exactly two --vary");
  ProgressBar bar("sweeping");
  SearchOptions o = options_from(a.space);
  std::vector<std::pair<HardwareParam, std::vector<SweepPoint>>> runs;
  if (a.grid) {
    runs.push_back({params[0], sweep_hardware(in.model, in.base, in.system, in.lists, params, values, o)});
  } else {
    for (std::size_t i = 0; i < params.size(); ++i) {
      runs.push_back({params[i], sweep_hardware(in.model, in.base, in.system, in.lists, {params[i]}, {values[i]}, o)});
      bar.update(i + 1, params.size());
    }
  }
  bar.finish();

  std::string csv = "parameter,value" + std::string(a.grid ? ",value2" : "") +
                    ",feasible,step_time_s,mfu,tokens_per_s_per_gpu,layout,limit,order,in_domain\n";
  nlohmann::json points = nlohmann::json::array();
  std::string text = fmt::format("calisim sweep hardware: {} on {} x {} (base {}), global batch {}\n",
                                 in.model.model_name, in.lists.world_size, in.system.device.name, in.system.name,
                                 in.lists.global_batch_size);
  std::string reasons;  // why each infeasible point has no layout, under the tables
  std::vector<Series> series;
  for (const auto& [param, pts] : runs) {
    const std::string pname = a.grid ? fmt::format("{} x {}", to_string(params[0]), to_string(params[1]))
                                     : std::string(to_string(param));
    Table t({a.grid ? fmt::format("{} / {}", to_string(params[0]), to_string(params[1]))
                    : fmt::format("{} ({})", to_string(param), unit_of(param)),
             "step s", "MFU", "tok/s/GPU", "best layout", "limited by"});
    Series s{pname, {}};
    for (const auto& p : pts) {
      const std::string label = a.grid ? fmt::format("{:g} / {:g}", p.values[0], p.values[1]) : fmt::format("{:g}", p.values[0]);
      if (p.feasible) {
        t.add_row({label, fmt::format("{:.4f}", p.best.step_time_s), fmt::format("{:.1f}%", p.best.mfu * 100),
                   fmt::format("{:.0f}", p.best.tokens_per_s_per_gpu), layout(p.best), p.limit});
        if (!a.grid) s.points.push_back({p.values[0] / hardware_value(in.system, param), p.best.mfu * 100});
      } else {
        t.add_row({label, "-", "-", "-", infeasible_label(p.legal), p.limit});
        reasons += fmt::format("  {} = {}: {}\n", pname, label, p.explanation);
      }
      csv += fmt::format("{},{:g}{},{},{},{},{},\"{}\",\"{}\",{}\n", pname, p.values[0],
                         a.grid ? fmt::format(",{:g}", p.values[1]) : "", p.feasible ? 1 : 0,
                         csv_number(p.feasible, p.best.step_time_s), csv_number(p.feasible, p.best.mfu),
                         csv_number(p.feasible, p.best.tokens_per_s_per_gpu), p.feasible ? layout(p.best) : "",
                         p.limit, placement_cells(p.feasible, p.best));
      nlohmann::json j = {{"parameter", pname}, {"values", p.values}};
      add_best_fields(j, p.feasible, p.legal, p.best, p.explanation);
      j["limit"] = p.limit;
      points.push_back(j);
    }
    text += "\n" + t.render();
    if (!s.points.empty()) series.push_back(s);
  }
  if (!reasons.empty()) text += "\nno layout at:\n" + reasons;
  if (!a.csv.empty()) write_text(a.csv, csv);
  if (!a.svg.empty() && !series.empty()) {
    ChartSpec spec{fmt::format("{} on {} GPUs: best MFU vs hardware", in.model.model_name, in.lists.world_size),
                   fmt::format("parameter / {} baseline", in.system.name), "best MFU (%)", true, true};
    write_text(a.svg, line_chart_svg(spec, series));
  }
  if (a.json) {
    nlohmann::json names = nlohmann::json::array();
    for (HardwareParam p : params) names.push_back(to_string(p));
    const nlohmann::json js = {{"model", in.model.model_name},         {"system", in.system.name},
                               {"world_size", in.lists.world_size},     {"global_batch_size", in.lists.global_batch_size},
                               {"parameters", names},                   {"grid", a.grid},
                               {"points", points},                      {"warnings", in.warnings}};
    fmt::print("{}\n", js.dump(2));
  } else {
    fmt::print("{}", text);
  }
}

// Parses one whole number of GPUs; "8abc" or "1e3" is an error, not 8 or 1.
int parse_gpu_count(const std::string& s, const std::string& spec) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != s.size()) {
    throw InputError("<command line>", "--gpus",
                     "expected a..b (powers of two from a) or a comma-separated list of GPU counts, got '" + spec + "'");
  }
  if (n < 1 || n > std::numeric_limits<int>::max()) {
    throw InputError("<command line>", "--gpus", fmt::format("GPU counts must be positive whole numbers, got {}", s));
  }
  return static_cast<int>(n);
}

std::vector<int> parse_gpus(const std::string& spec) {
  std::vector<int> out;
  const auto dots = spec.find("..");
  if (dots != std::string::npos) {
    const int a = parse_gpu_count(spec.substr(0, dots), spec), b = parse_gpu_count(spec.substr(dots + 2), spec);
    if (b < a) throw InputError("<command line>", "--gpus", fmt::format("range {} runs backwards ({} > {})", spec, a, b));
    for (long long n = a; n <= b; n *= 2) out.push_back(static_cast<int>(n));
    return out;
  }
  std::size_t start = 0;
  while (start <= spec.size()) {
    const auto c = spec.find(',', start);
    const int n = parse_gpu_count(spec.substr(start, c == std::string::npos ? std::string::npos : c - start), spec);
    // A count given twice is one point, not two rows.
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return out;
}

void run_scale(const SweepArgs& a) {
  SpaceArgs sa = a.space;
  if (!a.systems.empty()) sa.system = a.systems.front();
  if (sa.megatron.empty()) sa.world_size = 1;  // per point below (a script's own count is read, then replaced)
  const SpaceInputs in = load_space_inputs(sa, false);
  print_warnings(in, a.json);
  // --global-batch-size, else a --megatron script's.
  const long long gbs = a.space.global_batch_size > 0 ? a.space.global_batch_size : in.lists.global_batch_size;
  if (gbs <= 0) throw InputError("<command line>", "--global-batch-size", "required (positive)");
  if (!std::isfinite(a.train_tokens) || !(a.train_tokens > 0)) {
    throw InputError("<command line>", "--train-tokens",
                     fmt::format("expected a finite positive number of tokens, got {}", a.train_tokens));
  }
  std::vector<SystemConfig> systems{in.system};
  for (std::size_t i = 1; i < a.systems.size(); ++i) {
    const std::string f = resolve_config(ConfigKind::system, a.systems[i]);
    // --set system.* applies to every compared system, as it does to the first.
    nlohmann::json doc = read_json_file(f), no_model = nlohmann::json::object(), no_strategy = no_model;
    bool overridden = false;
    for (const auto& o : a.space.overrides) {
      apply_override(o, no_model, no_strategy, doc);
      overridden = overridden || o.rfind("system.", 0) == 0;
    }
    systems.push_back(parse_system(doc, overridden ? f + " (with --set overrides)" : f));
    if (a.space.memory_margin_gb >= systems.back().device.memory_gb) {
      throw InputError("<command line>", "--memory-margin-gb",
                       fmt::format("a margin of {} GB leaves nothing of the {} GB of {} ({})",
                                   a.space.memory_margin_gb, systems.back().device.memory_gb,
                                   systems.back().device.name, f));
    }
  }
  const std::vector<int> gpus = parse_gpus(a.gpus);
  if (a.weak) {
    for (int n : gpus) {
      if ((gbs * n) % gpus.front() != 0) {
        throw InputError("<command line>", "--weak",
                         fmt::format("global batch {} x {} GPUs / {} GPUs is not a whole number of sequences; give "
                                     "GPU counts that are multiples of the first or a batch that divides",
                                     gbs, n, gpus.front()));
      }
    }
  }
  ProgressBar bar("scaling");
  SearchOptions o = options_from(a.space);
  o.progress = [&bar](std::uint64_t d, std::uint64_t t) { bar.update(d, t); };
  const auto pts = sweep_scale(in.model, in.base, systems, gpus, gbs, a.weak, a.train_tokens,
                               in.lists, o);
  bar.finish();
  Table t({"system", "GPUs", "gbs", "step s", "MFU", "tok/s/GPU", "time to train", "GPU-hours", "best layout"});
  std::string csv = "system,gpus,global_batch_size,feasible,step_time_s,mfu,tokens_per_s_per_gpu,time_to_train_s,"
                    "gpu_hours,layout,order,in_domain\n";
  std::vector<Series> mfu_series, time_series;
  nlohmann::json points = nlohmann::json::array();
  std::string reasons;
  for (const auto& p : pts) {
    if (mfu_series.empty() || mfu_series.back().name != p.system) {
      mfu_series.push_back({p.system, {}});
      time_series.push_back({p.system, {}});
    }
    if (p.feasible) {
      t.add_row({p.system, std::to_string(p.gpus), std::to_string(p.global_batch_size),
                 fmt::format("{:.3f}", p.best.step_time_s), fmt::format("{:.1f}%", p.best.mfu * 100),
                 fmt::format("{:.0f}", p.best.tokens_per_s_per_gpu), fmt::format("{:.1f} d", p.time_to_train_s / 86400),
                 fmt::format("{:.3g}", p.gpu_hours), layout(p.best)});
      mfu_series.back().points.push_back({static_cast<double>(p.gpus), p.best.mfu * 100});
      time_series.back().points.push_back({static_cast<double>(p.gpus), p.time_to_train_s / 86400});
    } else {
      t.add_row({p.system, std::to_string(p.gpus), std::to_string(p.global_batch_size), "-", "-", "-", "-", "-",
                 infeasible_label(p.legal)});
      reasons += fmt::format("  {} GPUs of {}: {}\n", p.gpus, p.system, p.explanation);
    }
    csv += fmt::format("\"{}\",{},{},{},{},{},{},{},{},\"{}\",{}\n", p.system, p.gpus, p.global_batch_size,
                       p.feasible ? 1 : 0, csv_number(p.feasible, p.best.step_time_s),
                       csv_number(p.feasible, p.best.mfu), csv_number(p.feasible, p.best.tokens_per_s_per_gpu),
                       csv_number(p.feasible, p.time_to_train_s), csv_number(p.feasible, p.gpu_hours),
                       p.feasible ? layout(p.best) : "", placement_cells(p.feasible, p.best));
    nlohmann::json j = {{"system", p.system}, {"gpus", p.gpus}, {"global_batch_size", p.global_batch_size}};
    add_best_fields(j, p.feasible, p.legal, p.best, p.explanation);
    j["time_to_train_s"] = number_or_null(p.feasible, p.time_to_train_s);
    j["gpu_hours"] = number_or_null(p.feasible, p.gpu_hours);
    points.push_back(j);
  }
  if (!a.csv.empty()) write_text(a.csv, csv);
  if (!a.svg.empty()) {
    std::string base = a.svg;
    if (base.size() > 4 && base.substr(base.size() - 4) == ".svg") base.resize(base.size() - 4);
    write_text(base + ".svg", line_chart_svg({fmt::format("{}: best MFU, {} scaling", in.model.model_name,
                                                          a.weak ? "weak" : "strong"),
                                              "GPUs", "best MFU (%)", true, true},
                                             mfu_series));
    write_text(base + "_time.svg",
               line_chart_svg({fmt::format("{}: time to train {:.3g} tokens", in.model.model_name, a.train_tokens),
                               "GPUs", "days", true, true},
                              time_series));
  }
  if (a.json) {
    const nlohmann::json js = {{"model", in.model.model_name},
                               {"scaling", a.weak ? "weak" : "strong"},
                               {"global_batch_size", gbs},
                               {"train_tokens", a.train_tokens},
                               {"points", points},
                               {"warnings", in.warnings}};
    fmt::print("{}\n", js.dump(2));
    return;
  }
  fmt::print("calisim sweep scale: {} ({} scaling, global batch {}{}), {:.3g} training tokens\n\n{}{}",
             in.model.model_name, a.weak ? "weak" : "strong", gbs,
             a.weak ? " at the first GPU count" : "", a.train_tokens, t.render(),
             reasons.empty() ? "" : "\nno layout at:\n" + reasons);
}

void run_layout(const SweepArgs& a) {
  const SpaceInputs in = load_space_inputs(a.space, true);
  print_warnings(in, a.json);
  SearchSpace space = in.lists;
  fill_default_lists(space, in.model, in.system.scale_up_domain_size);
  const DefaultEfficiencyModel eff(in.system);
  SearchOptions o = options_from(a.space);
  o.top_k = 1;
  const SearchResult best = run_search(in.model, in.base, in.system, eff, space, o);
  if (best.top.empty()) throw InputError("sweep layout", "", best.explanation);
  const CandidateResult& b = best.top.front();
  const auto steps = walk_layouts(in.model, in.base, in.system, eff, space, b, o);
  Table t({"change", "step s", "vs best", "bubble", "TP comm s", "DP comm s", "recompute s", "peak GB", "headroom GB",
           "note"});
  std::string csv = "dimension,value,legal,fits,step_time_s,vs_best,bubble_fraction,tp_comm_s,dp_comm_s,recompute_s,"
                    "max_peak_gb,headroom_gb,note\n";
  nlohmann::json js_steps = nlohmann::json::array();
  const double cap = in.system.device.memory_gb - a.space.memory_margin_gb;
  for (const auto& s : steps) {
    // An order step also names what it puts inside the domain.
    const std::string in_domain = s.legal ? domain_summary(s.result.placement, s.result.candidate.order) : "";
    const std::string placed = s.dimension == "order" && s.legal ? fmt::format(" [{}]", in_domain) : "";
    const std::string name = fmt::format("{} = {}{}{}", s.dimension, s.value, placed, s.is_best ? " (best)" : "");
    const CandidateResult& r = s.result;
    const double vs_best = r.step_time_s / b.step_time_s - 1;
    if (!s.legal) {
      t.add_row({name, "-", "-", "-", "-", "-", "-", "-", "-", s.why_not});
    } else {
      t.add_row({name, fmt::format("{:.4f}", r.step_time_s), fmt::format("{:+.1f}%", vs_best * 100),
                 fmt::format("{:.1f}%", r.bubble_fraction * 100), fmt::format("{:.3f}", r.tp_comm_s),
                 fmt::format("{:.3f}", r.dp_comm_s), fmt::format("{:.3f}", r.recompute_s),
                 fmt::format("{:.1f}", r.max_peak_gb), fmt::format("{:.1f}", cap - r.max_peak_gb),
                 s.fits ? "" : s.why_not});
    }
    const bool v = s.legal;  // an illegal step was never simulated: no numbers
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"\n", s.dimension, s.value, s.legal ? 1 : 0,
                       s.fits ? 1 : 0, csv_number(v, r.step_time_s), csv_number(v, vs_best),
                       csv_number(v, r.bubble_fraction), csv_number(v, r.tp_comm_s), csv_number(v, r.dp_comm_s),
                       csv_number(v, r.recompute_s), csv_number(v, r.max_peak_gb), csv_number(v, cap - r.max_peak_gb),
                       s.why_not);
    js_steps.push_back({{"dimension", s.dimension},
                        {"value", s.value},
                        {"best", s.is_best},
                        {"legal", s.legal},
                        {"fits", s.fits},
                        {"step_time_s", number_or_null(v, r.step_time_s)},
                        {"vs_best", number_or_null(v, vs_best)},
                        {"bubble_fraction", number_or_null(v, r.bubble_fraction)},
                        {"tp_comm_s", number_or_null(v, r.tp_comm_s)},
                        {"dp_comm_s", number_or_null(v, r.dp_comm_s)},
                        {"recompute_s", number_or_null(v, r.recompute_s)},
                        {"max_peak_gb", number_or_null(v, r.max_peak_gb)},
                        {"headroom_gb", number_or_null(v, cap - r.max_peak_gb)},
                        {"in_domain", v ? nlohmann::json(in_domain) : nlohmann::json(nullptr)},
                        {"note", s.why_not}});
  }
  if (!a.csv.empty()) write_text(a.csv, csv);
  if (a.json) {
    nlohmann::json best_json = search_candidate_json(b);
    best_json["layout"] = layout(b);
    best_json["limit"] = bottleneck(b);
    const nlohmann::json js = {{"model", in.model.model_name},
                               {"system", in.system.name},
                               {"world_size", in.lists.world_size},
                               {"global_batch_size", in.lists.global_batch_size},
                               {"memory_capacity_gb", cap},
                               {"best", best_json},
                               {"steps", js_steps},
                               {"warnings", in.warnings}};
    fmt::print("{}\n", js.dump(2));
    return;
  }
  fmt::print("calisim sweep layout: {} on {} x {}, best {} ({:.4f} s, MFU {:.1f}%, limited by {})\n\n{}",
             in.model.model_name, in.lists.world_size, in.system.device.name, layout(b), b.step_time_s, b.mfu * 100,
             bottleneck(b), t.render());
}

}  // namespace

void register_sweep(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* sub = app.add_subcommand("sweep", "Design-space studies: hardware what-ifs, scaling curves, layout walks");
  sub->require_subcommand(1);

  CLI::App* hw = sub->add_subcommand("hardware", "Best step time and MFU as hardware parameters change");
  add_space_options(hw, a->space, true);
  hw->add_option("--vary", a->vary,
                 "param=values, repeatable: peak_bf16, hbm_gb_s, memory_gb, scaleup_gb_s, nic_gb_s, scaleup_domain; "
                 "values a list (1000,2000 or 0.5x,2x) or a range a..b (geometric, --points values)")
      ->required();
  hw->add_option("--points", a->points, "values in a range a..b (default 5, at least 2)");
  hw->add_flag("--grid", a->grid, "sweep the grid of two --vary parameters instead of one at a time");
  hw->add_option("--csv", a->csv, "write the points to FILE");
  hw->add_option("--svg", a->svg, "write a plot (best MFU vs parameter, relative to the base system) to FILE");
  hw->add_flag("--json", a->json, "print JSON");
  hw->callback([a, hw] {
    a->points_given = hw->count("--points") > 0;
    run_hardware(*a);
  });

  CLI::App* sc = sub->add_subcommand("scale", "Strong or weak scaling curves over GPU counts, for several systems");
  add_space_options(sc, a->space, false);
  sc->add_option("--global-batch-size", a->space.global_batch_size, "sequences per iteration (at the first count)")
      ->check(CLI::PositiveNumber);
  sc->add_option("--gpus", a->gpus, "GPU counts: a..b (powers of two) or a list (default 64..16384)");
  sc->add_option("--systems", a->systems, "several systems to compare (overrides --system)")->delimiter(',');
  sc->add_flag("--weak", a->weak, "scale the global batch with the GPU count (weak scaling)");
  sc->add_option("--train-tokens", a->train_tokens, "token budget for time to train (default 1e12; positive)");
  sc->add_option("--csv", a->csv, "write the points to FILE");
  sc->add_option("--svg", a->svg, "write plots FILE.svg (MFU) and FILE_time.svg (time to train)");
  sc->add_flag("--json", a->json, "print JSON");
  sc->callback([a] { run_scale(*a); });

  CLI::App* lo = sub->add_subcommand("layout", "Walk the layouts around the best one: what each dimension costs");
  add_space_options(lo, a->space, true);
  lo->add_option("--csv", a->csv, "write the walk to FILE");
  lo->add_flag("--json", a->json, "print JSON");
  lo->callback([a] { run_layout(*a); });
}

}  // namespace calisim::cli
