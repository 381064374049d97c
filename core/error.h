// Errors that reach users.
//
// InputError is bad input the user can fix (a config file, a flag, a CSV row): its message names
// the file, the JSON path (or line/column) and what was expected, and the CLI exits with code 2.
// Anything else that escapes is an internal error (exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace calisim {

class InputError : public std::runtime_error {
 public:
  // file: path or logical name ("<--set>"); where: JSON path like "strategy.tp_size" or "line 12";
  // problem: what is wrong and what was expected.
  InputError(std::string file, std::string where, std::string problem)
      : std::runtime_error(format(file, where, problem)),
        file_(std::move(file)), where_(std::move(where)), problem_(std::move(problem)) {}

  const std::string& file() const { return file_; }
  const std::string& where() const { return where_; }
  const std::string& problem() const { return problem_; }

 private:
  static std::string format(const std::string& file, const std::string& where, const std::string& problem) {
    std::string s = file;
    if (!where.empty()) s += s.empty() ? where : ": " + where;
    if (!s.empty()) s += ": ";
    return s + problem;
  }
  std::string file_, where_, problem_;
};

}  // namespace calisim
