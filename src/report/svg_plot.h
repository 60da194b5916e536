#pragma once
// Inline SVG for the HTML reports (private to src/report): a canvas that escapes every text, a
// linear or log value axis with round ticks, and the figure kinds the reports draw (stacked bars, a
// strip plot with box, a heat grid). Coordinates are in CSS pixels; nothing is fetched.
#include <sstream>
#include <string>
#include <vector>

namespace embshard::report {

/** A value axis from `min` to `max` with round ticks; `log`: positions by log10 of the value. */
struct Axis {
  double min = 0.0;
  double max = 1.0;
  std::vector<double> ticks;
  bool log = false;
};
/** The axis that covers [min, max] with 4–6 round ticks (max ≤ min gives [min, min + 1]). */
[[nodiscard]] Axis nice_axis(double min, double max);
/**
 * A log10 axis from the decade at or below `min` to the one at or above `max` (values > 0; others
 * are clamped to 1e-9), ticks at 1, 2, 5 × 10^k, or only 10^k when it spans more than 3 decades.
 */
[[nodiscard]] Axis log_axis(double min, double max);
/** A tick label: no trailing zeros ("0", "2.5", "10"). */
[[nodiscard]] std::string tick_label(double value);

/** An SVG element under construction; every text and title goes through xml_escape. */
class Svg {
 public:
  Svg(double width, double height, const std::string& title);
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& tooltip = "",
            const std::string& extra = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra = "");
  void circle(double x, double y, double r, const std::string& fill, const std::string& tooltip);
  /** `anchor`: start | middle | end. */
  void text(double x, double y, const std::string& text, const std::string& anchor = "start", double size = 11,
            const std::string& extra = "");
  /** A vertical value axis at `x` from `top` to `bottom` with ticks, grid lines to `right`. */
  void y_axis(const Axis& axis, double x, double top, double bottom, double right, const std::string& label);
  /** A horizontal value axis at `y` from `left` to `right` with ticks, grid lines up to `top`. */
  void x_axis(const Axis& axis, double y, double left, double right, double top, const std::string& label);
  /** Colour swatches with names, in a row starting at (x, y). */
  void legend(double x, double y, const std::vector<std::pair<std::string, std::string>>& items);
  [[nodiscard]] std::string str() const;
  [[nodiscard]] double width() const { return width_; }
  [[nodiscard]] double height() const { return height_; }

 private:
  double width_, height_;
  std::ostringstream body_;
};

/** y in pixels of `value` on `axis` drawn from `bottom` (value min) up to `top` (value max). */
[[nodiscard]] double y_of(const Axis& axis, double value, double top, double bottom);
/** x in pixels of `value` on `axis` drawn from `left` (value min) to `right` (value max). */
[[nodiscard]] double x_of(const Axis& axis, double value, double left, double right);

/** Quartiles (linear interpolation) of `values`, sorted or not; {0,0,0} when empty. */
struct Quartiles {
  double q1 = 0.0, median = 0.0, q3 = 0.0;
};
[[nodiscard]] Quartiles quartiles(std::vector<double> values);

}  // namespace embshard::report
