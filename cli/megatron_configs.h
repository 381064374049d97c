// Megatron-LM launch scripts as calisim configs, for `calisim configs import-megatron` and
// `calisim simulate --megatron`.
//
// read_megatron reads the script (InputError when missing), applies --var NAME=VALUE, and maps
// its flags (simulator/megatron_import.h). megatron_run_configs parses and validates the two
// documents after the --set overrides, naming the Megatron flag behind a field in every error
// ("line 12: --tensor-model-parallel-size (strategy.tp_size): ..."). The report functions print
// where every field came from, what is not modelled and which flags were not read.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cli/config_catalog.h"
#include "simulator/megatron_import.h"

namespace calisim::cli {

struct MegatronInputs {
  std::string script;                   // path of the launch script or argument file
  std::vector<std::string> vars;        // "NAME=VALUE", fixed for the script
  std::optional<long long> world_size;  // overrides the launcher's GPU count
  std::optional<long long> vocab_size;  // the tokenizer's vocabulary
};

MegatronImport read_megatron(const MegatronInputs& in);

// The vocabulary of a Hugging Face tokenizer.json as len(tokenizer) counts it (largest id + 1),
// nullopt for another format.
std::optional<long long> tokenizer_json_vocab(const nlohmann::json& doc);
// --tokenizer-model's tokenizer.json (the path itself, a directory holding it, or the folder of a
// tokenizer file it names; as written, then beside the script), counted; nullopt when none is
// readable here.
std::optional<TokenizerVocab> local_tokenizer_vocab(const std::string& tokenizer_model, const std::string& script);

// The positive integer a "--set path=N" gives (the last such), so that a script without a GPU
// count or a vocabulary still imports when the command line overrides them anyway.
std::optional<long long> override_integer(const std::vector<std::string>& overrides, const std::string& path);

// The label configs and messages name: "<script> (Megatron arguments)".
std::string megatron_label(const std::string& script);

// Parses and validates the imported documents (after `overrides`, as `--set` applies them) and,
// with a system, loads it too. rc.model_file / rc.strategy_file are the script's label.
RunConfigs megatron_run_configs(const MegatronImport& imp, const std::string& script, const std::string& system,
                                const std::vector<std::string>& overrides);

// Where a command's model and strategy come from: --model and --strategy, or --megatron SCRIPT
// (with --var NAME=VALUE). Shared by simulate, profile plan and calibrate.
struct ConfigChoice {
  std::string model, strategy, megatron;
  std::vector<std::string> vars;
  bool empty() const { return model.empty() && strategy.empty() && megatron.empty(); }
  // "model M with strategy S" or "Megatron script F", for descriptions.
  std::string describe() const;
};
void add_config_choice_options(CLI::App* app, ConfigChoice& c);
// Refuses a half or a mixed choice (InputError on "<command line>"), then loads as
// load_run_configs or megatron_run_configs does.
RunConfigs load_chosen_configs(const ConfigChoice& c, const std::string& system,
                               const std::vector<std::string>& overrides);

// The import as a table (origin of every field, not modelled, not read) and as JSON.
std::string megatron_report_text(const MegatronImport& imp, const std::string& script);
nlohmann::json megatron_report_json(const MegatronImport& imp, const std::string& script);

// Warnings for a simulation of an imported script: notes, what is not modelled, and how many
// flags were not read.
std::vector<std::string> megatron_warnings(const MegatronImport& imp);

}  // namespace calisim::cli
