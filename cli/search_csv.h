// CSV form of search results: what `calisim search --csv/--out` writes and `calisim search merge`
// reads. One header line, one candidate per line, columns in a fixed order. Also the JSON form of
// one candidate and its one-line label, shared by `calisim search`, `calisim sweep` and the
// Python API so a layout reads the same everywhere.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "simulator/search.h"

namespace calisim::cli {

// One candidate as JSON (the `top` entries of `calisim search --json` and of the Python API).
// Grids as in the CSV: tp_2d_rows/tp_2d_cols and cp_2d_rows/cp_2d_cols are 0, 0 for 1D.
nlohmann::json search_candidate_json(const CandidateResult& c);

// The layout as `calisim search` and `calisim sweep` show it: "tp8(2x4 2d) pp8[9|10|9] vpp5 cp1
// ep1 dp16" (grids, uneven pipeline splits, non-default CP communication, dispatcher and expert
// TP included), so one layout reads the same in every table.
std::string layout_label(const CandidateResult& r);

std::string search_csv_header();
std::string search_csv_row(const CandidateResult& c);
void write_search_csv(const std::string& path, const std::vector<CandidateResult>& rows);
// Throws InputError naming the file, line and column on malformed input.
std::vector<CandidateResult> read_search_csv(const std::string& path);
CandidateResult parse_search_csv_row(const std::string& line, const std::string& path, int lineno);

}  // namespace calisim::cli
