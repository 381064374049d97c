#include "simulator/megatron_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <unordered_map>
#include <stdexcept>

#include "core/error.h"
#include "simulator/layer_placement.h"

namespace calisim {
namespace {

using nlohmann::json;

// Programs whose options set up the job rather than the training run.
bool launcher(const std::string& program) {
  static const std::set<std::string> k = {"torchrun", "srun", "sbatch", "salloc", "#SBATCH", "mpirun", "mpiexec",
                                          "deepspeed", "numactl", "nsys"};
  return k.count(program) > 0;
}
bool slurm(const std::string& program) {
  return program == "srun" || program == "sbatch" || program == "salloc" || program == "#SBATCH";
}

// Flags that change step time or memory in ways calisim does not model, and why (listed, not errors).
const std::map<std::string, std::string>& not_modelled_flags() {
  static const std::map<std::string, std::string> k = {
      {"--delay-wgrad-compute", "the weight-gradient GEMMs split out of the backward to overlap the EP exchange; "
                                "calisim overlaps the exchange with the layer's whole backward"},
      {"--defer-embedding-wgrad-compute", "the embedding's weight gradient is priced in its usual place"},
      {"--moe-permute-fusion", "the permute / unpermute ops are priced as the unfused kernels"},
      {"--moe-router-fusion", "the router's score and top-k ops are priced as the unfused kernels"},
      {"--moe-router-dtype", "the router runs in the training dtype"},
      {"--rampup-batch-size", "simulated at the final global batch size"},
      {"--no-persist-layer-norm", "norm kernels are priced by their memory traffic, whatever the kernel"},
      {"--no-bias-dropout-fusion", "the bias-dropout-add is priced as one fused op"},
      {"--no-masked-softmax-fusion", "matters for unfused attention only, priced by its memory traffic"},
      {"--qk-layernorm", "the query / key norms are not priced"},
      {"--add-qkv-bias", "biases are priced on all linears (add_bias_linear) or none"},
      {"--apply-layernorm-1p", "the (1 + γ) LayerNorm is priced as a plain LayerNorm"},
      {"--tp-comm-overlap-cfg", "TE userbuffers are priced with one overlap model for every GEMM"},
      {"--manual-gc", "host-side garbage collection is not modelled"},
      {"--moe-use-legacy-grouped-gemm", "grouped GEMMs are priced as TransformerEngine's"},
      {"--use-cpu-initialization", "initialisation is not part of a step"},
  };
  return k;
}

// A Python list expression as --moe-layer-freq takes it: "[0,1]", "[0]*3+[1]*58", "([1]*2)".
class PatternParser {
 public:
  explicit PatternParser(const std::string& s) : s_(s) {}
  std::vector<int> parse() {
    std::vector<int> v = sum();
    if (p_ != s_.size()) fail();
    return v;
  }

 private:
  [[noreturn]] void fail() { throw std::invalid_argument("not a list expression"); }
  static constexpr long long kMaxEntries = 1'000'000;
  std::vector<int> sum() {
    std::vector<int> v = product();
    while (p_ < s_.size() && s_[p_] == '+') {
      ++p_;
      const std::vector<int> w = product();
      if (static_cast<long long>(v.size() + w.size()) > kMaxEntries) fail();
      v.insert(v.end(), w.begin(), w.end());
    }
    return v;
  }
  std::vector<int> product() {
    std::vector<int> v = atom();
    while (p_ < s_.size() && s_[p_] == '*') {
      ++p_;
      const long long n = number();
      // A layer pattern has one entry per layer: anything longer than any model is refused
      // before it is built.
      if (n < 0 || n > kMaxEntries || (n > 0 && static_cast<long long>(v.size()) > kMaxEntries / n)) fail();
      std::vector<int> r;
      for (long long k = 0; k < n; ++k) r.insert(r.end(), v.begin(), v.end());
      v = std::move(r);
    }
    return v;
  }
  std::vector<int> atom() {
    if (p_ < s_.size() && s_[p_] == '(') {
      if (++depth_ > 64) fail();  // nesting no layer pattern needs
      ++p_;
      std::vector<int> v = sum();
      --depth_;
      if (p_ >= s_.size() || s_[p_] != ')') fail();
      ++p_;
      return v;
    }
    if (p_ >= s_.size() || s_[p_] != '[') fail();
    ++p_;
    std::vector<int> v;
    while (p_ < s_.size() && s_[p_] != ']') {
      v.push_back(static_cast<int>(number()));
      if (p_ < s_.size() && s_[p_] == ',') ++p_;
    }
    if (p_ >= s_.size()) fail();
    ++p_;
    return v;
  }
  long long number() {
    const size_t b = p_;
    while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) ++p_;
    if (b == p_ || p_ - b > 9) fail();  // no pattern needs a count of a billion
    return std::stoll(s_.substr(b, p_ - b));
  }
  const std::string& s_;
  size_t p_ = 0;
  int depth_ = 0;
};

// The script's options, read as argparse reads them: the last occurrence counts.
class Options {
 public:
  Options(const LaunchScript& s, std::string file) : s_(s), file_(std::move(file)) {
    // Occurrences by name, in script order, once: the import looks up some 150 names.
    for (size_t k = 0; k < s.options.size(); ++k) {
      (launcher(s.options[k].program) ? by_name_launcher_ : by_name_)[s.options[k].name].push_back(k);
    }
  }

  // The last occurrence of any of `names` among the training script's options (or the
  // launchers' with `launchers`), nullptr when absent. Marks the names read.
  const LaunchOption* find(std::initializer_list<const char*> names, bool launchers = false,
                           std::vector<std::string>* notes = nullptr) {
    const auto& index = launchers ? by_name_launcher_ : by_name_;
    std::vector<size_t> at_positions;
    for (const char* n : names) {
      const auto it = index.find(n);
      if (it != index.end()) at_positions.insert(at_positions.end(), it->second.begin(), it->second.end());
    }
    std::sort(at_positions.begin(), at_positions.end());
    std::vector<const LaunchOption*> all;
    for (size_t k : at_positions) all.push_back(&s_.options[k]);
    const LaunchOption* last = all.empty() ? nullptr : all.back();
    for (const char* n : names) read_.insert(n);
    if (notes && all.size() > 1) {
      std::set<std::vector<std::string>> distinct;
      std::string lines;
      for (const LaunchOption* o : all) {
        distinct.insert(o->values);
        lines += (lines.empty() ? "" : ", ") + std::to_string(o->line);
      }
      if (distinct.size() > 1) {
        notes->push_back(fmt::format("{} is given {} times with different values (lines {}); the last, {}, "
                                     "counts (as argparse reads it)",
                                     last->name, all.size(), lines, at(*last)));
      }
    }
    return last;
  }

  // Flags read for their (absent) effect: no cost of their own in calisim's model.
  void mark_read(std::initializer_list<const char*> names) {
    for (const char* n : names) read_.insert(n);
  }

  // "line 12: --num-layers" ("cluster.sh line 3: ..." for a flag in a sourced file).
  static std::string at(const LaunchOption& o) {
    return o.file.empty() ? fmt::format("line {}", o.line) : fmt::format("{} line {}", o.file, o.line);
  }
  std::string where(const LaunchOption& o) const { return at(o) + ": " + o.name; }
  std::string origin(const LaunchOption& o) const { return fmt::format("{} ({})", o.name, at(o)); }

  // The option's first value, checked for shell references left unexpanded.
  std::string value(const LaunchOption& o) const {
    if (o.values.empty()) throw InputError(file_, where(o), "expects a value, and none follows it");
    check_resolved(o, o.values.front());
    return o.values.front();
  }
  void check_resolved(const LaunchOption& o, const std::string& v) const {
    const std::string ref = unresolved_reference(v);
    if (ref.empty()) return;
    const std::string also = launcher(o.program) ? " (or give the GPU count with --world-size)" : "";
    if (ref.rfind("$((", 0) == 0) {
      throw InputError(file_, where(o),
                       fmt::format("its value \"{}\" holds the arithmetic {}, which calisim cannot evaluate (it reads "
                                   "+ - * / % and parentheses over integers and set variables, without overflow or "
                                   "division by zero); write the value, or set its variables with --var NAME=VALUE{}",
                                   v, ref, also));
    }
    if (ref[0] == '`' || ref.rfind("$(", 0) == 0) {
      throw InputError(file_, where(o),
                       fmt::format("its value \"{}\" is the output of a shell command, which calisim does not run; "
                                   "write the value into the script or set the variable it is assigned to with --var "
                                   "NAME=VALUE{}",
                                   v, also));
    }
    std::string name = ref.substr(1);
    const bool braced = !name.empty() && name[0] == '{';
    if (braced) name = name.substr(1, name.size() - 2);
    const auto cut = name.find_first_of(":-=+?[#%/,^");
    const bool form = braced && cut != std::string::npos && name.substr(cut) != "[@]" && name.substr(cut) != "[*]";
    if (cut != std::string::npos && cut > 0) name = name.substr(0, cut);
    if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) {
      throw InputError(file_, where(o),
                       fmt::format("its value \"{}\" is the script's argument {}, which calisim does not have; give it "
                                   "with --var {}=VALUE{}",
                                   v, name, name, also));
    }
    if (form) {
      throw InputError(file_, where(o),
                       fmt::format("its value \"{}\" holds {}, which calisim cannot expand ({} is not set, or the "
                                   "form is not one it reads: :- := :+ :? ,, ^^); write the value, or give {} with "
                                   "--var {}=VALUE{}",
                                   v, ref, name, name, name, also));
    }
    throw InputError(file_, where(o),
                     fmt::format("its value \"{}\" uses the shell variable {}, which the script does not set; give "
                                 "it with --var {}=VALUE{}",
                                 v, name, name, also));
  }
  long long integer(const LaunchOption& o, long long min) const {
    const std::string v = value(o);
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno == ERANGE || x < min) {
      throw InputError(file_, where(o), fmt::format("expected an integer >= {}, got \"{}\"", min, v));
    }
    return x;
  }
  double number(const LaunchOption& o) const {
    const std::string v = value(o);
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(x)) {
      throw InputError(file_, where(o), fmt::format("expected a number, got \"{}\"", v));
    }
    return x;
  }
  std::vector<std::string> list(const LaunchOption& o) const {
    for (const auto& v : o.values) check_resolved(o, v);
    return o.values;
  }
  [[noreturn]] void fail(const LaunchOption& o, const std::string& problem) const {
    throw InputError(file_, where(o), problem);
  }

  // The training script's options that nothing read, once each, in order.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const LaunchOption& o : s_.options) {
      if (launcher(o.program) || o.name.rfind("--", 0) != 0 || read_.count(o.name) ||
          not_modelled_flags().count(o.name) || !seen.insert(o.name).second) {
        continue;
      }
      out.push_back(o.name);
    }
    return out;
  }
  bool any_megatron_option() const {
    for (const LaunchOption& o : s_.options) {
      if (!launcher(o.program) &&
          (o.name == "--num-layers" || o.name == "--hidden-size" || o.name == "--num-attention-heads")) {
        return true;
      }
    }
    return false;
  }
  const LaunchScript& script() const { return s_; }

 private:
  const LaunchScript& s_;
  std::string file_;
  std::set<std::string> read_;
  std::unordered_map<std::string, std::vector<size_t>> by_name_, by_name_launcher_;
};

class Importer {
 public:
  Importer(const LaunchScript& s, const std::string& file, const MegatronImportOptions& opt)
      : o_(s, file), file_(file), opt_(opt) {}

  MegatronImport run() {
    if (!o_.any_megatron_option()) {
      throw InputError(file_, "", "no Megatron-LM training arguments found (no --num-layers, --hidden-size, ...): "
                                  "give a Megatron-LM launch script (pretrain_gpt.py and its flags) or a file of "
                                  "those flags");
    }
    r_.notes = o_.script().notes;
    world_size();
    model();
    strategy();
    for (const auto& [name, why] : not_modelled_flags()) {
      if (const LaunchOption* x = o_.find({name.c_str()})) {
        r_.not_modelled.push_back(fmt::format("{}: {}", o_.origin(*x), why));
      }
    }
    r_.not_read = o_.unread();
    return std::move(r_);
  }

 private:
  // ---- helpers -------------------------------------------------------------------------------
  const LaunchOption* find(std::initializer_list<const char*> names) { return o_.find(names, false, &r_.notes); }
  void set(json& doc, const char* section, const std::string& field, json value, const std::string& origin,
           const std::string& flag = "") {
    doc[field] = value;
    r_.settings.push_back({std::string(section) + "." + field, std::move(value), origin});
    if (flag.empty()) return;
    // The flag and, when the script gave it, its place: origin "--flag (line 4)" gives
    // "line 4: --flag" ("cluster.sh line 3: --flag" in a sourced file).
    std::string place = flag;
    const std::string prefix = flag + " (";
    if (origin.rfind(prefix, 0) == 0) {
      const size_t close = origin.find(')', prefix.size());
      const std::string at = origin.substr(prefix.size(), close == std::string::npos ? 0 : close - prefix.size());
      if (at.find("line ") != std::string::npos) place = at + ": " + flag;
    }
    r_.field_flags[std::string(section) + "." + field] = place;
  }
  void model_field(const std::string& f, json v, const std::string& origin, const std::string& flag = "") {
    set(r_.model, "model", f, std::move(v), origin, flag);
  }
  void strategy_field(const std::string& f, json v, const std::string& origin, const std::string& flag = "") {
    set(r_.strategy, "strategy", f, std::move(v), origin, flag);
  }
  // An integer flag's value and where it was given; nullopt when absent.
  struct IntFlag {
    long long value;
    std::string origin;  // "--num-layers (line 12)"
  };
  std::optional<IntFlag> int_flag(const char* name, long long min) {
    const LaunchOption* x = find({name});
    if (!x) return std::nullopt;
    return IntFlag{o_.integer(*x, min), o_.origin(*x)};
  }
  // A required integer flag.
  IntFlag required(const char* name, long long min) {
    if (auto v = int_flag(name, min)) return *v;
    throw InputError(file_, name, "missing: Megatron-LM needs it and the script does not give it");
  }
  // A boolean (store_true) flag into a strategy field, set only when present.
  bool flag_to_strategy(const char* name, const char* field) {
    const LaunchOption* x = find({name});
    if (x) strategy_field(field, true, o_.origin(*x), name);
    return x != nullptr;
  }

  // ---- world size ----------------------------------------------------------------------------
  long long launch_int(const LaunchOption& x) {
    std::string v = o_.value(x);
    // srun --gpus-per-node h100:8, --gres gpu:8, --nnodes 2:2 (elastic min:max, equal)
    if (x.name == "--gpus-per-node" || x.name == "--gres") {
      const auto colon = v.rfind(':');
      if (colon != std::string::npos) v = v.substr(colon + 1);
    }
    if ((x.name == "--nnodes" || x.name == "--nodes" || x.name == "-N") && v.find_first_of(":-") != std::string::npos) {
      const auto sep = v.find_first_of(":-");
      if (v.substr(0, sep) != v.substr(sep + 1)) {
        o_.fail(x, fmt::format("\"{}\" is a range of node counts (elastic); calisim needs one: give --world-size", v));
      }
      v = v.substr(0, sep);
    }
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 1) {
      o_.fail(x, fmt::format("expected a positive count, got \"{}\" (give the GPU count with --world-size)", v));
    }
    return n;
  }
  const LaunchOption* launch_option(std::initializer_list<const char*> names, bool (*program_ok)(const std::string&)) {
    const LaunchOption* last = nullptr;
    for (const LaunchOption& o : o_.script().options) {
      if (!program_ok(o.program)) continue;
      for (const char* n : names) {
        if (o.name == n) last = &o;
      }
    }
    return last;
  }

  void world_size() {
    if (opt_.world_size) {
      strategy_field("world_size", *opt_.world_size, "calisim --world-size", "the GPU count (--world-size)");
      world_ = *opt_.world_size;
      return;
    }
    const auto is_torchrun = [](const std::string& p) { return p == "torchrun"; };
    const auto is_slurm = [](const std::string& p) { return slurm(p); };
    const auto is_mpi = [](const std::string& p) { return p == "mpirun" || p == "mpiexec"; };
    const LaunchOption* nproc = launch_option({"--nproc_per_node", "--nproc-per-node"}, +is_torchrun);
    const LaunchOption* nnodes = launch_option({"--nnodes"}, +is_torchrun);
    const LaunchOption* nodes = launch_option({"--nodes", "-N"}, +is_slurm);
    const LaunchOption* per_node = launch_option({"--ntasks-per-node"}, +is_slurm);
    const LaunchOption* gpus = launch_option({"--gpus-per-node", "--gres"}, +is_slurm);
    const LaunchOption* tasks = launch_option({"--ntasks", "-n"}, +is_slurm);
    const LaunchOption* np = launch_option({"-np", "-n", "--np"}, +is_mpi);
    std::string how;
    if (nproc) {
      const long long p = launch_int(*nproc);
      const LaunchOption* n = nnodes ? nnodes : nodes;
      const long long k = n ? launch_int(*n) : 1;
      world_ = p * k;
      how = n ? fmt::format("{} {} x {} {} ({} x {})", nproc->program, o_.origin(*nproc), n->program, o_.origin(*n), p, k)
              : fmt::format("torchrun {} on one node", o_.origin(*nproc));
    } else if (np) {
      world_ = launch_int(*np);
      how = fmt::format("{} {}", np->program, o_.origin(*np));
    } else if (tasks) {
      world_ = launch_int(*tasks);
      how = fmt::format("{} {}", tasks->program, o_.origin(*tasks));
    } else if (nodes && (per_node || gpus)) {
      const LaunchOption* g = per_node ? per_node : gpus;
      world_ = launch_int(*nodes) * launch_int(*g);
      how = fmt::format("{} {} x {} {}", nodes->program, o_.origin(*nodes), g->program, o_.origin(*g));
    } else {
      throw InputError(file_, "world size",
                       "the script has no launcher line that gives the GPU count (torchrun --nproc-per-node and "
                       "--nnodes, srun / sbatch --nodes with --ntasks-per-node, mpirun -np): give it with "
                       "--world-size N (calisim configs import-megatron) or --set strategy.world_size=N (calisim "
                       "simulate)");
    }
    strategy_field("world_size", world_, how, "the GPU count, " + how + ",");
  }

  // ---- model ---------------------------------------------------------------------------------
  void model() {
    const IntFlag layers = required("--num-layers", 1);
    layers_ = layers.value;
    model_field("layer_num", layers_, layers.origin, "--num-layers");
    const IntFlag hidden = required("--hidden-size", 1);
    const long long h = hidden.value;
    model_field("hidden_size", h, hidden.origin, "--hidden-size");
    const IntFlag head_flag = required("--num-attention-heads", 1);
    const long long heads = head_flag.value;
    model_field("head_num", heads, head_flag.origin, "--num-attention-heads");
    if (const auto name = find({"--model-name"})) model_field("model_name", o_.value(*name), o_.origin(*name));

    const LaunchOption* swiglu = find({"--swiglu"});
    swiglu_ = swiglu != nullptr;
    model_field("use_swiglu", swiglu_, swiglu ? o_.origin(*swiglu) : "Megatron default (GeLU MLP)", "--swiglu");
    if (const auto f = int_flag("--ffn-hidden-size", 1)) {
      ffn_ = f->value;
      model_field("intermediate_size", ffn_, f->origin, "--ffn-hidden-size");
    } else {
      ffn_ = swiglu_ ? static_cast<long long>(4.0 * h * 2 / 3 / 64) * 64 : 4 * h;
      model_field("intermediate_size", ffn_,
                  swiglu_ ? "Megatron default with --swiglu: int(4h·2/3 / 64)·64" : "Megatron default: 4h",
                  "--ffn-hidden-size");
    }
    if (const auto kv = int_flag("--kv-channels", 1)) {
      model_field("head_size", kv->value, kv->origin, "--kv-channels");
    }

    const LaunchOption* gqa = find({"--group-query-attention"});
    const LaunchOption* groups = find({"--num-query-groups"});
    if (gqa) {
      const long long g = groups ? o_.integer(*groups, 1) : 1;
      model_field("kv_head_num", g,
                  groups ? o_.origin(*groups) : "Megatron default --num-query-groups 1 with --group-query-attention",
                  "--num-query-groups");
    } else {
      if (groups) {
        r_.notes.push_back(fmt::format("{} has no effect without --group-query-attention: Megatron runs full "
                                       "multi-head attention",
                                       o_.origin(*groups)));
      }
      model_field("kv_head_num", heads, "Megatron default: one KV head per query head (no --group-query-attention)",
                  "--group-query-attention");
    }

    const LaunchOption* norm = find({"--normalization"});
    const std::string norm_v = norm ? o_.value(*norm) : "LayerNorm";
    if (norm_v != "LayerNorm" && norm_v != "RMSNorm") {
      o_.fail(*norm, fmt::format("expected LayerNorm or RMSNorm, got \"{}\"", norm_v));
    }
    model_field("norm_type", norm_v == "RMSNorm" ? "rmsnorm" : "layernorm",
                norm ? o_.origin(*norm) : "Megatron default (LayerNorm)", "--normalization");

    const LaunchOption* pos = find({"--position-embedding-type"});
    const LaunchOption* rotary = find({"--use-rotary-position-embeddings"});
    std::string pos_v = pos ? o_.value(*pos) : rotary ? "rope" : "learned_absolute";
    if (pos_v == "mrope") {
      r_.notes.push_back("--position-embedding-type mrope is priced as rope (the same rotary kernels)");
      pos_v = "rope";
    }
    if (pos_v != "rope" && pos_v != "learned_absolute") {
      o_.fail(*pos, fmt::format("\"{}\" is not modelled: calisim prices rope and learned_absolute position "
                                "embeddings",
                                pos_v));
    }
    model_field("position_embedding_type", pos_v,
                pos ? o_.origin(*pos) : rotary ? o_.origin(*rotary) : "Megatron default (learned_absolute)",
                "--position-embedding-type");
    if (pos_v == "learned_absolute") {
      if (const auto m = int_flag("--max-position-embeddings", 1)) {
        model_field("max_position_embeddings", m->value, m->origin,
                    "--max-position-embeddings");
      }
    }
    o_.mark_read({"--rope-type", "--rotary-base", "--rotary-percent", "--rotary-scaling-factor", "--rotary-seq-len-interpolation-factor",
          "--max-position-embeddings"});  // no cost difference in calisim

    const LaunchOption* untie = find({"--untie-embeddings-and-output-weights"});
    model_field("untie_embeddings_and_output_weights", untie != nullptr,
                untie ? o_.origin(*untie) : "Megatron default (tied input and output embeddings)",
                "--untie-embeddings-and-output-weights");
    const LaunchOption* nobias = find({"--disable-bias-linear"});
    model_field("add_bias_linear", nobias == nullptr,
                nobias ? o_.origin(*nobias) : "Megatron default (biases on the linear layers)", "--disable-bias-linear");

    vocabulary();
    moe();
    mla_mtp_window();
  }

  void vocabulary() {
    if (const auto d = int_flag("--make-vocab-size-divisible-by", 1)) {
      model_field("make_vocab_size_divisible_by", d->value, d->origin,
                  "--make-vocab-size-divisible-by");
    }
    const LaunchOption* tok = find({"--tokenizer-type"});
    const LaunchOption* vocab = find({"--vocab-size"});
    const LaunchOption* merges = find({"--merge-file"});
    const LaunchOption* tok_model = find({"--tokenizer-model"});
    o_.mark_read({"--vocab-file"});
    const std::string tok_v = tok ? o_.value(*tok) : "";
    // The tokenizer's own files, where the caller can read them (Megatron counts its tokenizer, and
    // takes --vocab-size only for NullTokenizer).
    std::optional<TokenizerVocab> counted;
    if (tok_model && tok_v != "NullTokenizer" && opt_.tokenizer_vocab &&
        unresolved_reference(tok_model->values.empty() ? "" : tok_model->values.front()).empty() &&
        !tok_model->values.empty()) {
      counted = opt_.tokenizer_vocab(tok_model->values.front());
    }
    if (opt_.vocab_size) {
      model_field("vocab_size", *opt_.vocab_size, "calisim --vocab-size");
    } else if (tok_v == "NullTokenizer") {
      if (!vocab) o_.fail(*tok, "NullTokenizer needs --vocab-size, and the script does not give it");
      // Megatron's NullTokenizer adds the end-of-document token to the size it is given.
      model_field("vocab_size", o_.integer(*vocab, 1) + 1,
                  o_.origin(*vocab) + " + 1 (NullTokenizer's end-of-document token)", "--vocab-size");
    } else if (counted) {
      model_field("vocab_size", counted->size,
                  fmt::format("{}: {} tokens in {}", o_.origin(*tok_model), counted->size, counted->file),
                  "--tokenizer-model");
      if (vocab && o_.integer(*vocab, 1) != counted->size) {
        r_.notes.push_back(fmt::format("{} differs from the tokenizer's {} tokens; Megatron counts the tokenizer",
                                       o_.origin(*vocab), counted->size));
      }
    } else if (vocab) {
      model_field("vocab_size", o_.integer(*vocab, 1), o_.origin(*vocab), "--vocab-size");
      if (!tok_v.empty()) {
        r_.notes.push_back(fmt::format("{} taken as the vocabulary; Megatron takes {}'s own size", o_.origin(*vocab),
                                       tok_v));
      }
    } else if (tok_v == "GPT2BPETokenizer") {
      model_field("vocab_size", 50257, o_.origin(*tok) + ": the GPT-2 BPE vocabulary, 50,257 tokens");
    } else if (tok_v.empty() && merges) {
      model_field("vocab_size", 50257,
                  o_.origin(*merges) + " without --tokenizer-type: GPT-2 BPE files, 50,257 tokens");
    } else {
      throw InputError(file_, tok ? o_.where(*tok) : "--tokenizer-type",
                       fmt::format("the vocabulary size of {} is not in the script{}: give it with --vocab-size N "
                                   "(calisim configs import-megatron) or --set model.vocab_size=N (calisim simulate), "
                                   "e.g. 128256 for Llama 3, 32000 for Llama 2",
                                   tok_v.empty() ? "the tokenizer" : "tokenizer " + tok_v,
                                   tok_model && !tok_model->values.empty()
                                       ? " and no tokenizer.json is readable at " + tok_model->values.front()
                                       : ""));
    }
  }

  void moe() {
    const LaunchOption* experts = find({"--num-experts"});
    const long long e = experts ? o_.integer(*experts, 0) : 0;
    moe_ = e > 0;
    if (!moe_) return;
    if (e == 1) o_.fail(*experts, "a single expert is not modelled: calisim's MoE layers need at least 2 experts");
    model_field("model_type", "moe", o_.origin(*experts), "--num-experts");
    model_field("expert_num", e, o_.origin(*experts), "--num-experts");
    const auto topk = int_flag("--moe-router-topk", 1);
    model_field("topk", topk ? topk->value : 2, topk ? topk->origin : "Megatron default (2)",
                "--moe-router-topk");
    const auto f = int_flag("--moe-ffn-hidden-size", 1);
    model_field("moe_ffn_hidden_size", f ? f->value : ffn_, f ? f->origin : "Megatron default (the dense FFN width)",
                "--moe-ffn-hidden-size");
    if (const auto s = int_flag("--moe-shared-expert-intermediate-size", 1)) {
      model_field("moe_shared_expert_intermediate_size", s->value, s->origin,
                  "--moe-shared-expert-intermediate-size");
    }
    if (const LaunchOption* freq = find({"--moe-layer-freq"})) {
      const std::string v = o_.value(*freq);
      std::vector<int> pattern;
      if (v.find('[') != std::string::npos) {
        try {
          pattern = PatternParser(v).parse();
        } catch (const std::exception&) {
          o_.fail(*freq, fmt::format("expected an integer or a list expression such as \"([0]*3+[1]*58)\" (no "
                                     "spaces, as Megatron requires), got \"{}\"",
                                     v));
        }
        if (static_cast<long long>(pattern.size()) != layers_) {
          o_.fail(*freq, fmt::format("the pattern has {} entries and the model {} layers (Megatron asserts they are "
                                     "equal)",
                                     pattern.size(), layers_));
        }
      } else {
        const long long n = o_.integer(*freq, 1);
        for (long long i = 0; i < layers_; ++i) pattern.push_back(i % n == 0 ? 1 : 0);
      }
      size_t dense = 0;
      while (dense < pattern.size() && pattern[dense] == 0) ++dense;
      for (size_t i = dense; i < pattern.size(); ++i) {
        if (pattern[i] != 1) {
          o_.fail(*freq, fmt::format("\"{}\" makes layer {} dense after MoE layers; calisim models dense layers at "
                                     "the start only (model.dense_layers)",
                                     v, i + 1));
        }
      }
      model_field("dense_layers", static_cast<long long>(dense), o_.origin(*freq), "--moe-layer-freq");
    }
    if (const LaunchOption* cap = find({"--moe-expert-capacity-factor"})) {
      const double c = o_.number(*cap);
      if (c > 0) model_field("capacity", c, o_.origin(*cap), "--moe-expert-capacity-factor");
    }
    if (const LaunchOption* pad = find({"--moe-pad-expert-input-to-capacity"})) {
      model_field("moe_pad_expert_input_to_capacity", true, o_.origin(*pad), "--moe-pad-expert-input-to-capacity");
    }
  }

  void mla_mtp_window() {
    if (const LaunchOption* mla = find({"--multi-latent-attention"})) {
      model_field("attention_type", "mla", o_.origin(*mla), "--multi-latent-attention");
      // Megatron's argparse defaults (they override MLATransformerConfig's own).
      const struct {
        const char* flag;
        const char* field;
        long long fallback;
      } dims[] = {{"--q-lora-rank", "q_lora_rank", 0},
                  {"--kv-lora-rank", "kv_lora_rank", 32},
                  {"--qk-head-dim", "qk_head_dim", 128},
                  {"--qk-pos-emb-head-dim", "qk_pos_emb_head_dim", 64},
                  {"--v-head-dim", "v_head_dim", 128}};
      for (const auto& d : dims) {
        const auto v = int_flag(d.flag, 0);
        model_field(d.field, v ? v->value : d.fallback,
                    v ? v->origin
                      : (d.fallback ? fmt::format("Megatron default ({})", d.fallback)
                                    : std::string("Megatron default (no query compression)")),
                    d.flag);
      }
    }
    if (const auto mtp = int_flag("--mtp-num-layers", 0)) {
      model_field("mtp_num_layers", mtp->value, mtp->origin, "--mtp-num-layers");
    }
    if (const LaunchOption* w = find({"--window-size"})) {
      std::string v = o_.value(*w);
      for (char c : std::string("() ")) v.erase(std::remove(v.begin(), v.end(), c), v.end());
      const auto comma = v.find(',');
      char* end = nullptr;
      const long long left = std::strtoll(v.substr(0, comma).c_str(), &end, 10);
      if (comma == std::string::npos || *end != '\0' || left < 0 || v.substr(comma + 1) != "0") {
        o_.fail(*w, fmt::format("expected \"(W,0)\" (W earlier tokens, none after: causal sliding window), got \"{}\"",
                                o_.value(*w)));
      }
      model_field("attention_window_tokens", left, o_.origin(*w), "--window-size");
      if (const LaunchOption* skip = find({"--window-attn-skip-freq"})) {
        model_field("window_attn_skip_freq", o_.integer(*skip, 1), o_.origin(*skip), "--window-attn-skip-freq");
      }
    }
    if (const LaunchOption* sm = find({"--softmax-type"})) {
      const std::string v = o_.value(*sm);
      if (v == "learnable") model_field("attention_sinks", true, o_.origin(*sm), "--softmax-type");
      else if (v != "vanilla") o_.fail(*sm, fmt::format("\"{}\" is not modelled (vanilla or learnable)", v));
    }
  }

  // ---- strategy ------------------------------------------------------------------------------
  void strategy() {
    const IntFlag seq = required("--seq-length", 1);
    strategy_field("seq_len", seq.value, seq.origin, "--seq-length");
    const IntFlag micro = required("--micro-batch-size", 1);
    const long long mbs = micro.value;
    strategy_field("micro_batch_size", mbs, micro.origin, "--micro-batch-size");

    const LaunchOption* bf16 = find({"--bf16"});
    const LaunchOption* fp16 = find({"--fp16"});
    if (bf16 && fp16) o_.fail(*fp16, "--bf16 and --fp16 together (Megatron refuses both)");
    if (!bf16 && !fp16) {
      throw InputError(file_, "--bf16",
                       "missing: without --bf16 or --fp16 Megatron trains in fp32, which calisim does not model");
    }
    strategy_field("dtype", bf16 ? "bf16" : "fp16", o_.origin(bf16 ? *bf16 : *fp16), bf16 ? "--bf16" : "--fp16");

    const auto size = [&](const char* flag, const char* field, long long fallback) {
      const auto v = int_flag(flag, 1);
      strategy_field(field, v ? v->value : fallback, v ? v->origin : "Megatron default (1)", flag);
      return v ? v->value : fallback;
    };
    const long long tp = size("--tensor-model-parallel-size", "tp_size", 1);
    pp_ = size("--pipeline-model-parallel-size", "pp_size", 1);
    const long long cp = size("--context-parallel-size", "cp_size", 1);
    if (moe_) {
      size("--expert-model-parallel-size", "ep_size", 1);
      const auto etp = int_flag("--expert-tensor-parallel-size", 1);
      strategy_field("etp_size", etp ? etp->value : tp,
                     etp ? etp->origin
                         : "Megatron default (expert TP = --tensor-model-parallel-size)",
                     "--expert-tensor-parallel-size");
    } else {
      for (const char* f : {"--expert-model-parallel-size", "--expert-tensor-parallel-size"}) {
        if (const LaunchOption* x = find({f}); x && o_.integer(*x, 1) > 1) {
          o_.fail(*x, "expert parallelism needs --num-experts (the model has no MoE layers)");
        }
      }
    }
    const LaunchOption* sp = find({"--sequence-parallel"});
    strategy_field("enable_sequence_parallel", sp != nullptr && tp > 1,
                   sp ? (tp > 1 ? o_.origin(*sp) : o_.origin(*sp) + ", off at tp 1 (as Megatron turns it off)")
                      : "Megatron default (off)",
                   "--sequence-parallel");

    global_batch(mbs, tp, cp);
    pipeline();
    context();
    data_parallel();
    moe_strategy();
    precision();
    recompute();
    offloading();
    kernels();
    optimizer();
  }

  void global_batch(long long mbs, long long tp, long long cp) {
    if (const auto g = int_flag("--global-batch-size", 1)) {
      strategy_field("global_batch_size", g->value, g->origin, "--global-batch-size");
      return;
    }
    const long long model_parallel = tp * pp_ * cp;
    if (world_ % model_parallel != 0) {
      // No data-parallel size: validate_layout names the layout problem; one micro-batch meanwhile.
      strategy_field("micro_batch_num", 1, "Megatron default: one micro-batch per step", "--global-batch-size");
      return;
    }
    strategy_field("global_batch_size", mbs * (world_ / model_parallel),
                   "Megatron default: --micro-batch-size x data-parallel size (one micro-batch per step)",
                   "--global-batch-size");
  }

  void pipeline() {
    const LaunchOption* layout = find({"--pipeline-model-parallel-layout"});
    const LaunchOption* stages = find({"--num-virtual-stages-per-pipeline-rank"});
    const LaunchOption* per_stage = find({"--num-layers-per-virtual-pipeline-stage"});
    if ((layout != nullptr) + (stages != nullptr) + (per_stage != nullptr) > 1) {
      o_.fail(*(per_stage ? per_stage : stages),
              "give one of --pipeline-model-parallel-layout, --num-virtual-stages-per-pipeline-rank and "
              "--num-layers-per-virtual-pipeline-stage (Megatron refuses several)");
    }
    const LaunchOption* emb = find({"--account-for-embedding-in-pipeline-split"});
    const LaunchOption* loss = find({"--account-for-loss-in-pipeline-split"});
    if (emb) strategy_field("account_for_embedding_in_pipeline_split", true, o_.origin(*emb), emb->name);
    if (loss) strategy_field("account_for_loss_in_pipeline_split", true, o_.origin(*loss), loss->name);
    if (const auto f = int_flag("--decoder-first-pipeline-num-layers", 1)) {
      strategy_field("num_layers_in_first_pipeline_stage", f->value, f->origin,
                     "--decoder-first-pipeline-num-layers");
    }
    if (const auto l = int_flag("--decoder-last-pipeline-num-layers", 1)) {
      strategy_field("num_layers_in_last_pipeline_stage", l->value, l->origin,
                     "--decoder-last-pipeline-num-layers");
    }
    if (layout) {
      const std::string text = o_.value(*layout);
      strategy_field("pipeline_layout", text, o_.origin(*layout), layout->name);
      size_t n = 0;
      try {
        n = parse_pipeline_layout(text).size();
      } catch (const std::invalid_argument& e) {
        o_.fail(*layout, e.what());
      }
      if (n % pp_ != 0) {
        o_.fail(*layout, fmt::format("{} virtual stages do not divide over {} pipeline ranks", n, pp_));
      }
      if (n / pp_ > 1) {
        strategy_field("interleaving_size", static_cast<long long>(n / pp_),
                       fmt::format("{}: {} stages over pp {}", o_.origin(*layout), n, pp_), layout->name);
      }
    } else if (stages) {
      strategy_field("interleaving_size", o_.integer(*stages, 1), o_.origin(*stages), stages->name);
    } else if (per_stage) {
      if (r_.strategy.contains("num_layers_in_first_pipeline_stage") ||
          r_.strategy.contains("num_layers_in_last_pipeline_stage")) {
        o_.fail(*per_stage, "Megatron refuses it with --decoder-first/last-pipeline-num-layers: give "
                            "--num-virtual-stages-per-pipeline-rank instead");
      }
      const long long n = o_.integer(*per_stage, 1);
      const long long counted = layers_ + (emb ? 1 : 0) + (loss ? 1 : 0);
      // Megatron's validate_args asserts both divisions.
      if (counted % pp_ != 0) {
        o_.fail(*per_stage, fmt::format("{} layers{} do not divide over pp {} (Megatron asserts it)", counted,
                                        emb || loss ? " (with the counted embedding / loss)" : "", pp_));
      }
      if ((counted / pp_) % n != 0) {
        o_.fail(*per_stage, fmt::format("{} layers per pipeline stage do not divide into chunks of {} (Megatron "
                                        "asserts it)",
                                        counted / pp_, n));
      }
      const long long v = counted / pp_ / n;
      strategy_field("interleaving_size", v,
                     fmt::format("{}: {} layers / pp {} / {} per chunk (Megatron's rule)", o_.origin(*per_stage), counted,
                                 pp_, n),
                     per_stage->name);
    }
    if (const auto g = int_flag("--microbatch-group-size-per-virtual-pipeline-stage", 1)) {
      strategy_field("microbatch_group_size_per_vp_stage", g->value, g->origin,
                     "--microbatch-group-size-per-virtual-pipeline-stage");
    }
    if (const LaunchOption* x = find({"--no-overlap-p2p-communication"})) {
      strategy_field("overlap_p2p_comm", false, o_.origin(*x), x->name);
    }
    if (const LaunchOption* x = find({"--use-tp-pp-dp-mapping"})) {
      strategy_field("order", "tp-cp-ep-pp-dp", o_.origin(*x), x->name);
    }
  }

  void context() {
    if (const LaunchOption* t = find({"--cp-comm-type"})) {
      const std::vector<std::string> types = o_.list(*t);
      if (types.empty()) o_.fail(*t, "expects a value, and none follows it");
      for (const auto& v : types) {
        if (v != types.front()) {
          o_.fail(*t, "a different CP communication type per layer is not modelled; give one type");
        }
      }
      strategy_field("cp_comm_type", types.front(), o_.origin(*t), t->name);
    }
    if (const LaunchOption* h = find({"--hierarchical-context-parallel-sizes"})) {
      json sizes = json::array();
      for (const auto& v : o_.list(*h)) {
        char* end = nullptr;
        const long long n = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || n < 1) o_.fail(*h, fmt::format("expected positive integers, got \"{}\"", v));
        sizes.push_back(n);
      }
      strategy_field("hierarchical_context_parallel_sizes", sizes, o_.origin(*h), h->name);
    }
  }

  void data_parallel() {
    const LaunchOption* fsdp2 = find({"--use-torch-fsdp2"});
    const LaunchOption* mfsdp = find({"--use-megatron-fsdp", "--use-custom-fsdp"});
    const LaunchOption* shard = find({"--data-parallel-sharding-strategy"});
    const LaunchOption* dist = find({"--use-distributed-optimizer"});
    if (fsdp2) {
      strategy_field("zero_state", 3, o_.origin(*fsdp2) + " (parameters, gradients and optimizer sharded)", fsdp2->name);
    } else if (mfsdp) {
      const std::string s = shard ? o_.value(*shard) : "no_shard";
      const std::map<std::string, int> levels = {{"no_shard", 0}, {"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}};
      const auto it = levels.find(s);
      if (it == levels.end()) {
        o_.fail(*shard, fmt::format("expected no_shard, optim, optim_grads or optim_grads_params, got \"{}\"", s));
      }
      strategy_field("zero_state", it->second,
                     o_.origin(*mfsdp) + " with " + (shard ? o_.origin(*shard) : "Megatron default no_shard"),
                     shard ? shard->name : mfsdp->name);
    } else {
      strategy_field("zero_state", dist ? 1 : 0,
                     dist ? o_.origin(*dist) : "Megatron default (no distributed optimizer: replicated state)",
                     "--use-distributed-optimizer");
    }
    // Megatron's partial distributed optimizer: the DP group splits into this many instances,
    // each sharding the optimizer state (reduce-scatter inside, all-reduce across).
    if (const auto n = int_flag("--num-distributed-optimizer-instances", 1)) {
      strategy_field("dp_replicate_size", n->value, n->origin, "--num-distributed-optimizer-instances");
    }
    flag_to_strategy("--overlap-grad-reduce", "overlap_grad_reduce");
    flag_to_strategy("--overlap-param-gather", "overlap_param_gather");
    if (const auto b = int_flag("--ddp-bucket-size", 1)) {
      strategy_field("bucket_size", b->value, b->origin, "--ddp-bucket-size");
    }
    flag_to_strategy("--tp-comm-overlap", "tp_comm_overlap");
  }

  void moe_strategy() {
    if (!moe_) return;
    const LaunchOption* d = find({"--moe-token-dispatcher-type"});
    const LaunchOption* deepep = find({"--moe-enable-deepep"});
    std::string v = d ? o_.value(*d) : "allgather";
    if (deepep) {
      strategy_field("moe_enable_deepep", true, o_.origin(*deepep), deepep->name);
      if (!d) v = "flex";
    }
    strategy_field("moe_token_dispatcher_type", v, d ? o_.origin(*d) : deepep ? "--moe-enable-deepep: flex" : "Megatron default (allgather)",
                   "--moe-token-dispatcher-type");
    if (const LaunchOption* b = find({"--moe-flex-dispatcher-backend"})) {
      strategy_field("moe_flex_dispatcher_backend", o_.value(*b), o_.origin(*b), b->name);
    }
    for (const auto& [flag, field] : {std::pair{"--moe-deepep-num-sms", "moe_deepep_num_sms"},
                                      std::pair{"--moe-hybridep-num-sms", "moe_hybridep_num_sms"}}) {
      if (const auto n = int_flag(flag, 1)) strategy_field(field, n->value, n->origin, flag);
    }
    flag_to_strategy("--moe-shared-expert-overlap", "moe_shared_expert_overlap");
    flag_to_strategy("--overlap-moe-expert-parallel-comm", "overlap_moe_expert_parallel_comm");
    if (flag_to_strategy("--moe-grouped-gemm", "moe_grouped_gemm") && (v == "alltoall" || v == "flex")) {
      // The flags read here are Megatron-Core 0.14's and later, whose all-to-all and flex
      // dispatchers send each routed token's probability with it for TEGroupedMLP to apply in the
      // expert activation: the un-permutation keeps no copy of the expert outputs.
      strategy_field("dispatch_probs", true,
                     "Megatron-Core 0.14 and later with --moe-grouped-gemm and the " + v +
                         " dispatcher (router probabilities sent with the tokens)");
    }
    // Routing and loss settings: no cost of their own in calisim.
    o_.mark_read({"--moe-router-load-balancing-type", "--moe-aux-loss-coeff", "--moe-z-loss-coeff", "--moe-router-score-function",
          "--moe-router-enable-expert-bias", "--moe-router-bias-update-rate", "--moe-router-topk-scaling-factor",
          "--moe-router-num-groups", "--moe-router-group-topk", "--moe-router-pre-softmax", "--moe-input-jitter-eps",
          "--moe-token-drop-policy", "--moe-per-layer-logging", "--moe-router-padding-for-fp8"});
  }

  void precision() {
    const LaunchOption* format = find({"--fp8-format"});
    const LaunchOption* recipe = find({"--fp8-recipe"});
    if (format) {
      const std::string f = o_.value(*format);
      if (f != "e4m3" && f != "hybrid") o_.fail(*format, fmt::format("expected e4m3 or hybrid, got \"{}\"", f));
      strategy_field("fp8", true, o_.origin(*format), format->name);
      const std::string r = recipe ? o_.value(*recipe) : "delayed";
      if (r == "custom") o_.fail(*recipe, "a custom FP8 recipe is not modelled");
      strategy_field("fp8_recipe", r, recipe ? o_.origin(*recipe) : "Megatron default (delayed scaling)",
                     "--fp8-recipe");
      flag_to_strategy("--fp8-param-gather", "fp8_param_gather");
      if (flag_to_strategy("--first-last-layers-bf16", "first_last_layers_bf16")) {
        for (const auto& [flag, field] : {std::pair{"--num-layers-at-start-in-bf16", "num_layers_at_start_in_bf16"},
                                          std::pair{"--num-layers-at-end-in-bf16", "num_layers_at_end_in_bf16"}}) {
          if (const auto n = int_flag(flag, 0)) strategy_field(field, n->value, n->origin, flag);
        }
      }
    } else {
      for (const char* f : {"--fp8-recipe", "--fp8-param-gather", "--first-last-layers-bf16"}) {
        if (const LaunchOption* x = find({f})) {
          r_.notes.push_back(fmt::format("{} has no effect without --fp8-format", o_.origin(*x)));
        }
      }
    }
    o_.mark_read({"--fp8-amax-history-len", "--fp8-amax-compute-algo", "--fp8-margin", "--fp8-interval", "--fp8-wgrad"});
  }

  void recompute() {
    const LaunchOption* g = find({"--recompute-granularity"});
    const LaunchOption* act = find({"--recompute-activations"});
    const LaunchOption* method = find({"--recompute-method"});
    const LaunchOption* num = find({"--recompute-num-layers"});
    const LaunchOption* modules = find({"--recompute-modules"});
    // Megatron: --recompute-activations sets the granularity to selective, whatever else is given.
    const std::string gran = act ? "selective" : g ? o_.value(*g) : "";
    if (gran.empty()) {
      for (const LaunchOption* x : {method, num, modules}) {
        if (x) r_.notes.push_back(fmt::format("{} has no effect without --recompute-granularity", o_.origin(*x)));
      }
      return;
    }
    const LaunchOption& where = act ? *act : *g;
    if (gran == "full") {
      if (!method || !num) {
        o_.fail(where, "full recompute needs --recompute-method (uniform or block) and --recompute-num-layers "
                       "(Megatron asserts both)");
      }
      const std::string m = o_.value(*method);
      const long long n = o_.integer(*num, 1);
      if (m == "block") {
        strategy_field("recompute_granularity", "full_block", o_.origin(where) + " " + o_.origin(*method),
                       "--recompute-granularity");
        strategy_field("recompute_layer_num", n, o_.origin(*num) + ": the first N layers of each model chunk",
                       "--recompute-num-layers");
      } else if (m == "uniform") {
        strategy_field("recompute_granularity", "full_block", o_.origin(where) + " " + o_.origin(*method),
                       "--recompute-granularity");
        strategy_field("recompute_layer_num", layers_, "every layer (--recompute-method uniform)", "--recompute-num-layers");
        if (n > 1) {
          r_.notes.push_back(fmt::format(
              "--recompute-method uniform with --recompute-num-layers {} checkpoints groups of {} layers; calisim "
              "checkpoints every layer (it keeps {} layer inputs per chunk where Megatron keeps one per group, and "
              "never holds a group's activations while recomputing)",
              n, n, n));
        }
      } else {
        o_.fail(*method, fmt::format("expected uniform or block, got \"{}\"", m));
      }
    } else if (gran == "selective") {
      std::vector<std::string> mods = modules ? o_.list(*modules) : std::vector<std::string>{"core_attn"};
      if (method) o_.fail(*method, "selective recompute takes no --recompute-method (Megatron asserts)");
      std::set<std::string> set(mods.begin(), mods.end());
      const std::string from = o_.origin(where) + (modules ? " " + o_.origin(*modules) : " (default modules: core_attn)");
      if (set == std::set<std::string>{"core_attn"}) {
        strategy_field("recompute_granularity", "sdp_only", from, "--recompute-granularity");
      } else if (set.count("core_attn")) {
        o_.fail(modules ? *modules : where,
                "core_attn together with other modules is not modelled: calisim recomputes core_attn alone "
                "(Megatron's default) or the other modules without it");
      } else {
        strategy_field("recompute_granularity", "selective_recompute", from, "--recompute-granularity");
        strategy_field("megatron_recompute", true, from, "--recompute-modules");
        strategy_field("megatron_recompute_modules", mods, from, "--recompute-modules");
      }
      strategy_field("recompute_layer_num", layers_, "every layer (selective recompute)", "--recompute-granularity");
    } else {
      o_.fail(where, fmt::format("expected full or selective, got \"{}\"", gran));
    }
  }

  void offloading() {
    // --cpu-offloading-num-layers N > 0 turns activation offloading on (validate_args).
    if (const auto off = int_flag("--cpu-offloading-num-layers", 0); off && off->value > 0) {
      strategy_field("cpu_offloading_num_layers", off->value, off->origin,
                     "--cpu-offloading-num-layers");
    }
    o_.mark_read({"--cpu-offloading"});
  }

  void kernels() {
    const auto dropout = [&](const char* flag) {
      const LaunchOption* x = find({flag});
      return std::pair{x ? o_.number(*x) : 0.1, x};
    };
    const auto [attn, attn_flag] = dropout("--attention-dropout");
    const auto [hidden, hidden_flag] = dropout("--hidden-dropout");
    const bool on = attn > 0 || hidden > 0;
    std::string from;
    if (attn_flag && hidden_flag) from = o_.origin(*attn_flag) + ", " + o_.origin(*hidden_flag);
    else if (!attn_flag && !hidden_flag) from = "Megatron default (attention and hidden dropout 0.1)";
    else from = o_.origin(attn_flag ? *attn_flag : *hidden_flag) + "; the other at Megatron's default 0.1";
    strategy_field("enable_dropout", on, from, attn_flag ? "--attention-dropout" : "--hidden-dropout");

    if (const LaunchOption* impl = find({"--transformer-impl"}); impl && o_.value(*impl) == "local") {
      r_.not_modelled.push_back(fmt::format("{} local: Megatron's own layers are priced as TransformerEngine's "
                                            "(fused kernels, FP8 where asked)",
                                            o_.origin(*impl)));
    }
    const LaunchOption* backend = find({"--attention-backend"});
    o_.mark_read({"--use-flash-attn"});
    if (backend) {
      const std::string b = o_.value(*backend);
      if (b == "unfused" || b == "local") {
        strategy_field("use_flash_sdp", false, o_.origin(*backend) + ": materialised attention scores", backend->name);
      } else if (b != "flash" && b != "fused" && b != "auto") {
        o_.fail(*backend, fmt::format("expected flash, fused, unfused, local or auto, got \"{}\"", b));
      }
    }
    if (const LaunchOption* x = find({"--no-bias-swiglu-fusion"}); x && swiglu_) {
      strategy_field("use_fused_swiglu", false, o_.origin(*x), x->name);
    }
    if (const LaunchOption* x = find({"--no-rope-fusion"})) {
      strategy_field("use_fused_rope", false, o_.origin(*x), x->name);
    }
    o_.mark_read({"--no-bias-gelu-fusion"});
    if (const LaunchOption* x = find({"--no-gradient-accumulation-fusion"})) {
      strategy_field("use_fused_grad_accumulation", false, o_.origin(*x), x->name);
    }
    if (const LaunchOption* x = find({"--cross-entropy-loss-fusion"})) {
      strategy_field("cross_entropy_loss_fusion", true, o_.origin(*x), x->name);
      const LaunchOption* impl = find({"--cross-entropy-fusion-impl"});
      strategy_field("cross_entropy_fusion_impl", impl ? o_.value(*impl) : "native",
                     impl ? o_.origin(*impl) : "Megatron default (native)", "--cross-entropy-fusion-impl");
    } else {
      find({"--cross-entropy-fusion-impl"});
    }

    const LaunchOption* impl = find({"--cuda-graph-impl"});
    const LaunchOption* old_local = find({"--enable-cuda-graph"});
    const LaunchOption* old_te = find({"--external-cuda-graph"});
    const LaunchOption* scope = find({"--cuda-graph-scope"});
    const std::string graphs = impl ? o_.value(*impl) : old_local ? "local" : old_te ? "transformer_engine" : "none";
    if (graphs != "none") {
      const LaunchOption& by = impl ? *impl : old_local ? *old_local : *old_te;
      const std::vector<std::string> scopes = scope ? o_.list(*scope) : std::vector<std::string>{};
      if (scopes.empty()) {
        r_.not_modelled.push_back(fmt::format("{}: CUDA graphs without --cuda-graph-scope (Megatron's whole-layer "
                                              "default) are not modelled; host dispatch is priced eager",
                                              o_.origin(by)));
      } else if (scopes.size() == 1 && scopes.front() == "full_iteration") {
        strategy_field("cuda_graph_scope", "full_iteration", o_.origin(by) + " " + o_.origin(*scope), scope->name);
      } else {
        strategy_field("cuda_graph_scope", scopes, o_.origin(by) + " " + o_.origin(*scope), scope->name);
      }
    }
  }

  void optimizer() {
    if (const LaunchOption* x = find({"--optimizer"})) {
      const std::string v = o_.value(*x);
      if (v != "adam" && v != "adamw") {
        o_.fail(*x, fmt::format("\"{}\" is not modelled: calisim prices Adam's state and step", v));
      }
    }
    // Gradient buffers: fp32 under bf16 unless --grad-reduce-in-bf16; under fp16 only with
    // --accumulate-allreduce-grads-in-fp32 (Megatron's validate_args).
    const bool bf16 = r_.strategy.value("dtype", "") == "bf16";
    const LaunchOption* bf16_grads = find({"--grad-reduce-in-bf16"});
    const LaunchOption* fp32_grads = find({"--accumulate-allreduce-grads-in-fp32"});
    const bool fp32 = bf16 ? bf16_grads == nullptr : fp32_grads != nullptr;
    if (!fp32) {
      const std::string from = bf16_grads ? o_.origin(*bf16_grads)
                                          : "Megatron default under --fp16 (no --accumulate-allreduce-grads-in-fp32)";
      strategy_field("use_fp32_accum_grad", false, from, bf16_grads ? bf16_grads->name : "--accumulate-allreduce-grads-in-fp32");
      strategy_field("grad_reduce_in_bf16", true, from, bf16_grads ? bf16_grads->name : "--accumulate-allreduce-grads-in-fp32");
    }
    if (flag_to_strategy("--use-precision-aware-optimizer", "use_precision_aware_optimizer")) {
      for (const auto& [flag, field] :
           {std::pair{"--main-params-dtype", "main_params_dtype"}, std::pair{"--main-grads-dtype", "main_grads_dtype"},
            std::pair{"--exp-avg-dtype", "exp_avg_dtype"}, std::pair{"--exp-avg-sq-dtype", "exp_avg_sq_dtype"}}) {
        if (const LaunchOption* x = find({flag})) strategy_field(field, o_.value(*x), o_.origin(*x), flag);
      }
    }
    if (flag_to_strategy("--optimizer-cpu-offload", "optimizer_cpu_offload")) {
      if (const LaunchOption* x = find({"--optimizer-offload-fraction"})) {
        strategy_field("optimizer_offload_fraction", o_.number(*x), o_.origin(*x), x->name);
      }
    }
  }

  Options o_;
  std::string file_;
  MegatronImportOptions opt_;
  MegatronImport r_;
  long long world_ = 0, layers_ = 0, ffn_ = 0, pp_ = 1;
  bool swiglu_ = false, moe_ = false;
};

}  // namespace

MegatronImport import_megatron(const LaunchScript& script, const std::string& file,
                               const MegatronImportOptions& options) {
  return Importer(script, file, options).run();
}

}  // namespace calisim
