// Self-contained SVG line charts (no scripts, no fonts or files to fetch) for study outputs.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace calisim::cli {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in the given order
};

struct ChartSpec {
  std::string title;
  std::string x_label, y_label;  // include units, e.g. "GPUs", "MFU (%)"
  bool log_x = false;            // base-2 ticks when the data are powers of two, else base 10
  bool y_from_zero = true;
};

// Returns a complete <svg> document. Empty series are skipped; at least one point is required.
std::string line_chart_svg(const ChartSpec& spec, const std::vector<Series>& series);

}  // namespace calisim::cli
