#include "python/config_json.h"

#include <string>

#include "core/dtype.h"
#include "simulator/collective_algorithms.h"
#include "simulator/rank_placement.h"
#include "simulator/topology.h"

namespace calisim::python {
namespace {

using nlohmann::json;

const char* granularity_name(RecomputeGranularity g) {
  switch (g) {
    case RecomputeGranularity::none: return nullptr;
    case RecomputeGranularity::full_block: return "full_block";
    case RecomputeGranularity::selective: return "selective_recompute";
    case RecomputeGranularity::attn_only: return "attn_only";
    case RecomputeGranularity::mlp_only: return "mlp_only";
    case RecomputeGranularity::sdp_only: return "sdp_only";
    case RecomputeGranularity::selective_op: return "selective_op";
    case RecomputeGranularity::save_qkv_proj: return "save_qkv_proj";
  }
  return nullptr;
}

json or_null(const char* s) { return s ? json(s) : json(nullptr); }

// The NCCL_ALGO / NCCL_PROTO-style list a mask allows (every name when nothing is excluded).
template <typename Enum>
json allowed_names(const CollectiveChoiceMask& m, int count) {
  json names = json::array();
  for (int i = 0; i < count; ++i) {
    if (m.allows(static_cast<Enum>(i))) names.push_back(std::string(to_string(static_cast<Enum>(i))));
  }
  return names;
}

json tier_json(const NetworkTier& t) {
  json eff = json::object();
  for (int i = 0; i < kCollectiveOpCount; ++i) {
    eff[std::string(to_string(static_cast<CollectiveOp>(i)))] = t.efficiency[i];
  }
  return {{"gpu_gb_s", t.gpu_gb_s}, {"latency_us", t.latency_us}, {"efficiency", eff}};
}

}  // namespace

json model_json(const ModelConfig& m) {
  const char* attention = m.attention_type == AttentionType::mla ? "mla"
                          : m.attention_type == AttentionType::gqa ? "gqa" : "mha";
  json j = {{"model_name", m.model_name},
            {"model_type", m.is_moe ? "moe" : "dense"},
            {"hidden_size", m.hidden_size},
            {"head_num", m.head_num},
            {"kv_head_num", m.kv_head_num},
            {"head_size", m.head_size},
            {"intermediate_size", m.intermediate_size},
            {"layer_num", m.layer_num},
            {"vocab_size", m.vocab_size},
            {"make_vocab_size_divisible_by", m.make_vocab_size_divisible_by},
            {"use_swiglu", m.use_swiglu},
            {"attention_type", attention},
            {"norm_type", m.norm_type == NormType::rmsnorm ? "rmsnorm" : "layernorm"},
            {"position_embedding_type", m.position_embedding_type == PositionEmbedding::rope ? "rope" : "learned_absolute"},
            {"max_position_embeddings", m.max_position_embeddings},
            {"untie_embeddings_and_output_weights", m.untie_embeddings_and_output_weights},
            {"add_bias_linear", m.add_bias_linear},
            {"expert_num", m.expert_num},
            {"topk", m.topk},
            {"moe_ffn_hidden_size", m.moe_ffn_hidden_size},
            {"moe_shared_expert_intermediate_size", m.moe_shared_expert_intermediate_size},
            {"dense_layers", m.dense_layers},
            {"capacity", m.capacity},
            {"moe_pad_expert_input_to_capacity", m.moe_pad_expert_input_to_capacity},
            {"q_lora_rank", m.q_lora_rank},
            {"kv_lora_rank", m.kv_lora_rank},
            {"qk_head_dim", m.qk_head_dim},
            {"qk_pos_emb_head_dim", m.qk_pos_emb_head_dim},
            {"v_head_dim", m.v_head_dim}};
  // Sliding-window attention (model_config.h), the resolved per-layer pattern in the loader's list form.
  j["attention_window_tokens"] = m.attention_window_tokens;
  j["attention_sinks"] = m.attention_sinks;
  if (m.attention_window_tokens > 0) {
    json types = json::array();
    for (bool w : m.window_layers) types.push_back(w ? "sliding_attention" : "full_attention");
    j["attention_layer_types"] = types;
  }
  return j;
}

json strategy_json(const StrategyConfig& s, bool with_derived) {
  json j = {{"seq_len", s.seq_len},
            {"micro_batch_size", s.micro_batch_size},
            {"dtype", std::string(to_string(s.dtype))},
            {"world_size", s.world_size},
            {"tp_size", s.tp_size},
            {"pp_size", s.pp_size},
            {"cp_size", s.cp_size},
            {"ep_size", s.ep_size},
            {"etp_size", s.etp_size},
            {"enable_sequence_parallel", s.enable_sequence_parallel},
            {"interleaving_size", s.interleaving_size},
            {"num_layers_in_first_pipeline_stage", s.num_layers_in_first_pipeline_stage},
            {"num_layers_in_last_pipeline_stage", s.num_layers_in_last_pipeline_stage},
            {"zero_state", s.zero_state},
            {"dp_replicate_size", s.dp_replicate_size},
            {"cp_comm_type", cp_comm_type_name(s.cp_comm_type)},
            {"cp_implementation", cp_implementation_name(s.cp_impl)},
            {"moe_dispatcher_policy", s.moe_dispatcher == MoeDispatcher::all_to_all  ? "all2all"
                                      : s.moe_dispatcher == MoeDispatcher::all_gather ? "allgather"
                                                                                      : "flex"},
            {"moe_flex_dispatcher_backend", s.flex_backend == FlexBackend::hybridep ? "hybridep" : "deepep"},
            {"flex_num_sms", s.flex_num_sms},
            {"dispatch_probs", s.dispatch_probs},
            {"moe_token_imbalance_factor", s.moe_token_imbalance_factor},
            {"moe_shared_expert_overlap", s.moe_shared_expert_overlap},
            {"overlap_moe_expert_parallel_comm", s.overlap_moe_expert_parallel_comm},
            {"fp8", s.fp8_enabled()},
            {"fp8_recipe", or_null(fp8_recipe_name(s.fp8))},
            {"fp8_param_gather", s.fp8_param_gather},
            {"fp8_implementation", s.fp8_impl == Fp8Implementation::torchao ? "torchao" : "transformer_engine"},
            {"overlap_grad_reduce", s.overlap_grad_reduce},
            {"overlap_param_gather", s.overlap_param_gather},
            {"moe_double_param_gather", s.moe_double_param_gather},
            {"bucket_size", s.bucket_size},
            {"tp_comm_overlap", s.tp_comm_overlap},
            {"overlap_p2p_comm", s.overlap_p2p_comm},
            {"cpu_offloading_num_layers", s.cpu_offloading_num_layers},
            {"optimizer_cpu_offload", s.optimizer_cpu_offload},
            {"optimizer_offload_fraction", s.optimizer_offload_fraction},
            {"enable_dropout", s.enable_dropout},
            {"use_flash_sdp", s.use_flash_sdp},
            {"use_math_sdp", s.use_math_sdp},
            {"use_fused_norm", s.use_fused_norm},
            {"use_fused_swiglu", s.use_fused_swiglu},
            {"use_fused_rope", s.use_fused_rope},
            {"use_fp32_accum_grad", s.use_fp32_accum_grad},
            {"use_fused_grad_accumulation", s.use_fused_grad_accumulation},
            {"grad_reduce_in_bf16", s.grad_reduce_in_bf16},
            {"cross_entropy_loss_fusion", s.cross_entropy_loss_fusion},
            {"enable_recompute", s.enable_recompute},
            {"recompute_granularity", or_null(granularity_name(s.recompute_granularity))},
            {"recompute_layer_num", s.recompute_layer_num},
            {"attn_recompute", s.attn_recompute},
            {"mla_rms_recompute", s.mla_rms_recompute},
            {"mlp_recompute", s.mlp_recompute},
            {"mlp_rms_recompute", s.mlp_rms_recompute},
            {"recompute_variance", s.recompute_variance},
            {"recompute_early_stop", s.recompute_early_stop},
            {"mem_factor", s.mem_factor},
            {"use_precision_aware_optimizer", s.use_precision_aware_optimizer},
            {"account_for_embedding_in_pipeline_split", s.account_for_embedding_in_pipeline_split},
            {"account_for_loss_in_pipeline_split", s.account_for_loss_in_pipeline_split},
            {"order", to_string(s.rank_order)},
            {"tensor_parallel_mode", s.tp_mode == TensorParallelMode::two_d ? "2d" : "1d"},
            {"tp_2d_rows", s.tp_2d_rows},
            {"tp_2d_cols", s.tp_2d_cols},
            {"context_parallel_mode", s.cp_mode == ContextParallelMode::two_d ? "2d" : "1d"},
            {"cp_2d_rows", s.cp_2d_rows},
            {"cp_2d_cols", s.cp_2d_cols},
            {"nccl_algo", allowed_names<CollAlgo>(s.nccl, kCollAlgoCount)},
            {"nccl_proto", allowed_names<CollProto>(s.nccl, kCollProtoCount)},
            {"not_modeled_fields", s.not_modeled_fields}};
  // Only when set: the loader refuses a layout beside the first/last-stage counts it replaces.
  if (!s.pipeline_layout.empty()) j["pipeline_layout"] = s.pipeline_layout;
  // Only with the precision-aware optimizer: the loader refuses the dtypes without it.
  if (s.use_precision_aware_optimizer) {
    j["main_params_dtype"] = optimizer_dtype_name(s.main_params_dtype);
    j["exp_avg_dtype"] = optimizer_dtype_name(s.exp_avg_dtype);
    j["exp_avg_sq_dtype"] = optimizer_dtype_name(s.exp_avg_sq_dtype);
    j["main_grads_dtype"] = optimizer_dtype_name(s.main_grads_dtype);
    j["store_param_remainders"] = s.store_param_remainders;
  }
  // Only for the unfused loss: the loader refuses it beside cross_entropy_loss_fusion.
  if (!s.cross_entropy_loss_fusion) {
    j["cross_entropy_implementation"] = s.cross_entropy_impl == CrossEntropyImpl::pytorch ? "pytorch" : "megatron";
  } else {
    j["cross_entropy_fusion_impl"] = s.cross_entropy_fusion_impl == CrossEntropyFusionImpl::native ? "native" : "te";
  }
  // Only when set: the loader refuses the counts without the switch (and the switch without fp8).
  if (s.has_bf16_layers()) {
    j["first_last_layers_bf16"] = true;
    j["num_layers_at_start_in_bf16"] = s.num_layers_at_start_in_bf16;
    j["num_layers_at_end_in_bf16"] = s.num_layers_at_end_in_bf16;
  }
  // Batch arithmetic: one of the two may be 0 until validate_layout derives it.
  // 0 stands for pp_size; the loader takes only positive values.
  if (s.microbatch_group_size_per_vp_stage > 0) {
    j["microbatch_group_size_per_vp_stage"] = s.microbatch_group_size_per_vp_stage;
  }
  if (with_derived || s.micro_batch_num > 0) j["micro_batch_num"] = s.micro_batch_num;
  if (with_derived || s.global_batch_size > 0) j["global_batch_size"] = s.global_batch_size;
  if (with_derived) {
    j["dp_size"] = s.dp_size;
    j["edp_size"] = s.edp_size;
    j["sequence_parallel"] = s.sequence_parallel;
    j["layers_per_chunk"] = s.layers_per_chunk;
  }
  return j;
}

json system_json(const SystemConfig& s) {
  json peaks = json::object();
  for (int i = 0; i < kDTypeCount; ++i) {
    if (s.device.peak_tflops[i] > 0) peaks[std::string(to_string(static_cast<DType>(i)))] = s.device.peak_tflops[i];
  }
  // efficiency.matmul_by_dtype: only the dtypes the system file overrides (the rest use matmul_efficiency).
  json matmul_by_dtype = json::object();
  for (int i = 0; i < kDTypeCount; ++i) {
    const double e = s.matmul_efficiency_by_dtype[i];
    if (e > 0) matmul_by_dtype[std::string(to_string(static_cast<DType>(i)))] = e;
  }
  return {{"name", s.name},
          {"source", s.source},
          {"device",
           {{"name", s.device.name},
            {"peak_tflops", peaks},
            {"memory_gb", s.device.memory_gb},
            {"hbm_gb_s", s.device.hbm_gb_s},
            {"sm_count", s.device.sm_count},
            {"l2_mb", s.device.l2_mb}}},
          {"matmul_efficiency", s.matmul_efficiency},
          {"matmul_efficiency_by_dtype", matmul_by_dtype},
          {"attention_efficiency", s.attention_efficiency},
          {"attention_backward_ratio", s.attention_backward_ratio},
          {"attention_implementation", s.attention_implementation},
          {"memory_efficiency", s.memory_efficiency},
          {"kernel_launch_us", s.kernel_launch_us},
          {"gemm_fixed_us", s.gemm_fixed_us},
          {"scale_up_domain_size", s.scale_up_domain_size},
          {"scale_up", tier_json(s.scale_up)},
          {"gpus_per_node", s.gpus_per_node},
          {"nics_per_node", s.nics_per_node},
          {"nic_gb_s", s.nic_gb_s},
          {"scale_out", tier_json(s.scale_out)},
          {"topology",
           {{"scale_up_kind", std::string(to_string(s.topology.scale_up_kind))},
            {"nvls", s.topology.nvls},
            {"fabric", std::string(to_string(s.topology.fabric))},
            {"oversubscription", s.topology.oversubscription},
            {"in_network_reduction", s.topology.in_network_reduction},
            {"pxn", s.topology.pxn},
            {"nccl_arch", std::string(to_string(s.topology.arch))},
            {"pcie_switch_gpus", s.topology.pcie_switch_gpus},
            {"pcie_bridge_gb_s", s.topology.pcie_bridge_gb_s}}},
          {"comm_compute_slowdown", s.comm_compute_slowdown},
          {"sustained_kernel_speed", s.sustained_kernel_speed},
          {"sustained_attention_speed", s.attention_kernel_speed()},
          {"host_link_name", s.host_link_name},
          {"host_link_gb_s", s.host_link_gb_s},
          {"host_link_efficiency", s.host_link_efficiency},
          {"host_adam_params_per_s", s.host_adam_params_per_s},
          {"host_op_dispatch_us", s.host_op_dispatch_us},
          {"host_sync_us", s.host_sync_us},
          {"host_grouped_gemm_expert_us", s.host_grouped_gemm_expert_us},
          {"straggler_cv", s.straggler_cv},
          {"efficiency_db", s.efficiency_db}};
}

}  // namespace calisim::python
