// Minimal RFC 4180 CSV: comma-separated, fields optionally in double quotes ("" inside quotes is
// a quote; quoted fields may span lines). Lines starting with '#' outside quotes are comments.
//
// Contract: parse_csv() returns the header and records, each with the 1-based line it starts
// on; a record whose field count differs from the header's, or an unterminated quote, throws
// InputError(file, "line N", ...). csv_field() quotes a value only when it must.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace calisim::db {

struct CsvRecord {
  int line = 0;
  std::vector<std::string> fields;
};

struct CsvTable {
  std::vector<std::string> header;
  std::vector<CsvRecord> records;
  // Index of a header column, or -1.
  int column(std::string_view name) const;
};

CsvTable parse_csv(std::string_view text, const std::string& file);
std::string csv_field(std::string_view value);

}  // namespace calisim::db
