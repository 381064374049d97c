#include "profiler/trace_copies.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

#include "profiler/kernel_class.h"

namespace calisim::profiler {
namespace {

// Indexed by CUPTI's enum values (CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind).
constexpr std::array<std::string_view, 11> kDirections = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                          "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
constexpr std::array<std::string_view, 8> kMemoryKinds = {"unknown", "pageable", "pinned",        "device",
                                                          "array",   "managed",  "device_static", "managed_static"};

std::int64_t as_int64(std::uint64_t v) {
  return v > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(v);
}

}  // namespace

std::string_view copy_direction_name(int cupti_copy_kind) {
  return cupti_copy_kind >= 0 && cupti_copy_kind < static_cast<int>(kDirections.size()) ? kDirections[cupti_copy_kind]
                                                                                          : "unknown";
}

std::string_view memory_kind_name(int cupti_memory_kind) {
  return cupti_memory_kind >= 0 && cupti_memory_kind < static_cast<int>(kMemoryKinds.size())
             ? kMemoryKinds[cupti_memory_kind]
             : "unknown";
}

int copy_kind_from_name(std::string_view direction) {
  for (std::size_t i = 1; i < kDirections.size(); ++i) {
    if (kDirections[i] == direction) return static_cast<int>(i);
  }
  return 0;
}

int memory_kind_from_name(std::string_view memory_kind) {
  std::string lower(memory_kind);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (std::size_t i = 1; i < kMemoryKinds.size(); ++i) {
    if (kMemoryKinds[i] == lower) return static_cast<int>(i);
  }
  return 0;
}

bool is_copy_api(std::string_view driver_function) {
  return driver_function.starts_with("cuMemcpy") || driver_function.starts_with("cuMemset");
}

namespace {

// The fields a copy and a memset record share: no grid, an end never before the start.
db::TraceKernel transfer_record(std::string name, KernelClass cls, std::string kind, int device, std::int64_t stream,
                                std::uint64_t start_ns, std::uint64_t end_ns, std::uint64_t bytes) {
  db::TraceKernel k;
  k.copy_kind = std::move(kind);
  k.name = std::move(name);
  k.kernel_class = std::string(to_string(cls));
  k.device = device;
  k.stream = stream;
  k.grid_x = k.grid_y = k.grid_z = 0;
  k.block_x = k.block_y = k.block_z = 0;
  k.start_ns = start_ns;
  k.end_ns = end_ns >= start_ns ? end_ns : start_ns;
  k.bytes = as_int64(bytes);
  return k;
}

}  // namespace

db::TraceKernel copy_record(const CopyActivity& a) {
  const std::string kind(copy_direction_name(a.copy_kind));
  std::string name = a.src_device >= 0 && a.dst_device >= 0
                         ? fmt::format("[CUDA memcpy {} {}->{}]", kind, a.src_device, a.dst_device)
                         : fmt::format("[CUDA memcpy {}]", kind);
  return transfer_record(std::move(name), KernelClass::memcpy, kind, a.device, a.stream, a.start_ns, a.end_ns,
                         a.bytes);
}

db::TraceKernel memset_record(const MemsetActivity& a) {
  const std::string kind(memory_kind_name(a.memory_kind));
  return transfer_record(fmt::format("[CUDA memset {}]", kind), KernelClass::memset, kind, a.device, a.stream,
                         a.start_ns, a.end_ns, a.bytes);
}

}  // namespace calisim::profiler
