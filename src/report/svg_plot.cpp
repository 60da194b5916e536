#include "report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "embshard/core/markup.h"

namespace embshard::report {
namespace {

std::string px(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

}  // namespace

Axis nice_axis(double min, double max) {
  if (!(max > min)) max = min + 1.0;
  const double raw = (max - min) / 5.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  Axis axis;
  axis.min = std::floor(min / step) * step;
  axis.max = std::ceil(max / step - 1e-9) * step;
  for (double v = axis.min; v <= axis.max + step * 1e-6; v += step) axis.ticks.push_back(v);
  return axis;
}

Axis log_axis(double min, double max) {
  constexpr double kSmallest = 1e-9;
  Axis axis;
  axis.log = true;
  const double lo = std::floor(std::log10(std::max(min, kSmallest)));
  const double hi = std::max(std::ceil(std::log10(std::max(max, kSmallest))), lo + 1.0);
  axis.min = std::pow(10.0, lo);
  axis.max = std::pow(10.0, hi);
  const bool decades_only = hi - lo > 3.0;
  for (double e = lo; e <= hi; e += 1.0) {
    for (const double m : {1.0, 2.0, 5.0}) {
      if ((decades_only && m > 1.0) || (e == hi && m > 1.0)) continue;
      axis.ticks.push_back(m * std::pow(10.0, e));
    }
  }
  return axis;
}

std::string tick_label(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", std::fabs(value) < 1e-12 ? 0.0 : value);
  return text;
}

namespace {

/** Where `value` lies on `axis`: 0 at its min, 1 at its max (log10 positions on a log axis). */
double fraction_of(const Axis& axis, double value) {
  if (axis.log) {
    const double lo = std::log10(axis.min);
    const double span = std::log10(axis.max) - lo;
    return (std::log10(std::max(value, axis.min * 1e-3)) - lo) / (span > 0 ? span : 1.0);
  }
  const double span = axis.max - axis.min;
  return (value - axis.min) / (span > 0 ? span : 1.0);
}

}  // namespace

double y_of(const Axis& axis, double value, double top, double bottom) {
  return bottom - fraction_of(axis, value) * (bottom - top);
}

double x_of(const Axis& axis, double value, double left, double right) {
  return left + fraction_of(axis, value) * (right - left);
}

Svg::Svg(double width, double height, const std::string& title) : width_(width), height_(height) {
  body_ << "<title>" << xml_escape(title) << "</title>\n";
}

void Svg::rect(double x, double y, double w, double h, const std::string& fill, const std::string& tooltip,
               const std::string& extra) {
  body_ << "<rect x='" << px(x) << "' y='" << px(y) << "' width='" << px(std::max(w, 0.0)) << "' height='"
        << px(std::max(h, 0.0)) << "' fill='" << fill << "'" << extra;
  if (tooltip.empty()) {
    body_ << "/>\n";
  } else {
    body_ << "><title>" << xml_escape(tooltip) << "</title></rect>\n";
  }
}

void Svg::line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra) {
  body_ << "<line x1='" << px(x1) << "' y1='" << px(y1) << "' x2='" << px(x2) << "' y2='" << px(y2) << "' stroke='"
        << stroke << "'" << extra << "/>\n";
}

void Svg::circle(double x, double y, double r, const std::string& fill, const std::string& tooltip) {
  body_ << "<circle cx='" << px(x) << "' cy='" << px(y) << "' r='" << px(r) << "' fill='" << fill
        << "' fill-opacity='0.7'><title>" << xml_escape(tooltip) << "</title></circle>\n";
}

void Svg::text(double x, double y, const std::string& text, const std::string& anchor, double size,
               const std::string& extra) {
  body_ << "<text x='" << px(x) << "' y='" << px(y) << "' text-anchor='" << anchor << "' font-size='" << px(size) << "'"
        << extra << ">" << xml_escape(text) << "</text>\n";
}

void Svg::y_axis(const Axis& axis, double x, double top, double bottom, double right, const std::string& label) {
  for (const double tick : axis.ticks) {
    const double y = y_of(axis, tick, top, bottom);
    line(x, y, right, y, "#ddd");
    text(x - 4, y + 4, tick_label(tick), "end", 10);
  }
  line(x, top, x, bottom, "#333");
  line(x, bottom, right, bottom, "#333");
  body_ << "<text transform='translate(" << px(x - 34) << "," << px((top + bottom) / 2)
        << ") rotate(-90)' text-anchor='middle' font-size='11'>" << xml_escape(label) << "</text>\n";
}

void Svg::x_axis(const Axis& axis, double y, double left, double right, double top, const std::string& label) {
  for (const double tick : axis.ticks) {
    const double x = x_of(axis, tick, left, right);
    line(x, top, x, y, "#ddd");
    text(x, y + 14, tick_label(tick), "middle", 10);
  }
  line(left, y, right, y, "#333");
  text((left + right) / 2, y + 30, label, "middle", 11);
}

void Svg::legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& items) {
  for (const auto& [name, colour] : items) {
    rect(x, y - 9, 10, 10, colour);
    text(x + 14, y, name, "start", 11);
    x += 24 + 7.0 * static_cast<double>(name.size());
  }
}

std::string Svg::str() const {
  return "<svg xmlns='http://www.w3.org/2000/svg' width='" + px(width_) + "' height='" + px(height_) +
         "' viewBox='0 0 " + px(width_) + " " + px(height_) + "' font-family='sans-serif' role='img'>\n" + body_.str() +
         "</svg>\n";
}

Quartiles quartiles(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(values.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
  };
  return {at(0.25), at(0.5), at(0.75)};
}

}  // namespace embshard::report
