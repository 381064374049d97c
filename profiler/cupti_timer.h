// CuptiTimer: kernel times from the CUPTI Activity API (../shared/reference/profiling_notes.md §3).
//
// - Records CONCURRENT_KERNEL activity (KIND_KERNEL would serialise every kernel on the GPU) and
//   EXTERNAL_CORRELATION: begin() pushes a fresh external id, end() pops it, and every kernel
//   launched in between (cuBLASLt's split-K reduction, cuDNN's pre/post kernels) is joined to
//   the op through the launch's correlation id. An op's time is the span of its kernels; the
//   sum of their durations is kept too. Records with end <= start (flushed before the kernel's
//   end was written, or without timestamps) are not timed: the op's OpTiming counts them in
//   incomplete_kernels and MeasureLoop drops that sample (cupti_attribution.h).
// - harvest() synchronises the stream and forces a flush (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), so
//   partly filled buffers are delivered before the records are read.
// - The kernel record struct is chosen at compile time from CUPTI_API_VERSION (Kernel11 from
//   CUPTI 13.1, Kernel10 for 13.0, Kernel9 for CUDA 12), and only fields common to all are read.
// - CUPTI allows one activity client per process on the drivers in use: create() returns nullptr
//   with the reason when it cannot subscribe (Nsight, compute-sanitizer, torch.profiler or DCGM
//   profiling already attached); the caller then falls back to CudaEventTimer and records why.
// - Collection is process-wide: while the activity kinds are enabled every CUDA API call and
//   kernel of the process is recorded, which slows host-timed work (NCCL's launch loop) down.
//   set_collecting(false) disables them between kernel measurements; set_collecting(true) turns
//   them back on (CudaBench does so around the NCCL benchmark).
// One CuptiTimer may exist at a time per process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/sample_timer.h"

namespace calisim::profiler {

class CuptiTimer final : public SampleTimer {
 public:
  // nullptr when CUPTI cannot be used in this process; *why_not says why.
  static std::unique_ptr<CuptiTimer> create(std::string* why_not);
  ~CuptiTimer() override;
  CuptiTimer(const CuptiTimer&) = delete;
  CuptiTimer& operator=(const CuptiTimer&) = delete;

  TimerKind kind() const override { return TimerKind::cupti; }
  void begin(cudaStream_t stream) override;
  void end(cudaStream_t stream) override;
  std::vector<OpTiming> harvest(cudaStream_t stream) override;
  // The discarded ops' kernels still arrive; harvest() ignores them (they have no pending id).
  void discard() noexcept override { pending_.clear(); }
  std::vector<std::string> kernel_names() const override { return names_; }

  // Enables (true) or disables (false) every activity kind the timer records; no pair may be
  // open and the last harvest must be done. Throws GpuError when CUPTI refuses.
  void set_collecting(bool on);
  bool collecting() const { return collecting_; }

  // Records CUPTI dropped for lack of buffer space since creation (should stay 0).
  std::size_t dropped_records() const;
  // Kernel records of timed ops that came with end <= start since creation (should stay 0).
  std::size_t incomplete_records() const { return incomplete_; }

 private:
  CuptiTimer() = default;
  std::vector<std::uint64_t> pending_;  // external ids of this harvest, in order
  std::uint64_t next_id_ = 1;
  std::vector<std::string> names_;
  std::size_t incomplete_ = 0;
  bool collecting_ = true;  // create() enables every kind
};

}  // namespace calisim::profiler
