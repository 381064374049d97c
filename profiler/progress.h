// Progress bar with ETA for long profile runs.
//
// format_progress() is pure: a fixed-width bar, counts, percentage, elapsed time and an ETA
// extrapolated from the kernels measured in this process (kernels skipped because they were
// already in the database cost nothing and do not count towards the rate). ProgressPrinter
// redraws one line with '\r' on a terminal and prints a plain line every `plain_every` kernels
// otherwise (logs stay readable).
#pragma once

#include <cstdio>
#include <string>

namespace calisim::profiler {

// "1h02m", "3m05s", "12s", "--" for negative (unknown).
std::string format_duration(double seconds);

struct ProgressState {
  std::size_t done = 0;       // finished kernels, resumed ones included
  std::size_t total = 0;
  std::size_t timed = 0;      // kernels actually measured (or attempted) in this process
  double elapsed_s = 0;       // wall time of this process's measuring
  std::string current;        // key being measured next
};

// Seconds left: elapsed / timed x (total - done); negative when nothing was timed yet.
double eta_seconds(const ProgressState& s);
std::string format_progress(const ProgressState& s, int bar_width = 30);

class ProgressPrinter {
 public:
  explicit ProgressPrinter(std::FILE* out, bool is_tty, std::size_t plain_every = 10)
      : out_(out), tty_(is_tty), plain_every_(plain_every) {}
  void update(const ProgressState& s);
  void finish(const ProgressState& s);

 private:
  std::FILE* out_;
  bool tty_;
  std::size_t plain_every_;
  std::size_t last_plain_ = 0;
};

}  // namespace calisim::profiler
