#include "simulator/launch_script.h"

#include <cctype>
#include <cstdlib>
#include <optional>
#include <set>
#include <utility>

namespace calisim {
namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
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
struct Value {
  std::string text;
  int line = 0;
};
using Vars = std::map<std::string, std::vector<Value>>;

// The fields one shell word has split into so far, each with the line its first character was
// written on (for an expanded variable: the line of its assignment, so that a flag kept in an
// array is reported where the array lists it).
struct Fields {
  std::vector<Value> done;
  std::string cur;
  int cur_line = 0;
  bool cur_real = false;  // cur exists, even if empty (a quoted "")
  bool line_set = false;  // cur_line is that of cur's first character (not of an empty quote)
  void add(const std::string& s, int line) {
    if (!line_set && (!s.empty() || !cur_real)) cur_line = line;
    line_set = line_set || !s.empty();
    cur += s;
    cur_real = true;
  }
  void split() {
    if (cur_real) done.push_back({cur, cur_line});
    cur.clear();
    cur_real = false;
    line_set = false;
  }
  // An unquoted expansion: split on white space.
  void add_split(const std::string& v, int line) {
    size_t p = 0;
    while (p < v.size()) {
      if (space(v[p])) {
        split();
        while (p < v.size() && space(v[p])) ++p;
        continue;
      }
      size_t q = p;
      while (q < v.size() && !space(v[q])) ++q;
      add(v.substr(p, q - p), line);
      p = q;
    }
  }
};

struct Expansion {
  std::vector<Value> values;  // one value, or an array's elements for ${A[@]}
  bool multi = false;         // ${A[@]}: each element its own field
  bool literal = false;       // left as written (unresolved): never split
};

// Integer arithmetic of $(( )): + - * / % and parentheses over numbers and variable names.
class Arithmetic {
 public:
  Arithmetic(const std::string& s, const Vars& vars) : s_(s), vars_(vars) {}
  std::optional<long long> eval() {
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
      if (!b) return std::nullopt;
      a = op == '+' ? *a + *b : *a - *b;
    }
    return a;
  }
  std::optional<long long> product() {
    auto a = unary();
    while (a) {
      skip();
      if (p_ >= s_.size() || (s_[p_] != '*' && s_[p_] != '/' && s_[p_] != '%')) break;
      const char op = s_[p_++];
      auto b = unary();
      if (!b || (op != '*' && *b == 0)) return std::nullopt;
      a = op == '*' ? *a * *b : op == '/' ? *a / *b : *a % *b;
    }
    return a;
  }
  std::optional<long long> unary() {
    skip();
    if (p_ < s_.size() && (s_[p_] == '-' || s_[p_] == '+')) {
      const char op = s_[p_++];
      auto v = unary();
      if (!v) return std::nullopt;
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
      while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) v = v * 10 + (s_[p_++] - '0');
      return v;
    }
    if (p_ < s_.size() && name_start(s_[p_])) {
      const size_t b = p_;
      while (p_ < s_.size() && name_char(s_[p_])) ++p_;
      const auto it = vars_.find(s_.substr(b, p_ - b));
      if (it == vars_.end() || it->second.empty()) return std::nullopt;
      return Arithmetic(it->second.front().text, vars_).eval();
    }
    return std::nullopt;
  }
  const std::string& s_;
  const Vars& vars_;
  size_t p_ = 0;
};

class Reader {
 public:
  Reader(const std::string& text, Vars& vars, const std::set<std::string>& fixed, int first_line = 1)
      : t_(text), vars_(vars), fixed_(fixed), line_(first_line) {}

  LaunchScript run() {
    std::vector<Value> words;  // the current command's words and their lines
    bool prefix = true;        // still before the command's program word
    const auto end_command = [&] {
      if (condition_from_ >= 0) decide(words);
      if (active()) take(words);
      words.clear();
      prefix = true;
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
        end_command();
        ++line_;
        ++i_;
        line_start = true;
        continue;
      }
      // "a || b" and "a && b" inside an if / elif condition: one condition of several tests.
      if (condition_from_ >= 0 && (c == '|' || c == '&') && i_ + 1 < t_.size() && t_[i_ + 1] == c) {
        words.push_back({std::string(2, c), line_});
        i_ += 2;
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
          words.push_back({"#SBATCH", line_});
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
        if (prefix && condition_from_ < 0) keyword(w.text, words.size());
        if (prefix && condition_from_ >= 0 && w.text == "then") decide(words);
        if (!keeps_prefix) prefix = false;
        words.push_back(std::move(w));
      }
    }
    end_command();
    return std::move(out_);
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
  };
  bool active() const { return branches_.empty() || branches_.back().active; }

  // A branch keyword as a command's first word; words_before: the command's words before it.
  void keyword(const std::string& w, size_t words_before) {
    if (w == "if") {
      branches_.push_back({active(), false, false});
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
    const Truth t = condition(c);
    b.active = b.parent_active && !b.taken && t != Truth::no;
    if (t == Truth::yes) b.taken = true;
  }

  // Tests joined by && and || (left to right, as the shell does), each [[ ... ]], [ ... ] or test.
  static Truth condition(const std::vector<std::string>& w) {
    Truth result = Truth::unknown;
    std::string join;
    size_t k = 0;
    bool first = true;
    while (k < w.size()) {
      size_t e = k;
      while (e < w.size() && w[e] != "&&" && w[e] != "||") ++e;
      const Truth t = test(std::vector<std::string>(w.begin() + k, w.begin() + e));
      if (first) {
        result = t;
      } else if (join == "&&") {
        result = result == Truth::no || t == Truth::no ? Truth::no
                 : result == Truth::yes && t == Truth::yes ? Truth::yes : Truth::unknown;
      } else {
        result = result == Truth::yes || t == Truth::yes ? Truth::yes
                 : result == Truth::no && t == Truth::no ? Truth::no : Truth::unknown;
      }
      first = false;
      if (e < w.size()) join = w[e];
      k = e + 1;
    }
    return first ? Truth::unknown : result;
  }
  static Truth test(std::vector<std::string> w) {
    bool negate = false;
    if (!w.empty() && w.front() == "!") {
      negate = true;
      w.erase(w.begin());
    }
    if (w.size() >= 2 && ((w.front() == "[[" && w.back() == "]]") || (w.front() == "[" && w.back() == "]"))) {
      w = std::vector<std::string>(w.begin() + 1, w.end() - 1);
    } else if (!w.empty() && w.front() == "test") {
      w.erase(w.begin());
    } else {
      return Truth::unknown;  // a command's exit status
    }
    if (!w.empty() && w.front() == "!") {
      negate = !negate;
      w.erase(w.begin());
    }
    for (const auto& x : w) {
      if (!unresolved_reference(x).empty()) return Truth::unknown;
    }
    std::optional<bool> r;
    const auto integer = [](const std::string& x) -> std::optional<long long> {
      char* end = nullptr;
      const long long v = std::strtoll(x.c_str(), &end, 10);
      if (x.empty() || *end != '\0') return std::nullopt;
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
      value.push_back(f.done.empty() ? Value{"", line} : f.done.front());
    } else {
      value.push_back({"", line});
    }
    if (fixed_.count(name) || !active()) return;
    auto& v = vars_[name];
    if (!append) {
      v = std::move(value);
    } else if (v.size() <= 1 && value.size() == 1 && t_[i_ - 1] != ')') {
      v = {{(v.empty() ? std::string() : v.front().text) + value.front().text, v.empty() ? line : v.front().line}};
    } else {
      v.insert(v.end(), value.begin(), value.end());
    }
  }

  void skip_redirection() {
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
          f.add(std::string(1, t_[i_ + 1]), line_);
        }
        i_ += 2;
      } else if (c == '\'') {
        const size_t close = t_.find('\'', i_ + 1);
        const size_t end = close == std::string::npos ? t_.size() : close;
        const std::string s = t_.substr(i_ + 1, end - i_ - 1);
        f.add(s, line_);
        for (char ch : s) line_ += ch == '\n';
        i_ = end + 1;
      } else if (c == '"') {
        double_quoted(f);
      } else if (c == '$') {
        const int line = line_;
        const Expansion e = dollar();
        if (e.literal || no_split) {
          f.add(join(e.values), line);
        } else {
          for (size_t k = 0; k < e.values.size(); ++k) {
            if (k > 0) f.split();
            f.add_split(e.values[k].text, e.values[k].line);
          }
        }
      } else if (c == '`') {
        const int line = line_;
        f.add(backtick(), line);
      } else {
        f.add(std::string(1, c), line_);
        ++i_;
      }
    }
    f.split();
    return f;
  }

  void double_quoted(Fields& f) {
    ++i_;
    f.add("", line_);
    while (i_ < t_.size() && t_[i_] != '"') {
      const char c = t_[i_];
      if (c == '\\' && i_ + 1 < t_.size()) {
        const char n = t_[i_ + 1];
        if (n == '\n') {
          ++line_;
        } else if (n == '$' || n == '`' || n == '"' || n == '\\') {
          f.add(std::string(1, n), line_);
        } else {
          f.add(std::string{c, n}, line_);
        }
        i_ += 2;
      } else if (c == '$') {
        const int line = line_;
        const Expansion e = dollar();
        if (e.multi) {
          for (size_t k = 0; k < e.values.size(); ++k) {
            if (k > 0) f.split();
            f.add(e.values[k].text, e.values[k].line);
          }
        } else {
          f.add(join(e.values), e.values.size() == 1 && !e.literal ? e.values.front().line : line);
        }
      } else if (c == '`') {
        const int line = line_;
        f.add(backtick(), line);
      } else {
        f.add(std::string(1, c), line_);
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
    return {{{s, line}}, false, true};
  }
  Expansion text(std::string s) const { return {{{std::move(s), line_}}, false, false}; }

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
    if (p < body.size()) {
      const bool colon = body[p] == ':';
      const size_t o = p + (colon ? 1 : 0);
      if (o >= body.size()) return literal(from);
      const char op = body[o];
      if (op != '-' && op != '=' && op != '+') return literal(from);  // ${A:?msg}, ${A%x}, ${A:1:2}, ...
      const bool missing = colon ? (!set || empty) : !set;
      bool unresolved = false;
      const std::string word = expand_text(body.substr(o + 1), unresolved);
      if (op == '+') {
        if (missing) return text("");
        return unresolved ? literal(from) : text(word);
      }
      if (!missing) return {values, sub == "@", false};
      if (unresolved) return literal(from);
      if (op == '=' && !fixed_.count(name)) vars_[name] = {{word, line_}};
      return text(word);
    }
    if (!set) return literal(from);
    if (sub == "*") return {{{join(values), values.empty() ? line_ : values.front().line}}, false, false};
    return {values.empty() ? std::vector<Value>{{"", line_}} : values, sub == "@", false};
  }

  // Expands s as the inside of double quotes; unresolved is set when a reference stays as written.
  // (Quotes inside s are removed as the shell removes them: ${A:-"x y"} is x y.)
  std::string expand_text(const std::string& s, bool& unresolved) {
    Reader sub(s, vars_, fixed_, line_);
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
    // A command may be options alone (a file of arguments, or their continuation lines).
    const bool bare = !words[k].text.empty() && words[k].text[0] == '-';
    std::string program = bare ? std::string() : basename(words[k].text);
    LaunchOption* open = nullptr;  // the option collecting values
    for (size_t j = bare ? k : k + 1; j < words.size(); ++j) {
      const std::string& w = words[j].text;
      const bool number = w.size() > 1 && w[0] == '-' && (std::isdigit(static_cast<unsigned char>(w[1])) || w[1] == '.');
      if (w.size() > 2 && w[0] == '-' && w[1] == '-') {
        const auto eq = w.find('=');
        LaunchOption o{w.substr(0, eq), {}, words[j].line, program};
        if (eq != std::string::npos) o.values.push_back(w.substr(eq + 1));
        out_.options.push_back(std::move(o));
        open = eq == std::string::npos ? &out_.options.back() : nullptr;
      } else if (w.size() > 1 && w[0] == '-' && !number) {
        out_.options.push_back({w, {}, words[j].line, program});
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
    // srun ... bash -c "torchrun ...": the string is a script of its own.
    if ((program == "bash" || program == "sh") && !out_.options.empty()) {
      const LaunchOption c = out_.options.back();
      if (c.name == "-c" && c.program == program && !c.values.empty()) {
        Reader sub(c.values.front(), vars_, fixed_, c.line);
        LaunchScript inner = sub.run();
        for (auto& o : inner.options) out_.options.push_back(std::move(o));
      }
    }
  }

  const std::string& t_;
  Vars& vars_;
  const std::set<std::string>& fixed_;
  size_t i_ = 0;
  int line_ = 1;
  LaunchScript out_;
  std::vector<Branch> branches_;
  int condition_from_ = -1;  // index in the command's words of the if / elif being read, or -1
};

}  // namespace

LaunchScript read_launch_script(const std::string& text, const std::map<std::string, std::string>& vars) {
  Vars values;
  std::set<std::string> fixed;
  for (const auto& [k, v] : vars) {
    values[k] = {{v, 0}};
    fixed.insert(k);
  }
  return Reader(text, values, fixed).run();
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
