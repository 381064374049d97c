// calisim: predicts LLM training step time and memory from calibrated kernel efficiencies.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "core/error.h"

#ifndef CALISIM_VERSION
#define CALISIM_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  CLI::App app{"calisim: calibrated performance and memory simulator for large-model training"};
  // What this build can do beyond simulating, without loading anything (`profile check` loads
  // the CUDA plugin and looks at the GPUs).
  app.set_version_flag("--version", std::string("calisim ") + CALISIM_VERSION + " (" + CALISIM_BUILD_FEATURES + ")");
  app.require_subcommand(1);
  calisim::cli::register_simulate(app);
  calisim::cli::register_configs(app);
  calisim::cli::register_search(app);
  calisim::cli::register_sweep(app);
  calisim::cli::register_db(app);
  calisim::cli::register_predict(app);
  calisim::cli::register_profile(app);
  calisim::cli::register_validate(app);
  calisim::cli::register_comm(app);
  calisim::cli::register_calibrate(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // CLI11 returns 0 for --help/--version; any other parse problem is bad input.
    return rc == 0 ? 0 : 2;
  } catch (const calisim::InputError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
