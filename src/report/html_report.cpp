// The HTML reports (html_report.h).
#include "embshard/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/markup.h"
#include "embshard/cost/analytic.h"
#include "embshard/shard/sharder.h"
#include "report/html_page.h"
#include "report/svg_plot.h"

namespace embshard {
namespace {

using report::Axis;
using report::fixed;
using report::page;
using report::Svg;

constexpr const char* kPartColours[] = {"#9d755d", "#4c78a8", "#f58518", "#bab0ac", "#e45756", "#72b7b2", "#b279a2"};
constexpr const char* kPartNames[] = {"input comm",         "fw comp", "fw comm", "fw wait", "bw comm", "bw comp",
                                      "gradient all-reduce"};
constexpr int kNumParts = 7;
constexpr const char* kSeriesColours[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2",
                                          "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac"};

/** The short spec of a sharder, or the text as written when it is not one this build knows. */
std::string short_sharder_spec_or(const std::string& spec) {
  if (spec.empty()) return "(sharder not recorded)";
  try {
    return short_sharder_spec(spec);
  } catch (const Error&) {
    return spec;  // a plan from another version or a hand-written one: shown as written
  }
}

/** Width an SVG needs for its bold 13 px title at x = 60 (about 7.5 px a character). */
double title_width(const std::string& title) { return 80.0 + 7.5 * static_cast<double>(title.size()); }

double gib(std::int64_t bytes) { return static_cast<double>(bytes) / (1 << 30); }

std::string provenance_table(const JudgedPlan& j, const Task& task) {
  const Provenance& p = j.plan.provenance;
  const CostBreakdown& b = j.eval.breakdown;
  return report::key_value_table({
      {"sharder", p.sharder},
      {"cost model", p.cost_model.empty() ? "none (the sharder uses none)" : p.cost_model},
      {"judge", j.eval.backend + " — compute: " + to_string(b.compute_source) + " (" + b.compute_detail +
                    "); comm: " + to_string(b.comm_source) + " (" + b.comm_detail + ")"},
      {"task", task.id + (task.protocol.empty() ? "" : " (" + task.protocol + ")")},
      {"topology", task.topology.name + ", " + std::to_string(task.topology.num_devices()) + " devices"},
      {"layout", describe_groups(j.plan.groups, task.topology.num_devices()) +
                     (j.plan.groups.enabled() ? ": every figure below is one group's ranks" : "")},
      {"plan file", j.source},
      {"embshard version", p.embshard_version},
      {"seed", std::to_string(p.seed)},
      {"planned", (p.created_utc.empty() ? std::string() : p.created_utc + ", ") + "in " + readable_ms(p.wall_ms)},
  });
}

/** The device whose kernels take longest (fw_comp + bw_comp): the step's straggler. */
std::size_t straggler(const std::vector<DeviceCost>& devices) {
  std::size_t worst = 0;
  for (std::size_t d = 1; d < devices.size(); ++d) {
    const auto comp = [&](std::size_t i) { return devices[i].fw_comp_ms + devices[i].bw_comp_ms; };
    if (comp(d) > comp(worst)) worst = d;
  }
  return worst;
}

/** The largest bar of `r`'s step bars: the top of their ms axis. */
double step_bars_top(const EvalResult& r) {
  double most = r.step_ms;
  for (const DeviceCost& c : r.breakdown.devices) most = std::max(most, c.sum_ms() + c.fw_wait_ms);
  return most;
}

/**
 * Stacked per-device bars of the step's phases on a ms axis (up to at least `axis_top`, so panels
 * side by side share a scale), the step line, the straggler.
 */
Svg step_bars(const EvalResult& r, const std::string& title, double axis_top = 0.0) {
  const auto& devices = r.breakdown.devices;
  const double n = static_cast<double>(std::max<std::size_t>(devices.size(), 1));
  const double slot = std::clamp(640.0 / n, 3.0, 110.0);
  const double left = 60, top = 34, bottom = 254, width = left + slot * n + 90;  // room for the step label
  const Axis axis = report::nice_axis(0.0, std::max(axis_top, step_bars_top(r)));
  Svg svg(std::max({width, 520.0, title_width(title)}), 300, title);
  svg.text(left, 16, title, "start", 13, " font-weight='bold'");
  svg.y_axis(axis, left, top, bottom, left + slot * n, "ms per step");
  const std::size_t slow = straggler(devices);
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const DeviceCost& c = devices[d];
    const double parts[] = {c.in_comm_ms, c.fw_comp_ms, c.fw_comm_ms, c.fw_wait_ms,
                            c.bw_comm_ms, c.bw_comp_ms, c.ar_comm_ms};
    const double x = left + slot * static_cast<double>(d) + slot * 0.1;
    double value = 0.0;
    for (int k = 0; k < kNumParts; ++k) {
      if (k == kNumParts - 1 && parts[k] == 0.0) continue;  // no data-parallel table: no all-reduce
      const double y0 = report::y_of(axis, value, top, bottom);
      value += parts[k];
      const double y1 = report::y_of(axis, value, top, bottom);
      svg.rect(x, y1, slot * 0.8, y0 - y1, kPartColours[k],
               "device " + std::to_string(d) + ": " + kPartNames[k] + " " + fixed(parts[k], 3) + " ms");
    }
    if (d == slow) {
      svg.rect(x - 1, report::y_of(axis, value, top, bottom) - 1, slot * 0.8 + 2,
               bottom - report::y_of(axis, value, top, bottom) + 2, "none", "straggler: the largest fw comp + bw comp",
               " stroke='#d00' stroke-width='2'");
      svg.text(x + slot * 0.4, report::y_of(axis, value, top, bottom) - 4, "straggler", "middle", 10, " fill='#d00'");
    }
    if (devices.size() <= 32 || d % static_cast<std::size_t>(std::ceil(n / 32.0)) == 0) {
      svg.text(x + slot * 0.4, bottom + 13, std::to_string(d), "middle", 10);
    }
  }
  const double step_y = report::y_of(axis, r.step_ms, top, bottom);
  svg.line(left, step_y, left + slot * n, step_y, "#000", " stroke-dasharray='5,3'");
  svg.text(left + slot * n + 2, step_y + 4, "step " + fixed(r.step_ms, 2) + " ms", "start", 10);
  svg.text(left + slot * n / 2, bottom + 27, "device", "middle", 11);
  std::vector<std::pair<std::string, std::string>> legend;
  const bool replicas = !devices.empty() && devices.front().ar_comm_ms > 0.0;  // the last part
  for (int k = 0; k < kNumParts - (replicas ? 0 : 1); ++k) legend.emplace_back(kPartNames[k], kPartColours[k]);
  svg.legend(left, 292, legend);
  return svg;
}

/** Per device: memory used against its budget, HBM and (when any is used or allowed) UVM. */
std::string memory_svg(const EvalResult& r, const Topology& topology, const std::string& title) {
  const auto& devices = r.breakdown.devices;
  const bool uvm = std::any_of(devices.begin(), devices.end(), [](const DeviceCost& c) { return c.uvm_bytes > 0; });
  const double n = static_cast<double>(std::max<std::size_t>(devices.size(), 1));
  const double slot = std::clamp(640.0 / n, 3.0, 110.0);
  const double left = 60, top = 34, bottom = 204;
  double most = 0.0;
  for (std::size_t d = 0; d < devices.size() && d < topology.devices.size(); ++d) {
    most = std::max({most, gib(devices[d].hbm_bytes), gib(topology.devices[d].hbm_bytes)});
    if (uvm) most = std::max({most, gib(devices[d].uvm_bytes), gib(topology.devices[d].uvm_bytes)});
  }
  const Axis axis = report::nice_axis(0.0, most);
  Svg svg(std::max({left + slot * n + 30, 520.0, title_width(title)}), 250, title);
  svg.text(left, 16, title, "start", 13, " font-weight='bold'");
  svg.y_axis(axis, left, top, bottom, left + slot * n, "GiB");
  for (std::size_t d = 0; d < devices.size() && d < topology.devices.size(); ++d) {
    const double x = left + slot * static_cast<double>(d) + slot * 0.1;
    const double w = uvm ? slot * 0.4 : slot * 0.8;
    const auto bar = [&](double at, std::int64_t used, std::int64_t budget, const char* colour, const char* tier) {
      const double y = report::y_of(axis, gib(used), top, bottom);
      svg.rect(at, y, w, bottom - y, colour,
               "device " + std::to_string(d) + ": " + tier + " " + fixed(gib(used), 3) + " of " +
                   fixed(gib(budget), 3) + " GiB");
      const double by = report::y_of(axis, gib(budget), top, bottom);
      svg.line(at - 1, by, at + w + 1, by, "#000", " stroke-width='2'");
    };
    bar(x, devices[d].hbm_bytes, topology.devices[d].hbm_bytes, "#4c78a8", "HBM");
    if (uvm) bar(x + w, devices[d].uvm_bytes, topology.devices[d].uvm_bytes, "#f58518", "UVM");
    if (devices.size() <= 32 || d % static_cast<std::size_t>(std::ceil(n / 32.0)) == 0) {
      svg.text(x + slot * 0.4, bottom + 13, std::to_string(d), "middle", 10);
    }
  }
  std::vector<std::pair<std::string, std::string>> legend{{"HBM used", "#4c78a8"}};
  if (uvm) legend.emplace_back("UVM used", "#f58518");
  legend.emplace_back("budget (black line)", "#000");
  svg.legend(left, 242, legend);
  return svg.str();
}

/** Per table, the sim model's cost of the whole table alone (fw + bw, ms), as shares of the sum. */
std::vector<double> table_cost_shares(const Task& task) {
  const SimHardware hw = sim_hardware_for(task.topology);
  std::vector<double> cost;
  double total = 0.0;
  for (const TableSpec& t : task.workload.tables) {
    SimTable st;
    st.stats = t.stats;
    st.cols = t.dim;
    st.bytes_per_element = bytes_per_element(t.dtype);
    const std::vector<SimTable> one{st};
    const SimFeatures f = sim_features(one, task.workload.batch_size, hw.cache_bytes);
    cost.push_back(sim_pass_ms(hw.fw, f) + sim_pass_ms(hw.bw, f));
    total += cost.back();
  }
  for (double& c : cost) c = total > 0 ? c / total : 0.0;
  return cost;
}

/** Task table index by name. */
std::map<std::string, std::size_t> table_index(const Task& task) {
  std::map<std::string, std::size_t> index;
  for (std::size_t t = 0; t < task.workload.tables.size(); ++t) index[task.workload.tables[t].name] = t;
  return index;
}

/** Table order of the map and list: largest first. */
std::vector<std::size_t> by_size(const Task& task) {
  std::vector<std::size_t> order(task.workload.tables.size());
  for (std::size_t t = 0; t < order.size(); ++t) order[t] = t;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return task.workload.tables[a].size_bytes() > task.workload.tables[b].size_bytes();
  });
  return order;
}

/** The table × device map: each cell the share of the table's cells on the device (HBM / UVM). */
std::string placement_map_svg(const Task& task, const Plan& plan, const std::string& title) {
  constexpr std::size_t kMaxTables = 200;
  const auto index = table_index(task);
  const std::vector<std::size_t> order = by_size(task);
  const std::size_t shown = std::min(order.size(), kMaxTables);
  std::vector<std::size_t> row_of(task.workload.tables.size(), kMaxTables);
  for (std::size_t i = 0; i < shown; ++i) row_of[order[i]] = i;
  const int devices =
      plan.groups.enabled() ? plan.groups.size : task.topology.num_devices();  // a 2D plan: a group's ranks
  const double cell_w = std::clamp(640.0 / devices, 3.0, 90.0), cell_h = 14;
  const double left = 130, top = 40;
  Svg svg(std::max({left + cell_w * devices + 20, 520.0, title_width(title)}),
          top + cell_h * static_cast<double>(shown) + 40, title);
  svg.text(10, 16, title, "start", 13, " font-weight='bold'");
  for (int d = 0; d < devices; ++d) {
    if (devices <= 32 || d % (devices / 32 + 1) == 0) {
      svg.text(left + cell_w * (d + 0.5), top - 6, std::to_string(d), "middle", 10);
    }
  }
  for (std::size_t i = 0; i < shown; ++i) {
    svg.text(left - 6, top + cell_h * (static_cast<double>(i) + 0.75), task.workload.tables[order[i]].name, "end", 10);
  }
  for (const TablePlacement& tp : plan.tables) {
    const auto it = index.find(tp.table);
    if (it == index.end() || row_of[it->second] >= kMaxTables) continue;
    const TableSpec& spec = task.workload.tables[it->second];
    const double y = top + cell_h * static_cast<double>(row_of[it->second]);
    std::map<int, std::pair<double, double>> share;  // device -> (HBM share, UVM share) of cells
    std::map<int, std::string> pieces;
    const double cells = static_cast<double>(spec.num_rows()) * spec.dim;
    for (const Shard& s : tp.shards) {
      const double c = static_cast<double>(s.num_rows()) * s.num_cols();
      const double hot =
          static_cast<double>(s.rows_in_hbm()) / static_cast<double>(std::max<std::int64_t>(s.num_rows(), 1));
      share[s.device].first += c * hot / cells;
      share[s.device].second += c * (1.0 - hot) / cells;
      pieces[s.device] +=
          " rows [" + std::to_string(s.row_begin) + ", " + std::to_string(s.row_end) + ") cols [" +
          std::to_string(s.col_begin) + ", " + std::to_string(s.col_end) + ")" +
          (s.rows_in_hbm() < s.num_rows() ? " (" + std::to_string(s.num_rows() - s.rows_in_hbm()) + " rows in UVM)"
                                          : "") +
          ";";
    }
    for (const auto& [device, parts] : share) {
      const double x = left + cell_w * device;
      const std::string tip = spec.name + " on device " + std::to_string(device) + " (" + to_string(tp.type) +
                              "): " + fixed(100.0 * (parts.first + parts.second), 1) +
                              "% of the table:" + pieces[device];
      const double full = parts.first + parts.second;
      svg.rect(x + 0.5, y + 1, (cell_w - 1) * full * parts.first / std::max(full, 1e-12), cell_h - 2, "#4c78a8", tip,
               " fill-opacity='" + fixed(0.35 + 0.65 * full, 2) + "'");
      if (parts.second > 0) {
        svg.rect(x + 0.5 + (cell_w - 1) * parts.first, y + 1, (cell_w - 1) * parts.second, cell_h - 2, "#f58518", tip);
      }
    }
  }
  const double legend_y = top + cell_h * static_cast<double>(shown) + 26;
  svg.legend(10, legend_y, {{"rows in HBM (darker: more of the table)", "#4c78a8"}, {"rows in UVM", "#f58518"}});
  if (order.size() > shown) {
    svg.text(10, legend_y + 14, std::to_string(order.size() - shown) + " smaller tables not drawn", "start", 10);
  }
  return svg.str();
}

/** The sortable list of tables: size, pooling, type, devices, cost share. */
std::string table_list_html(const Task& task, const Plan& plan) {
  const auto index = table_index(task);
  const std::vector<double> shares = table_cost_shares(task);
  std::map<std::size_t, const TablePlacement*> placement;
  for (const TablePlacement& tp : plan.tables) {
    if (const auto it = index.find(tp.table); it != index.end()) placement[it->second] = &tp;
  }
  std::ostringstream out;
  out << "<table class='sortable'><thead><tr><th>table</th><th>rows</th><th>dim</th><th>size GiB</th>"
         "<th>pooling</th><th>sharding</th><th>pieces</th><th>devices</th><th>cost share %</th></tr></thead><tbody>\n";
  for (const std::size_t t : by_size(task)) {
    const TableSpec& spec = task.workload.tables[t];
    const TablePlacement* tp = placement.count(t) ? placement[t] : nullptr;
    std::string devices;
    if (tp != nullptr) {
      std::vector<int> ids;
      for (const Shard& s : tp->shards) ids.push_back(s.device);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      for (const int d : ids) devices += (devices.empty() ? "" : " ") + std::to_string(d);
    }
    out << "<tr><td>" << xml_escape(spec.name) << "</td><td>" << spec.num_rows() << "</td><td>" << spec.dim
        << "</td><td>" << fixed(gib(spec.size_bytes()), 3) << "</td><td>" << fixed(spec.stats.pooling_factor, 2)
        << "</td><td>" << (tp ? to_string(tp->type) : "missing") << "</td><td>" << (tp ? tp->shards.size() : 0)
        << "</td><td>" << devices << "</td><td>" << fixed(100.0 * shares[t], 2) << "</td></tr>\n";
  }
  out << "</tbody></table>\n<p class='note'>Click a column to sort. Cost share: the sim model's cost "
         "(forward + backward) of the whole table alone on one device, over the sum of those costs.</p>\n";
  return out.str();
}

std::string plans_summary_html(const std::vector<JudgedPlan>& plans) {
  std::ostringstream out;
  out << "<table class='sortable'><thead><tr><th>plan</th><th>step ms</th><th>max_sum ms</th><th>balance</th>"
         "<th>UVM lookups %</th><th>planned in</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const JudgedPlan& j = plans[i];
    out << "<tr><td><a href='#plan" << i << "'>" << xml_escape(short_sharder_spec_or(j.plan.provenance.sharder))
        << "</a></td><td>" << fixed(j.eval.step_ms, 3) << "</td><td>" << fixed(j.eval.max_sum_ms, 3) << "</td><td>"
        << fixed(j.eval.balance, 3) << "</td><td>" << fixed(100.0 * uvm_lookup_share(j.eval), 3) << "</td><td data-v='"
        << j.plan.provenance.wall_ms << "'>" << readable_ms(j.plan.provenance.wall_ms) << "</td></tr>\n";
  }
  out << "</tbody></table>\n";
  return out.str();
}

/** The ok rows of `sharder` in `setting` ("" = every setting). */
std::vector<const CompareRow*> ok_rows(const std::vector<CompareRow>& rows, const std::string& sharder,
                                       const std::string& setting) {
  std::vector<const CompareRow*> out;
  for (const CompareRow& r : rows) {
    if (r.sharder == sharder && r.ok() && (setting.empty() || r.setting == setting)) out.push_back(&r);
  }
  return out;
}

template <class T>
std::vector<T> unique_values(const std::vector<CompareRow>& rows, T CompareRow::*field) {
  std::vector<T> out;
  for (const CompareRow& r : rows) {
    if (std::find(out.begin(), out.end(), r.*field) == out.end()) out.push_back(r.*field);
  }
  return out;
}

/**
 * One strip per sharder: a dot per task (jittered), a box from the first to the third quartile and
 * the median. `value` maps a row to its y (rows it returns NaN for are skipped).
 */
template <class Value>
std::string strip_plot_svg(const std::vector<CompareRow>& rows, const std::vector<std::string>& sharders,
                           const std::string& setting, const std::string& title, const std::string& unit, Value value,
                           double reference_line) {
  std::vector<std::vector<std::pair<double, const CompareRow*>>> points(sharders.size());
  const bool ratio = !std::isnan(reference_line);
  double lo = ratio ? reference_line : 0.0, hi = lo;  // steps start at 0; ratios show the line
  for (std::size_t s = 0; s < sharders.size(); ++s) {
    for (const CompareRow* r : ok_rows(rows, sharders[s], setting)) {
      const double v = value(*r);
      if (std::isnan(v)) continue;
      points[s].emplace_back(v, r);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  const Axis axis = report::nice_axis(lo, hi);
  const bool empty = std::all_of(points.begin(), points.end(), [](const auto& p) { return p.empty(); });
  const double left = 60, top = 34, bottom = 214, slot = 110;
  const double width = left + slot * static_cast<double>(sharders.size()) + 20;
  Svg svg(std::max({width, 420.0, title_width(title)}), 270, title);
  svg.text(left, 16, title, "start", 13, " font-weight='bold'");
  svg.y_axis(axis, left, top, bottom, width - 20, unit);
  if (empty) svg.text(left + 10, (top + bottom) / 2, "nothing to show: no task has a valid plan here", "start", 12);
  if (ratio) {
    const double y = report::y_of(axis, reference_line, top, bottom);
    svg.line(left, y, width - 20, y, "#000", " stroke-dasharray='5,3'");
  }
  for (std::size_t s = 0; s < sharders.size(); ++s) {
    const double cx = left + slot * (static_cast<double>(s) + 0.5);
    const char* colour = kSeriesColours[s % 10];
    std::vector<double> values;
    for (std::size_t i = 0; i < points[s].size(); ++i) {
      const auto& [v, r] = points[s][i];
      values.push_back(v);
      const double jitter = (static_cast<double>((i * 7919) % 41) / 40.0 - 0.5) * slot * 0.5;
      svg.circle(cx + jitter, report::y_of(axis, v, top, bottom), 2.5, colour,
                 r->task_id + ": " + fixed(v, 3) + " " + unit);
    }
    if (!values.empty()) {
      const report::Quartiles q = report::quartiles(values);
      const double y1 = report::y_of(axis, q.q3, top, bottom), y0 = report::y_of(axis, q.q1, top, bottom);
      svg.rect(cx - slot * 0.3, y1, slot * 0.6, y0 - y1, "none",
               "quartiles " + fixed(q.q1, 3) + " / " + fixed(q.median, 3) + " / " + fixed(q.q3, 3) + " " + unit,
               " stroke='#333' stroke-width='1.5'");
      const double ym = report::y_of(axis, q.median, top, bottom);
      svg.line(cx - slot * 0.3, ym, cx + slot * 0.3, ym, "#333", " stroke-width='2.5'");
    }
    const std::string label = short_sharder_spec_or(sharders[s]);
    svg.text(cx, bottom + 14, label.size() > 18 ? label.substr(0, 17) + "…" : label, "middle", 10,
             " fill='" + std::string(colour) + "'");
    svg.text(cx, bottom + 27, "n=" + std::to_string(values.size()), "middle", 10);
  }
  return svg.str();
}

/** Inline Markdown of the summary's notes: `code` and *emphasis*, the rest escaped. */
std::string inline_markdown(const std::string& text) {
  std::string out;
  bool code = false, emphasis = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else if (c == '*' && !code && (emphasis || (i + 1 < text.size() && text[i + 1] != ' '))) {
      out += emphasis ? "</em>" : "<em>";
      emphasis = !emphasis;
    } else {
      out += xml_escape(std::string(1, c));
    }
  }
  if (code) out += "</code>";
  if (emphasis) out += "</em>";
  return out;
}

/** The comparison's summary (eval/compare.h) as its notes and a sortable table. */
std::string summary_html(const CompareSummary& summary) {
  std::ostringstream out;
  out << "<p class='note'>" << inline_markdown(summary.note) << "</p>\n<table class='sortable'><thead><tr>";
  for (const std::string& c : summary.header) out << "<th>" << xml_escape(c) << "</th>";
  out << "</tr></thead><tbody>\n";
  for (const auto& row : summary.rows) {
    out << "<tr>";
    for (const std::string& c : row) out << "<td>" << xml_escape(c) << "</td>";
    out << "</tr>\n";
  }
  out << "</tbody></table>\n<p class='note'>" << inline_markdown(summary.sharders_note) << "</p>\n";
  return out.str();
}

/**
 * The reference sharder's canonical spec: `wanted` (canonical or short spec) when given, else
 * torchrec when it planned something, else the sharder with the most valid plans.
 */
std::string pick_reference(const std::vector<CompareRow>& rows, const std::vector<std::string>& sharders,
                           const std::string& wanted) {
  for (const std::string& s : sharders) {
    if (!wanted.empty() && (s == wanted || short_sharder_spec_or(s) == wanted)) return s;
  }
  if (!wanted.empty()) {
    std::string names;
    for (const std::string& s : sharders) names += (names.empty() ? "" : ", ") + short_sharder_spec_or(s);
    EMBSHARD_THROW("report: the reference sharder '", wanted, "' was not compared (compared: ", names, ")");
  }
  std::string best = sharders.front();
  std::size_t most = 0;
  for (const std::string& s : sharders) {
    const std::size_t valid = ok_rows(rows, s, "").size();
    if (s.rfind("torchrec", 0) == 0 && valid > 0) return s;
    if (valid > most) {
      best = s;
      most = valid;
    }
  }
  return best;
}

}  // namespace

std::string compare_report_html(const std::vector<CompareRow>& rows, const std::string& reference,
                                const std::string& source) {
  EMBSHARD_CHECK(!rows.empty(), source, ": an empty comparison (no rows): nothing to report");
  const std::vector<std::string> sharders = unique_values(rows, &CompareRow::sharder);
  const std::vector<std::string> settings = unique_values(rows, &CompareRow::setting);
  const std::string ref = pick_reference(rows, sharders, reference);
  std::map<std::string, double> ref_step;  // task -> the reference's step
  for (const CompareRow* r : ok_rows(rows, ref, "")) ref_step[r->task_id] = r->eval.step_ms;
  const std::size_t tasks = unique_values(rows, &CompareRow::task_id).size();
  std::ostringstream body;
  body << "<h1>embshard comparison report</h1>\n<p class='note'>" << tasks << " tasks, " << sharders.size()
       << " sharders, " << settings.size() << " settings; from " << xml_escape(source)
       << ". Step times are the judge's <code>step_ms</code> (docs/metrics.md). Written " << utc_timestamp()
       << ".</p>\n<h2>Summary (NeuroShard Table 1 shape)</h2>\n"
       << summary_html(compare_summary(rows));
  for (const std::string& setting : settings) {
    body << "<h2>" << xml_escape(setting) << "</h2>\n<figure>"
         << strip_plot_svg(
                rows, sharders, setting, "Step time per task, " + setting, "ms per step",
                [](const CompareRow& r) { return r.eval.step_ms; }, std::nan(""))
         << "<figcaption>One dot per task a sharder planned validly; the box spans the middle half, the thick "
            "line is the median.</figcaption></figure>\n<figure>"
         << strip_plot_svg(
                rows, sharders, setting, "Step relative to " + short_sharder_spec_or(ref) + ", " + setting,
                "step ÷ reference step",
                [&](const CompareRow& r) {
                  const auto it = ref_step.find(r.task_id);
                  return it == ref_step.end() || it->second <= 0 ? std::nan("") : r.eval.step_ms / it->second;
                },
                1.0)
         << "<figcaption>Per task both planned: below the dashed line at 1 the sharder beats "
         << xml_escape(short_sharder_spec_or(ref)) << ".</figcaption></figure>\n";
  }
  body << "<h2>Sharders in full</h2>\n<ul>";
  for (const std::string& s : sharders) body << "<li><code>" << xml_escape(s) << "</code></li>";
  body << "</ul>\n";
  return page("embshard comparison report", body.str());
}

std::string plan_report_html(const Task& task, const std::vector<JudgedPlan>& plans) {
  EMBSHARD_CHECK(!plans.empty(), "report: no plan to report on");
  std::ostringstream body;
  body << "<h1>embshard plan report — task " << xml_escape(task.id) << "</h1>\n<p class='note'>"
       << task.workload.tables.size() << " tables, " << fixed(gib(task.workload.total_bytes()), 2) << " GiB, batch "
       << task.workload.batch_size << ", " << task.topology.num_devices() << " devices ("
       << xml_escape(task.topology.name) << "). Figures are defined in docs/metrics.md. Written " << utc_timestamp()
       << ".</p>\n";
  if (plans.size() > 1) body << "<h2>The plans side by side</h2>\n" << plans_summary_html(plans);
  double top = 0.0;  // every plan's step bars on one ms scale
  for (const JudgedPlan& j : plans) top = std::max(top, step_bars_top(j.eval));
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const JudgedPlan& j = plans[i];
    const std::string name = short_sharder_spec_or(j.plan.provenance.sharder);
    body << "<h2 id='plan" << i << "'>" << xml_escape(name) << ": step " << fixed(j.eval.step_ms, 3) << " ms</h2>\n"
         << provenance_table(j, task);
    body << "<figure>"
         << step_bars(j.eval, "Step time per device, " + name + " (" + j.eval.backend + " judge)", top).str()
         << "<figcaption>Each bar is one device's step: forward kernel, its part of the forward all-to-all, "
            "the wait for the slowest forward kernel, the backward all-to-all and the backward kernel. The "
            "dashed line is the step time (each phase as long as its slowest device).</figcaption></figure>\n";
    const Topology ranks = sharding_group_topology(task.topology, j.plan.groups);  // a 2D plan: one group's
    body << "<figure>" << memory_svg(j.eval, ranks, "Memory per device, " + name)
         << "<figcaption>Weights only, as the papers count; the black line is the device's budget."
            "</figcaption></figure>\n";
    body << "<figure>" << placement_map_svg(task, j.plan, "Where each table lives, " + name)
         << "<figcaption>One row per table (largest first), one column per device. Hover a cell for its "
            "pieces.</figcaption></figure>\n";
    body << "<h3>Tables</h3>\n" << table_list_html(task, j.plan);
  }
  return page("embshard report: " + task.id, body.str());
}

std::string compare_chart_svg(const std::vector<CompareRow>& rows, const std::string& task_id) {
  std::vector<const CompareRow*> planned;
  double top = 0.0;  // one ms scale for every panel
  for (const CompareRow& r : rows) {
    if (r.task_id != task_id || !r.ok()) continue;
    planned.push_back(&r);
    top = std::max(top, step_bars_top(r.eval));
  }
  std::ostringstream panels;
  double width = 0.0, height = 0.0;
  for (const CompareRow* r : planned) {
    const Svg panel = step_bars(
        r->eval,
        "task " + task_id + ", " + short_sharder_spec_or(r->sharder) + ": step " + fixed(r->eval.step_ms, 2) + " ms",
        top);
    panels << "<g transform='translate(0," << fixed(height, 1) << ")'>\n" << panel.str() << "</g>\n";
    width = std::max(width, panel.width());
    height += panel.height();
  }
  EMBSHARD_CHECK(height > 0, "compare: no sharder produced a plan for task '", task_id, "'");
  Svg chart(width, height, "per-device step of task " + task_id + " for every sharder that planned it");
  const std::string frame = chart.str();  // the outer <svg>: its title, then the panels
  return frame.substr(0, frame.rfind("</svg>")) + panels.str() + "</svg>\n";
}

}  // namespace embshard
