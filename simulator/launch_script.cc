#include "simulator/launch_script.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fnmatch.h>
#include <limits>
#include <optional>
#include <set>
#include <utility>

namespace calisim {
namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Windows line endings read as "\n" (so that a backslash before "\r\n" continues the line).
std::string lf_line_endings(const std::string& text) {
  std::string lf;
  lf.reserve(text.size());
  for (size_t p = 0; p < text.size(); ++p) {
    if (!(text[p] == '\r' && p + 1 < text.size() && text[p + 1] == '\n')) lf += text[p];
  }
  return lf;
}
bool space(char c) { return blank(c) || c == '\n'; }

std::string basename(const std::string& w) {
  const auto slash = w.rfind('/');
  return slash == std::string::npos ? w : w.substr(slash + 1);
}

// Words that are not a command's program: control keywords, grouping, and the wrappers whose
// first argument is (or whose next words are assignments before) the real command.
bool prefix_word(const std::string& w) {
  static const std::set<std::string> k = {"if", "then", "else", "elif", "fi", "do", "done", "for", "while",
                                          "until", "case", "esac", "{", "}", "!", "time", "export", "declare",
                                          "local", "readonly", "typeset", "env", "exec", "nohup", "sudo", "command",
                                          "[[", "]]"};
  return k.count(w) > 0;
}
bool declares(const std::string& w) {
  return w == "export" || w == "declare" || w == "local" || w == "readonly" || w == "typeset";
}
// Programs that start a command of their own inside another's words (srun ... torchrun ...).
bool program_word(const std::string& w) {
  static const std::set<std::string> k = {"torchrun", "python", "python3", "srun", "mpirun", "mpiexec", "bash",
                                          "sh", "numactl", "nsys", "deepspeed", "accelerate", "uv"};
  const std::string b = basename(w);
  return k.count(b) > 0 || b.rfind("python3.", 0) == 0;
}
bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// A variable's value (or one array element) and the line it was written on.
// A word or value and where it was written: its line, and `file` (0: the script read, k > 0: the
// k-th file it sources; names in SourceFiles).
struct Value {
  Value() = default;
  Value(std::string t, int l, int f) : text(std::move(t)), line(l), file(f) {}
  std::string text;
  int line = 0;
  int file = 0;
};
using Vars = std::map<std::string, std::vector<Value>>;

// The fields one shell word has split into so far, each with the line its first character was
// written on (for an expanded variable: the line of its assignment, so that a flag kept in an
// array is reported where the array lists it).
struct Fields {
  std::vector<Value> done;
  std::string cur;
  int cur_line = 0, cur_file = 0;
  bool cur_real = false;  // cur exists, even if empty (a quoted "")
  bool line_set = false;  // cur_line is that of cur's first character (not of an empty quote)
  void add(const std::string& s, int line, int file) {
    if (!line_set && (!s.empty() || !cur_real)) cur_line = line, cur_file = file;
    line_set = line_set || !s.empty();
    cur += s;
    cur_real = true;
  }
  void add_char(char c, int line, int file) {  // add(std::string(1, c), ...) without the temporary
    if (!line_set) cur_line = line, cur_file = file;
    line_set = true;
    cur += c;
    cur_real = true;
  }
  void split() {
    if (cur_real) done.emplace_back(cur, cur_line, cur_file);
    cur.clear();
    cur_real = false;
    line_set = false;
  }
  // An unquoted expansion: split on white space, except inside a substitution that was left as
  // written ($(...), $((...)), ${...}, `...`), which stays one word for the error that names it.
  void add_split(const std::string& v, int line, int file) {
    size_t p = 0;
    while (p < v.size()) {
      if (space(v[p])) {
        split();
        while (p < v.size() && space(v[p])) ++p;
        continue;
      }
      size_t q = p;
      while (q < v.size() && !space(v[q])) q = span_end(v, q);
      add(v.substr(p, q - p), line, file);
      p = q;
    }
  }
  // The index past the unexpanded substitution starting at q, or q + 1.
  static size_t span_end(const std::string& v, size_t q) {
    if (v[q] == '`') {
      const size_t close = v.find('`', q + 1);
      return close == std::string::npos ? v.size() : close + 1;
    }
    if (v[q] != '$' || q + 1 >= v.size() || (v[q + 1] != '(' && v[q + 1] != '{')) return q + 1;
    const char open = v[q + 1], close = open == '(' ? ')' : '}';
    int depth = 0;
    for (size_t r = q + 1; r < v.size(); ++r) {
      if (v[r] == open) ++depth;
      if (v[r] == close && --depth == 0) return r + 1;
    }
    return v.size();
  }
};

struct Expansion {
  std::vector<Value> values;  // one value, or an array's elements for ${A[@]}
  bool multi = false;         // ${A[@]}: each element its own field
  bool literal = false;       // left as written (unresolved): never split
};

// Integer arithmetic of $(( )): + - * / % and parentheses over numbers and variable names.
// Whatever the shell would overflow, divide by zero or recurse on without end (A=A; $((A))) is
// left unevaluated (nullopt): the caller keeps the expansion as written and reports it if read.
class Arithmetic {
 public:
  static constexpr int kMaxDepth = 64;  // nested parentheses, unary signs and variable lookups
  Arithmetic(const std::string& s, const Vars& vars, int depth = 0) : s_(s), vars_(vars), depth_(depth) {}
  std::optional<long long> eval() {
    if (depth_ > kMaxDepth) return std::nullopt;
    auto v = sum();
    skip();
    if (!v || p_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip() {
    while (p_ < s_.size() && space(s_[p_])) ++p_;
  }
  std::optional<long long> sum() {
    auto a = product();
    while (a) {
      skip();
      if (p_ >= s_.size() || (s_[p_] != '+' && s_[p_] != '-')) break;
      const char op = s_[p_++];
      auto b = product();
      long long r = 0;
      if (!b || (op == '+' ? __builtin_add_overflow(*a, *b, &r) : __builtin_sub_overflow(*a, *b, &r))) {
        return std::nullopt;
      }
      a = r;
    }
    return a;
  }
  std::optional<long long> product() {
    auto a = unary();
    while (a) {
      skip();
      if (p_ >= s_.size() || (s_[p_] != '*' && s_[p_] != '/' && s_[p_] != '%')) break;
      const char op = s_[p_++];
      if (p_ < s_.size() && s_[p_] == '*') return std::nullopt;  // ** (power) is not read
      auto b = unary();
      if (!b) return std::nullopt;
      long long r = 0;
      if (op == '*') {
        if (__builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
      } else {
        if (*b == 0 || (*b == -1 && *a == std::numeric_limits<long long>::min())) return std::nullopt;
        r = op == '/' ? *a / *b : *a % *b;
      }
      a = r;
    }
    return a;
  }
  std::optional<long long> unary() {
    skip();
    if (depth_ >= kMaxDepth) return std::nullopt;
    ++depth_;
    const auto v = operand();
    --depth_;
    return v;
  }
  std::optional<long long> operand() {
    if (p_ < s_.size() && (s_[p_] == '-' || s_[p_] == '+')) {
      const char op = s_[p_++];
      auto v = unary();
      if (!v || (op == '-' && *v == std::numeric_limits<long long>::min())) return std::nullopt;
      return op == '-' ? -*v : *v;
    }
    if (p_ < s_.size() && s_[p_] == '(') {
      ++p_;
      auto v = sum();
      skip();
      if (!v || p_ >= s_.size() || s_[p_] != ')') return std::nullopt;
      ++p_;
      return v;
    }
    if (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) {
      long long v = 0;
      while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) {
        if (__builtin_mul_overflow(v, 10LL, &v) || __builtin_add_overflow(v, static_cast<long long>(s_[p_++] - '0'), &v)) {
          return std::nullopt;
        }
      }
      return v;
    }
    if (p_ < s_.size() && name_start(s_[p_])) {
      const size_t b = p_;
      while (p_ < s_.size() && name_char(s_[p_])) ++p_;
      const auto it = vars_.find(s_.substr(b, p_ - b));
      if (it == vars_.end() || it->second.empty()) return std::nullopt;
      return Arithmetic(it->second.front().text, vars_, depth_ + 1).eval();
    }
    return std::nullopt;
  }
  const std::string& s_;
  const Vars& vars_;
  int depth_;
  size_t p_ = 0;
};

class Reader {
 public:
  // depth: how many readers this one is nested in (${A:-${B:-...}}, bash -c, eval).
  // Files a script sources: how to read one, and the names of those read (index 0: the script).
  struct Sources {
    const SourceReader* reader = nullptr;
    std::vector<std::string> names{""};
  };
  Reader(const std::string& text, Vars& vars, const std::set<std::string>& fixed, Sources& sources, int file = 0,
         int first_line = 1, int depth = 0)
      : t_(text), vars_(vars), fixed_(fixed), sources_(sources), line_(first_line), depth_(depth), file_(file) {}
  static constexpr int kMaxDepth = 32;

  LaunchScript run() {
    std::vector<Value> words;  // the current command's words and their lines
    bool prefix = true;        // still before the command's program word
    const auto end_command = [&] {
      const bool condition = condition_from_ >= 0 || case_from_ >= 0;
      if (condition_from_ >= 0) decide(words);
      if (case_from_ >= 0) open_case(words);
      // A command with options in a branch, run or skipped, makes the branch's conditions matter
      // (an echo or an exit does not).
      const bool options = std::any_of(words.begin(), words.end(),
                                       [](const Value& w) { return w.text.size() > 1 && w.text[0] == '-'; });
      if (!condition && options && !branches_.empty() && branches_.back().parent_active) depends_on_branches();
      if (active()) take(words);
      words.clear();
      prefix = true;
      scoped_.clear();  // a line of assignments alone sets them for the rest of the script
      declaring_ = false;
    };
    bool line_start = true;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (blank(c)) {
        ++i_;
        continue;
      }
      if (c == '\\' && i_ + 1 < t_.size() && t_[i_ + 1] == '\n') {
        i_ += 2;
        ++line_;
        continue;
      }
      if (c == '\n') {
        // "if [ a ] &&<newline>[ b ]": the condition goes on.
        if (condition_from_ >= 0 && !words.empty() && (words.back().text == "&&" || words.back().text == "||")) {
          ++line_;
          ++i_;
          continue;
        }
        end_command();
        ++line_;
        ++i_;
        line_start = true;
        skip_heredoc_bodies();
        continue;
      }
      // "a || b" and "a && b" inside an if / elif condition: one condition of several tests.
      if (condition_from_ >= 0 && (c == '|' || c == '&') && i_ + 1 < t_.size() && t_[i_ + 1] == c) {
        words.emplace_back(std::string(2, c), line_, file_);
        i_ += 2;
        continue;
      }
      // case: ";;" (or ";&", ";;&") ends an arm; the next word is a pattern.
      if (c == ';' && i_ + 1 < t_.size() && (t_[i_ + 1] == ';' || t_[i_ + 1] == '&') && !branches_.empty() &&
          branches_.back().is_case) {
        end_command();
        i_ += 2;
        if (i_ < t_.size() && t_[i_] == '&') ++i_;
        branches_.back().active = false;
        case_pattern_ = true;
        continue;
      }
      if (case_pattern_ && c != '#') {
        if (t_.compare(i_, 4, "esac") == 0 && (i_ + 4 == t_.size() || !name_char(t_[i_ + 4]))) {
          i_ += 4;
          if (!branches_.empty() && branches_.back().is_case) branches_.pop_back();
          case_pattern_ = false;
        } else {
          case_arm();
        }
        continue;
      }
      if (c == ';' || c == '&' || c == '|' || c == '(' || c == ')') {
        end_command();
        ++i_;
        line_start = false;
        continue;
      }
      if (c == '#') {
        if (line_start && t_.compare(i_, 7, "#SBATCH") == 0) {
          end_command();
          words.emplace_back("#SBATCH", line_, file_);
          prefix = false;
          i_ += 7;
          line_start = false;
          continue;
        }
        while (i_ < t_.size() && t_[i_] != '\n') ++i_;
        continue;
      }
      line_start = false;
      if (c == '<' || c == '>') {
        skip_redirection();
        continue;
      }
      if (prefix && assignment_ahead()) {
        assign();
        continue;
      }
      Fields f = word(false);
      // "2>&1": a file descriptor number in front of a redirection.
      if (f.done.size() == 1 && i_ < t_.size() && (t_[i_] == '>' || t_[i_] == '<') &&
          f.done[0].text.find_first_not_of("0123456789") == std::string::npos) {
        skip_redirection();
        continue;
      }
      for (auto& w : f.done) {
        const bool keeps_prefix = prefix_word(w.text) || (w.text.size() > 1 && w.text[0] == '-' && !words.empty() &&
                                                          declares(words.back().text));
        // Branch keywords act at once, so that an assignment after "else" on its line counts
        // for the else branch.
        if (prefix && condition_from_ < 0) keyword(w, words.size());
        if (prefix && condition_from_ >= 0 && w.text == "then") decide(words);
        if (prefix && declares(w.text)) declaring_ = true;
        if (prefix && !keeps_prefix) {
          // "A=1 cmd": the assignments were cmd's environment only; the rest of the script (and
          // cmd's own words) see the values from before.
          for (auto it = scoped_.rbegin(); it != scoped_.rend(); ++it) {
            if (it->second) vars_[it->first] = *it->second;
            else vars_.erase(it->first);
          }
          scoped_.clear();
        }
        if (!keeps_prefix) prefix = false;
        words.push_back(std::move(w));
      }
    }
    end_command();
    finish();
    return std::move(out_);
  }

  // Options alone are the script's arguments when no command runs a Python training program; in
  // a script that does, bash runs such a line as a command named after its first flag, which
  // fails (a comment line inside a backslash-continued command ends it there): not read.
  void finish() {
    if (bare_.empty()) return;
    const bool program = std::any_of(out_.options.begin(), out_.options.end(), [](const LaunchOption& o) {
      return o.program.size() > 3 && o.program.compare(o.program.size() - 3, 3, ".py") == 0;
    });
    if (!program) {
      out_.options.insert(out_.options.end(), bare_.begin(), bare_.end());
      return;
    }
    for (const Value& first : bare_lines_) {
      out_.notes.push_back(fmt::format("{}: a command made of flags alone ({} ...) is not read: bash would run it as "
                                       "a command and fail (a comment inside a backslash-continued command ends the "
                                       "command there)",
                                       where(first), first.text.substr(0, first.text.find('='))));
    }
  }

 private:
  // ---- if / elif / else / fi ----------------------------------------------------------------
  // A branch is followed when its condition is true, or when the condition cannot be decided here
  // (a file test, a command's exit status, an unset variable): then every branch is followed.
  enum class Truth { no, yes, unknown };
  struct Branch {
    bool parent_active = true;
    bool taken = false;  // a branch of this if whose condition was true ran: the rest are skipped
    bool active = true;
    std::vector<std::string> pending_notes;  // about its conditions, given once a branch holds something
    bool is_case = false;                    // a case ... esac, whose arms are the branches
    std::optional<std::string> subject;      // its word, when known
  };
  // An assignment or a command runs inside undecided branches: their notes are due.
  void depends_on_branches() {
    for (Branch& b : branches_) {
      for (auto& n : b.pending_notes) out_.notes.push_back(std::move(n));
      b.pending_notes.clear();
    }
  }
  bool active() const { return branches_.empty() || branches_.back().active; }

  // A branch keyword as a command's first word; words_before: the command's words before it.
  void keyword(const Value& word, size_t words_before) {
    const std::string& w = word.text;
    if (w == "case") {
      case_from_ = static_cast<int>(words_before);
    } else if (w == "esac" && !branches_.empty() && branches_.back().is_case) {
      branches_.pop_back();
      case_pattern_ = false;
    }
    if (w == "if") {
      branches_.push_back({active(), false, false, {}, false, std::nullopt});
      condition_from_ = static_cast<int>(words_before);
    } else if (w == "elif" && !branches_.empty()) {
      condition_from_ = static_cast<int>(words_before);
      branches_.back().active = false;
    } else if (w == "else" && !branches_.empty()) {
      Branch& b = branches_.back();
      b.active = b.parent_active && !b.taken;
    } else if (w == "fi" && !branches_.empty()) {
      branches_.pop_back();
    }
  }

  // "case WORD in": its words end the command; the arms follow.
  void open_case(const std::vector<Value>& words) {
    const size_t from = static_cast<size_t>(case_from_);
    case_from_ = -1;
    Branch b{active(), false, false, {}, true, std::nullopt};
    if (words.size() == from + 3 && words.back().text == "in" &&
        unresolved_reference(words[from + 1].text).empty()) {
      b.subject = words[from + 1].text;
    } else if (b.parent_active) {
      b.pending_notes.push_back(fmt::format("{}: calisim cannot decide this case (its word is not known here): it "
                                            "reads every arm, and the last flag or assignment of them counts",
                                            where(words[from])));
    }
    branches_.push_back(std::move(b));
    case_pattern_ = true;
  }

  // One arm's patterns, "a|b)" (or "(a|b)"), matched against the case's word as the shell's
  // glob patterns; the arm runs when one matches and no earlier arm ran.
  void case_arm() {
    case_pattern_ = false;
    if (t_[i_] == '(') ++i_;
    std::vector<std::string> patterns;
    bool unknown = false;
    while (i_ < t_.size()) {
      while (i_ < t_.size() && blank(t_[i_])) ++i_;
      const size_t before = i_;
      const Fields f = word(true);
      const std::string p = f.done.empty() ? std::string() : f.done.front().text;
      if (!unresolved_reference(p).empty()) unknown = true;
      patterns.push_back(p);
      while (i_ < t_.size() && blank(t_[i_])) ++i_;
      if (i_ < t_.size() && t_[i_] == '|') {
        ++i_;
      } else {
        if (i_ < t_.size() && t_[i_] == ')') ++i_;
        if (i_ == before) ++i_;  // nothing a pattern is made of: step over it
        break;
      }
    }
    if (branches_.empty() || !branches_.back().is_case) return;
    Branch& b = branches_.back();
    bool match = false;
    if (b.subject && !unknown) {
      for (const auto& p : patterns) match = match || fnmatch(p.c_str(), b.subject->c_str(), 0) == 0;
    }
    const bool decided = b.subject && !unknown;
    b.active = b.parent_active && !b.taken && (!decided || match);
    if (decided && match) b.taken = true;
  }

  // Evaluates the condition words collected since the if / elif and opens its branch.
  void decide(const std::vector<Value>& words) {
    const size_t from = static_cast<size_t>(condition_from_) + 1;
    condition_from_ = -1;
    if (branches_.empty()) return;
    Branch& b = branches_.back();
    std::vector<std::string> c;
    for (size_t k = from; k < words.size(); ++k) {
      if (words[k].text != "then") c.push_back(words[k].text);
    }
    std::vector<std::string> unset;
    const Truth t = condition(c, unset);
    const std::string line = where(words[from - 1]);
    if (t == Truth::unknown && b.parent_active && !b.taken) {
      b.pending_notes.push_back(fmt::format("{}: calisim cannot decide this condition (a file test, a command's status "
                                   "or a form it does not read): it reads every branch, and the last flag or "
                                   "assignment of them counts",
                                   line));
    }
    for (const auto& name : unset) {
      if (t != Truth::unknown && b.parent_active) {
        b.pending_notes.push_back(fmt::format("{}: the condition reads {} unset, as empty (as bash does when the "
                                         "environment lacks it); give it with --var {}=VALUE if the run sets it",
                                         line, name, name));
      }
    }
    b.active = b.parent_active && !b.taken && t != Truth::no;
    if (t == Truth::yes) b.taken = true;
  }

  static Truth flip(Truth t) { return t == Truth::yes ? Truth::no : t == Truth::no ? Truth::yes : t; }
  static Truth both(Truth a, Truth b) {
    if (a == Truth::no || b == Truth::no) return Truth::no;
    return a == Truth::yes && b == Truth::yes ? Truth::yes : Truth::unknown;
  }
  static Truth either(Truth a, Truth b) {
    if (a == Truth::yes || b == Truth::yes) return Truth::yes;
    return a == Truth::no && b == Truth::no ? Truth::no : Truth::unknown;
  }

  // Commands joined by && and || (left to right, equal precedence, as the shell's lists), each a
  // [[ ... ]], [ ... ] or test, optionally negated with !.
  static Truth condition(const std::vector<std::string>& w, std::vector<std::string>& unset) {
    std::optional<Truth> result;
    std::string join;
    size_t k = 0;
    while (k <= w.size()) {
      size_t e = k;
      for (int depth = 0; e < w.size(); ++e) {
        if (w[e] == "[[") ++depth;
        if (w[e] == "]]") --depth;
        if (depth == 0 && (w[e] == "&&" || w[e] == "||")) break;
      }
      const Truth t = command_test(std::vector<std::string>(w.begin() + k, w.begin() + e), unset);
      result = !result ? t : join == "&&" ? both(*result, t) : either(*result, t);
      if (e >= w.size()) break;
      join = w[e];
      k = e + 1;
    }
    return result.value_or(Truth::unknown);
  }
  static Truth command_test(std::vector<std::string> w, std::vector<std::string>& unset) {
    bool negate = false;
    if (!w.empty() && w.front() == "!") {
      negate = true;
      w.erase(w.begin());
    }
    Truth t = Truth::unknown;
    if (w.size() >= 2 && w.front() == "[[" && w.back() == "]]") {
      // Inside [[ ]], && binds tighter than ||.
      const std::vector<std::string> in(w.begin() + 1, w.end() - 1);
      std::optional<Truth> any;
      size_t k = 0;
      while (k <= in.size()) {
        size_t e = k;
        while (e < in.size() && in[e] != "||") ++e;
        std::optional<Truth> all;
        size_t a = k;
        while (a <= e) {
          size_t b = a;
          while (b < e && in[b] != "&&") ++b;
          const Truth s = test(std::vector<std::string>(in.begin() + a, in.begin() + b), unset);
          all = all ? both(*all, s) : s;
          a = b + 1;
        }
        any = any ? either(*any, *all) : *all;
        k = e + 1;
      }
      t = any.value_or(Truth::unknown);
    } else if (w.size() >= 2 && w.front() == "[" && w.back() == "]") {
      t = test(std::vector<std::string>(w.begin() + 1, w.end() - 1), unset);
    } else if (!w.empty() && w.front() == "test") {
      t = test(std::vector<std::string>(w.begin() + 1, w.end()), unset);
    }
    return negate ? flip(t) : t;  // anything else: a command's exit status, unknown
  }
  // One test: STRING, -z / -n STRING, A = / == / != B, A -eq / -ne / -lt / -le / -gt / -ge B.
  // A variable the script never sets reads as empty, as in bash without it in the environment
  // (its name goes to `unset`); any other reference left as written makes the test unknown.
  static Truth test(std::vector<std::string> w, std::vector<std::string>& unset) {
    bool negate = false;
    if (!w.empty() && w.front() == "!") {
      negate = true;
      w.erase(w.begin());
    }
    for (auto& x : w) {
      const std::string ref = unresolved_reference(x);
      if (ref.empty()) continue;
      const bool braced = ref.size() > 3 && ref[1] == '{';
      const std::string name = braced ? ref.substr(2, ref.size() - 3) : ref.substr(1);
      const bool plain = ref == x && !name.empty() && name_start(name[0]) &&
                         std::all_of(name.begin(), name.end(), [](char ch) { return name_char(ch); });
      if (!plain) return Truth::unknown;
      if (std::find(unset.begin(), unset.end(), name) == unset.end()) unset.push_back(name);
      x.clear();
    }
    std::optional<bool> r;
    const auto integer = [](const std::string& x) -> std::optional<long long> {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(x.c_str(), &end, 10);
      if (x.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
      return v;
    };
    if (w.size() == 1) {
      r = !w[0].empty();
    } else if (w.size() == 2 && (w[0] == "-z" || w[0] == "-n")) {
      r = w[0] == "-z" ? w[1].empty() : !w[1].empty();
    } else if (w.size() == 3 && (w[1] == "==" || w[1] == "=" || w[1] == "!=")) {
      if (w[2].find_first_of("*?[") != std::string::npos) return Truth::unknown;  // a pattern
      r = (w[0] == w[2]) == (w[1] != "!=");
    } else if (w.size() == 3 && w[1].size() == 3 && w[1][0] == '-') {
      const auto a = integer(w[0]), b = integer(w[2]);
      if (!a || !b) return Truth::unknown;
      const std::string& op = w[1];
      if (op == "-eq") r = *a == *b;
      else if (op == "-ne") r = *a != *b;
      else if (op == "-lt") r = *a < *b;
      else if (op == "-le") r = *a <= *b;
      else if (op == "-gt") r = *a > *b;
      else if (op == "-ge") r = *a >= *b;
    }
    if (!r) return Truth::unknown;  // file tests and the like
    return *r != negate ? Truth::yes : Truth::no;
  }

  // NAME= or NAME+= at the reading position.
  bool assignment_ahead() const {
    if (!name_start(t_[i_])) return false;
    size_t p = i_;
    while (p < t_.size() && name_char(t_[p])) ++p;
    if (p < t_.size() && t_[p] == '=') return true;
    return p + 1 < t_.size() && t_[p] == '+' && t_[p + 1] == '=';
  }

  void assign() {
    const size_t b = i_;
    while (name_char(t_[i_])) ++i_;
    const std::string name = t_.substr(b, i_ - b);
    const bool append = t_[i_] == '+';
    i_ += append ? 2 : 1;
    std::vector<Value> value;
    const int line = line_;
    if (i_ < t_.size() && t_[i_] == '(') {  // NAME=( a b c )
      ++i_;
      while (i_ < t_.size()) {
        const char c = t_[i_];
        if (blank(c)) {
          ++i_;
        } else if (c == '\n') {
          ++line_;
          ++i_;
        } else if (c == '\\' && i_ + 1 < t_.size() && t_[i_ + 1] == '\n') {
          i_ += 2;
          ++line_;
        } else if (c == '#') {
          while (i_ < t_.size() && t_[i_] != '\n') ++i_;
        } else if (c == ')') {
          ++i_;
          break;
        } else {
          const size_t before = i_;
          Fields f = word(false);
          for (auto& w : f.done) value.push_back(std::move(w));
          if (i_ == before) ++i_;  // a character no word starts with (';', '&', ...)
        }
      }
    } else if (i_ < t_.size() && !space(t_[i_]) && t_[i_] != ';' && t_[i_] != '&' && t_[i_] != '|') {
      Fields f = word(true);
      value.push_back(f.done.empty() ? Value{"", line, file_} : f.done.front());
    } else {
      value.emplace_back("", line, file_);
    }
    if (!branches_.empty() && branches_.back().parent_active) depends_on_branches();  // read or skipped
    if (fixed_.count(name) || !active()) return;
    if (!declaring_) {
      const auto old = vars_.find(name);
      scoped_.emplace_back(name, old == vars_.end() ? std::nullopt : std::optional<std::vector<Value>>(old->second));
    }
    auto& v = vars_[name];
    if (!append) {
      v = std::move(value);
    } else if (v.size() <= 1 && value.size() == 1 && t_[i_ - 1] != ')') {
      v = {Value{(v.empty() ? std::string() : v.front().text) + value.front().text, v.empty() ? line : v.front().line,
                 v.empty() ? file_ : v.front().file}};
    } else {
      v.insert(v.end(), value.begin(), value.end());
    }
  }

  // Here-document bodies, after the line that opened them: not script.
  void skip_heredoc_bodies() {
    for (const auto& [delimiter, strip_tabs] : heredocs_) {
      while (i_ < t_.size()) {
        const size_t end = std::min(t_.find('\n', i_), t_.size());
        std::string line = t_.substr(i_, end - i_);
        if (strip_tabs) line.erase(0, line.find_first_not_of('\t') == std::string::npos ? line.size()
                                                                                        : line.find_first_not_of('\t'));
        i_ = end < t_.size() ? end + 1 : end;
        ++line_;
        if (line == delimiter) break;
      }
    }
    heredocs_.clear();
  }

  void skip_redirection() {
    if (t_.compare(i_, 2, "<<") == 0 && t_.compare(i_, 3, "<<<") != 0) {  // a here-document
      i_ += 2;
      const bool strip_tabs = i_ < t_.size() && t_[i_] == '-';
      if (strip_tabs) ++i_;
      while (i_ < t_.size() && blank(t_[i_])) ++i_;
      const Fields f = word(true);  // its quotes removed: 'EOF', "EOF"
      if (!f.done.empty()) heredocs_.emplace_back(f.done.front().text, strip_tabs);
      return;
    }
    while (i_ < t_.size() && (t_[i_] == '<' || t_[i_] == '>' || t_[i_] == '&' || t_[i_] == '|')) ++i_;
    if (i_ < t_.size() && t_[i_ - 1] == '&' && (t_[i_] == '-' || std::isdigit(static_cast<unsigned char>(t_[i_])))) {
      while (i_ < t_.size() && !space(t_[i_]) && t_[i_] != ';') ++i_;
      return;
    }
    while (i_ < t_.size() && blank(t_[i_])) ++i_;
    if (i_ < t_.size() && !space(t_[i_])) word(false);  // the target
  }

  // One word from the reading position; no_split: an assignment's value (expansions not split).
  Fields word(bool no_split) {
    Fields f;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (space(c) || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>') break;
      if (c == '\\') {
        if (i_ + 1 < t_.size() && t_[i_ + 1] == '\n') {
          ++line_;
        } else if (i_ + 1 < t_.size()) {
          f.add(std::string(1, t_[i_ + 1]), line_, file_);
        }
        i_ += 2;
      } else if (c == '\'') {
        const size_t close = t_.find('\'', i_ + 1);
        const size_t end = close == std::string::npos ? t_.size() : close;
        const std::string s = t_.substr(i_ + 1, end - i_ - 1);
        f.add(s, line_, file_);
        for (char ch : s) line_ += ch == '\n';
        i_ = end + 1;
      } else if (c == '"') {
        double_quoted(f);
      } else if (c == '$') {
        const int line = line_;
        const Expansion e = dollar();
        if (e.literal || no_split) {
          f.add(join(e.values), line, file_);
        } else {
          for (size_t k = 0; k < e.values.size(); ++k) {
            if (k > 0) f.split();
            f.add_split(e.values[k].text, e.values[k].line, e.values[k].file);
          }
        }
      } else if (c == '`') {
        const int line = line_;
        f.add(backtick(), line, file_);
      } else {
        f.add_char(c, line_, file_);
        ++i_;
      }
    }
    f.split();
    return f;
  }

  void double_quoted(Fields& f) {
    ++i_;
    f.add("", line_, file_);
    while (i_ < t_.size() && t_[i_] != '"') {
      const char c = t_[i_];
      if (c == '\\' && i_ + 1 < t_.size()) {
        const char n = t_[i_ + 1];
        if (n == '\n') {
          ++line_;
        } else if (n == '$' || n == '`' || n == '"' || n == '\\') {
          f.add(std::string(1, n), line_, file_);
        } else {
          f.add(std::string{c, n}, line_, file_);
        }
        i_ += 2;
      } else if (c == '$') {
        const int line = line_;
        const Expansion e = dollar();
        if (e.multi) {
          for (size_t k = 0; k < e.values.size(); ++k) {
            if (k > 0) f.split();
            f.add(e.values[k].text, e.values[k].line, e.values[k].file);
          }
        } else {
          const bool one = e.values.size() == 1 && !e.literal;
          f.add(join(e.values), one ? e.values.front().line : line, one ? e.values.front().file : file_);
        }
      } else if (c == '`') {
        const int line = line_;
        f.add(backtick(), line, file_);
      } else {
        f.add_char(c, line_, file_);
        line_ += c == '\n';
        ++i_;
      }
    }
    ++i_;  // the closing quote
  }

  static std::string join(const std::vector<Value>& v) {
    std::string s;
    for (size_t k = 0; k < v.size(); ++k) s += (k ? " " : "") + v[k].text;
    return s;
  }

  std::string backtick() {
    const size_t close = t_.find('`', i_ + 1);
    const size_t end = close == std::string::npos ? t_.size() : close + 1;
    std::string s = t_.substr(i_, end - i_);
    for (char ch : s) line_ += ch == '\n';
    i_ = end;
    return s;
  }

  // source FILE / . FILE: read through sources_.reader into the same variables, its options and
  // values marked with the file. What cannot be read is a note.
  void source(const std::string& command, const std::vector<Value>& words, size_t k) {
    const std::string path = k + 1 < words.size() ? words[k + 1].text : "";
    const auto not_followed = [&](const std::string& why) {
      out_.notes.push_back(fmt::format("{}: {} {} is not followed ({}): the variables it sets are unset here "
                                       "(give the ones the run needs with --var NAME=VALUE)",
                                       where(words[k]), command, path, why));
    };
    if (path.empty() || !unresolved_reference(path).empty()) return not_followed("its path is not known here");
    const std::optional<std::string> text = sources_.reader && *sources_.reader ? (*sources_.reader)(path) : std::nullopt;
    if (!text) return not_followed("the file cannot be read");
    if (depth_ >= kMaxDepth) return not_followed("sourced files nest too deep");
    sources_.names.push_back(path);
    const int file = static_cast<int>(sources_.names.size()) - 1;
    const std::string lf = lf_line_endings(*text);  // its own line numbers, from 1
    Reader sub(lf, vars_, fixed_, sources_, file, 1, depth_ + 1);
    LaunchScript inner = sub.run();
    for (auto& o : inner.options) out_.options.push_back(std::move(o));
    for (auto& n : inner.notes) out_.notes.push_back(std::move(n));
  }
  // "line 12" in the script read, "cluster.sh line 3" in a file it sources.
  std::string where(const Value& v) const {
    return v.file == 0 ? fmt::format("line {}", v.line) : fmt::format("{} line {}", sources_.names[v.file], v.line);
  }

  // The index just past the bracket that closes the one at `open` ('(' or '{'), quotes skipped.
  size_t matching(size_t open) const {
    const char o = t_[open], c = o == '(' ? ')' : '}';
    int depth = 0;
    for (size_t p = open; p < t_.size(); ++p) {
      if (t_[p] == '\'' || t_[p] == '"') {
        const size_t q = t_.find(t_[p], p + 1);
        if (q == std::string::npos) return t_.size();
        p = q;
      } else if (t_[p] == o) {
        ++depth;
      } else if (t_[p] == c && --depth == 0) {
        return p + 1;
      }
    }
    return t_.size();
  }

  Expansion literal(size_t from) {
    const std::string s = t_.substr(from, i_ - from);
    const int line = line_;
    for (char ch : s) line_ += ch == '\n';
    return {{Value{s, line, file_}}, false, true};
  }
  Expansion text(std::string s) const { return {{Value{std::move(s), line_, file_}}, false, false}; }

  // At a '$': the expansion, with the reading position past it.
  Expansion dollar() {
    const size_t b = i_;
    ++i_;
    if (i_ >= t_.size()) return text("$");
    const char c = t_[i_];
    if (c == '(' && i_ + 1 < t_.size() && t_[i_ + 1] == '(') {  // $(( arithmetic ))
      i_ = matching(i_);
      const std::string inner = t_.substr(b + 3, i_ >= b + 5 ? i_ - b - 5 : 0);
      bool unresolved = false;
      const std::string expanded = expand_text(inner, unresolved);
      const auto v = unresolved ? std::nullopt : Arithmetic(expanded, vars_).eval();
      if (!v) return literal(b);
      return text(std::to_string(*v));
    }
    if (c == '(') {  // $( command ): not run
      i_ = matching(i_);
      return literal(b);
    }
    if (c == '{') {
      i_ = matching(i_);
      return braced(t_.substr(b + 2, i_ - b - 3), b);
    }
    if (name_start(c)) {
      const size_t n = i_;
      while (i_ < t_.size() && name_char(t_[i_])) ++i_;
      const auto it = vars_.find(t_.substr(n, i_ - n));
      if (it == vars_.end()) return literal(b);
      return it->second.empty() ? text("") : Expansion{{it->second.front()}, false, false};
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {  // $1: set only through `vars` ("1")
      ++i_;
      const auto it = vars_.find(std::string(1, c));
      if (it == vars_.end()) return literal(b);
      return it->second.empty() ? text("") : Expansion{{it->second.front()}, false, false};
    }
    if (c == '@' || c == '*' || c == '#' || c == '?' || c == '$' || c == '!' || c == '-') {  // special parameters
      ++i_;
      return literal(b);
    }
    return text("$");
  }

  // ${body}; `from` is where the '$' stood.
  Expansion braced(const std::string& body, size_t from) {
    size_t p = 0;
    const bool length = !body.empty() && body[0] == '#';
    if (length) ++p;
    if (p >= body.size() || !name_char(body[p])) return literal(from);
    const size_t n = p;
    if (std::isdigit(static_cast<unsigned char>(body[p]))) {  // a positional parameter: ${1:-default}
      while (p < body.size() && std::isdigit(static_cast<unsigned char>(body[p]))) ++p;
    } else {
      while (p < body.size() && name_char(body[p])) ++p;
    }
    const std::string name = body.substr(n, p - n);
    std::string sub;
    if (p < body.size() && body[p] == '[') {
      const size_t close = body.find(']', p);
      if (close == std::string::npos) return literal(from);
      sub = body.substr(p + 1, close - p - 1);
      p = close + 1;
    }
    const auto it = vars_.find(name);
    const bool set = it != vars_.end();
    std::vector<Value> values;
    if (set) {
      if (sub == "@" || sub == "*") {
        values = it->second;
      } else if (!sub.empty()) {
        bool unresolved = false;
        const auto index = Arithmetic(expand_text(sub, unresolved), vars_).eval();
        if (unresolved || !index) return literal(from);
        if (*index >= 0 && *index < static_cast<long long>(it->second.size())) values = {it->second[*index]};
      } else if (!it->second.empty()) {
        values = {it->second.front()};
      }
    }
    if (length) {
      if (!set) return literal(from);
      const size_t count = sub == "@" || sub == "*" ? values.size() : (values.empty() ? 0 : values.front().text.size());
      return p == body.size() ? text(std::to_string(count)) : literal(from);
    }
    const bool empty = values.empty() || (values.size() == 1 && values.front().text.empty());
    // ${V,,} ${V,} ${V^^} ${V^}: case modification of a set variable.
    const std::string rest = body.substr(p);
    if (set && (rest == ",," || rest == "," || rest == "^^" || rest == "^")) {
      for (Value& v : values) {
        const size_t n = rest.size() == 2 ? v.text.size() : std::min<size_t>(1, v.text.size());
        for (size_t q = 0; q < n; ++q) {
          const auto ch = static_cast<unsigned char>(v.text[q]);
          v.text[q] = static_cast<char>(rest[0] == ',' ? std::tolower(ch) : std::toupper(ch));
        }
      }
      return {values.empty() ? std::vector<Value>{Value{"", line_, file_}} : values, sub == "@", false};
    }
    if (p < body.size()) {
      const bool colon = body[p] == ':';
      const size_t o = p + (colon ? 1 : 0);
      if (o >= body.size()) return literal(from);
      const char op = body[o];
      if (op != '-' && op != '=' && op != '+' && op != '?') return literal(from);  // ${A%x}, ${A:1:2}, ...
      const bool missing = colon ? (!set || empty) : !set;
      if (op == '?') {  // the value, or (unset) the shell's error: left as written
        if (missing) return literal(from);
        return {values, sub == "@", false};
      }
      bool unresolved = false;
      const std::string word = expand_text(body.substr(o + 1), unresolved);
      if (op == '+') {
        if (missing) return text("");
        return unresolved ? literal(from) : text(word);
      }
      if (!missing) return {values, sub == "@", false};
      if (unresolved) return literal(from);
      if (op == '=' && !fixed_.count(name)) vars_[name] = {Value{word, line_, file_}};
      return text(word);
    }
    if (!set) return literal(from);
    if (sub == "*") {
      return {{Value{join(values), values.empty() ? line_ : values.front().line, values.empty() ? file_ : values.front().file}},
              false, false};
    }
    return {values.empty() ? std::vector<Value>{Value{"", line_, file_}} : values, sub == "@", false};
  }

  // Expands s as the inside of double quotes; unresolved is set when a reference stays as written.
  // (Quotes inside s are removed as the shell removes them: ${A:-"x y"} is x y.)
  std::string expand_text(const std::string& s, bool& unresolved) {
    if (depth_ >= kMaxDepth) {
      unresolved = true;
      return s;
    }
    Reader sub(s, vars_, fixed_, sources_, file_, line_, depth_ + 1);
    std::string out;
    while (sub.i_ < s.size()) {
      const char c = s[sub.i_];
      if (space(c) || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>') {
        out += c;
        ++sub.i_;
        continue;
      }
      const Fields f = sub.word(true);
      out += join(f.done);
    }
    unresolved = !unresolved_reference(out).empty();
    return out;
  }

  // A command's words: its options, attributed to the program that receives them.
  void take(const std::vector<Value>& words) {
    size_t k = 0;
    while (k < words.size() && (prefix_word(words[k].text) || (words[k].text.size() > 1 && words[k].text[0] == '-' &&
                                                                k > 0 && declares(words[k - 1].text)))) {
      ++k;
    }
    if (k >= words.size()) return;
    // A command may be options alone: a file of arguments (read), or, in a script that runs a
    // training program, lines that bash would fail to run (decided at the end, in finish()).
    const bool bare = !words[k].text.empty() && words[k].text[0] == '-';
    const size_t first_new = out_.options.size();
    std::string program = bare ? std::string() : basename(words[k].text);
    const std::string command = program;
    if (command == "echo" || command == "printf") return;  // prints a command line; runs nothing
    if (command == "source" || command == ".") {
      source(command, words, k);
      return;
    }
    LaunchOption* open = nullptr;  // the option collecting values
    for (size_t j = bare ? k : k + 1; j < words.size(); ++j) {
      const std::string& w = words[j].text;
      const bool number = w.size() > 1 && w[0] == '-' && (std::isdigit(static_cast<unsigned char>(w[1])) || w[1] == '.');
      if (w.size() > 2 && w[0] == '-' && w[1] == '-') {
        const auto eq = w.find('=');
        LaunchOption o{w.substr(0, eq), {}, words[j].line, program, sources_.names[words[j].file]};
        if (eq != std::string::npos) o.values.push_back(w.substr(eq + 1));
        out_.options.push_back(std::move(o));
        open = eq == std::string::npos ? &out_.options.back() : nullptr;
      } else if (w.size() > 1 && w[0] == '-' && !number) {
        out_.options.push_back({w, {}, words[j].line, program, sources_.names[words[j].file]});
        open = &out_.options.back();
      } else if (program_word(w) || ends_with(w, ".py") || ends_with(w, ".sh")) {
        // A program inside this command (srun ... torchrun ..., python -m torch.distributed.run):
        // it receives what follows.
        open = nullptr;
        program = basename(w);
      } else if (w == "torch.distributed.run" || w == "torch.distributed.launch") {
        program = "torchrun";
        open = nullptr;
      } else if (open) {
        open->values.push_back(w);
      }
    }
    // srun ... bash -c "torchrun ...": the string is a script of its own; so are eval's words.
    std::string inner_text;
    int inner_line = words[k].line;
    if ((command == "bash" || command == "sh") && out_.options.size() > first_new) {
      const LaunchOption& c = out_.options[first_new];
      if (c.name == "-c" && c.program == command && !c.values.empty()) {
        inner_text = c.values.front();
        inner_line = c.line;
      }
    } else if (command == "eval") {
      for (size_t j = k + 1; j < words.size(); ++j) inner_text += (j > k + 1 ? " " : "") + words[j].text;
      out_.options.resize(first_new);  // eval's words are read again below, as the command they make
    }
    if (bare) {
      bare_.insert(bare_.end(), std::make_move_iterator(out_.options.begin() + static_cast<long>(first_new)),
                   std::make_move_iterator(out_.options.end()));
      out_.options.resize(first_new);
      bare_lines_.push_back(words[k]);
      return;
    }
    if (!inner_text.empty() && depth_ < kMaxDepth) {
      Reader sub(inner_text, vars_, fixed_, sources_, file_, inner_line, depth_ + 1);
      LaunchScript inner = sub.run();
      for (auto& o : inner.options) out_.options.push_back(std::move(o));
      for (auto& n : inner.notes) out_.notes.push_back(std::move(n));
    }
  }

  const std::string& t_;
  Vars& vars_;
  const std::set<std::string>& fixed_;
  Sources& sources_;
  size_t i_ = 0;
  int line_ = 1;
  LaunchScript out_;
  std::vector<Branch> branches_;
  int condition_from_ = -1;  // index in the command's words of the if / elif being read, or -1
  int case_from_ = -1;       // likewise for "case WORD in"
  // Assignments of the command being read, with the values they replaced: undone if a command
  // word follows ("A=1 cmd"), kept when the command is assignments alone.
  std::vector<std::pair<std::string, std::optional<std::vector<Value>>>> scoped_;
  bool declaring_ = false;  // the command is export / declare / local ...: its assignments stay
  bool case_pattern_ = false;  // the next word is a case arm's pattern
  int depth_ = 0;
  int file_ = 0;
  std::vector<LaunchOption> bare_;  // options of commands made of options alone
  std::vector<Value> bare_lines_;  // the first word of each such command
  std::vector<std::pair<std::string, bool>> heredocs_;  // here-documents opened on this line: delimiter, <<-
};

}  // namespace

LaunchScript read_launch_script(const std::string& crlf_text, const std::map<std::string, std::string>& vars,
                                const SourceReader& source) {
  const std::string text = lf_line_endings(crlf_text);
  Vars values;
  std::set<std::string> fixed;
  for (const auto& [k, v] : vars) {
    values[k] = {Value{v, 0, 0}};
    fixed.insert(k);
  }
  Reader::Sources sources;
  sources.reader = &source;
  return Reader(text, values, fixed, sources).run();
}

std::string unresolved_reference(const std::string& value) {
  for (size_t p = 0; p < value.size(); ++p) {
    if (value[p] == '`') {
      const size_t q = value.find('`', p + 1);
      return value.substr(p, q == std::string::npos ? std::string::npos : q - p + 1);
    }
    if (value[p] != '$' || p + 1 >= value.size()) continue;
    const char c = value[p + 1];
    if (c == '{' || c == '(') {
      const char close = c == '{' ? '}' : ')';
      int depth = 0;
      for (size_t q = p + 1; q < value.size(); ++q) {
        if (value[q] == c) ++depth;
        if (value[q] == close && --depth == 0) return value.substr(p, q - p + 1);
      }
      return value.substr(p);
    }
    if (name_start(c)) {
      size_t q = p + 1;
      while (q < value.size() && name_char(value[q])) ++q;
      return value.substr(p, q - p);
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '@' || c == '*' || c == '#' || c == '?' || c == '!' ||
        c == '-' || c == '$') {
      return value.substr(p, 2);
    }
  }
  return "";
}

}  // namespace calisim
