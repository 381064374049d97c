#include "simulator/rank_params.h"

#include "simulator/model_stats.h"

namespace calisim {
namespace {

double attention_per_rank(const ModelConfig& m, double t) {
  const double all = dense_layer_params(m).attention;
  const double replicated = mla_replicated_params(m);
  return (all - replicated) / t + replicated;
}

}  // namespace

RankParams dense_layer_params_per_rank(const ModelConfig& m, const StrategyConfig& st) {
  const LayerParams lp = dense_layer_params(m);
  const double t = st.tp_size;
  return {attention_per_rank(m, t) + lp.mlp / t + lp.norms, 0.0};
}

RankParams moe_layer_params_per_rank(const ModelConfig& m, const StrategyConfig& st) {
  const LayerParams lp = moe_layer_params(m);
  const double t = st.tp_size;
  const double shared = shared_expert_params(m);
  const double router = static_cast<double>(m.hidden_size) * m.expert_num;
  const double experts_per_rank = static_cast<double>(m.expert_num) / st.ep_size;
  return {attention_per_rank(m, t) + lp.norms + router + shared / t,
          experts_per_rank * routed_expert_params(m) / st.etp_size};
}

RankParams mtp_depth_params_per_rank(const ModelConfig& m, const StrategyConfig& st) {
  RankParams p = m.mtp_layer_is_moe() ? moe_layer_params_per_rank(m, st) : dense_layer_params_per_rank(m, st);
  const double h = static_cast<double>(m.hidden_size);
  const double norm = (m.norm_type == NormType::layernorm ? 2.0 : 1.0) * h;  // as model_stats counts one norm
  p.dense += 2.0 * h * h / st.tp_size + 3.0 * norm;
  return p;
}

}  // namespace calisim
