#include "cli/table.h"

#include <algorithm>
#include <cctype>

namespace calisim::cli {
namespace {

bool numeric(const std::string& s) {
  if (s.empty()) return false;
  const auto digit = [&](std::size_t i) { return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); };
  if (digit(0)) return true;
  // "-1.5", "+3%", ".5", "-.5"; not "--flag" or "-".
  if (s[0] == '.') return digit(1);
  return (s[0] == '-' || s[0] == '+') && (digit(1) || (s.size() > 2 && s[1] == '.' && digit(2)));
}

}  // namespace

std::string Table::render(const std::string& indent) const {
  std::vector<std::size_t> width(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row, bool header) {
    std::string out = indent;
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      const bool right = !header && c > 0 && numeric(cell);
      out += right ? pad + cell : cell + pad;
      if (c + 1 < width.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_, true);
  std::size_t total = 0;
  for (std::size_t w : width) total += w + 2;
  out += indent + std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto& row : rows_) out += line(row, false);
  return out;
}

}  // namespace calisim::cli
