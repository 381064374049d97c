// Command-line inputs shared by `calisim search` and `calisim sweep`: the model, a base strategy
// (a file or calisim's defaults) with the batch and sequence length, the system, and the lists
// that span the search space.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "simulator/model_config.h"
#include "simulator/search_space.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim::cli {

struct SpaceArgs {
  std::string model, system, strategy;
  std::string megatron;                   // a Megatron-LM launch script: model, base strategy, batch
  std::vector<std::string> megatron_vars;  // its --var NAME=VALUE
  int world_size = 0;
  long long global_batch_size = 0, seq_len = 0;
  std::vector<int> tp, pp, vpp, cp, ep, zero;
  std::vector<int> tp_2d_rows;  // 2D SUMMA grid rows to try beside 1D TP (empty: 1D only)
  std::vector<int> cp_2d_rows;  // 2D CP grid rows to try beside 1D CP (empty: 1D only)
  std::vector<int> etp;         // expert TP sizes (empty: the base strategy's etp_size)
  std::vector<std::string> cp_comm_types;  // CP communication types (empty: the base strategy's)
  std::vector<std::string> dispatchers;    // MoE token dispatchers (empty: the base strategy's)
  std::vector<int> dp_replicate;  // hybrid-sharding replica counts (empty: the base strategy's dp_replicate_size)
  std::vector<long long> mbs;
  std::vector<std::string> recompute, overrides;
  std::vector<std::string> orders;  // rank orders or order lists (megatron, tp_first, all)
  double memory_margin_gb = 0;
  bool allocated_memory = false;
  int threads = 0;
};

// Adds --model, --system, --strategy, --megatron, --var, --seq-len, --tp ... --zero, --memory-margin-gb,
// --allocated-memory, --threads and --set; with `batch`, also --world-size and --global-batch-size.
void add_space_options(CLI::App* app, SpaceArgs& a, bool batch);

struct SpaceInputs {
  ModelConfig model;
  StrategyConfig base;
  SystemConfig system;
  std::string system_file;
  SearchSpace lists;  // the user's lists (empty = default), world size and batch set
  // Config fields (model and base strategy, --set included) that are accepted but not modeled,
  // worded as `calisim simulate` words them; the commands print them and list them in --json.
  std::vector<std::string> warnings;
};

// Resolves, reads, applies --set and parses. `require_batch` demands world size and batch.
SpaceInputs load_space_inputs(const SpaceArgs& a, bool require_batch);

}  // namespace calisim::cli
