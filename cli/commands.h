// Subcommand registration for the `calisim` executable.
//
// Each subcommand lives in its own file and registers itself on the root CLI11 app. Callbacks
// throw calisim::InputError for anything the user can fix (exit 2); main() maps other exceptions
// to exit 1. Output: a readable table by default, one JSON document on stdout with --json.
#pragma once

#include <CLI/CLI.hpp>

namespace calisim::cli {

void register_simulate(CLI::App& app);
void register_configs(CLI::App& app);
void register_search(CLI::App& app);
void register_sweep(CLI::App& app);
void register_db(CLI::App& app);
void register_predict(CLI::App& app);
void register_profile(CLI::App& app);
void register_validate(CLI::App& app);
void register_comm(CLI::App& app);
void register_calibrate(CLI::App& app);

}  // namespace calisim::cli
