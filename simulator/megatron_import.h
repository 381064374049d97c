// Megatron-LM launch arguments → calisim model and strategy documents.
//
// Contract: import_megatron(script, file, options) reads the options of a launch script
// (simulator/launch_script.h) the way Megatron-LM's arguments.py and validate_args read them —
// Megatron's defaults where a flag is absent (LayerNorm, learned positions, tied embeddings, biases,
// dropout 0.1, the allgather dispatcher, expert TP = TP, ...), the last occurrence of a repeated
// flag — and returns the model and strategy JSON documents that describe the same run, with the
// origin of every field. The GPU count comes from the launcher (torchrun --nproc-per-node ×
// --nnodes, srun / sbatch --nodes × --ntasks-per-node, mpirun -np) unless options.world_size
// gives it. The documents are not validated here: parse_model / parse_strategy / validate_layout
// do that, and field_flags lets their messages name the flag that set a field.
//
// Errors are InputError(file, "line L: --flag", what was expected): a value that is not a number,
// a shell reference left unexpanded in a flag that is read, a missing required flag, a setting
// calisim does not model. Flags that change performance in ways calisim does not model are
// returned in not_modelled; every other flag the training script receives in not_read.
// Pure function.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simulator/launch_script.h"

namespace calisim {

// The vocabulary of a tokenizer that --tokenizer-model names, as Megatron's tokenizer would count
// it, and the file it was counted in.
struct TokenizerVocab {
  long long size = 0;
  std::string file;
};

struct MegatronImportOptions {
  std::optional<long long> world_size;  // GPUs, when not (or not as wanted) in the launcher lines
  std::optional<long long> vocab_size;  // the tokenizer's vocabulary, when the script cannot tell it
  // Counts the vocabulary of --tokenizer-model's tokenizer (I/O lives with the caller); nullopt
  // when it cannot be read there.
  std::function<std::optional<TokenizerVocab>(const std::string& tokenizer_model)> tokenizer_vocab;
};

struct MegatronSetting {
  std::string field;  // "model.layer_num", "strategy.tp_size"
  nlohmann::json value;
  std::string origin;  // "--num-layers (line 12)", "Megatron default", ...
};

struct MegatronImport {
  nlohmann::json model = nlohmann::json::object();
  nlohmann::json strategy = nlohmann::json::object();
  std::vector<MegatronSetting> settings;           // in the order set
  // "strategy.tp_size" -> "line 4: --tensor-model-parallel-size" (the flag alone when the field
  // took Megatron's default)
  std::map<std::string, std::string> field_flags;
  std::vector<std::string> not_modelled;           // "--delay-wgrad-compute (line 40): why"
  std::vector<std::string> not_read;               // "--lr" (the training script's flags calisim does not read)
  std::vector<std::string> notes;                  // repeated flags, approximations: shown as warnings
};

MegatronImport import_megatron(const LaunchScript& script, const std::string& file,
                               const MegatronImportOptions& options);

}  // namespace calisim
