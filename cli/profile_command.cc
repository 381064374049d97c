// `calisim profile plan|run|check|sequence` (sequence: cli/profile_sequence.h): which kernel shapes a configuration needs, and measuring them on
// this machine's GPUs into the efficiency database (docs/profiling.md); `check` says whether this
// calisim can measure here (its CUDA plugin, the devices and their shipped systems, the timer).
//
// `plan` is pure and always available. `run` needs the CUDA plugin of a CUDA build
// (profiler/gpu_runtime.h); without it, it exits with an InputError that says why and how to get
// one. Every finished measurement is committed on its own, so
// Ctrl-C (first press: finish the kernel in flight, then stop; second: stop at once) keeps what
// is done and a rerun resumes. Launched by mpirun (OMPI_COMM_WORLD_SIZE > 1), `run` measures
// collectives across the job's GPUs, one rank per GPU (profiler/nccl_mpi_bench.h), when the
// plugin was built with MPI; otherwise it refuses under mpirun.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <csignal>
#include <map>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>

#include "calibration/measured_runs.h"
#include "cli/commands.h"
#include "cli/profile_sequence.h"
#include "cli/megatron_configs.h"
#include "cli/mapped_run_inputs.h"
#include "cli/config_catalog.h"
#include "cli/table.h"
#include "core/error.h"
#include "db/efficiency_db.h"
#include "profiler/profile_plan.h"
#include "profiler/sweep.h"
#include "simulator/config_loader.h"
#include "simulator/kernel_plan.h"

#include "profiler/device_match.h"
#include "profiler/gpu_runtime.h"
#include "profiler/mpi_launch.h"
#include "profiler/runner.h"

namespace calisim::cli {
namespace {

namespace prof = calisim::profiler;

struct PlanArgs {
  ConfigChoice configs;  // --model / --strategy, or --megatron
  std::string system = "h100-sxm", out;
  std::vector<std::string> runs;  // --runs: plan the kernels of these measured runs instead
  std::string trace;              // --trace DB: plan the operator shapes of its trace imports
  std::vector<std::string> overrides;
  bool json = false;
};

// How the rows of --runs files were used.
struct RowsPlanned {
  int planned = 0, other_system = 0, not_simulated = 0;
  std::vector<std::string> not_simulated_ids;  // calisim validate gives each one's reason
};

struct RunArgs {
  std::string plan, sweep, db, system, csv;
  std::vector<std::string> dtypes{"bf16"};
  int device = 0;
  bool hot = false, retry_skipped = false;
  std::string timer = "cupti";
  double budget_s = 2.0, max_rel_stddev = 0.01;
  int min_samples = 10, warmup = 3;
};

prof::ProfilePlan plan_from_configs(const PlanArgs& a) {
  const RunConfigs rc = load_chosen_configs(a.configs, a.system, a.overrides);
  const KernelPlan kp = plan_kernels(rc.model, rc.strategy, rc.system);
  prof::ProfilePlan plan;
  plan.description = fmt::format("kernels of {} on system {}", a.configs.describe(), a.system);
  for (const auto& k : kp.gemm) plan.add(k);
  for (const auto& k : kp.attention) plan.add(k);
  for (const auto& k : kp.memory) plan.add(k);
  for (const auto& k : kp.collective) plan.add(k);
  return plan;
}

// The kernels every row of the --runs files needs on system a.system, the rows mapped as
// `calisim validate` maps them (cli/mapped_run_inputs.h): what to measure on a GPU of that system
// so that `calisim validate --db` prices those rows from measured data. Rows mapped to another
// system, and rows validate cannot simulate, are counted and left out.
prof::ProfilePlan plan_from_runs(const PlanArgs& a, RowsPlanned& rows) {
  const std::vector<calibration::MeasuredRun> runs = calibration::read_measured_runs(a.runs);
  prof::ProfilePlan plan;
  std::set<std::string> systems;
  for (const auto& run : runs) {
    try {
      const calibration::MappedRun m = map_with_overrides(run, a.overrides);
      if (!m.ok) {
        ++rows.not_simulated;
        rows.not_simulated_ids.push_back(run.run_id);
        continue;
      }
      systems.insert(m.system);
      if (m.system != a.system) {
        ++rows.other_system;
        continue;
      }
      const std::string where = "row " + run.run_id;
      const SystemConfig system = parse_system(mapped_system_doc(m, a.overrides), where + " (system)");
      const ModelConfig model = parse_model(m.model, where + " (model)", nullptr);
      StrategyConfig strategy = parse_strategy(m.strategy, where + " (strategy)");
      validate_layout(model, strategy, where + " (strategy)", where + " (model)");
      const KernelPlan kp = plan_kernels(model, strategy, system);
      for (const auto& k : kp.gemm) plan.add(k);
      for (const auto& k : kp.attention) plan.add(k);
      for (const auto& k : kp.memory) plan.add(k);
      for (const auto& k : kp.collective) plan.add(k);
      ++rows.planned;
    } catch (const std::exception&) {
      ++rows.not_simulated;  // validate lists these as not simulated, with the reason
      rows.not_simulated_ids.push_back(run.run_id);
    }
  }
  const std::string files = calibration::runs_files_label(a.runs);
  if (rows.planned == 0) {
    // The paths as given (the label above is the files' names, for titles).
    throw InputError(fmt::format("{}", fmt::join(a.runs, ", ")), "--system",
                     fmt::format("no simulated row maps to system '{}' (rows map to: {})", a.system,
                                 systems.empty() ? "none" : fmt::format("{}", fmt::join(systems, ", "))));
  }
  plan.description = fmt::format("kernels of the {} rows of {} that calisim validate maps to {}", rows.planned, files,
                                 a.system);
  return plan;
}

// The GEMM, attention and collective shapes a traced training job ran (the rows `db import --kineto`
// stored from a trace recorded with record_shapes: runs of source trace that hold rows), in the
// order of the rows: measured with `profile run` they give each shape in isolation beside its
// in-situ time (`simulate --db ISOLATED.db --compare-trace DB`).
prof::ProfilePlan plan_from_trace(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError(path, "--trace", "no such database file");
  auto store = db::EfficiencyDb::open(path, db::OpenMode::read_only);
  prof::ProfilePlan plan;
  int runs = 0;
  std::set<std::string> devices;
  for (const db::RunBatch& b : store.load_runs()) {
    if (b.run.source != db::Source::trace || b.rows.size() == 0) continue;
    ++runs;
    devices.insert(b.run.device);
    for (const auto& r : b.rows.gemm) plan.add(r.key);
    for (const auto& r : b.rows.attention) plan.add(r.key);
    for (const auto& r : b.rows.collective) plan.add(r.key);
  }
  if (runs == 0) {
    throw InputError(path, "--trace",
                     "holds no operator shapes of a trace: import a PyTorch profiler trace recorded with "
                     "record_shapes=True (calisim db import DB --kineto TRACE; docs/profiling.md)");
  }
  plan.description = fmt::format("the operator shapes of {} trace import(s) in {} ({})", runs,
                                 std::filesystem::path(path).filename().string(), fmt::join(devices, ", "));
  return plan;
}

void run_plan_command(const PlanArgs& a) {
  if (!a.trace.empty()) {
    if (!a.runs.empty() || !a.configs.empty()) {
      throw InputError("<command line>", "profile plan --trace",
                       "plans the trace's own shapes: leave out --model, --strategy, --megatron and --runs");
    }
  }
  const bool from_trace = !a.trace.empty();
  const bool from_runs = !a.runs.empty();
  if (!from_trace && from_runs == !a.configs.empty()) {
    throw InputError("<command line>", "profile plan",
                     from_runs ? "--runs plans the rows' own configs: leave out --model, --strategy and --megatron"
                               : "give --model and --strategy (or --megatron SCRIPT), or --runs FILE");
  }
  if (!from_trace && !from_runs && a.configs.megatron.empty() &&
      (a.configs.model.empty() || a.configs.strategy.empty())) {
    throw InputError("<command line>", "profile plan", "give both --model and --strategy");
  }
  RowsPlanned rows;
  const prof::ProfilePlan plan =
      from_trace ? plan_from_trace(a.trace) : from_runs ? plan_from_runs(a, rows) : plan_from_configs(a);
  if (!a.out.empty() && a.out != "-") prof::write_plan_file(plan, a.out);
  const std::size_t g = plan.count(db::KeyKind::gemm), at = plan.count(db::KeyKind::attention),
                    m = plan.count(db::KeyKind::memory), c = plan.count(db::KeyKind::collective);
  if (a.out.empty() || a.out == "-") {
    fmt::print("{}", prof::plan_to_json(plan));
    return;
  }
  if (a.json) {
    nlohmann::ordered_json j{{"path", a.out}, {"gemm", g}, {"attention", at}, {"memory", m}, {"collective", c}};
    if (from_runs) {
      j["rows"] = {{"planned", rows.planned},
                   {"other_system", rows.other_system},
                   {"not_simulated", rows.not_simulated},
                   {"not_simulated_ids", rows.not_simulated_ids}};
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("wrote {}: {} kernels ({} GEMM, {} attention, {} memory, {} collective)\n", a.out, plan.kernels.size(), g,
             at, m, c);
  if (from_runs) {
    fmt::print("from {} rows mapped to {} ({} rows of other systems and {} not simulated left out{}{})\n",
               rows.planned, a.system, rows.other_system, rows.not_simulated,
               rows.not_simulated_ids.empty() ? "" : ": ", fmt::join(rows.not_simulated_ids, " "));
    if (!rows.not_simulated_ids.empty()) fmt::print("calisim validate --runs ... lists why each is not simulated\n");
  }
  if (from_trace) fmt::print("{}\n", plan.description);
  fmt::print("measure them with: calisim profile run --plan {} --db FILE\n", a.out);
  if (from_trace) {
    fmt::print("then each shape in isolation beside the trace: calisim simulate ... --db FILE --compare-trace {}\n",
               a.trace);
  }
}

std::atomic<bool> g_stop{false};

extern "C" void on_sigint(int) {
  // First Ctrl-C: finish the kernel in flight and stop. A second one kills as usual.
  g_stop = true;
  std::signal(SIGINT, SIG_DFL);
}

std::vector<DType> parse_dtypes(const std::vector<std::string>& names) {
  std::vector<DType> out;
  for (const auto& n : names) {
    try {
      out.push_back(parse_dtype(n));
    } catch (const std::invalid_argument& e) {
      throw InputError("<command line>", "--dtype", e.what());
    }
  }
  return out;
}

// What the rows are stored against: the system whose peaks efficiencies divide by, the device
// record and the link bandwidths of the collective tiers.
struct Target {
  std::string system_name;
  SystemConfig sys;
  db::DeviceRecord dev;
  prof::LinkBandwidth links;
};

Target target_for(const RunArgs& a, const prof::CudaEnvironment& env) {
  Target t;
  t.system_name = a.system.empty() ? prof::system_for_cuda_device(env.name) : a.system;
  if (t.system_name.empty()) {
    throw InputError("<command line>", "--system",
                     fmt::format("no shipped system matches '{}'; name one (`calisim configs list`) so the "
                                 "efficiencies have peaks to divide by",
                                 env.name));
  }
  const std::string system_path = resolve_config(ConfigKind::system, t.system_name);
  t.sys = parse_system(read_json_file(system_path), system_path);
  t.dev = db::DeviceRecord::from_spec(t.sys.device);
  t.dev.sm_count = env.sm_count;
  t.dev.l2_mb = env.l2_mb;
  t.dev.driver_version = env.driver_version;
  t.dev.cuda_version = env.cuda_version;
  t.dev.library_versions = env.library_versions;
  t.links = {t.sys.scale_up.gpu_gb_s,
             t.sys.gpus_per_node > 0 ? t.sys.nics_per_node * t.sys.nic_gb_s / t.sys.gpus_per_node : 0.0};
  return t;
}

prof::StoppingRule rule_from(const RunArgs& a) {
  prof::StoppingRule r;
  r.min_samples = a.min_samples;
  r.time_budget_s = a.budget_s;
  r.max_rel_stddev = a.max_rel_stddev;
  return r;
}

// Runs the plan on rank 0's store and prints the summary (shared by the single-process and MPI paths).
void run_and_report(const RunArgs& a, const prof::ProfilePlan& plan, prof::KernelBench& bench, const Target& t,
                    const prof::CudaEnvironment& env, const std::string& setup_note, int gpus) {
  prof::StoreOptions so;
  so.retry_skipped = a.retry_skipped;
  so.csv_path = a.csv;
  so.notes = fmt::format("calisim profile run ({}); GPU '{}' (CUDA device {} of {}), sm_{}; {}; {} L2; "
                         "driver {}, CUDA {}, {}",
                         plan.description, env.name, a.device, gpus, env.compute_capability, setup_note,
                         a.hot ? "hot" : "cold", env.driver_version, env.cuda_version, env.library_versions);
  prof::ProfileStore store(a.db, t.dev, env.name, so);

  fmt::print(stderr, "profiling {} kernels on {} (system {}, {} GPU(s)); {}; database {}\n", plan.kernels.size(),
             env.name, t.system_name, gpus, setup_note, a.db);
  prof::ProgressPrinter progress(stderr, isatty(fileno(stderr)) != 0);
  prof::RunnerOptions ro;
  ro.stop_requested = &g_stop;
  ro.progress = &progress;
  g_stop = false;
  std::signal(SIGINT, on_sigint);
  const prof::RunReport r = prof::run_plan(plan, bench, store, t.sys.device, t.links, ro);
  std::signal(SIGINT, SIG_DFL);

  fmt::print("{} planned: {} measured, {} skipped, {} already in {} ({}){}\n", r.planned, r.measured, r.skipped,
             r.already_done, a.db, prof::format_duration(r.elapsed_s),
             r.interrupted ? "; interrupted: rerun the same command to resume" : "");
  // Skip reasons, grouped: the same reason for many keys is one line.
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& s : r.skips) {
    const auto colon = s.find(": ");
    by_reason[s.substr(colon + 2)].push_back(s.substr(0, colon));
  }
  for (const auto& [reason, keys] : by_reason) {
    fmt::print("skipped {} ({}): {}\n", keys.size(), keys.front() + (keys.size() > 1 ? ", ..." : ""), reason);
  }
  for (const auto& t2 : r.throttled) fmt::print("throttled: {}\n", t2);
}

// Under mpirun: one rank per GPU, collectives only; rank 0 owns the plan, database and output.
void run_mpi_command(const RunArgs& a, const prof::GpuRuntime& gpu, const prof::MpiLaunch& launch) {
  const std::unique_ptr<prof::MpiGpuBench> owned = gpu.open_mpi_bench(rule_from(a));
  prof::MpiGpuBench& bench = *owned;
  if (bench.rank() != 0) {
    bench.serve();
    return;
  }
  struct Finish {  // releases the serving ranks however rank 0 leaves
    prof::MpiGpuBench& b;
    ~Finish() { b.finish(); }
  } finish{bench};
  prof::ProfilePlan plan;
  if (!a.plan.empty()) {
    plan = prof::read_plan_file(a.plan);
  } else {
    if (a.sweep != "collective") {
      throw InputError("<command line>", "--sweep",
                       "under mpirun only `--sweep collective` (or a plan) is measured; run the other sweeps "
                       "without mpirun");
    }
    plan = prof::collective_sweep(bench.size(), launch.local_size > 0 ? launch.local_size : bench.local_size());
  }
  const prof::CudaEnvironment env = gpu.describe(bench.device());
  const Target t = target_for(a, env);
  run_and_report(a, plan, bench, t, env,
                 fmt::format("mpirun: {} ranks, {} per node, NCCL over MPI", bench.size(), bench.local_size()),
                 bench.size());
}

struct CheckArgs {
  bool json = false;
  bool timer = true;
};

// `profile check`: whether this calisim can measure here — the CUDA plugin it loads, the devices
// and the shipped system each maps to, the library versions, the timer a run would use.
void run_check_command(const CheckArgs& a) {
  std::string why, path;
  const prof::GpuRuntime* gpu = prof::load_gpu_runtime(&why, &path);
  if (gpu == nullptr) throw InputError("<this build>", "profile check", why);
  const int gpus = gpu->device_count(&why);
  if (gpus == 0) throw InputError("<this machine>", "", "the CUDA plugin " + path + " loads, but there is no CUDA device: " + why);
  std::vector<prof::CudaEnvironment> envs;
  for (int d = 0; d < gpus; ++d) envs.push_back(gpu->describe(d));
  // Opening a bench subscribes CUPTI when it can: what `profile run` on device 0 would time with.
  std::string timer;
  if (a.timer) {
    prof::CudaBenchOptions bo;
    timer = gpu->open_bench(bo)->timer_description();
  }
  if (a.json) {
    nlohmann::ordered_json j{{"plugin", path}, {"mpi", gpu->has_mpi()}, {"devices", nlohmann::ordered_json::array()}};
    for (const auto& e : envs) {
      j["devices"].push_back({{"device", e.device},
                              {"name", e.name},
                              {"compute_capability", e.compute_capability},
                              {"sm_count", e.sm_count},
                              {"l2_mb", e.l2_mb},
                              {"memory_gb", e.memory_gb},
                              {"system", prof::system_for_cuda_device(e.name)},
                              {"driver_version", e.driver_version},
                              {"cuda_version", e.cuda_version},
                              {"library_versions", e.library_versions}});
    }
    if (a.timer) j["timer"] = timer;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("CUDA plugin  {}\n", path);
  fmt::print("MPI          {}\n", gpu->has_mpi() ? "yes: profile run under mpirun measures collectives across nodes"
                                                 : "no: the plugin was built without Open MPI");
  Table t({"device", "name", "arch", "SMs", "L2 MB", "memory GB", "shipped system"});
  for (const auto& e : envs) {
    const std::string sys = prof::system_for_cuda_device(e.name);
    t.add_row({std::to_string(e.device), e.name, fmt::format("sm_{}", e.compute_capability), std::to_string(e.sm_count),
               fmt::format("{:g}", e.l2_mb), fmt::format("{:.1f}", e.memory_gb),
               sys.empty() ? "(none: give profile run --system)" : sys});
  }
  fmt::print("{}", t.render());
  fmt::print("driver {}, CUDA {}; {}\n", envs.front().driver_version, envs.front().cuda_version,
             envs.front().library_versions);
  if (a.timer) fmt::print("timer (device 0): {}\n", timer);
}

void run_run_command(const RunArgs& a) {
  if (a.plan.empty() == a.sweep.empty()) {
    throw InputError("<command line>", "profile run", "give exactly one of --plan FILE or --sweep KIND");
  }
  if (a.timer != "cupti" && a.timer != "events") {
    throw InputError("<command line>", "--timer", "expected cupti or events, got '" + a.timer + "'");
  }
  std::string why;
  const prof::GpuRuntime* gpu = prof::load_gpu_runtime(&why);
  if (gpu == nullptr) {
    throw InputError("<this build>", "profile run", why + ". `calisim profile plan` works in every build.");
  }
  const int gpus = gpu->device_count(&why);
  if (gpus == 0) throw InputError("<this machine>", "", "no CUDA device to profile: " + why);
  if (a.device < 0 || a.device >= gpus) {
    throw InputError("<command line>", "--device", fmt::format("this machine has CUDA devices 0..{}", gpus - 1));
  }
  const prof::MpiLaunch launch = prof::mpi_launch_from_env();
  if (launch.active()) {
    if (!gpu->has_mpi()) {
      throw InputError("<this build>", "profile run under mpirun",
                       fmt::format("launched as rank {} of {}, but this calisim was built without MPI; rebuild with "
                                   "Open MPI installed (libopenmpi-dev) to measure collectives across nodes",
                                   launch.rank, launch.size));
    }
    run_mpi_command(a, *gpu, launch);
    return;
  }

  prof::ProfilePlan plan;
  if (!a.plan.empty()) {
    plan = prof::read_plan_file(a.plan);
  } else {
    prof::SweepOptions so;
    so.dtypes = parse_dtypes(a.dtypes);
    so.ranks = so.ranks_per_node = gpus;
    plan = prof::make_sweep(prof::parse_sweep_kind(a.sweep), so);
  }

  prof::CudaBenchOptions bo;
  bo.device = a.device;
  bo.allow_cupti = a.timer == "cupti";
  bo.loop.cold_l2 = !a.hot;
  bo.loop.warmup_runs = a.warmup;
  bo.loop.rule = rule_from(a);
  const std::unique_ptr<prof::GpuBench> bench = gpu->open_bench(bo);  // subscribes CUPTI before other CUDA work
  const prof::CudaEnvironment env = gpu->describe(a.device);
  const Target t = target_for(a, env);
  run_and_report(a, plan, *bench, t, env, "timer " + bench->timer_description(), gpus);
}

}  // namespace

void register_profile(CLI::App& app) {
  CLI::App* profile = app.add_subcommand("profile", "Plan and measure kernel efficiencies on this machine's GPUs");
  profile->require_subcommand(1);

  auto pa = std::make_shared<PlanArgs>();
  CLI::App* plan = profile->add_subcommand("plan", "List the kernel shapes a simulation of this config needs");
  add_config_choice_options(plan, pa->configs);
  plan->add_option("--runs", pa->runs,
                   "instead of --model/--strategy: every kernel the rows of these measured-runs CSVs need on "
                   "--system, mapped as calisim validate maps them (repeatable)")
      ->take_all();
  plan->add_option("--trace", pa->trace,
                   "instead of a config: the GEMM and attention shapes of the traces imported into this database "
                   "(db import --kineto of a trace recorded with record_shapes), to measure them in isolation");
  plan->add_option("--system", pa->system,
                   "system config name or path (default h100-sxm); with --runs the shipped name the rows map to");
  plan->add_option("--set", pa->overrides, "override a config field, e.g. strategy.tp_size=4");
  plan->add_option("--out,-o", pa->out, "write the plan here (default: print it)");
  plan->add_flag("--json", pa->json, "print a JSON summary");
  plan->callback([pa] { run_plan_command(*pa); });

  auto ra = std::make_shared<RunArgs>();
  CLI::App* run = profile->add_subcommand("run", "Measure a plan or a built-in sweep into the database (CUDA builds)");
  run->add_option("--plan", ra->plan, "plan file from `calisim profile plan`");
  run->add_option("--sweep", ra->sweep, "built-in sweep: gemm, attention, collective, memory or all");
  run->add_option("--db", ra->db, "efficiency database to write (created when missing)")->required();
  run->add_option("--dtype", ra->dtypes, "GEMM / attention input types of a sweep (default bf16)")->delimiter(',');
  run->add_option("--system", ra->system, "system config whose peaks efficiencies divide by (default: from the GPU name)");
  run->add_option("--device", ra->device, "CUDA device for single-GPU kernels (default 0)");
  run->add_flag("--hot", ra->hot, "do not flush L2 between samples (default: cold)");
  run->add_option("--timer", ra->timer, "cupti (default; falls back to events when CUPTI is taken) or events");
  run->add_option("--budget-s", ra->budget_s, "time budget per kernel, seconds (default 2)");
  run->add_option("--max-rel-stddev", ra->max_rel_stddev, "stop sampling below this relative spread (default 0.01)");
  run->add_option("--min-samples", ra->min_samples, "samples before the spread is judged (default 10)");
  run->add_option("--warmup", ra->warmup, "untimed runs before sampling (default 3)");
  run->add_flag("--retry-skipped", ra->retry_skipped, "measure again the kernels an earlier run skipped");
  run->add_option("--csv", ra->csv, "also append every result (with its details) to this CSV file");
  run->callback([ra] { run_run_command(*ra); });

  auto ca = std::make_shared<CheckArgs>();
  CLI::App* check = profile->add_subcommand(
      "check", "Whether this calisim can measure here: its CUDA plugin, the GPUs and their systems, the timer");
  check->add_flag("--json", ca->json, "print JSON");
  check->add_flag("!--no-timer", ca->timer, "do not open a bench on device 0 to see which timer a run would use");
  check->callback([ca] { run_check_command(*ca); });

  register_profile_sequence(profile);
}

}  // namespace calisim::cli
