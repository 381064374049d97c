#include "cli/search_inputs.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/config_catalog.h"
#include "core/error.h"
#include "simulator/config_loader.h"

namespace calisim::cli {

void add_space_options(CLI::App* sub, SpaceArgs& a, bool batch) {
  sub->add_option("--model", a.model, "model: shipped name or path");
  sub->add_option("--system", a.system, "system: shipped name or path");
  sub->add_option("--strategy", a.strategy, "base strategy for the non-layout fields (default: calisim's defaults)");
  if (batch) {
    sub->add_option("--world-size", a.world_size, "number of GPUs");
    sub->add_option("--global-batch-size", a.global_batch_size, "sequences per iteration");
  }
  sub->add_option("--seq-len", a.seq_len, "sequence length (default: the base strategy's)");
  sub->add_option("--tp", a.tp, "tensor-parallel sizes (default powers of 2 up to the NVLink domain, max 8)")
      ->delimiter(',');
  sub->add_option("--pp", a.pp, "pipeline sizes (default: divisors of the world size that split the layers)")
      ->delimiter(',');
  sub->add_option("--vpp", a.vpp, "virtual pipeline sizes (default 1..8)")->delimiter(',');
  sub->add_option("--cp", a.cp, "context-parallel sizes (default 1)")->delimiter(',');
  sub->add_option("--ep", a.ep, "expert-parallel sizes (default 1; MoE models: also every power of two dividing the expert count, up to the world size)")->delimiter(',');
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
  sub->add_option("--mbs", a.mbs, "micro-batch sizes (default 1,2,4,8)")->delimiter(',');
  sub->add_option("--recompute", a.recompute,
                  "recompute choices: none, selective (core attention), attn, mlp, attn+mlp, full (default "
                  "none,selective,full)")
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
  sub->add_option("--threads", a.threads, "worker threads (default: all cores)");
  sub->add_option("--set", a.overrides, "override a config field: section.key=value (model|strategy|system)")
      ->take_all();
}

SpaceInputs load_space_inputs(const SpaceArgs& a, bool require_batch) {
  if (a.model.empty() || a.system.empty()) throw InputError("<command line>", "--model/--system", "both are required");
  if (require_batch && (a.world_size <= 0 || a.global_batch_size <= 0)) {
    throw InputError("<command line>", "--world-size/--global-batch-size", "both are required (positive)");
  }
  SpaceInputs in;
  // Base strategy: the file given, or calisim's defaults (bf16, flash attention, SP, distributed
  // optimizer); searches replace its layout fields.
  nlohmann::json base_doc = nlohmann::json::object();
  std::string strategy_file = "<search defaults>";
  if (!a.strategy.empty()) {
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
  const std::string model_file = resolve_config(ConfigKind::model, a.model);
  in.system_file = resolve_config(ConfigKind::system, a.system);
  nlohmann::json model_doc = read_json_file(model_file), system_doc = read_json_file(in.system_file);
  for (const auto& o : a.overrides) apply_override(o, model_doc, base_doc, system_doc);
  in.model = parse_model(model_doc, model_file, nullptr);
  if (in.model.model_name.empty()) in.model.model_name = a.model;
  in.base = parse_strategy(base_doc, strategy_file);
  in.system = parse_system(system_doc, in.system_file);

  SearchSpace& s = in.lists;
  s.world_size = a.world_size;
  s.global_batch_size = a.global_batch_size;
  s.tp = a.tp, s.pp = a.pp, s.vpp = a.vpp, s.cp = a.cp, s.ep = a.ep, s.zero = a.zero;
  s.mbs.assign(a.mbs.begin(), a.mbs.end());
  s.cp_comm = parse_named_list(a.cp_comm_types, parse_cp_comm_type, "p2p, a2a or allgather", "<command line>",
                               "--cp-comm-type");
  s.dispatchers = parse_named_list(a.dispatchers, parse_moe_dispatcher, "alltoall, allgather or flex",
                                   "<command line>", "--dispatcher");
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
      s.recompute.push_back(parse_recompute_choice(r));
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
