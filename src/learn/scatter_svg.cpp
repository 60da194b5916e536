// Predicted-vs-measured scatter plots of held-out samples (cost_training.h).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "embshard/learn/cost_training.h"

namespace embshard {
namespace {

constexpr int kPanel = 320;    // px, square plot area
constexpr int kMargin = 48;

std::string number(double v, const char* format = "%.3g") {
  char text[32];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

void draw_panel(std::ostringstream& svg, const ScatterPanel& panel, int x0) {
  double top = 0.0;
  for (const ScatterPoint& p : panel.points) top = std::max({top, p.measured_ms, p.predicted_ms});
  top = top > 0 ? top * 1.05 : 1.0;
  const auto px = [&](double v) { return x0 + kMargin + v / top * kPanel; };
  const auto py = [&](double v) { return kMargin + kPanel - v / top * kPanel; };
  svg << "<text x='" << x0 + kMargin << "' y='20' font-size='13'>" << panel.title << "</text>\n"
      << "<text x='" << x0 + kMargin << "' y='36' font-size='11'>MAPE " << number(100 * panel.accuracy.mape, "%.1f")
      << "%, R² " << number(panel.accuracy.r2, "%.3f") << ", n = " << panel.accuracy.count << "</text>\n"
      << "<rect x='" << x0 + kMargin << "' y='" << kMargin << "' width='" << kPanel << "' height='" << kPanel
      << "' fill='none' stroke='#444'/>\n"
      << "<line x1='" << px(0) << "' y1='" << py(0) << "' x2='" << px(top) << "' y2='" << py(top)
      << "' stroke='#999' stroke-dasharray='4 3'/>\n";
  for (const ScatterPoint& p : panel.points) {
    svg << "<circle cx='" << number(px(p.measured_ms), "%.1f") << "' cy='" << number(py(p.predicted_ms), "%.1f")
        << "' r='2' fill='#1f77b4' fill-opacity='0.6'/>\n";
  }
  svg << "<text x='" << x0 + kMargin + kPanel / 2 - 40 << "' y='" << kMargin + kPanel + 30
      << "' font-size='11'>measured ms (0–" << number(top) << ")</text>\n"
      << "<text x='" << x0 + 14 << "' y='" << kMargin + kPanel / 2 + 40 << "' font-size='11' transform='rotate(-90 "
      << x0 + 14 << ' ' << kMargin + kPanel / 2 + 40 << ")'>predicted ms</text>\n";
}

}  // namespace

std::string scatter_svg(const std::vector<ScatterPanel>& panels) {
  const int width = static_cast<int>(panels.size()) * (kPanel + 2 * kMargin);
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << std::max(width, 1) << "' height='"
      << kPanel + 2 * kMargin + 10 << "' font-family='sans-serif'>\n";
  for (std::size_t i = 0; i < panels.size(); ++i) draw_panel(svg, panels[i], static_cast<int>(i) * (kPanel + 2 * kMargin));
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace embshard
