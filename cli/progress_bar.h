// A terminal progress bar on stderr with rate and ETA, redrawn at most ten times a second.
// Silent when stderr is not a terminal (logs stay clean). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace calisim::cli {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  void update(std::uint64_t done, std::uint64_t total);
  void finish();  // clears the line

 private:
  std::string label_;
  bool enabled_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point start_, last_;
  bool drawn_ = false;
};

}  // namespace calisim::cli
