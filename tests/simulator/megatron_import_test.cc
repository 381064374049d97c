// Megatron-LM flags → calisim configs: Megatron's defaults, its derived values, and the refusals.
#include <gtest/gtest.h>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/megatron_import.h"

namespace calisim {
namespace {

// The smallest argument file Megatron trains from (plus a vocabulary), on `gpus` GPUs.
const std::string kMinimal =
    "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 2 --bf16 "
    "--tokenizer-type NullTokenizer --vocab-size 32000\n";

MegatronImport import_text(const std::string& text, std::optional<long long> world = 8) {
  MegatronImportOptions opt;
  opt.world_size = world;
  return import_megatron(read_launch_script(text), "run.sh", opt);
}

std::string origin(const MegatronImport& imp, const std::string& field) {
  for (const auto& s : imp.settings) {
    if (s.field == field) return s.origin;
  }
  return "(not set)";
}

std::string error_of(const std::string& text, std::optional<long long> world = 8) {
  try {
    import_text(text, world);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MegatronImport, MegatronDefaultsWhereTheScriptIsSilent) {
  const MegatronImport imp = import_text(kMinimal);
  const auto& m = imp.model;
  const auto& s = imp.strategy;
  EXPECT_EQ(m["norm_type"], "layernorm");
  EXPECT_EQ(m["position_embedding_type"], "learned_absolute");
  EXPECT_EQ(m["untie_embeddings_and_output_weights"], false);
  EXPECT_EQ(m["add_bias_linear"], true);
  EXPECT_EQ(m["intermediate_size"], 4 * 1024);
  EXPECT_EQ(m["kv_head_num"], 16);
  EXPECT_EQ(m["use_swiglu"], false);
  EXPECT_EQ(m["vocab_size"], 32001);  // NullTokenizer adds the end-of-document token
  EXPECT_EQ(s["enable_dropout"], true);  // attention and hidden dropout 0.1
  EXPECT_EQ(s["zero_state"], 0);
  EXPECT_EQ(s["enable_sequence_parallel"], false);
  EXPECT_EQ(s["tp_size"], 1);
  EXPECT_EQ(s["global_batch_size"], 2 * 8);  // one micro-batch per data-parallel rank
  EXPECT_EQ(s["world_size"], 8);
  EXPECT_EQ(s["dtype"], "bf16");
  EXPECT_FALSE(s.contains("cross_entropy_loss_fusion"));
  EXPECT_EQ(origin(imp, "model.norm_type"), "Megatron default (LayerNorm)");
  EXPECT_EQ(origin(imp, "model.layer_num"), "--num-layers (line 1)");
  // The documents load and validate as written.
  ModelConfig model = parse_model(imp.model, "run.sh", nullptr);
  StrategyConfig strategy = parse_strategy(imp.strategy, "run.sh");
  validate_layout(model, strategy, "run.sh", "run.sh");
  EXPECT_EQ(strategy.dp_size, 8);
  EXPECT_EQ(strategy.micro_batch_num, 1);
}

TEST(MegatronImport, DerivedValuesFollowMegatronsRules) {
  // --swiglu without --ffn-hidden-size: int(4h·2/3 / 64)·64 = 10880 for h 4096.
  const MegatronImport a = import_text(
      "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --micro-batch-size 1 --bf16 "
      "--vocab-size 32000 --swiglu --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
      "--num-layers-per-virtual-pipeline-stage 2 --sequence-parallel --global-batch-size 64 "
      "--attention-dropout 0 --hidden-dropout 0.0 --grad-reduce-in-bf16 --cross-entropy-loss-fusion\n",
      64);
  EXPECT_EQ(a.model["intermediate_size"], 10880);
  EXPECT_EQ(a.strategy["interleaving_size"], 4);  // 32 layers / pp 4 / 2 per chunk
  EXPECT_EQ(a.strategy["enable_sequence_parallel"], true);
  EXPECT_EQ(a.strategy["enable_dropout"], false);
  EXPECT_EQ(a.strategy["grad_reduce_in_bf16"], true);
  EXPECT_EQ(a.strategy["use_fp32_accum_grad"], false);
  EXPECT_EQ(a.strategy["cross_entropy_fusion_impl"], "native");  // Megatron's default implementation
  // Megatron's validate_args asserts that layers divide over pp and into whole chunks.
  EXPECT_NE(error_of(kMinimal + "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 3\n")
                .find("2 layers per pipeline stage do not divide into chunks of 3"),
            std::string::npos);
  EXPECT_NE(error_of(kMinimal + "--pipeline-model-parallel-size 2 --account-for-loss-in-pipeline-split "
                                "--num-layers-per-virtual-pipeline-stage 1\n")
                .find("5 layers (with the counted embedding / loss) do not divide over pp 2"),
            std::string::npos);
  // Megatron's validate_args refuses chunk sizes with explicit first / last stage sizes.
  EXPECT_NE(error_of(kMinimal + "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 1 "
                                "--num-layers-per-virtual-pipeline-stage 1\n")
                .find("Megatron refuses it with --decoder-first/last-pipeline-num-layers"),
            std::string::npos);
  // --sequence-parallel at tp 1: Megatron turns it off.
  const MegatronImport b = import_text(kMinimal + "--sequence-parallel\n");
  EXPECT_EQ(b.strategy["enable_sequence_parallel"], false);
  // --num-query-groups without --group-query-attention: full multi-head attention, and a note.
  const MegatronImport c = import_text(kMinimal + "--num-query-groups 4\n");
  EXPECT_EQ(c.model["kv_head_num"], 16);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("no effect without --group-query-attention"), std::string::npos);
  const MegatronImport d = import_text(kMinimal + "--group-query-attention --num-query-groups 4\n");
  EXPECT_EQ(d.model["kv_head_num"], 4);
  // fp16 keeps 16-bit gradients unless told otherwise.
  std::string fp16 = kMinimal;
  fp16.replace(fp16.find("--bf16"), 6, "--fp16");
  EXPECT_EQ(import_text(fp16).strategy["grad_reduce_in_bf16"], true);
  EXPECT_FALSE(import_text(fp16 + "--accumulate-allreduce-grads-in-fp32\n").strategy.contains("grad_reduce_in_bf16"));
}

TEST(MegatronImport, RepeatedFlagsTakeTheLastAsArgparseDoes) {
  const MegatronImport imp = import_text(kMinimal + "--seq-length 4096\n");
  EXPECT_EQ(imp.strategy["seq_len"], 4096);
  EXPECT_EQ(origin(imp, "strategy.seq_len"), "--seq-length (line 2)");
  ASSERT_FALSE(imp.notes.empty());
  EXPECT_NE(imp.notes[0].find("--seq-length is given 2 times with different values (lines 1, 2)"), std::string::npos)
      << imp.notes[0];
}

TEST(MegatronImport, MixtureOfExpertsAndTheLayerPattern) {
  const std::string moe =
      "--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --bf16 "
      "--vocab-size 32000 --num-experts 16 --moe-ffn-hidden-size 512 --tensor-model-parallel-size 2 "
      "--sequence-parallel --expert-model-parallel-size 4 ";
  const MegatronImport a = import_text(moe + "--moe-layer-freq '([0]*2+[1]*6)' --moe-grouped-gemm "
                                             "--moe-token-dispatcher-type alltoall\n",
                                       16);
  EXPECT_EQ(a.model["model_type"], "moe");
  EXPECT_EQ(a.model["topk"], 2);  // Megatron's default
  EXPECT_EQ(a.model["dense_layers"], 2);
  EXPECT_EQ(a.strategy["etp_size"], 2);  // expert TP defaults to TP
  EXPECT_EQ(a.strategy["dispatch_probs"], true);
  const MegatronImport b = import_text(moe + "\n", 16);
  EXPECT_EQ(b.strategy["moe_token_dispatcher_type"], "allgather");  // Megatron's default
  EXPECT_FALSE(b.model.contains("dense_layers"));
  EXPECT_FALSE(b.strategy.contains("dispatch_probs"));
  // Every other layer MoE: dense layers after MoE ones, which calisim does not model.
  EXPECT_NE(error_of(moe + "--moe-layer-freq 2\n", 16).find("makes layer 2 dense after MoE layers"), std::string::npos);
  EXPECT_NE(error_of(moe + "--moe-layer-freq [0]*2+[1]*5\n", 16).find("the pattern has 7 entries and the model 8"),
            std::string::npos);
  EXPECT_NE(error_of(moe + "--moe-layer-freq \"[0]*2 + [1]*6\"\n", 16).find("no spaces"), std::string::npos);
}

TEST(MegatronImport, RecomputeSettings) {
  const std::string base = kMinimal;
  const MegatronImport block = import_text(base + "--recompute-granularity full --recompute-method block "
                                                  "--recompute-num-layers 2\n");
  EXPECT_EQ(block.strategy["recompute_granularity"], "full_block");
  EXPECT_EQ(block.strategy["recompute_layer_num"], 2);
  const MegatronImport uniform = import_text(base + "--recompute-granularity full --recompute-method uniform "
                                                    "--recompute-num-layers 2\n");
  EXPECT_EQ(uniform.strategy["recompute_layer_num"], 4);  // every layer
  ASSERT_EQ(uniform.notes.size(), 1u);
  EXPECT_NE(uniform.notes[0].find("checkpoints groups of 2 layers"), std::string::npos);
  const MegatronImport selective = import_text(base + "--recompute-activations\n");
  EXPECT_EQ(selective.strategy["recompute_granularity"], "sdp_only");  // core_attn, Megatron's default module
  const MegatronImport modules = import_text(base + "--recompute-granularity selective --recompute-modules "
                                                    "layernorm mlp\n");
  EXPECT_EQ(modules.strategy["recompute_granularity"], "selective_recompute");
  EXPECT_EQ(modules.strategy["megatron_recompute_modules"], nlohmann::json::array({"layernorm", "mlp"}));
  EXPECT_NE(error_of(base + "--recompute-granularity full\n").find("needs --recompute-method"), std::string::npos);
  // --recompute-activations wins over --recompute-granularity, as in Megatron's validate_args.
  EXPECT_EQ(import_text(base + "--recompute-granularity full --recompute-activations\n").strategy["recompute_granularity"],
            "sdp_only");
  // Activation offloading does not depend on recompute.
  EXPECT_EQ(import_text(base + "--cpu-offloading --cpu-offloading-num-layers 2\n").strategy["cpu_offloading_num_layers"],
            2);
  EXPECT_NE(error_of(base + "--recompute-granularity selective --recompute-modules core_attn mlp\n")
                .find("core_attn together with other modules is not modelled"),
            std::string::npos);
}

TEST(MegatronImport, TheGpuCountComesFromTheLauncher) {
  const std::string args = " pretrain_gpt.py " + kMinimal;
  EXPECT_EQ(import_text("torchrun --nproc_per_node 8 --nnodes 4" + args, std::nullopt).strategy["world_size"], 32);
  EXPECT_EQ(import_text("#SBATCH --nodes=2\nsrun torchrun --nproc-per-node=4" + args, std::nullopt).strategy["world_size"],
            8);
  EXPECT_EQ(import_text("#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\nsrun python" + args, std::nullopt)
                .strategy["world_size"],
            32);
  EXPECT_EQ(import_text("mpirun -np 16 python" + args, std::nullopt).strategy["world_size"], 16);
  // --world-size (the options) wins over the launcher.
  EXPECT_EQ(import_text("torchrun --nproc_per_node 8" + args, 64).strategy["world_size"], 64);
  EXPECT_NE(error_of("python" + args, std::nullopt).find("give it with --world-size N"), std::string::npos);
  EXPECT_NE(error_of("torchrun --nnodes 1:4 --nproc_per_node 8" + args, std::nullopt).find("range of node counts"),
            std::string::npos);
}

TEST(MegatronImport, RefusalsNameTheLineTheFlagAndTheFix) {
  EXPECT_EQ(error_of("python train.py --num-layers $LAYERS --hidden-size 8\n"),
            "run.sh: line 1: --num-layers: its value \"$LAYERS\" uses the shell variable LAYERS, which the script "
            "does not set; give it with --var LAYERS=VALUE");
  EXPECT_NE(error_of("--num-layers $(cat n.txt)\n").find("is the output of a shell command"), std::string::npos);
  EXPECT_EQ(error_of("--num-layers four\n"), "run.sh: line 1: --num-layers: expected an integer >= 1, got \"four\"");
  EXPECT_NE(error_of("--hidden-size 8\n").find("run.sh: --num-layers: missing"), std::string::npos);
  std::string fp32 = kMinimal;
  fp32.erase(fp32.find("--bf16"), 6);
  EXPECT_NE(error_of(fp32).find("Megatron trains in fp32"), std::string::npos);
  std::string hf = kMinimal;
  hf.replace(hf.find("NullTokenizer --vocab-size 32000"), 32, "HuggingFaceTokenizer");
  EXPECT_NE(error_of(hf).find("the vocabulary size of tokenizer HuggingFaceTokenizer is not in the script"),
            std::string::npos);
  EXPECT_NE(error_of("echo hello\n").find("no Megatron-LM training arguments found"), std::string::npos);
  EXPECT_NE(error_of(kMinimal + "--position-embedding-type relative\n").find("\"relative\" is not modelled"),
            std::string::npos);
}

// Megatron's kernel-fusion switches turn the matching calisim fusion off, each from its flag.
TEST(MegatronImport, FusionSwitchesReachTheStrategy) {
  const MegatronImport imp = import_text(kMinimal + "--swiglu --no-bias-swiglu-fusion --no-rope-fusion "
                                                    "--position-embedding-type rope\n");
  EXPECT_EQ(imp.strategy["use_fused_swiglu"], false);
  EXPECT_EQ(imp.strategy["use_fused_rope"], false);
  EXPECT_EQ(origin(imp, "strategy.use_fused_rope"), "--no-rope-fusion (line 2)");
  EXPECT_TRUE(imp.not_modelled.empty());
  EXPECT_FALSE(import_text(kMinimal).strategy.contains("use_fused_rope"));  // fused: Megatron's default
}

TEST(MegatronImport, WhatIsNotModelledOrNotReadIsListed) {
  const MegatronImport imp = import_text(kMinimal + "--lr 3e-4 --delay-wgrad-compute --data-path /x\n");
  ASSERT_EQ(imp.not_modelled.size(), 1u);
  EXPECT_EQ(imp.not_modelled[0].rfind("--delay-wgrad-compute (line 2): ", 0), 0u) << imp.not_modelled[0];
  EXPECT_EQ(imp.not_read, (std::vector<std::string>{"--lr", "--data-path"}));
  EXPECT_EQ(imp.field_flags.at("strategy.tp_size"), "--tensor-model-parallel-size");
}

// Megatron's partial distributed optimizer: --num-distributed-optimizer-instances N shards the
// state inside N instances of the DP group (calisim's hybrid sharding), and a script whose DP
// group does not split that way is refused when the strategy is validated.
TEST(MegatronImport, DistributedOptimizerInstancesAreHybridSharding) {
  const MegatronImport imp =
      import_text(kMinimal + "--use-distributed-optimizer --num-distributed-optimizer-instances 2\n");
  EXPECT_EQ(imp.strategy["dp_replicate_size"], 2);
  EXPECT_EQ(imp.strategy["zero_state"], 1);
  EXPECT_EQ(origin(imp, "strategy.dp_replicate_size"), "--num-distributed-optimizer-instances (line 2)");
  ModelConfig model = parse_model(imp.model, "run.sh", nullptr);
  StrategyConfig strategy = parse_strategy(imp.strategy, "run.sh");
  validate_layout(model, strategy, "run.sh", "run.sh");
  EXPECT_EQ(strategy.dp_replicate_size, 2);
  EXPECT_NE(error_of(kMinimal + "--num-distributed-optimizer-instances 0\n").find("--num-distributed-optimizer-instances"),
            std::string::npos);
  const MegatronImport three =
      import_text(kMinimal + "--use-distributed-optimizer --num-distributed-optimizer-instances 3\n");
  StrategyConfig odd = parse_strategy(three.strategy, "run.sh");
  try {
    validate_layout(model, odd, "run.sh", "run.sh");
    ADD_FAILURE() << "8 data-parallel ranks in 3 instances were accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "dp_replicate_size");
  }
}


}  // namespace
}  // namespace calisim
