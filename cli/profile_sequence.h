// `calisim profile sequence`: one layer's kernels (simulator/layer_sequence.h) measured alone and
// back to back, sustained, on this machine's GPU (profiler/sequence_bench.h), beside what the
// simulator charges for them; `--dry-run` lists the sequence and its simulated times in any build.
#pragma once

#include <CLI/CLI.hpp>

namespace calisim::cli {

void register_profile_sequence(CLI::App* profile);

}  // namespace calisim::cli
