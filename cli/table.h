// A plain-text table for terminal output: columns sized to their widest cell, numbers
// right-aligned, a rule under the header.
#pragma once

#include <string>
#include <vector>

namespace calisim::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render(const std::string& indent = "  ") const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace calisim::cli
