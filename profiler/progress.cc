#include "profiler/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace calisim::profiler {

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "--";
  const auto s = static_cast<long long>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

double eta_seconds(const ProgressState& s) {
  if (s.timed == 0) return -1;
  const std::size_t left = s.total > s.done ? s.total - s.done : 0;
  return s.elapsed_s / static_cast<double>(s.timed) * static_cast<double>(left);
}

std::string format_progress(const ProgressState& s, int bar_width) {
  const double frac = s.total ? static_cast<double>(s.done) / static_cast<double>(s.total) : 1.0;
  const int filled = std::clamp(static_cast<int>(frac * bar_width), 0, bar_width);
  std::string line = fmt::format("[{}{}] {}/{} {:3.0f}%  elapsed {}  ETA {}", std::string(filled, '#'),
                                 std::string(bar_width - filled, '.'), s.done, s.total, 100 * frac,
                                 format_duration(s.elapsed_s), format_duration(eta_seconds(s)));
  if (!s.current.empty()) line += "  " + s.current;
  return line;
}

void ProgressPrinter::update(const ProgressState& s) {
  if (tty_) {
    // Clear to the end of the line: the key shown before may have been longer.
    fmt::print(out_, "\r{}\x1b[K", format_progress(s));
    std::fflush(out_);
  } else if (s.done == 0 || s.done >= last_plain_ + plain_every_) {
    last_plain_ = s.done;
    fmt::print(out_, "{}\n", format_progress(s));
    std::fflush(out_);
  }
}

void ProgressPrinter::finish(const ProgressState& s) {
  ProgressState end = s;
  end.current.clear();
  fmt::print(out_, "{}{}\n", tty_ ? "\r" : "", format_progress(end));
  std::fflush(out_);
}

}  // namespace calisim::profiler
