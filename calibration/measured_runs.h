// Reading measured training runs: the public format of calibration/data/measured_runs.csv (one
// row per published configuration, columns described in calibration/data/README.md) and SimuMax's
// single-node A100-PCIe table (calibration/data/simumax_a100_pcie.csv). The format is chosen from
// the header. A leading UTF-8 byte-order mark (spreadsheet "CSV UTF-8") is not part of the text.
//
// Contract: parse_* either return every data row or throw InputError(file, "line N[, column C]",
// problem). Numeric columns must be empty (not given) or a number: real columns (measured and
// published figures) a positive one; integer columns an integer from 1 (0 for the MoE columns,
// where 0 means none) to INT_MAX, so that later casts to int are exact. Nothing is dropped
// silently. Pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace calisim::calibration {

struct CsvRow {
  int line = 0;                     // 1-based line where the record starts
  std::vector<std::string> cells;
};

struct CsvTable {
  std::vector<std::string> header;
  std::vector<CsvRow> rows;         // empty lines skipped
};

// RFC 4180: quoted cells may hold commas, doubled quotes and newlines; CR before LF is ignored;
// a leading UTF-8 byte-order mark is skipped.
// Throws InputError on an unterminated quote or a record whose cell count differs from the header.
CsvTable parse_csv(const std::string& text, const std::string& file);

enum class RunFormat { published, simumax };

struct MeasuredRun {
  int line = 0;
  RunFormat format = RunFormat::published;
  std::string run_id, source, model, gpu_type;
  std::map<std::string, std::string> cells;  // every column, raw text

  // The raw cell ("" when the column is absent or empty).
  const std::string& text(const std::string& column) const;
  // The numeric value of a column that parse_measured_runs checked; nullopt when empty.
  std::optional<double> number(const std::string& column) const;
};

// Columns checked as numbers (integers where the name is a count or a size).
const std::vector<std::string>& numeric_columns(RunFormat format);

// Throws InputError for a missing required column, a malformed CSV record, a non-numeric or
// out-of-range cell in a numeric column ("line 12, column tp: expected an integer, got 'x'";
// "line 12, column step_time_s: expected a positive number, got '0'") or a run_id repeated in the
// file (every report keys rows by run_id).
std::vector<MeasuredRun> parse_measured_runs(const std::string& text, const std::string& file);

// Reads the file, then parse_measured_runs. InputError when unreadable.
std::vector<MeasuredRun> read_measured_runs(const std::string& path);

// Several files, their rows in file order. A run_id may appear in one file only (InputError naming
// the later file, the line and the earlier file); SimuMax-format rows, whose ids are generated,
// are numbered on across files (S01 … S30, S31 …) instead.
std::vector<MeasuredRun> read_measured_runs(const std::vector<std::string>& paths);

// The files' names (no directories) for titles and provenance notes, joined by `separator`:
// "a.csv", "a.csv + b.csv", or "a.csv --runs b.csv" to repeat a command line.
std::string runs_files_label(const std::vector<std::string>& paths, const std::string& separator = " + ");

}  // namespace calisim::calibration
