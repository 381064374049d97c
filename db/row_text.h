// One measurement row as text: its canonical key plus named numbers. The JSON and CSV formats
// and the published-figures importer share these names, so a row reads the same everywhere:
//   gemm, attn:  median_s min_s p90_s stddev_s n tflops efficiency
//   coll:        median_s min_s p90_s stddev_s n algbw_gb_s busbw_gb_s link_gb_s efficiency
//   mem:         median_s min_s p90_s stddev_s n gb_s efficiency
//   memfit:      gb_s efficiency latency_us      (gb_s = the fit's bandwidth)
//   collfit:     link_gb_s efficiency latency_us
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "db/records.h"

namespace calisim::db {

// Every number column any row kind uses, in the order CSV files list them.
const std::vector<std::string>& row_number_fields();

// Calls f(key, object) for each row of a set, ordered by kind (schema order) then key text.
// `object` holds "key" and the kind's numbers in the order above.
void for_each_row_text(const MeasurementSet& rows,
                       const std::function<void(const std::string& key, const nlohmann::ordered_json&)>& f);

// Adds the row described by `object` ("key" plus numbers) to `out`. Numbers missing from the
// object are 0 except `efficiency`, which is required. Throws InputError(file, where + field, ...)
// naming the field that is wrong: a field the row's kind does not have, a number that is not one
// (n not an integer), a negative or non-finite number, or an efficiency outside (0, 1] for gemm
// and attn rows (fractions of the dense peak) or not above 0 for the other kinds (as
// efficiency_db.h's validate_rows).
void add_row_from_text(const nlohmann::json& object, MeasurementSet& out, const std::string& file,
                       const std::string& where);

}  // namespace calisim::db
