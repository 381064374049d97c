// `calisim configs list|show`: what ships with calisim, and any config file's parsed view.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/config_catalog.h"
#include "cli/megatron_configs.h"
#include "cli/table.h"
#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/model_stats.h"

namespace calisim::cli {
namespace {

struct ConfigsArgs {
  std::string what;
  std::string name;
  std::string kind;  // configs show --kind (empty: detect)
  bool json = false;
  // configs import-megatron
  MegatronInputs megatron;
  std::string model_out, strategy_out;
  std::vector<std::string> overrides;
};

void run_list(const ConfigsArgs& a) {
  std::vector<ConfigKind> kinds;
  if (a.what.empty()) {
    kinds = {ConfigKind::model, ConfigKind::strategy, ConfigKind::system};
  } else if (const auto k = parse_config_kind(a.what)) {
    kinds = {*k};
  } else {
    throw InputError("<command line>", "configs list",
                     "expected " + std::string(kConfigKindNames) + ", got '" + a.what + "'");
  }
  nlohmann::json j = nlohmann::json::object();
  std::string text;
  for (ConfigKind k : kinds) {
    const auto names = list_configs(k);
    j[kind_dir(k)] = names;
    text += fmt::format("{} ({}):\n", kind_dir(k), config_root() + "/" + kind_dir(k));
    for (const auto& n : names) text += "  " + n + "\n";
  }
  if (a.json) fmt::print("{}\n", j.dump(2));
  else fmt::print("{}", text);
}

bool is_path(const std::string& name) {
  return name.find('/') != std::string::npos ||
         (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0);
}

// The kind of a config file: its folder when that is models/, strategies/ or systems/ (as shipped),
// else the fields only that kind has. Throws InputError when neither tells.
ConfigKind detect_kind(const std::string& path, const nlohmann::json& doc) {
  const std::string folder = std::filesystem::path(path).parent_path().filename().string();
  if (const auto k = parse_config_kind(folder)) return *k;
  struct Marks {
    ConfigKind kind;
    std::vector<const char*> fields;
  };
  const Marks marks[] = {{ConfigKind::model, {"hidden_size", "layer_num", "head_num", "vocab_size"}},
                         {ConfigKind::strategy, {"tp_size", "pp_size", "world_size", "seq_len", "micro_batch_size",
                                                 "global_batch_size", "zero_state"}},
                         {ConfigKind::system, {"device", "network"}}};
  std::vector<ConfigKind> found;
  for (const auto& m : marks) {
    for (const char* f : m.fields) {
      if (doc.is_object() && doc.contains(f)) {
        found.push_back(m.kind);
        break;
      }
    }
  }
  if (found.size() != 1) {
    throw InputError(path, "", std::string(found.empty() ? "has none" : "has some") +
                                   " of the fields that tell a model (hidden_size, layer_num), a strategy (tp_size, "
                                   "world_size, seq_len) and a system (device, network) apart; give --kind model, "
                                   "strategy or system");
  }
  return found.front();
}

void show_one(const ConfigsArgs& a, ConfigKind k, const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  nlohmann::json out = {{"kind", kind_dir(k)}, {"path", path}, {"config", doc}};
  std::string extra;
  if (k == ConfigKind::model) {
    const ModelConfig m = parse_model(doc, path, nullptr);
    const ModelStats s = model_stats(m, 4096);
    out["model_stats_at_seq_4096"] = {{"total_params", s.total_params}, {"active_params", s.active_params},
                                       {"model_flops_per_token", s.model_flops_per_token}};
    extra = fmt::format("parameters: {:.3f} B total, {:.3f} B active; model FLOPs/token at seq 4096: {:.4g}\n",
                        s.total_params / 1e9, s.active_params / 1e9, s.model_flops_per_token);
  } else if (k == ConfigKind::strategy) {
    parse_strategy(doc, path);
  } else {
    parse_system(doc, path);
  }
  if (a.json) fmt::print("{}\n", out.dump(2));
  else if (path == a.name) fmt::print("{} {}\n{}\n{}", kind_dir(k), path, doc.dump(2), extra);
  else fmt::print("{} {} ({})\n{}\n{}", kind_dir(k), a.name, path, doc.dump(2), extra);
}

void run_show(const ConfigsArgs& a) {
  std::optional<ConfigKind> kind;
  if (!a.kind.empty()) {
    kind = parse_config_kind(a.kind);
    if (!kind) throw InputError("<command line>", "--kind", "expected " + std::string(kConfigKindNames) + ", got '" + a.kind + "'");
  }
  if (is_path(a.name)) {
    // A path is read as it is: a missing file is "file not found", never a shipped-name lookup.
    if (!std::filesystem::exists(a.name)) throw InputError(a.name, "", "file not found");
    show_one(a, kind ? *kind : detect_kind(a.name, read_json_file(a.name)), a.name);
    return;
  }
  if (kind) {
    show_one(a, *kind, resolve_config(*kind, a.name));  // names the shipped configs of that kind if unknown
    return;
  }
  // A shipped name: try each kind in turn; a name may exist as several kinds only by accident, so
  // show the first (--kind picks another).
  for (ConfigKind k : {ConfigKind::model, ConfigKind::strategy, ConfigKind::system}) {
    const std::filesystem::path p = std::filesystem::path(config_root()) / kind_dir(k) / (a.name + ".json");
    if (std::filesystem::exists(p)) {
      show_one(a, k, p.string());
      return;
    }
  }
  throw InputError("<command line>", "configs show",
                   "no shipped model, strategy or system named '" + a.name + "' (see `calisim configs list`)");
}

void write_json(const std::string& path, const nlohmann::json& doc, const char* option) {
  std::ofstream out(path);
  if (!out) throw InputError(path, option, "cannot write the file");
  out << doc.dump(2) << "\n";
  if (!out) throw InputError(path, option, "writing the file failed");
}

// configs import-megatron: a Megatron-LM launch script as a model and a strategy file.
void run_import_megatron(const ConfigsArgs& a) {
  const MegatronImport imp = read_megatron(a.megatron);
  // Checked as simulate would load them, so a file written here always loads.
  const RunConfigs rc = megatron_run_configs(imp, a.megatron.script, "", a.overrides);
  nlohmann::json model = imp.model, strategy = imp.strategy, system = nlohmann::json::object();
  for (const auto& o : a.overrides) apply_override(o, model, strategy, system);
  if (!a.model_out.empty()) write_json(a.model_out, model, "--model-out");
  if (!a.strategy_out.empty()) write_json(a.strategy_out, strategy, "--strategy-out");
  const ModelStats stats = model_stats(rc.model, rc.strategy.seq_len);
  if (a.json) {
    nlohmann::json doc = megatron_report_json(imp, a.megatron.script);
    doc["model"] = model;
    doc["strategy"] = strategy;
    doc["dp_size"] = rc.strategy.dp_size;
    doc["micro_batch_num"] = rc.strategy.micro_batch_num;
    doc["total_params"] = stats.total_params;
    doc["active_params"] = stats.active_params;
    doc["written"] = {{"model", a.model_out}, {"strategy", a.strategy_out}};
    fmt::print("{}\n", doc.dump(2));
    return;
  }
  std::string out = megatron_report_text(imp, a.megatron.script);
  out += fmt::format("layout: dp {} x tp {} x pp {} x cp {} = {} GPUs, {} micro-batches of {} per step; {:.2f} B "
                     "parameters ({:.2f} B active)\n",
                     rc.strategy.dp_size, rc.strategy.tp_size, rc.strategy.pp_size, rc.strategy.cp_size,
                     rc.strategy.world_size, rc.strategy.micro_batch_num, rc.strategy.micro_batch_size,
                     stats.total_params / 1e9, stats.active_params / 1e9);
  if (!a.model_out.empty()) out += "wrote model " + a.model_out + "\n";
  if (!a.strategy_out.empty()) out += "wrote strategy " + a.strategy_out + "\n";
  if (a.model_out.empty() && a.strategy_out.empty()) {
    out += "(write the files with --model-out / --strategy-out, or simulate the script directly: calisim simulate "
           "--megatron " + a.megatron.script + " --system NAME)\n";
  }
  fmt::print("{}", out);
}

}  // namespace

void register_configs(CLI::App& app) {
  auto args = std::make_shared<ConfigsArgs>();
  CLI::App* sub = app.add_subcommand("configs", "List and show the shipped model, strategy and system configs");
  sub->require_subcommand(1);
  CLI::App* list = sub->add_subcommand("list", "List shipped configs");
  list->add_option("what", args->what, "models, strategies or systems, or the singular (default: all)");
  list->add_flag("--json", args->json, "print JSON");
  list->callback([args] { run_list(*args); });
  CLI::App* show = sub->add_subcommand("show", "Print one config, shipped or a file (and a model's parameter count)");
  show->add_option("name", args->name,
                   "shipped name, or a path (with '/' or ending in .json; its kind from its folder models/, "
                   "strategies/, systems/ or its fields)")
      ->required();
  show->add_option("--kind", args->kind, "model, strategy or system (default: detected)");
  show->add_flag("--json", args->json, "print JSON");
  show->callback([args] { run_show(*args); });
  CLI::App* imp = sub->add_subcommand(
      "import-megatron",
      "Read a Megatron-LM launch script (or a file of its flags) into a model and a strategy config, with Megatron's "
      "defaults and the origin of every field");
  imp->add_option("script", args->megatron.script, "bash launch script or argument file")->required();
  imp->add_option("--world-size", args->megatron.world_size,
                  "GPUs (default: from the script's torchrun / srun / sbatch / mpirun lines)")
      ->check(CLI::PositiveNumber);
  imp->add_option("--vocab-size", args->megatron.vocab_size,
                  "the tokenizer's vocabulary, when the script does not give it (--vocab-size, GPT2BPETokenizer)")
      ->check(CLI::PositiveNumber);
  imp->add_option("--var", args->megatron.vars,
                  "NAME=VALUE: a shell variable the script uses but does not set (or to override its assignment); "
                  "repeatable")
      ->take_all();
  imp->add_option("--set", args->overrides, "override a field after the import: model.key=value or strategy.key=value")
      ->take_all();
  imp->add_option("--model-out", args->model_out, "write the model config (JSON) to FILE");
  imp->add_option("--strategy-out", args->strategy_out, "write the strategy config (JSON) to FILE");
  imp->add_flag("--json", args->json, "print one JSON document");
  imp->callback([args] { run_import_megatron(*args); });
}

}  // namespace calisim::cli
