#include "simulator/result_json.h"

#include "simulator/rank_placement.h"

namespace calisim {

nlohmann::json breakdown_json(const SimulationResult& r) {
  return {{"compute_s", r.compute_s},
          {"recompute_s", r.recompute_s},
          {"tp_comm_exposed_s", r.tp_comm_exposed_s},
          {"pp_comm_exposed_s", r.pp_comm_exposed_s},
          {"cp_comm_exposed_s", r.cp_comm_exposed_s},
          {"ep_comm_exposed_s", r.ep_comm_exposed_s},
          {"offload_exposed_s", r.offload_exposed_s},
          {"straggler_s", r.straggler_s},
          {"host_exposed_s", r.host_exposed_s},
          {"bubble_s", r.bubble_s},
          {"dp_comm_exposed_s", r.dp_comm_exposed_s},
          {"optimizer_s", r.optimizer_s}};
}

nlohmann::json compute_split_json(const SimulationResult& r) {
  return {{"attention_kernel_s", r.attention_kernel_s}, {"other_kernel_s", r.other_kernel_s()}};
}

nlohmann::json to_json(const SimulationResult& r) {
  using nlohmann::json;
  json j;
  j["model"] = r.model_name;
  j["strategy"] = r.strategy_name;
  j["system"] = r.system_name;
  j["device"] = r.device_name;
  j["layout"] = {{"world_size", r.world_size}, {"tp", r.tp}, {"pp", r.pp}, {"vpp", r.vpp},
                 {"microbatch_group_size_per_vp_stage", r.vpp_group}, {"cp", r.cp}, {"dp", r.dp},
                 {"ep", r.ep}, {"etp", r.etp}, {"edp", r.edp},
                 {"micro_batch_size", r.micro_batch_size}, {"micro_batch_num", r.micro_batch_num},
                 {"global_batch_size", r.global_batch_size}, {"seq_len", r.seq_len},
                 {"sequence_parallel", r.sequence_parallel}, {"recompute", r.recompute},
                 {"precision", r.precision}, {"optimizer_state", r.optimizer_state}, {"loss", r.loss},
                 {"sharding", r.sharding}, {"order", to_string(r.rank_order)},
                 {"tensor_parallel_mode", r.tp_2d_rows * r.tp_2d_cols > 1 ? "2d" : "1d"},
                 {"tp_2d_rows", r.tp_2d_rows}, {"tp_2d_cols", r.tp_2d_cols},
                 {"context_parallel_mode", r.cp_2d_rows * r.cp_2d_cols > 1 ? "2d" : "1d"},
                 {"cp_2d_rows", r.cp_2d_rows}, {"cp_2d_cols", r.cp_2d_cols}};
  const ModelStats& s = r.stats;
  j["model_stats"] = {{"total_params", s.total_params},
                      {"active_params", s.active_params},
                      {"embedding_params", s.embedding_params},
                      {"output_params", s.output_params},
                      {"matmul_params_per_token", s.matmul_params_per_token},
                      {"model_flops_per_token", s.model_flops_per_token},
                      {"model_flops_per_token_causal", s.model_flops_per_token_causal},
                      {"flops_6n_per_token", s.flops_6n_per_token},
                      {"mtp_params", s.mtp_params},
                      {"mtp_flops_per_token", s.mtp_flops_per_token}};
  j["cost"] = {{"duration_time_per_iter_s", r.duration_time_per_iter_s},
               {"chunk_time_s", r.chunk_time_s},
               {"all_tokens_per_iter", r.all_tokens_per_iter},
               {"tokens_per_s", r.tokens_per_s},
               {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
               {"throughput_per_accelerator", r.throughput_per_accelerator},
               {"tflops_per_gpu", r.tflops_per_gpu},
               {"mfu", r.mfu},
               {"mfu_6nd", r.mfu_6nd},
               {"mfu_6nd_with_attn", r.mfu_6nd_with_attn},
               {"mfu_causal", r.mfu_causal},
               {"hfu", r.hfu},
               {"bubble_fraction", r.bubble_fraction},
               {"critical_stage", r.critical_rank}};
  j["breakdown"] = breakdown_json(r);
  j["compute_split"] = compute_split_json(r);
  j["comm"] = {{"tp_exposed_s", r.tp_comm_exposed_s},
               {"pp_exposed_s", r.pp_comm_exposed_s},
               {"cp_exposed_s", r.cp_comm_exposed_s},
               {"ep_exposed_s", r.ep_comm_exposed_s},
               {"dp_exposed_s", r.dp_comm_exposed_s}};
  json stages = json::array();
  for (const StageReport& st : r.stages) {
    stages.push_back({{"stage", st.rank},
                      {"layers", st.layers},
                      {"moe_layers", st.moe_layers},
                      {"mtp_layers", st.mtp_layers},
                      {"first_layers", st.first_layers},
                      {"recomputed_layers", st.recomputed_layers},
                      {"has_embedding", st.has_embedding},
                      {"has_head", st.has_head},
                      {"fwd_s_per_micro_batch", st.fwd_s_per_micro_batch},
                      {"bwd_s_per_micro_batch", st.bwd_s_per_micro_batch},
                      {"recompute_s_per_micro_batch", st.recompute_s_per_micro_batch},
                      {"attention_s_per_micro_batch", st.attention_s_per_micro_batch},
                      {"tp_comm_exposed_s_per_micro_batch", st.tp_comm_s_per_micro_batch},
                      {"cp_comm_exposed_s_per_micro_batch", st.cp_comm_s_per_micro_batch},
                      {"ep_comm_exposed_s_per_micro_batch", st.ep_comm_s_per_micro_batch},
                      {"dp_comm_exposed_s_per_micro_batch", st.dp_comm_s_per_micro_batch},
                      {"offload_exposed_s_per_micro_batch", st.offload_s_per_micro_batch},
                      {"p2p_blocking_s_per_micro_batch", st.p2p_blocking_s_per_micro_batch},
                      {"host_exposed_s_per_micro_batch", st.host_exposed_s_per_micro_batch},
                      {"pipeline_busy_s", st.pipeline_busy_s},
                      {"pipeline_finish_s", st.pipeline_finish_s},
                      {"bubble_s", st.bubble_s},
                      {"bubble_fraction", st.bubble_fraction},
                      {"dp_comm_exposed_s", st.dp_comm_s},
                      {"optimizer_s", st.optimizer_s},
                      {"params", st.params},
                      {"expert_params", st.expert_params},
                      {"memory",
                       {{"weight_bytes", st.weight_bytes},
                        {"grad_bytes", st.grad_bytes},
                        {"optimizer_state_bytes", st.optimizer_bytes},
                        {"model_mem_bytes", st.model_mem_bytes},
                        {"fwd_activation_cache_per_micro_batch_bytes", st.fwd_activation_cache_per_micro_batch_bytes},
                        {"max_micro_batches_in_flight", st.max_micro_batches_in_flight},
                        {"peak_activation_mem_in_1F1B_bytes", st.peak_activation_mem_in_1F1B_bytes},
                        {"fwd_peak_allocated_mem_bytes", st.fwd_peak_allocated_mem_bytes},
                        {"bwd_peak_allocated_mem_bytes", st.bwd_peak_allocated_mem_bytes},
                        {"peak_mem_bytes", st.peak_mem_bytes},
                        {"peak_mem_with_reserved_bytes", st.peak_mem_with_reserved_bytes},
                        {"peak_path", st.peak_path}}}});
  }
  j["stages"] = stages;
  j["memory"] = {{"device_memory_bytes", r.device_memory_bytes}, {"fits", r.fits_in_memory}};
  json ops = json::array();
  for (const OpReport& o : r.ops) {
    ops.push_back({{"name", o.name},
                   {"scope", o.scope},
                   {"kind", o.kind},
                   {"fwd_s", o.fwd_s},
                   {"bwd_s", o.bwd_s},
                   {"fwd_comm_exposed_s", o.fwd_comm_s},
                   {"bwd_comm_exposed_s", o.bwd_comm_s},
                   {"fwd_flops", o.fwd_flops},
                   {"bwd_flops", o.bwd_flops},
                   {"act_bytes", o.act_bytes},
                   {"act_bytes_recomputed", o.act_bytes_recomputed},
                   {"efficiency", o.efficiency},
                   {"source", o.source},
                   {"origin", o.origin.empty() ? json(nullptr) : json(o.origin)},
                   {"fwd_key", o.fwd_key},
                   {"recomputed", o.recomputed}});
  }
  j["ops"] = ops;
  json colls = json::array();
  for (const CollectiveReport& c : r.collectives) {
    colls.push_back({{"op", c.op}, {"algorithm", c.algorithm}, {"protocol", c.protocol}, {"tier", c.tier},
                     {"bytes", c.bytes}, {"ranks", c.ranks}, {"ranks_per_domain", c.ranks_per_domain},
                     {"time_s", c.time_s}, {"busbw_gb_s", c.busbw_gb_s}, {"source", c.source}});
  }
  j["collectives"] = colls;
  // Host dispatch (simulator/host_dispatch.h): null when the system does not model the host side.
  if (r.host_dispatch_modeled) {
    json blocks = json::array();
    for (const HostBlockReport& h : r.host_blocks) {
      blocks.push_back({{"block", h.block}, {"bound", h.bound}, {"syncs_fwd", h.syncs_fwd},
                        {"gpu_fwd_s", h.gpu_fwd_s}, {"host_fwd_s", h.host_fwd_s}, {"exposed_fwd_s", h.exposed_fwd_s},
                        {"gpu_bwd_s", h.gpu_bwd_s}, {"host_bwd_s", h.host_bwd_s}, {"exposed_bwd_s", h.exposed_bwd_s}});
    }
    j["host_dispatch"] = {{"host_exposed_s", r.host_exposed_s}, {"blocks", blocks}};
  } else {
    j["host_dispatch"] = nullptr;
  }
  json sources = json::object();
  for (int i = 0; i < kEfficiencySourceCount; ++i) {
    sources[std::string(to_string(static_cast<EfficiencySource>(i)))] = r.kernels_per_source[i];
  }
  json origins = json::array();
  for (const auto& o : r.kernels_per_origin) origins.push_back({{"origin", o.origin}, {"kernels", o.kernels}});
  j["efficiency_sources"] = {{"database", r.efficiency_db.empty() ? json(nullptr) : json(r.efficiency_db)},
                             {"kernels_per_source", sources},
                             {"kernels_per_origin", origins},
                             {"roofline_keys", r.roofline_keys}};
  j["warnings"] = r.warnings;
  return j;
}

}  // namespace calisim
