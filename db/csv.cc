#include "db/csv.h"

#include <fmt/format.h>

#include "core/error.h"

namespace calisim::db {

int CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

CsvTable parse_csv(std::string_view text, const std::string& file) {
  CsvTable table;
  std::vector<CsvRecord> rows;
  std::size_t i = 0;
  int line = 1;
  while (i < text.size()) {
    if (text[i] == '\n' || text[i] == '\r') {  // blank line
      line += text[i] == '\n';
      ++i;
      continue;
    }
    if (text[i] == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    CsvRecord rec;
    rec.line = line;
    std::string field;
    bool quoted = false, was_quoted = false;
    while (i < text.size()) {
      const char c = text[i];
      if (quoted) {
        if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          i += 2;
          continue;
        }
        if (c == '"') {
          quoted = false;
        } else {
          if (c == '\n') ++line;
          field += c;
        }
        ++i;
        continue;
      }
      if (c == '"' && field.empty() && !was_quoted) {
        quoted = was_quoted = true;
        ++i;
      } else if (c == ',') {
        rec.fields.push_back(std::move(field));
        field.clear();
        was_quoted = false;
        ++i;
      } else if (c == '\r') {
        ++i;
      } else if (c == '\n') {
        ++i;
        ++line;
        break;
      } else {
        field += c;
        ++i;
      }
    }
    if (quoted) throw InputError(file, fmt::format("line {}", rec.line), "a quoted field is never closed");
    rec.fields.push_back(std::move(field));
    rows.push_back(std::move(rec));
  }
  if (rows.empty()) throw InputError(file, "line 1", "expected a header line");
  table.header = std::move(rows.front().fields);
  for (std::size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].fields.size() != table.header.size()) {
      throw InputError(file, fmt::format("line {}", rows[r].line),
                       fmt::format("{} fields, but the header has {}", rows[r].fields.size(), table.header.size()));
    }
    table.records.push_back(std::move(rows[r]));
  }
  return table;
}

std::string csv_field(std::string_view value) {
  if (value.find_first_of(",\"\n\r") == std::string_view::npos && (value.empty() || value.front() != '#')) {
    return std::string(value);
  }
  std::string out = "\"";
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace calisim::db
