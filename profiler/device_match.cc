#include "profiler/device_match.h"

#include <algorithm>
#include <cctype>

namespace calisim::profiler {

std::string system_for_cuda_device(std::string_view cuda_name) {
  std::string s(cuda_name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto has = [&](std::string_view n) { return s.find(n) != std::string::npos; };
  const bool pcie = has("pcie");
  // Most specific names first: "gb200" contains "b200", "gb300" "b300", "h100 nvl" is a PCIe card pair.
  if (has("gb300")) return "gb300-nvl72";
  if (has("gb200")) return "gb200-nvl72";
  if (has("b300")) return "b300";
  if (has("b200")) return "b200";
  if (has("h200")) return "h200";
  if (has("h100")) return pcie || has("nvl") ? "h100-pcie" : "h100-sxm";
  if (has("a100")) return pcie ? "a100-pcie-80g" : "a100-sxm-80g";
  if (has("mi300x")) return "mi300x";
  return "";
}

}  // namespace calisim::profiler
