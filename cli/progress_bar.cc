#include "cli/progress_bar.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace calisim::cli {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), enabled_(isatty(STDERR_FILENO) != 0), start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void ProgressBar::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_ || total == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = static_cast<double>(done) / total;
  const int width = 30;
  const int filled = static_cast<int>(frac * width);
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double eta = rate > 0 ? (total - done) / rate : 0;
  fmt::print(stderr, "\r{} [{}{}] {:3.0f}% {}/{} {:.0f}/s ETA {:.1f} s ", label_, std::string(filled, '#'),
             std::string(width - filled, ' '), frac * 100, done, total, rate, eta);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (drawn_) fmt::print(stderr, "\r{}\r", std::string(100, ' '));
  drawn_ = false;
}

}  // namespace calisim::cli
