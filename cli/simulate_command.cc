// `calisim simulate`: one training iteration of a model / strategy / system.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/config_catalog.h"
#include "cli/megatron_configs.h"
#include "cli/mapped_run_inputs.h"
#include "calibration/validation.h"
#include "cli/efficiency_source.h"
#include "cli/table.h"
#include "cli/accuracy_report.h"
#include "cli/trace_compare.h"
#include "calibration/trace_comparison.h"
#include "simulator/config_loader.h"
#include "core/error.h"
#include "simulator/collective_table.h"
#include "simulator/rank_placement.h"
#include "simulator/result_json.h"
#include "simulator/simulate.h"
#include "simulator/trace.h"

namespace calisim::cli {
namespace {

struct SimulateArgs {
  ConfigChoice configs;  // --model / --strategy, or --megatron
  std::string run;       // --run FILE:ID: a published run, mapped as validate maps it
  std::string system, trace_file, db;
  std::vector<std::string> overrides;
  bool json = false;
  bool no_ops = false;
  // --accuracy / --accuracy-runs: compare with the validated runs of the same class.
  bool accuracy = false;
  std::vector<std::string> accuracy_runs;
  TraceCompareRequest compare;  // --compare-trace and its options
  std::string trace_run;        // --trace-run: N or all (parsed into `compare`)
  std::string trace_fit_out;    // --trace-fit-out: the system file calibrated to the trace
};


std::string gb(double bytes) { return fmt::format("{:.2f}", bytes / 1e9); }
std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }
std::string pct(double f) { return fmt::format("{:.1f}%", f * 100); }
// "scaled (from NVIDIA A100 PCIe 80GB)" for kernels predicted from another device.
std::string source_text(const OpReport& o) { return o.origin.empty() ? o.source : o.source + " (from " + o.origin + ")"; }

std::string render(const SimulationResult& r, const RunConfigs& rc, bool with_ops) {
  std::string out;
  out += fmt::format("calisim simulate: {} on {} x {} ({})\n", r.model_name, r.world_size, r.device_name, r.system_name);
  out += fmt::format("  model {:.2f} B params ({:.2f} B active), {:.3g} model FLOPs/token (non-causal attention)\n",
                     r.stats.total_params / 1e9, r.stats.active_params / 1e9, r.stats.model_flops_per_token);
  const std::string tp_grid = r.tp_2d_rows * r.tp_2d_cols > 1 ? fmt::format(" ({}x{} 2d)", r.tp_2d_rows, r.tp_2d_cols) : "";
  const std::string cp_grid = r.cp_2d_rows * r.cp_2d_cols > 1 ? fmt::format(" ({}x{} 2d)", r.cp_2d_rows, r.cp_2d_cols) : "";
  // The interleaved schedule's micro-batch groups, when not Megatron's default (pp).
  const std::string groups = r.vpp > 1 && r.vpp_group != r.pp ? fmt::format(" (groups of {})", r.vpp_group) : "";
  out += fmt::format("  layout tp {}{} pp {} vpp {}{} cp {}{} dp {} | mbs {} x {} micro-batches, gbs {}, seq {} | SP {} | "
                     "recompute {} | order {}\n",
                     r.tp, tp_grid, r.pp, r.vpp, groups, r.cp, cp_grid, r.dp, r.micro_batch_size, r.micro_batch_num,
                     r.global_batch_size, r.seq_len, r.sequence_parallel ? "on" : "off", r.recompute,
                     to_string(r.rank_order));
  out += fmt::format("  precision {} | optimizer state {}, {} | loss {}\n", r.precision, r.optimizer_state, r.sharding,
                     r.loss);
  // A Megatron script is both the model and the strategy: named once.
  if (rc.model_file == rc.strategy_file) out += fmt::format("  configs {} | {}\n\n", rc.model_file, rc.system_file);
  else out += fmt::format("  configs {} | {} | {}\n\n", rc.model_file, rc.strategy_file, rc.system_file);

  Table cost({"cost", "value"});
  cost.add_row({"duration_time_per_iter (step time)", fmt::format("{:.4f} s", r.duration_time_per_iter_s)});
  cost.add_row({"tokens/s/GPU (throughput_per_accelerator)", fmt::format("{:.1f}", r.tokens_per_s_per_gpu)});
  cost.add_row({"TFLOP/s/GPU (model FLOPs)", fmt::format("{:.1f}", r.tflops_per_gpu)});
  cost.add_row({"MFU (6ND + attention, non-causal)", pct(r.mfu)});
  cost.add_row({"MFU causal / 6ND only", fmt::format("{} / {}", pct(r.mfu_causal), pct(r.mfu_6nd))});
  cost.add_row({"HFU (recompute included, non-causal)", pct(r.hfu)});
  cost.add_row({"chunk_time (fwd+bwd of one micro-batch)", fmt::format("{} ms", ms(r.chunk_time_s))});
  cost.add_row({"all_tokens_per_iter", fmt::format("{:.0f}", r.all_tokens_per_iter)});
  out += cost.render() + "\n";

  Table br({fmt::format("breakdown (critical stage {})", r.critical_rank), "s", "share"});
  const double T = r.duration_time_per_iter_s;
  auto row = [&](const char* name, double s) { br.add_row({name, fmt::format("{:.4f}", s), pct(s / T)}); };
  row("compute", r.compute_s);
  row("recompute", r.recompute_s);
  row("TP communication (exposed)", r.tp_comm_exposed_s);
  if (r.cp > 1) row("CP communication (exposed)", r.cp_comm_exposed_s);
  if (r.ep > 1 || r.etp > 1) row("EP communication (exposed)", r.ep_comm_exposed_s);
  if (r.offload_exposed_s > 0) row("activation offload (exposed)", r.offload_exposed_s);
  if (r.host_dispatch_modeled) row("host dispatch / syncs (GPU idle)", r.host_exposed_s);
  row("pipeline bubble", r.bubble_s);
  row("PP send/recv (exposed)", r.pp_comm_exposed_s);
  row("DP communication (exposed)", r.dp_comm_exposed_s);
  row("optimizer step", r.optimizer_s);
  if (r.straggler_s > 0) row("stragglers (system straggler_cv)", r.straggler_s);
  out += br.render();
  if (r.attention_kernel_s > 0) {
    out += fmt::format("  of which attention kernels (in compute + recompute): {:.4f} s, {} of the step\n",
                       r.attention_kernel_s, pct(r.attention_kernel_s / T));
  }
  if (!r.host_dispatch_modeled) {
    out += "  host dispatch: not modeled (the system file gives no host.op_dispatch_us / host.sync_us)\n";
  }
  out += "\n";
  if (!r.host_blocks.empty()) {
    Table hb({"host dispatch (one micro-batch)", "syncs", "GPU fwd ms", "host fwd ms", "idle fwd ms", "GPU bwd ms",
              "host bwd ms", "idle bwd ms", "bound"});
    for (const HostBlockReport& h : r.host_blocks) {
      hb.add_row({h.block, std::to_string(h.syncs_fwd), ms(h.gpu_fwd_s), ms(h.host_fwd_s), ms(h.exposed_fwd_s),
                  ms(h.gpu_bwd_s), ms(h.host_bwd_s), ms(h.exposed_bwd_s), h.bound});
    }
    out += hb.render() + "\n";
  }

  Table st({"stage", "layers", "fwd ms/mb", "bwd ms/mb", "bubble", "dp comm s", "model GB", "act GB", "in flight",
            "peak GB", "reserved GB"});
  for (const StageReport& s : r.stages) {
    st.add_row({std::to_string(s.rank) + (s.has_embedding ? " (emb)" : "") + (s.has_head ? " (head)" : ""),
                std::to_string(s.layers), ms(s.fwd_s_per_micro_batch), ms(s.bwd_s_per_micro_batch),
                pct(s.bubble_fraction), fmt::format("{:.4f}", s.dp_comm_s), gb(s.model_mem_bytes),
                gb(s.peak_activation_mem_in_1F1B_bytes), std::to_string(s.max_micro_batches_in_flight),
                gb(s.peak_mem_bytes), gb(s.peak_mem_with_reserved_bytes)});
  }
  out += st.render();
  out += fmt::format("  device memory {:.1f} GB: {}\n", r.device_memory_bytes / 1e9,
                     r.fits_in_memory ? "fits" : "DOES NOT FIT");
  out += "  peak path (first stage): " + r.stages.front().peak_path + "\n";
  if (r.stages.size() > 1) out += "  peak path (last stage):  " + r.stages.back().peak_path + "\n";
  out += "\n";

  if (with_ops) {
    // With recompute, a column for what each op keeps in the recomputed layers: a checkpoint keeps
    // its input only, and Megatron's output-discarding modules also free their consumers' copies.
    bool rc_column = false;
    for (const OpReport& o : r.ops) rc_column = rc_column || o.recomputed || o.act_bytes_recomputed != o.act_bytes;
    std::vector<std::string> header{"op (one micro-batch)", "scope", "fwd ms", "bwd ms", "TP comm ms", "fwd TFLOP/s",
                                    "eff", "source", "act MB"};
    if (rc_column) header.push_back("kept MB (rc)");
    Table ops(header);
    for (const OpReport& o : r.ops) {
      const double tflops = o.fwd_s > 0 && o.fwd_flops > 0 ? o.fwd_flops / o.fwd_s / 1e12 : 0;
      std::vector<std::string> row{std::string(o.name) + (o.recomputed ? " *" : ""), o.scope, ms(o.fwd_s), ms(o.bwd_s),
                                   ms(o.fwd_comm_s + o.bwd_comm_s), tflops > 0 ? fmt::format("{:.1f}", tflops) : "-",
                                   fmt::format("{:.2f}", o.efficiency), source_text(o),
                                   fmt::format("{:.1f}", o.act_bytes / 1e6)};
      if (rc_column) row.push_back(fmt::format("{:.1f}", o.act_bytes_recomputed / 1e6));
      ops.add_row(row);
    }
    out += ops.render();
    out += rc_column ? "  (* = recomputed in recomputed layers; kept MB (rc) = what the op keeps there; times per TP "
                       "rank)\n\n"
                     : "  (* = recomputed in recomputed layers; times per TP rank)\n\n";
  }
  if (with_ops && !r.collectives.empty()) {
    Table ct({"collective", "bytes", "ranks", "per domain", "tier", "algorithm", "protocol", "time ms", "busbw GB/s",
              "source"});
    for (const CollectiveReport& c : r.collectives) {
      ct.add_row({c.op, std::to_string(c.bytes), std::to_string(c.ranks), std::to_string(c.ranks_per_domain), c.tier,
                  c.algorithm, c.protocol, ms(c.time_s), fmt::format("{:.1f}", c.busbw_gb_s), c.source});
    }
    out += ct.render();
    out += "  (each distinct collective once, alone on its links; NCCL model of docs/comm.md)\n\n";
  }

  std::string src;
  for (int i = 0; i < kEfficiencySourceCount; ++i) {
    src += fmt::format("{}{} {}", i ? ", " : "", r.kernels_per_source[i], to_string(static_cast<EfficiencySource>(i)));
  }
  out += "efficiency sources (kernel lookups): " + src +
         (r.efficiency_db.empty() ? " (no database: roofline defaults of the system file)"
                                  : " (database " + r.efficiency_db + ")") +
         "\n";
  for (const auto& o : r.kernels_per_origin) {
    out += fmt::format("  {} kernel lookups scaled from {}\n", o.kernels, o.origin);
  }
  if (!r.roofline_keys.empty()) {
    out += fmt::format("  {} distinct kernel keys fell back to roofline (list with --json)\n", r.roofline_keys.size());
  }
  for (const auto& w : r.warnings) out += "warning: " + w + "\n";
  return out;
}

// The measured step of a --run row beside this simulation, as validate scores it.
struct MeasuredBeside {
  calibration::RowResult row;
  bool system_replaced = false, overridden = false;
};

// The settings validate's mapping inferred for a --run row (docs/validation.md, "Mapping a row").
std::string inferred_text(const RunRowConfigs& row) {
  if (row.mapped.inferred.empty()) return "";
  std::string s = fmt::format("settings inferred for {} (not stated by its source; docs/validation.md):\n", row.run.run_id);
  for (const auto& i : row.mapped.inferred) s += "  - " + i + "\n";
  return s;
}

std::string measured_text(const MeasuredBeside& m) {
  const auto& r = m.row;
  std::string s = fmt::format("measured ({} on {}, from {}): {:.4g} s per step; this simulation {:+.1f}%", r.run_id,
                              r.system, r.measured_from, r.measured_step_s, r.step_error * 100);
  if (m.system_replaced) s += " (simulated on another system: not a validation)";
  else if (m.overridden) s += " (with --set overrides: a what-if, not a validation)";
  return s + "\n";
}

nlohmann::json measured_json(const MeasuredBeside& m) {
  return {{"run_id", m.row.run_id},
          {"source", m.row.source},
          {"system", m.row.system},
          {"measured_from", m.row.measured_from},
          {"measured_step_s", m.row.measured_step_s},
          {"step_error", m.row.step_error},
          {"system_replaced", m.system_replaced},
          {"overrides", m.overridden}};
}

void run(const SimulateArgs& a) {
  RunConfigs rc;
  std::optional<RunRowConfigs> row;
  if (!a.run.empty()) {
    if (!a.configs.empty()) {
      throw InputError("<command line>", "--run",
                       "a published run gives the model and the strategy: drop --model / --strategy / --megatron "
                       "(override single fields with --set)");
    }
    row = run_row_configs(a.run, a.system, a.overrides);
    rc = row->rc;
  } else {
    if (a.system.empty()) throw InputError("<command line>", "--system", "required (or give --run FILE:ID)");
    rc = load_chosen_configs(a.configs, a.system, a.overrides);
  }
  const EfficiencyChoice source = make_efficiency_source(rc.system, rc.system_file, a.db);
  const std::shared_ptr<const EfficiencyModel> eff = source.model;
  const std::string& db = source.database;
  SimulateOptions opt;
  opt.trace = !a.trace_file.empty();
  SimulationResult r = simulate(rc.model, rc.strategy, rc.system, *eff, opt);
  r.efficiency_db = db;
  r.strategy_name = row ? row->run.run_id
                        : std::filesystem::path(a.configs.megatron.empty() ? rc.strategy_file : a.configs.megatron)
                              .stem()
                              .string();
  r.warnings.insert(r.warnings.begin(), rc.warnings.begin(), rc.warnings.end());
  r.warnings.insert(r.warnings.end(), source.notes.begin(), source.notes.end());
  if (!a.no_ops || a.json) {
    r.collectives = simulation_collectives(rc.model, rc.strategy, rc.system, *eff);
  }
  if (!a.trace_file.empty()) {
    std::ofstream out(a.trace_file);
    if (!out) throw InputError(a.trace_file, "--trace", "cannot write the trace file");
    out << chrome_trace(r).dump() << "\n";
  }
  TraceCompareRequest compare = a.compare;
  if (!a.trace_run.empty()) parse_trace_run(a.trace_run, compare);
  compare.system = &rc.system;
  compare.model = eff.get();
  std::optional<TraceComparison> cmp;
  std::vector<TraceComparison> cmp_all;
  if (!compare.db.empty() && compare.all_runs) cmp_all = compare_all_trace_runs(compare, r);
  else if (!compare.db.empty()) cmp = compare_with_trace(compare, r);
  if (!a.trace_fit_out.empty() && compare.all_runs) {
    throw InputError("<command line>", "--trace-fit-out", "needs one trace run, not --trace-run all");
  }
  std::optional<nlohmann::json> fit;
  if (!a.trace_fit_out.empty()) {
    std::ifstream in(rc.system_file);
    fit = write_trace_fit(a.trace_fit_out, nlohmann::ordered_json::parse(in), a.overrides, r, *cmp);
  }
  std::optional<MeasuredBeside> measured;
  if (row) {
    try {
      measured = MeasuredBeside{calibration::score_run(row->run, row->mapped, r), row->system_replaced,
                                !a.overrides.empty()};
    } catch (const std::invalid_argument& e) {
      // A row without a usable measurement: the simulation stands alone, and says why.
      r.warnings.push_back(row->run.run_id + " is not compared with a measurement: " + e.what());
    }
  }
  std::optional<AccuracyReport> acc;
  if (a.accuracy || !a.accuracy_runs.empty()) acc = accuracy_report(a.accuracy_runs, a.db, rc.model, rc.strategy, rc.system, r.duration_time_per_iter_s);
  if (a.json) {
    nlohmann::json doc = to_json(r);
    if (acc) doc["accuracy"] = accuracy_json(*acc);
    if (measured) doc["measured_run"] = measured_json(*measured);
    if (row) doc["inferred"] = row->mapped.inferred;
    if (cmp) doc["trace_comparison"] = trace_comparison_json(*cmp);
    if (compare.all_runs) doc["trace_comparison"] = trace_comparisons_json(cmp_all);
    if (fit) doc["trace_fit"] = *fit;
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{}", render(r, rc, !a.no_ops));
    if (row) fmt::print("{}", inferred_text(*row));
    if (measured) fmt::print("{}", measured_text(*measured));
    if (acc) fmt::print("{}", accuracy_text(*acc));
    if (cmp) fmt::print("\n{}", trace_comparison_text(*cmp));
    if (compare.all_runs) fmt::print("\n{}", trace_comparisons_text(cmp_all));
    if (fit) fmt::print("\n{}", trace_fit_text(*fit));
    if (!a.trace_file.empty()) fmt::print("trace written to {} (open in ui.perfetto.dev)\n", a.trace_file);
  }
}

}  // namespace

void register_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sub = app.add_subcommand("simulate", "Simulate one training iteration: step time, MFU, memory per stage");
  add_config_choice_options(sub, args->configs);
  sub->add_option("--run", args->run,
                  "instead of --model/--strategy: FILE:ID, row ID of a measured-runs CSV, mapped as calisim "
                  "validate maps it (its inferred settings listed), printed beside its measured step");
  sub->add_option("--system", args->system,
                  "system: shipped name or path (required, except with --run: default the row's mapped system)");
  sub->add_option("--set", args->overrides,
                  "override a config field: section.key=value (section model|strategy|system), repeatable")
      ->take_all();
  sub->add_flag("--json", args->json, "print one JSON document instead of tables");
  sub->add_flag("--no-ops", args->no_ops, "omit the per-op table");
  sub->add_option("--trace", args->trace_file, "write a Chrome/Perfetto trace of one iteration to FILE");
  sub->add_option("--db", args->db,
                  "efficiency database (SQLite) to take measured efficiencies from; default: the system file's "
                  "efficiency_db, if any");
  add_accuracy_options(sub, args->accuracy, args->accuracy_runs, "this configuration");
  CLI::Option* cmp = sub->add_option(
      "--compare-trace", args->compare.db,
      "database holding a trace of this configuration's training step (a PyTorch profiler trace imported with "
      "`db import --kineto`, or libcalisim_trace.so's): compare it by kernel class");
  sub->add_option("--trace-run", args->trace_run,
                  "with --compare-trace: the trace run (default: the newest), or all: every trace run, each with "
                  "its own rank's stage, one summary row per run")
      ->needs(cmp);
  CLI::Option* stage = sub->add_option("--trace-stage", args->compare.stage,
                                       "with --compare-trace: the pipeline stage the traced rank ran (default: the "
                                       "traced rank's, else 0)")
                           ->check(CLI::NonNegativeNumber)
                           ->needs(cmp);
  sub->add_option("--trace-rank", args->compare.rank,
                  "with --compare-trace: the global rank the trace is of, for its stage (default: the trace's "
                  "own, when it names one)")
      ->check(CLI::NonNegativeNumber)
      ->needs(cmp)
      ->excludes(stage);
  sub->add_option("--trace-fit-out", args->trace_fit_out,
                  "with --compare-trace: write this run's system file with its GEMM, attention and memory-bound "
                  "efficiencies scaled to the trace (simulated = traced time per step), to simulate other layouts "
                  "of the same system")
      ->needs(cmp);
  sub->add_option("--trace-steps", args->compare.steps,
                  "with --compare-trace: training steps in a trace that has no ProfilerStep ranges")
      ->check(CLI::PositiveNumber)
      ->needs(cmp);
  sub->callback([args] { run(*args); });
}

}  // namespace calisim::cli
