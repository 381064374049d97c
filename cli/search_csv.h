// CSV form of search results: what `calisim search --csv/--out` writes and `calisim search merge`
// reads. One header line, one candidate per line, columns in a fixed order.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "simulator/search.h"

namespace calisim::cli {

// One candidate as JSON (the `top` entries of `calisim search --json` and of the Python API).
nlohmann::json search_candidate_json(const CandidateResult& c);

std::string search_csv_header();
std::string search_csv_row(const CandidateResult& c);
void write_search_csv(const std::string& path, const std::vector<CandidateResult>& rows);
// Throws InputError naming the file, line and column on malformed input.
std::vector<CandidateResult> read_search_csv(const std::string& path);
CandidateResult parse_search_csv_row(const std::string& line, const std::string& path, int lineno);

}  // namespace calisim::cli
