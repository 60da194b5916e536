// The report of a capacity curve (capacity_report.h).
#include "embshard/report/capacity_report.h"

#include <algorithm>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/core/markup.h"
#include "report/html_page.h"
#include "report/svg_plot.h"

namespace embshard {
namespace {

constexpr const char* kStepColour = "#4c78a8";
constexpr const char* kBoundColour = "#9c9c9c";
constexpr const char* kTargetColour = "#e45756";

bool ok(const CapacityPoint& p) { return p.run.ok(); }

std::string point_table(const CapacityCurve& c) {
  std::ostringstream out;
  out << "<table class='sortable'><thead><tr><th>devices</th><th>hosts</th><th>status</th><th>step ms</th>"
         "<th>lower bound ms</th><th>plan s</th><th>meets target</th><th>reason</th></tr></thead><tbody>\n";
  for (const CapacityPoint& p : c.points) {
    out << "<tr><td>" << p.devices << "</td><td>" << p.hosts << "</td><td>" << xml_escape(p.run.status) << "</td><td>"
        << (ok(p) ? report::fixed(p.run.eval.step_ms, 3) : "-") << "</td><td>"
        << (p.bound_ms > 0 ? report::fixed(p.bound_ms, 3) : "-") << "</td><td>"
        << report::fixed(p.run.plan_ms / 1000.0, 2) << "</td><td>"
        << (c.target_ms > 0 && p.meets(c.target_ms) ? "yes" : "no") << "</td><td>" << xml_escape(one_line(p.run.reason))
        << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

}  // namespace

std::string capacity_chart_svg(const CapacityCurve& c) {
  const double left = 64, top = 34, right = 664, bottom = 314;
  double hi = c.target_ms;
  for (const CapacityPoint& p : c.points) hi = std::max({hi, ok(p) ? p.run.eval.step_ms : 0.0, p.bound_ms});
  const report::Axis y = report::nice_axis(0.0, hi > 0 ? hi : 1.0);
  const double first = c.points.front().devices, last = c.points.back().devices;
  const report::Axis x = last > 16 * first ? report::log_axis(first, last) : report::nice_axis(first, last);
  report::Svg svg(right + 24, bottom + 44, "step against devices: " + c.task_id);
  svg.text(left, 16, "step at each device count (" + c.judge + ")", "start", 13, " font-weight='bold'");
  svg.y_axis(y, left, top, bottom, right, "step ms");
  svg.x_axis(x, bottom, left, right, top, "devices");
  const auto px = [&](double devices) { return report::x_of(x, devices, left, right); };
  const auto py = [&](double v) { return report::y_of(y, v, top, bottom); };
  const auto polyline = [&](auto value, const char* colour, const std::string& extra) {
    const CapacityPoint* prev = nullptr;
    for (const CapacityPoint& p : c.points) {
      if (value(p) <= 0) continue;
      if (prev) svg.line(px(prev->devices), py(value(*prev)), px(p.devices), py(value(p)), colour, extra);
      prev = &p;
    }
  };
  polyline([](const CapacityPoint& p) { return p.bound_ms; }, kBoundColour, " stroke-dasharray='4 3'");
  polyline([](const CapacityPoint& p) { return ok(p) ? p.run.eval.step_ms : 0.0; }, kStepColour, " stroke-width='2'");
  if (c.target_ms > 0)
    svg.line(left, py(c.target_ms), right, py(c.target_ms), kTargetColour, " stroke-dasharray='6 3'");
  for (const CapacityPoint& p : c.points) {
    const std::string what = std::to_string(p.devices) + " devices: ";
    if (ok(p)) {
      svg.circle(px(p.devices), py(p.run.eval.step_ms), p.devices == c.fewest ? 5 : 3,
                 p.devices == c.fewest ? kTargetColour : kStepColour,
                 what + report::fixed(p.run.eval.step_ms, 3) + " ms");
    } else {
      const double cx = px(p.devices), cy = bottom - 6;
      svg.line(cx - 4, cy - 4, cx + 4, cy + 4, kTargetColour, " stroke-width='2'");
      svg.line(cx - 4, cy + 4, cx + 4, cy - 4, kTargetColour, " stroke-width='2'");
      svg.circle(cx, cy, 6, "transparent", what + p.run.status + ": " + one_line(p.run.reason));
    }
  }
  std::vector<std::pair<std::string, std::string>> legend{{"step of the plan", kStepColour},
                                                          {"lower bound", kBoundColour}};
  if (c.target_ms > 0) legend.emplace_back("target", kTargetColour);
  svg.legend(left, bottom + 34, legend);
  return svg.str();
}

std::string capacity_report_html(const CapacityCurve& c) {
  EMBSHARD_CHECK(!c.points.empty(), "report: the capacity curve of '", c.task_id, "' has no point");
  std::ostringstream body;
  body << "<h1>Capacity: " << xml_escape(c.task_id) << "</h1>\n"
       << report::key_value_table(
              {{"answer", c.verdict},
               {"target step", c.target_ms > 0 ? report::fixed(c.target_ms, 3) + " ms" : "none"},
               {"devices tried", std::to_string(c.min_devices) + " to " + std::to_string(c.max_devices)},
               {"sharder", c.sharder},
               {"judge", c.judge}})
       << "<p class='note'>Each point is the sharder's plan for the task on that many devices of the same kind, "
          "the global batch and the memory per device kept, judged as <code>embshard compare</code> judges. The "
          "dashed grey line is the judge's lower bound: no plan at that count can be faster. A cross on the axis: "
          "no plan fits (hover for why).</p>\n"
       << "<figure>" << capacity_chart_svg(c) << "</figure>\n<h2>Every count planned</h2>\n"
       << point_table(c);
  return report::page("capacity: " + c.task_id, body.str());
}

}  // namespace embshard
