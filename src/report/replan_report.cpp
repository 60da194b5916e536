// The report of a re-plan (replan_report.h).
#include "embshard/report/replan_report.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>
#include <vector>

#include "embshard/core/error.h"
#include "embshard/core/markup.h"
#include "report/html_page.h"
#include "report/svg_plot.h"

namespace embshard {
namespace {

constexpr const char* kCurveColour = "#4c78a8";
constexpr const char* kSearchColour = "#f58518";
constexpr const char* kKeptColour = "#54a24b";
constexpr const char* kChosenColour = "#e45756";
constexpr const char* kBudgetColour = "#9c9c9c";
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(double bytes) { return report::fixed(bytes / kGiB, 3) + " GiB"; }

std::string share(double bytes, double total) {
  return total > 0 ? report::fixed(100.0 * bytes / total, 2) + "%" : "-";
}

bool is_search(const ReplanPoint& p) { return p.price >= 0; }

bool same_point(const ReplanPoint& a, const ReplanPoint& b) {
  return a.moved_bytes == b.moved_bytes && a.step_ms == b.step_ms;
}

std::string describe(const ReplanPoint& p, double total) {
  return report::fixed(p.step_ms, 3) + " ms, " + gib(p.moved_bytes) + " moved (" + share(p.moved_bytes, total) + ")";
}

std::string point_table(const ReplanResult& r) {
  std::ostringstream out;
  out << "<table class='sortable'><thead><tr><th>candidate</th><th>moved GiB</th><th>moved share</th>"
         "<th>step ms</th><th>tables switched</th><th>price</th><th>within budget</th></tr></thead><tbody>\n";
  for (const ReplanPoint& p : r.curve) {
    out << "<tr><td>" << (same_point(p, r.chosen) ? "chosen, " : "") << (is_search(p) ? "priced search" : "curve")
        << (p.rebuilt.empty()      ? ""
            : p.rebuilt == "split" ? ", rebuilt (split tables too)"
                                   : ", rebuilt (whole tables)")
        << "</td><td>" << report::fixed(p.moved_bytes / kGiB, 4) << "</td><td>" << share(p.moved_bytes, r.table_bytes)
        << "</td><td>" << report::fixed(p.step_ms, 3) << "</td><td>"
        << (p.tables_switched >= 0 ? std::to_string(p.tables_switched) : "-") << "</td><td>"
        << (is_search(p) ? report::tick_label(p.price) : "-") << "</td><td>"
        << (p.moved_bytes <= r.max_move_bytes ? "yes" : "no") << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

std::string device_table(const ReplanResult& r) {
  std::ostringstream out;
  out << "<table class='sortable'><thead><tr><th>device</th><th>sends GiB</th><th>receives "
         "GiB</th></tr></thead><tbody>\n";
  const std::size_t n = std::max(r.movement.sent.size(), r.movement.received.size());
  for (std::size_t d = 0; d < n; ++d) {
    const double sent = d < r.movement.sent.size() ? r.movement.sent[d] : 0.0;
    const double received = d < r.movement.received.size() ? r.movement.received[d] : 0.0;
    out << "<tr><td>" << d << "</td><td>" << report::fixed(sent / kGiB, 4) << "</td><td>"
        << report::fixed(received / kGiB, 4) << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

}  // namespace

std::string replan_chart_svg(const ReplanResult& r) {
  const double left = 64, top = 34, right = 664, bottom = 314;
  double most_moved = 0.0, most_step = 0.0;  // the axis spans the points; a budget beyond them is noted
  for (const ReplanPoint& p : r.curve)
    most_moved = std::max(most_moved, p.moved_bytes), most_step = std::max(most_step, p.step_ms);
  const report::Axis x = report::nice_axis(0.0, most_moved > 0 ? most_moved / kGiB : 1.0);
  const report::Axis y = report::nice_axis(0.0, most_step > 0 ? most_step : 1.0);
  report::Svg svg(right + 24, bottom + 60, "step against bytes moved: " + r.task_id);
  svg.text(left, 16, "step of each candidate against the bytes it moves", "start", 13, " font-weight='bold'");
  svg.y_axis(y, left, top, bottom, right, "step ms");
  svg.x_axis(x, bottom, left, right, top, "GiB moved");
  const auto px = [&](double bytes) { return report::x_of(x, bytes / kGiB, left, right); };
  const auto py = [&](double ms) { return report::y_of(y, ms, top, bottom); };
  const bool budget_on_axis = std::isfinite(r.max_move_bytes) && r.max_move_bytes <= x.max * kGiB;
  if (budget_on_axis)
    svg.line(px(r.max_move_bytes), top, px(r.max_move_bytes), bottom, kBudgetColour, " stroke-dasharray='6 3'");
  else if (std::isfinite(r.max_move_bytes))
    svg.text(right, top - 4, "budget " + gib(r.max_move_bytes) + ": beyond every candidate", "end", 11);
  const ReplanPoint* prev = nullptr;
  for (const ReplanPoint& p : r.curve) {  // sorted by bytes moved (replan.h)
    if (is_search(p)) continue;
    if (prev)
      svg.line(px(prev->moved_bytes), py(prev->step_ms), px(p.moved_bytes), py(p.step_ms), kCurveColour,
               " stroke-width='2'");
    prev = &p;
  }
  for (const ReplanPoint& p : r.curve) {
    const std::string what = (is_search(p) ? "priced search: " : "curve: ") + describe(p, r.table_bytes);
    svg.circle(px(p.moved_bytes), py(p.step_ms), 3, is_search(p) ? kSearchColour : kCurveColour, what);
  }
  if (r.kept_fits)
    svg.circle(px(r.kept.moved_bytes), py(r.kept.step_ms), 5, kKeptColour, "kept: " + describe(r.kept, r.table_bytes));
  svg.circle(px(r.chosen.moved_bytes), py(r.chosen.step_ms), 6, kChosenColour,
             "chosen: " + describe(r.chosen, r.table_bytes));
  std::vector<std::pair<std::string, std::string>> legend{
      {"curve (kept → from scratch)", kCurveColour}, {"priced search", kSearchColour}, {"chosen", kChosenColour}};
  if (r.kept_fits) legend.emplace_back("kept", kKeptColour);
  if (budget_on_axis) legend.emplace_back("budget", kBudgetColour);
  svg.legend(left, bottom + 50, legend);
  return svg.str();
}

std::string replan_report_html(const ReplanResult& r) {
  EMBSHARD_CHECK(!r.curve.empty(), "report: the re-plan of '", r.task_id, "' has no point");
  const std::string budget =
      std::isfinite(r.max_move_bytes)
          ? gib(r.max_move_bytes) + " (" + share(r.max_move_bytes, r.table_bytes) + " of the tables)"
          : "none";
  std::ostringstream body;
  body << "<h1>Re-plan: " << xml_escape(r.task_id) << "</h1>\n"
       << report::key_value_table(
              {{"answer", r.verdict},
               {"budget", budget},
               {"chosen", describe(r.chosen, r.table_bytes)},
               {"kept plan", r.kept_fits ? describe(r.kept, r.table_bytes) : "does not fit the new task"},
               {"from scratch, relabelled", r.target.step_ms > 0 ? describe(r.target, r.table_bytes) : "does not fit"},
               {"created (new tables)", gib(r.movement.created_bytes)},
               {"sharder", r.sharder},
               {"judge", r.judge}})
       << "<p class='note'>Each point is a plan of the new task, judged; its bytes moved are the weights and "
          "optimizer state that travel between devices (tables the old plan did not have are created, not "
          "moved). The blue curve goes from the kept plan to the from-scratch plan (its devices relabelled to "
          "keep the most in place) one table at a time; orange points are joint's searches from the kept plan "
          "with each moved byte priced. The chosen plan is the fastest within the budget (dashed line).</p>\n"
       << "<figure>" << replan_chart_svg(r)
       << "</figure>\n<h2>What each device sends and receives (the chosen plan)</h2>\n"
       << device_table(r) << "<h2>Every candidate</h2>\n"
       << point_table(r);
  return report::page("re-plan: " + r.task_id, body.str());
}

}  // namespace embshard
