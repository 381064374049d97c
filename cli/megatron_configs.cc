#include "cli/megatron_configs.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "cli/table.h"
#include "core/error.h"
#include "simulator/config_loader.h"

namespace calisim::cli {
namespace {

// A shell variable name, or a positional parameter's number (the script's arguments: 1, 2, ...).
bool identifier(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) return s != "0";
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// Re-throws a loader error about a field the script set with the flag (and line) that set it.
// Model and strategy fields have distinct names, so the field tells its document.
[[noreturn]] void rethrow_with_flag(const InputError& e, const MegatronImport& imp) {
  const std::string& where = e.where();
  const std::string field = where.substr(0, where.find_first_of(".["));
  for (const char* section : {"strategy", "model"}) {
    const auto it = imp.field_flags.find(std::string(section) + "." + field);
    if (it != imp.field_flags.end()) {
      throw InputError(e.file(), it->second + " (" + section + "." + where + ")", e.problem());
    }
  }
  throw e;
}

std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::optional<long long> tokenizer_json_vocab(const nlohmann::json& doc) {
  // len(tokenizer) of a Hugging Face fast tokenizer: its ids run from 0, base vocabulary and added
  // tokens together, so the count is the largest id + 1 (BPE / WordPiece: {token: id}; Unigram:
  // [[token, score], ...] in id order).
  long long top = -1;
  if (!doc.is_object() || !doc.contains("model") || !doc["model"].is_object()) return std::nullopt;
  const nlohmann::json& vocab = doc["model"].value("vocab", nlohmann::json());
  if (vocab.is_object()) {
    for (const auto& [token, id] : vocab.items()) {
      if (id.is_number_integer()) top = std::max(top, id.get<long long>());
    }
  } else if (vocab.is_array()) {
    top = static_cast<long long>(vocab.size()) - 1;
  } else {
    return std::nullopt;
  }
  if (doc.contains("added_tokens") && doc["added_tokens"].is_array()) {
    for (const auto& t : doc["added_tokens"]) {
      if (t.is_object() && t.contains("id") && t["id"].is_number_integer()) top = std::max(top, t["id"].get<long long>());
    }
  }
  if (top < 0) return std::nullopt;
  return top + 1;
}

std::optional<TokenizerVocab> local_tokenizer_vocab(const std::string& tokenizer_model, const std::string& script) {
  namespace fs = std::filesystem;
  std::vector<fs::path> tries;
  for (const fs::path& base : {fs::path(tokenizer_model), fs::path(script).parent_path() / tokenizer_model}) {
    std::error_code ec;
    if (fs::is_directory(base, ec)) tries.push_back(base / "tokenizer.json");
    else if (base.filename() == "tokenizer.json") tries.push_back(base);
    else if (fs::is_regular_file(base, ec)) tries.push_back(base.parent_path() / "tokenizer.json");  // tokenizer.model
  }
  for (const fs::path& p : tries) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    nlohmann::json doc;
    try {
      doc = read_json_file(p.string());
    } catch (const InputError&) {
      continue;  // not a tokenizer file we can read: the import asks for --vocab-size
    }
    if (const auto n = tokenizer_json_vocab(doc)) return TokenizerVocab{*n, p.string()};
  }
  return std::nullopt;
}

MegatronImport read_megatron(const MegatronInputs& in) {
  if (!std::filesystem::exists(in.script)) throw InputError(in.script, "", "file not found");
  const std::string text = read_text_file(in.script);  // a directory or an unreadable file: its error
  std::map<std::string, std::string> vars;
  for (const auto& v : in.vars) {
    const auto eq = v.find('=');
    if (eq == std::string::npos || !identifier(v.substr(0, eq))) {
      throw InputError("<command line>", "--var " + v, "expected NAME=VALUE with a shell variable name (or N=VALUE for the script's argument $N)");
    }
    vars[v.substr(0, eq)] = v.substr(eq + 1);
  }
  MegatronImportOptions opt;
  opt.world_size = in.world_size;
  opt.vocab_size = in.vocab_size;
  opt.tokenizer_vocab = [&in](const std::string& model) { return local_tokenizer_vocab(model, in.script); };
  // A sourced file is looked up as written when absolute, else beside the script, then in the
  // working directory (where a launcher usually runs from).
  const std::filesystem::path dir = std::filesystem::path(in.script).parent_path();
  const SourceReader source = [&dir](const std::string& path) -> std::optional<std::string> {
    std::vector<std::filesystem::path> tries{path};
    if (std::filesystem::path(path).is_relative()) tries.insert(tries.begin(), dir / path);
    for (const auto& p : tries) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(p, ec)) continue;
      try {
        return read_text_file(p.string());
      } catch (const InputError&) {
        // unreadable: the next place, else the reader's note that the file was not followed
      }
    }
    return std::nullopt;
  };
  return import_megatron(read_launch_script(text, vars, source), in.script, opt);
}

std::optional<long long> override_integer(const std::vector<std::string>& overrides, const std::string& path) {
  std::optional<long long> v;
  for (const auto& o : overrides) {
    if (o.rfind(path + "=", 0) != 0) continue;
    const std::string text = o.substr(path.size() + 1);
    char* end = nullptr;
    const long long n = std::strtoll(text.c_str(), &end, 10);
    // Anything else is left to the loader, which reports it with the field's path.
    if (!text.empty() && *end == '\0' && n > 0) v = n;
  }
  return v;
}

std::string megatron_label(const std::string& script) { return script + " (Megatron arguments)"; }

RunConfigs megatron_run_configs(const MegatronImport& imp, const std::string& script, const std::string& system,
                                const std::vector<std::string>& overrides) {
  RunDocs docs;
  docs.model_file = docs.strategy_file = megatron_label(script);
  docs.model = imp.model;
  docs.strategy = imp.strategy;
  docs.model_name = std::filesystem::path(script).stem().string();
  if (!system.empty()) {
    docs.system_file = resolve_config(ConfigKind::system, system);
    docs.system = read_json_file(docs.system_file);
  }
  RunConfigs rc;
  try {
    rc = parse_run_docs(std::move(docs), overrides);
  } catch (const InputError& e) {
    rethrow_with_flag(e, imp);
  }
  const std::vector<std::string> script_warnings = megatron_warnings(imp);
  rc.warnings.insert(rc.warnings.begin(), script_warnings.begin(), script_warnings.end());
  return rc;
}

std::string ConfigChoice::describe() const {
  return megatron.empty() ? fmt::format("model {} with strategy {}", model, strategy)
                          : fmt::format("Megatron script {}", megatron);
}

void add_config_choice_options(CLI::App* app, ConfigChoice& c) {
  app->add_option("--model", c.model, "model: shipped name (calisim configs list models) or path to a JSON file");
  app->add_option("--strategy", c.strategy, "strategy: shipped name or path");
  app->add_option("--megatron", c.megatron,
                  "a Megatron-LM launch script (or file of its flags) instead of --model and --strategy (see calisim "
                  "configs import-megatron)");
  app->add_option("--var", c.vars, "with --megatron: NAME=VALUE for a shell variable of the script")->take_all();
}

RunConfigs load_chosen_configs(const ConfigChoice& c, const std::string& system,
                               const std::vector<std::string>& overrides) {
  if (c.megatron.empty()) {
    if (c.model.empty() || c.strategy.empty()) {
      throw InputError("<command line>", c.model.empty() ? "--model" : "--strategy",
                       "required: give --model and --strategy, or --megatron SCRIPT");
    }
    if (!c.vars.empty()) throw InputError("<command line>", "--var", "goes with --megatron SCRIPT");
    return load_run_configs(c.model, c.strategy, system, overrides);
  }
  if (!c.model.empty() || !c.strategy.empty()) {
    throw InputError("<command line>", c.model.empty() ? "--strategy" : "--model",
                     "--megatron gives the model and the strategy: drop --model / --strategy (or override single "
                     "fields with --set)");
  }
  MegatronInputs in;
  in.script = c.megatron;
  in.vars = c.vars;
  in.world_size = override_integer(overrides, "strategy.world_size");
  in.vocab_size = override_integer(overrides, "model.vocab_size");
  return megatron_run_configs(read_megatron(in), c.megatron, system, overrides);
}

std::vector<std::string> megatron_warnings(const MegatronImport& imp) {
  std::vector<std::string> w = imp.notes;
  for (const auto& n : imp.not_modelled) w.push_back("not modelled: " + n);
  if (!imp.not_read.empty()) {
    w.push_back(fmt::format("{} flag(s) of the script are not read (no effect on calisim's results; `calisim configs "
                            "import-megatron` lists them)",
                            imp.not_read.size()));
  }
  return w;
}

std::string megatron_report_text(const MegatronImport& imp, const std::string& script) {
  std::string out = fmt::format("calisim configs import-megatron: {}\n\n", script);
  Table t({"field", "value", "from"});
  for (const auto& s : imp.settings) t.add_row({s.field, value_text(s.value), s.origin});
  out += t.render() + "\n";
  if (!imp.not_modelled.empty()) {
    out += "not modelled (calisim prices these as described):\n";
    for (const auto& n : imp.not_modelled) out += "  " + n + "\n";
  }
  if (!imp.not_read.empty()) {
    std::string line = fmt::format("not read ({} flags; no effect on step time or memory in calisim):", imp.not_read.size());
    std::string wrapped;
    for (const auto& f : imp.not_read) {
      if (line.size() + f.size() + 1 > 100) {
        wrapped += line + "\n";
        line = " ";
      }
      line += " " + f;
    }
    out += wrapped + line + "\n";
  }
  for (const auto& n : imp.notes) out += "warning: " + n + "\n";
  return out;
}

nlohmann::json megatron_report_json(const MegatronImport& imp, const std::string& script) {
  nlohmann::json settings = nlohmann::json::array();
  for (const auto& s : imp.settings) settings.push_back({{"field", s.field}, {"value", s.value}, {"from", s.origin}});
  return {{"script", script},         {"model", imp.model},         {"strategy", imp.strategy},
          {"settings", settings},     {"not_modelled", imp.not_modelled}, {"not_read", imp.not_read},
          {"warnings", imp.notes}};
}

}  // namespace calisim::cli
