// measure_sequence: a layer's kernels measured alone, then run back to back for a sustained
// while, alone and beside a copy kernel that holds some SMs (`calisim profile sequence`).
//
// What it answers: whether a training step's kernels, issued back to back for seconds on a GPU
// that settles at its power limit, run at the speed each reaches alone in a short benchmark (the
// efficiency database's rows), and how much slower they run while communication-like kernels hold
// SMs and HBM beside them (the system file's comm_compute_slowdown). The per-kernel rows cannot
// see either; the simulator multiplies both into every step.
//
// The result types (SustainedRun, SequenceMeasurement) are plain data in sequence_stats.h.
//
// Method (one GPU; `kernels` in issue order, repeats allowed, GEMM / attention / memory keys):
//  1. every distinct key is prepared (profiler/prepared_kernel.h: buffers, cuBLASLt autotuning,
//     cuDNN engine) and kept alive; one that cannot run here throws std::runtime_error naming it;
//  2. each distinct key is timed alone exactly as `profile run` times it (MeasureLoop: cold L2,
//     the stopping rule) -> `isolated`;
//  3. CUPTI's kernel records are turned off; warm-up passes; one pass timed with CUDA events sets
//     how many passes a group holds (at least 5 ms of work) and how many groups fill `sustain_s`;
//     then every pass issues each kernel in order (its prepare_run first) on the measuring stream,
//     a CUDA event between groups, NVML sampled every `nvml_period_s` by a second host thread
//     -> one SustainedRun: per-pass time (group time / passes in it), NVML states;
//  4. the same again for each entry of `background_ctas`, with a BackgroundCopy of that many CTAs
//     started on a second stream first and stopped after the last group -> its bytes and seconds.
// Kernel records are back on when it returns (also when it throws). `progress` (optional) gets a
// line per stage.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "profiler/cuda_bench.h"
#include "profiler/profile_plan.h"
#include "profiler/sequence_stats.h"

namespace calisim::profiler {

SequenceMeasurement measure_sequence(CudaBench& bench, const std::vector<PlannedKernel>& kernels,
                                     const SequenceOptions& options);

}  // namespace calisim::profiler
