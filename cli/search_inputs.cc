#include "cli/search_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "cli/config_catalog.h"
#include "cli/megatron_configs.h"
#include "core/error.h"
#include "simulator/config_loader.h"

namespace calisim::cli {
namespace {

// The list in its given order without repeats: a value given twice is one layout, not two rows.
template <typename T>
std::vector<T> unique_in_order(const std::vector<T>& values) {
  std::vector<T> out;
  for (const T& v : values) {
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

// CLI11's PositiveNumber prints the whole double range; these say what a value must be.
CLI::Validator whole_at_least(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        try {
          std::size_t used = 0;
          const long long v = std::stoll(text, &used);
          if (used == text.size() && v >= min) return "";
        } catch (const std::exception&) {
        }
        return fmt::format("expected a whole number >= {}, got '{}'", min, text);
      },
      fmt::format("INT>={}", min));
}
const CLI::Validator kPositiveWhole = whole_at_least(1);

}  // namespace

void add_space_options(CLI::App* sub, SpaceArgs& a, bool batch) {
  sub->add_option("--model", a.model, "model: shipped name or path");
  sub->add_option("--system", a.system, "system: shipped name or path");
  sub->add_option("--strategy", a.strategy, "base strategy for the non-layout fields (default: calisim's defaults)");
  sub->add_option("--megatron", a.megatron,
                  "a Megatron-LM launch script instead of --model and --strategy: its model, its run's non-layout "
                  "settings, and (unless given) its GPU count, global batch and sequence length");
  sub->add_option("--var", a.megatron_vars, "with --megatron: NAME=VALUE for a shell variable of the script")
      ->take_all();
  if (batch) {
    sub->add_option("--world-size", a.world_size, "number of GPUs")->check(kPositiveWhole);
    sub->add_option("--global-batch-size", a.global_batch_size, "sequences per iteration")->check(kPositiveWhole);
  }
  sub->add_option("--seq-len", a.seq_len, "sequence length (default: the base strategy's)")->check(kPositiveWhole);
  sub->add_option("--tp", a.tp, "tensor-parallel sizes (default powers of 2 up to the NVLink domain, max 8)")
      ->delimiter(',')
      ->check(kPositiveWhole);
  sub->add_option("--pp", a.pp, "pipeline sizes (default: divisors of the world size that split the layers)")
      ->delimiter(',')
      ->check(kPositiveWhole);
  sub->add_option("--vpp", a.vpp, "virtual pipeline sizes (default 1..8)")->delimiter(',')
      ->check(kPositiveWhole);
  sub->add_option("--cp", a.cp, "context-parallel sizes (default 1)")->delimiter(',')
      ->check(kPositiveWhole);
  sub->add_option("--ep", a.ep,
                  "expert-parallel sizes (default 1; MoE models: also every power of two dividing the expert "
                  "count, up to the world size)")
      ->delimiter(',')
      ->check(kPositiveWhole);
  sub->add_option("--etp", a.etp,
                  "expert tensor-parallel sizes (MoE; default: the base strategy's etp_size, 1 unless it says)")
      ->delimiter(',');
  sub->add_option("--cp-comm-type", a.cp_comm_types,
                  "context-parallel communication types to try: p2p, a2a, allgather (default: the base strategy's)")
      ->delimiter(',');
  sub->add_option("--dispatcher", a.dispatchers,
                  "MoE token dispatchers to try: alltoall, allgather, flex (flex with the base strategy's "
                  "moe_flex_dispatcher_backend, DeepEP unless it says; default: the base strategy's)")
      ->delimiter(',');
  sub->add_option("--dp-replicate", a.dp_replicate,
                  "hybrid-sharding replica counts to try (dp_replicate_size: the data-parallel ranks split into "
                  "this many replicas, each sharding the ZeRO state over its own ranks; needs ZeRO 1-3); 1 = "
                  "shard over the whole group (default: the base strategy's, 1 unless it says)")
      ->delimiter(',')
      ->check(kPositiveWhole);
  sub->add_option("--mbs", a.mbs, "micro-batch sizes (default 1,2,4,8)")->delimiter(',')
      ->check(kPositiveWhole);
  sub->add_option("--recompute", a.recompute,
                  "recompute choices: none, selective (core attention), attn, mlp, attn+mlp, full, or "
                  "modules:NAME[+NAME...] (Megatron's --recompute-modules: layernorm, mla_up_proj, moe_act, mlp, moe) "
                  "(default none,selective,full)")
      ->delimiter(',');
  sub->add_option("--zero", a.zero, "ZeRO stages (default 1)")->delimiter(',');
  sub->add_option("--tp-2d-rows", a.tp_2d_rows,
                  "also try 2D (SUMMA) tensor parallelism with these grid rows (columns = tp / rows), e.g. 2,4; "
                  "1D TP is always tried (default: 1D only)")
      ->delimiter(',');
  sub->add_option("--cp-2d-rows", a.cp_2d_rows,
                  "also try 2D context parallelism with these grid rows (head all-to-all; columns = cp / rows run "
                  "the K/V ring), e.g. 2,4; 1D CP is always tried (default: 1D only)")
      ->delimiter(',');
  sub->add_option("--orders", a.orders,
                  "rank orders (which groups share the NVLink domain): megatron (tp-cp-ep-dp-pp only), tp_first "
                  "(default: the 24 orders with tp fastest), all (120), or orders such as tp-dp-cp-ep-pp; orders "
                  "that place every group alike are simulated once")
      ->delimiter(',');
  sub->add_option("--memory-margin-gb", a.memory_margin_gb, "GB per GPU a layout must leave free (SimuMax gmi_error)");
  sub->add_flag("--allocated-memory", a.allocated_memory,
                "compare allocated peak memory with the device (default: reserved = allocated / mem_factor)");
  sub->add_option("--threads", a.threads, "worker threads (default: all cores)")->check(whole_at_least(0));
  sub->add_option("--set", a.overrides, "override a config field: section.key=value (model|strategy|system)")
      ->take_all();
}

SpaceInputs load_space_inputs(const SpaceArgs& given, bool require_batch) {
  SpaceArgs a = given;
  std::optional<MegatronImport> imp;
  if (!a.megatron.empty()) {
    if (!a.model.empty() || !a.strategy.empty()) {
      throw InputError("<command line>", a.model.empty() ? "--strategy" : "--model",
                       "--megatron gives the model and the base strategy: drop --model / --strategy");
    }
    MegatronInputs in;
    in.script = a.megatron;
    in.vars = a.megatron_vars;
    if (a.world_size > 0) in.world_size = a.world_size;
    else in.world_size = override_integer(a.overrides, "strategy.world_size");
    in.vocab_size = override_integer(a.overrides, "model.vocab_size");
    imp = read_megatron(in);
    // The script's run: its GPU count and batch unless the command line gives others.
    if (a.world_size <= 0) a.world_size = imp->strategy.value("world_size", 0);
    if (a.global_batch_size <= 0) a.global_batch_size = imp->strategy.value("global_batch_size", 0LL);
    a.model = a.megatron;
  } else if (!a.megatron_vars.empty()) {
    throw InputError("<command line>", "--var", "goes with --megatron SCRIPT");
  }
  if (a.model.empty() || a.system.empty()) {
    throw InputError("<command line>", "--model/--system", "both are required (or --megatron SCRIPT and --system)");
  }
  if (require_batch && (a.world_size <= 0 || a.global_batch_size <= 0)) {
    throw InputError("<command line>", "--world-size/--global-batch-size", "both are required (positive)");
  }
  if (!std::isfinite(a.memory_margin_gb) || a.memory_margin_gb < 0) {
    throw InputError("<command line>", "--memory-margin-gb",
                     fmt::format("expected a finite number of GB >= 0, got {}", a.memory_margin_gb));
  }
  SpaceInputs in;
  // Base strategy: the file given, or calisim's defaults (bf16, flash attention, SP, distributed
  // optimizer); searches replace its layout fields.
  nlohmann::json base_doc = nlohmann::json::object();
  std::string strategy_file = "<search defaults>";
  if (imp) {
    strategy_file = megatron_label(a.megatron);
    base_doc = imp->strategy;
  } else if (!a.strategy.empty()) {
    strategy_file = resolve_config(ConfigKind::strategy, a.strategy);
    base_doc = read_json_file(strategy_file);
  }
  if (a.world_size > 0) base_doc["world_size"] = a.world_size;
  if (a.global_batch_size > 0) base_doc["global_batch_size"] = a.global_batch_size;
  if (!base_doc.contains("global_batch_size") && !base_doc.contains("micro_batch_num")) base_doc["micro_batch_num"] = 1;
  if (a.global_batch_size > 0) base_doc.erase("micro_batch_num");
  if (a.seq_len > 0) base_doc["seq_len"] = a.seq_len;
  if (!base_doc.contains("seq_len")) {
    throw InputError("<command line>", "--seq-len", "required when no --strategy file gives seq_len");
  }
  const std::string model_file = imp ? megatron_label(a.megatron) : resolve_config(ConfigKind::model, a.model);
  in.system_file = resolve_config(ConfigKind::system, a.system);
  nlohmann::json model_doc = imp ? imp->model : read_json_file(model_file);
  nlohmann::json system_doc = read_json_file(in.system_file);
  for (const auto& o : a.overrides) apply_override(o, model_doc, base_doc, system_doc);
  std::vector<std::string> not_modeled;
  in.model = parse_model(model_doc, model_file, &not_modeled);
  if (in.model.model_name.empty()) {
    in.model.model_name = imp ? std::filesystem::path(a.megatron).stem().string() : a.model;
  }
  if (imp) in.warnings = megatron_warnings(*imp);
  in.base = parse_strategy(base_doc, strategy_file);
  // The same words as `calisim simulate` (cli/config_catalog.cc, simulator/simulate.cc).
  for (const auto& f : not_modeled) in.warnings.push_back("model field '" + f + "' is accepted but not modeled");
  for (const auto& f : in.base.not_modeled_fields) {
    in.warnings.push_back("strategy field '" + f + "' is accepted for SimuMax compatibility but not modeled");
  }
  in.system = parse_system(system_doc, in.system_file);
  if (a.memory_margin_gb >= in.system.device.memory_gb) {
    throw InputError("<command line>", "--memory-margin-gb",
                     fmt::format("a margin of {} GB leaves nothing of the {} GB of {} ({})", a.memory_margin_gb,
                                 in.system.device.memory_gb, in.system.device.name, in.system_file));
  }

  SearchSpace& s = in.lists;
  s.world_size = a.world_size;
  s.global_batch_size = a.global_batch_size;
  s.tp = unique_in_order(a.tp), s.pp = unique_in_order(a.pp), s.vpp = unique_in_order(a.vpp);
  s.cp = unique_in_order(a.cp), s.ep = unique_in_order(a.ep), s.zero = unique_in_order(a.zero);
  const std::vector<long long> mbs = unique_in_order(a.mbs);
  s.mbs.assign(mbs.begin(), mbs.end());
  s.cp_comm = parse_named_list(a.cp_comm_types, parse_cp_comm_type, "p2p, a2a or allgather", "<command line>",
                               "--cp-comm-type");
  s.dispatchers = parse_named_list(a.dispatchers, parse_moe_dispatcher, "alltoall, allgather or flex",
                                   "<command line>", "--dispatcher");
  s.dp_replicate = unique_in_order(a.dp_replicate);
  for (int e : a.etp) {
    if (e < 1) throw InputError("<command line>", "--etp", fmt::format("expert TP sizes must be >= 1, got {}", e));
    if (std::find(s.etp.begin(), s.etp.end(), e) == s.etp.end()) s.etp.push_back(e);
  }
  if (!a.tp_2d_rows.empty()) {
    s.tp_2d_rows = {0};  // 1D always
    for (int r : a.tp_2d_rows) {
      if (r < 2) throw InputError("<command line>", "--tp-2d-rows", fmt::format("grid rows must be >= 2, got {}", r));
      if (std::find(s.tp_2d_rows.begin(), s.tp_2d_rows.end(), r) == s.tp_2d_rows.end()) s.tp_2d_rows.push_back(r);
    }
  }
  if (!a.cp_2d_rows.empty()) {
    s.cp_2d_rows = {0};  // 1D always
    for (int r : a.cp_2d_rows) {
      if (r < 2) throw InputError("<command line>", "--cp-2d-rows", fmt::format("grid rows must be >= 2, got {}", r));
      if (std::find(s.cp_2d_rows.begin(), s.cp_2d_rows.end(), r) == s.cp_2d_rows.end()) s.cp_2d_rows.push_back(r);
    }
  }
  for (const auto& r : a.recompute) {
    try {
      const RecomputeChoice c = parse_recompute_choice(r);
      if (std::find(s.recompute.begin(), s.recompute.end(), c) == s.recompute.end()) s.recompute.push_back(c);
    } catch (const std::invalid_argument& e) {
      throw InputError("<command line>", "--recompute", e.what());
    }
  }
  for (const auto& o : a.orders) {
    try {
      for (const RankOrder& r : rank_order_list(o)) {
        if (std::find(s.orders.begin(), s.orders.end(), r) == s.orders.end()) s.orders.push_back(r);
      }
    } catch (const std::invalid_argument& e) {
      throw InputError("<command line>", "--orders", e.what());
    }
  }
  for (int z : s.zero) {
    if (z < 0 || z > kMaxModeledZeroStage) {
      throw InputError("<command line>", "--zero",
                       fmt::format("ZeRO stage {} is not modeled (expected 0..{})", z, kMaxModeledZeroStage));
    }
  }
  return in;
}

}  // namespace calisim::cli
