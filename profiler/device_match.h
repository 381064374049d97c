// Which shipped system file describes the GPU CUDA reports, for `calisim profile run` without
// --system: the system's device spec supplies the peaks that efficiencies are fractions of.
//
// Contract: system_for_cuda_device() matches the name cudaGetDeviceProperties gives (for
// example "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA A100-SXM4-80GB") case-insensitively
// and returns a shipped system name ("h100-sxm"), or an empty string when no rule matches (the
// caller then asks for --system).
#pragma once

#include <string>
#include <string_view>

namespace calisim::profiler {

std::string system_for_cuda_device(std::string_view cuda_name);

}  // namespace calisim::profiler
