// `calisim configs list|show`: what ships with calisim.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "cli/config_catalog.h"
#include "cli/table.h"
#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/model_stats.h"

namespace calisim::cli {
namespace {

struct ConfigsArgs {
  std::string what;
  std::string name;
  bool json = false;
};

void run_list(const ConfigsArgs& a) {
  std::vector<ConfigKind> kinds;
  if (a.what.empty()) kinds = {ConfigKind::model, ConfigKind::strategy, ConfigKind::system};
  else if (a.what == "models") kinds = {ConfigKind::model};
  else if (a.what == "strategies") kinds = {ConfigKind::strategy};
  else if (a.what == "systems") kinds = {ConfigKind::system};
  else throw InputError("<command line>", "configs list", "expected models, strategies or systems, got '" + a.what + "'");
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

void run_show(const ConfigsArgs& a) {
  // Try each kind in turn; a name may exist as several kinds only by accident, so show the first.
  for (ConfigKind k : {ConfigKind::model, ConfigKind::strategy, ConfigKind::system}) {
    std::string path;
    try {
      path = resolve_config(k, a.name);
    } catch (const InputError&) {
      continue;
    }
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
    else fmt::print("{} {} ({})\n{}\n{}", kind_dir(k), a.name, path, doc.dump(2), extra);
    return;
  }
  throw InputError("<command line>", "configs show",
                   "no shipped model, strategy or system named '" + a.name + "' (see `calisim configs list`)");
}

}  // namespace

void register_configs(CLI::App& app) {
  auto args = std::make_shared<ConfigsArgs>();
  CLI::App* sub = app.add_subcommand("configs", "List and show the shipped model, strategy and system configs");
  sub->require_subcommand(1);
  CLI::App* list = sub->add_subcommand("list", "List shipped configs");
  list->add_option("what", args->what, "models, strategies or systems (default: all)");
  list->add_flag("--json", args->json, "print JSON");
  list->callback([args] { run_list(*args); });
  CLI::App* show = sub->add_subcommand("show", "Print one shipped config (and a model's parameter count)");
  show->add_option("name", args->name, "config name")->required();
  show->add_flag("--json", args->json, "print JSON");
  show->callback([args] { run_show(*args); });
}

}  // namespace calisim::cli
