// DeviceBuffer: one cudaMalloc'd allocation, freed on destruction.
//
// Allocation failure throws GpuError whose message says how many bytes were asked for and how
// many were free, so an out-of-memory skip reason is actionable. Plain cudaMalloc, never
// managed memory (the device README's advice).
#pragma once

#include <cstddef>
#include <utility>

namespace calisim::profiler {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace calisim::profiler
