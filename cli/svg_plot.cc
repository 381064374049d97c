#include "cli/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace calisim::cli {
namespace {

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// 1, 2 or 5 times a power of ten, so that about `n` ticks span [lo, hi].
double nice_step(double lo, double hi, int n) {
  const double raw = (hi - lo) / std::max(1, n);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

std::string fmt_tick(double v) {
  if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-2)) return fmt::format("{:.3g}", v);
  return fmt::format("{:g}", v);
}

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

}  // namespace

std::string line_chart_svg(const ChartSpec& spec, const std::vector<Series>& series) {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  bool powers_of_two = true;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      if (spec.log_x && !(x > 0)) throw std::invalid_argument("log x axis needs positive x values");
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      powers_of_two = powers_of_two && x > 0 && std::fabs(std::log2(x) - std::round(std::log2(x))) < 1e-9;
    }
  }
  if (!(x0 <= x1)) throw std::invalid_argument("a chart needs at least one point");
  if (spec.y_from_zero) y0 = std::min(0.0, y0);
  if (y1 <= y0) y1 = y0 + 1;
  y1 += (y1 - y0) * 0.08;
  const double W = 760, H = 440, L = 80, R = 200, T = 50, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  auto tx = [&](double x) {
    if (spec.log_x) {
      const double a = std::log(x0), b = std::log(x1);
      return L + (b > a ? (std::log(x) - a) / (b - a) : 0.5) * pw;
    }
    return L + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * pw;
  };
  auto ty = [&](double y) { return T + ph - (y - y0) / (y1 - y0) * ph; };

  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      W, H, W, H);
  o += fmt::format("<text x=\"{}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n", L + pw / 2,
                   escape(spec.title));
  // Y grid and ticks.
  const double ys = nice_step(y0, y1, 5);
  for (double y = std::ceil(y0 / ys) * ys; y <= y1 + 1e-12; y += ys) {
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", L, ty(y),
                     L + pw, ty(y));
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", L - 6, ty(y) + 4, fmt_tick(y));
  }
  // X ticks: the data's own x values when few (and always for log axes), else a linear scale.
  std::vector<double> xt;
  if (spec.log_x && powers_of_two) {
    for (double x = std::pow(2.0, std::floor(std::log2(x0))); x <= x1 * 1.0000001; x *= 2) {
      if (x >= x0 * 0.9999999) xt.push_back(x);
    }
  } else if (spec.log_x) {
    // 1-2-5 ticks in every decade the data span.
    for (double d = std::pow(10.0, std::floor(std::log10(x0))); d <= x1 * 1.0000001; d *= 10) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (m * d >= x0 * 0.9999999 && m * d <= x1 * 1.0000001) xt.push_back(m * d);
      }
    }
  } else {
    const double xs = nice_step(x0, x1 > x0 ? x1 : x0 + 1, 6);
    for (double x = std::ceil(x0 / xs) * xs; x <= x1 + 1e-12; x += xs) xt.push_back(x);
  }
  for (double x : xt) {
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", tx(x), T,
                     tx(x), T + ph);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", tx(x), T + ph + 18,
                     fmt_tick(x));
  }
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", L, T, pw, ph);
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", L + pw / 2, H - 15,
                   escape(spec.x_label));
  o += fmt::format("<text transform=\"translate(20,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", T + ph / 2,
                   escape(spec.y_label));
  // Series and legend.
  int i = 0;
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    const char* c = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string pts;
    for (const auto& [x, y] : s.points) pts += fmt::format("{:.1f},{:.1f} ", tx(x), ty(y));
    o += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", pts, c);
    for (const auto& [x, y] : s.points) {
      o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n", tx(x), ty(y), c);
    }
    const double ly = T + 10 + 20 * i;
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                     L + pw + 15, ly, L + pw + 40, ly, c);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", L + pw + 46, ly + 4, escape(s.name));
    ++i;
  }
  o += "</svg>\n";
  return o;
}

}  // namespace calisim::cli
