// `calisim predict --from … --to …` as a function: rows for GPUs nobody measured, scaled from
// measured devices and written into an efficiency database (the Python API's
// Database.predict_gpus uses it; the command prints its documents as tables or JSON).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace calisim::cli {

struct PredictArgs {
  std::string from;  // measured device(s) in `db`: names or aliases, comma-separated
  std::string to;    // target system(s): shipped names or .json paths, comma-separated
  std::string db, out;  // out: database to write into (empty: db)
  bool evaluate = false, json = false, rows = false;  // the command's other modes and output
  std::optional<double> op_dispatch_us;  // host time of one eager op for every device (else each system's)
};

// Reads and fits the source devices once, predicts every target (a target named twice once),
// then writes one run of predicted rows per target into `out` (default `db`): nothing is written
// unless every target system reads and predicts. Returns the per-target documents `calisim predict --json` prints, in the
// order of `to`: target device name, database, run id, row count, notes, per-family mean
// efficiencies and warnings. InputError (naming --from, --to, --out or the database) for what
// the user can fix.
nlohmann::ordered_json predict_targets(const PredictArgs& a);

}  // namespace calisim::cli
