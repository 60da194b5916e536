// embshard size --task T [--target-step MS] [--devices MIN-MAX] [--sharder S] [--cost C] [--out C.csv] [--report
// R.html] embshard fit  --task T [--sharder S] [--cost C] [--out T2.json [--apply K]] embshard replan --task NEW --from
// OLD_PLAN [--max-move SHARE|BYTES] [--out P.json] [--curve C.csv] [--report R.html]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>

#include "commands.h"
#include "embshard/core/markup.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/replan.h"
#include "embshard/eval/what_if.h"
#include "embshard/plan/plan_io.h"
#include "embshard/report/capacity_report.h"
#include "embshard/report/replan_report.h"

namespace embshard::cli {
namespace {

/** --sharder, --cost and the judge's options, read the same way for both verbs. */
WhatIfOptions what_if_options(Args& args) {
  WhatIfOptions options;
  options.sharder = args.value("sharder");
  options.cost = args.value("cost");
  options.judge = judge_option(args);
  return options;
}

/** The context with --seed, the seed of every plan made (sharders that draw use it). */
Context seeded(Args& args, const Context& base) {
  Context ctx = base;
  ctx.seed = static_cast<std::uint64_t>(args.get_int("seed"));
  return ctx;
}

/** --devices MIN-MAX (or N: that count alone); default 1 to 16 × today's count. */
std::pair<int, int> device_range(Args& args, const Task& task) {
  const std::string text = args.get_or("devices", "");
  if (text.empty()) return {1, std::min<int>(kMaxDevices, 16 * task.topology.num_devices())};
  int lo = 0, hi = 0, used = 0;
  const bool range =
      std::sscanf(text.c_str(), "%d-%d%n", &lo, &hi, &used) == 2 && used == static_cast<int>(text.size());
  const bool one =
      !range && std::sscanf(text.c_str(), "%d%n", &lo, &used) == 1 && used == static_cast<int>(text.size());
  if (one) hi = lo;
  EMBSHARD_CHECK((range || one) && lo >= 1 && hi >= lo && hi <= kMaxDevices, "--devices: expected MIN-MAX with ",
                 "1 <= MIN <= MAX <= ", kMaxDevices, ", got '", one_line(text), "'");
  return {lo, hi};
}

std::string report_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

}  // namespace

int run_size(Args& args, const Context& base) {
  const std::string task_path = args.require("task");
  const Context ctx = seeded(args, base);
  const WhatIfOptions options = what_if_options(args);
  const double target = args.get_double("target-step", 0.0);
  EMBSHARD_CHECK(!args.get("target-step") || target > 0, "--target-step: expected a step above 0 ms, got '",
                 one_line(*args.get("target-step")), "'");
  const auto out = args.get("out");
  const auto report = args.get("report");
  check_paths({{"--task", task_path}}, {}, {{"--out", out.value_or("")}, {"--report", report.value_or("")}});
  const Task task = read_task_file(task_path);
  const auto [lo, hi] = device_range(args, task);
  args.finish();
  const CapacityCurve curve = plan_capacity(task, lo, hi, target, options, ctx);
  OutputSet outputs;
  if (out) outputs.add(*out, capacity_csv(curve));
  if (report) outputs.add(*report, capacity_report_html(curve));
  outputs.commit();
  if (task.topology.first_unlike_device() >= 0)
    std::printf("mixed hardware: %s\n", describe_device_counts(task.topology).c_str());
  std::printf("%8s %6s %12s %12s %10s  %s\n", "devices", "hosts", "step ms", "bound ms", "plan s", "");
  for (const CapacityPoint& p : curve.points) {
    const bool ok = p.run.ok();
    std::printf("%8d %6d %12s %12s %10.2f  %s\n", p.devices, p.hosts,
                ok ? report_number(p.run.eval.step_ms).c_str() : p.run.status.c_str(),
                p.bound_ms > 0 ? report_number(p.bound_ms).c_str() : "-", p.run.plan_ms / 1000.0,
                target > 0 && p.meets(target) ? "meets the target"
                : ok                          ? ""
                                              : one_line(p.run.reason).c_str());
  }
  std::cout << curve.verdict << "\n";
  return target > 0 && curve.fewest == 0 ? 1 : 0;
}

int run_fit(Args& args, const Context& base) {
  const std::string task_path = args.require("task");
  const Context ctx = seeded(args, base);
  const WhatIfOptions options = what_if_options(args);
  const auto out = args.get("out");
  const auto apply = args.get_int("apply");
  args.finish();
  EMBSHARD_CHECK(apply >= 1, "--apply: the change to write counts from 1, got ", apply);
  check_paths({{"--task", task_path}}, {}, {{"--out", out.value_or("")}});
  const Task task = read_task_file(task_path);
  const FitAdvice advice = advise_fit(task, options, ctx);
  if (advice.run.ok()) {
    std::printf("the task fits: %s plans it, step %.3f ms\n",
                advice.run.sharder.substr(0, advice.run.sharder.find(':')).c_str(), advice.run.eval.step_ms);
    EMBSHARD_CHECK(!out, "--out: the task fits as it is; there is no change to write");
    return 0;
  }
  std::cout << "the task does not fit:\n";
  for (const std::string& c : advice.conflicts) std::cout << "  - " << c << "\n";
  std::cout << (advice.changes.empty() ? "no single change tried makes it fit\n"
                                       : "smallest changes that make it fit, verified by planning:\n");
  for (std::size_t i = 0; i < advice.changes.size(); ++i) {
    const FitChange& c = advice.changes[i];
    std::printf("  %zu. [%s] %s: step %.3f ms\n", i + 1, c.kind.c_str(), c.description.c_str(), c.run.eval.step_ms);
    if (!c.next_smaller.empty()) std::cout << "     smaller: " << c.next_smaller << "\n";
  }
  for (const std::string& n : advice.not_helping) std::cout << "  not enough: " << n << "\n";
  if (out) {
    EMBSHARD_CHECK(static_cast<std::size_t>(apply) <= advice.changes.size(), "--apply ", apply, ": there are ",
                   advice.changes.size(), " changes");
    OutputSet outputs;
    outputs.add(*out, task_to_json(advice.changes[static_cast<std::size_t>(apply - 1)].task));
    outputs.commit();
    std::cout << "wrote change " << apply << " to " << *out << "\n";
  }
  return advice.changes.empty() ? 1 : 0;
}

}  // namespace embshard::cli

namespace embshard::cli {
namespace {

/** --max-move: a share of the task's table bytes ("0.1", "10%": a plain number up to 1 is a share)
 *  or bytes ("5e9", "4GiB": a plain number above 1 is whole bytes). */
double max_move_bytes(const std::string& text, const Task& task) {
  if (text.empty()) return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const std::string unit = end ? std::string(end) : "";
  const bool hex = text.find_first_of("xX") != std::string::npos;
  EMBSHARD_CHECK(end != text.c_str() && !hex && std::isfinite(value) && value >= 0 &&
                     (unit.empty() || unit == "%" || unit == "GiB" || unit == "MiB"),
                 "--max-move: expected a share (0.1 or 10%) or bytes (5e9, 4GiB, 512MiB), got '", one_line(text), "'");
  EMBSHARD_CHECK(!unit.empty() || value <= 1.0 || value == std::floor(value), "--max-move: '", one_line(text),
                 "' is neither a share (a number up to 1, or a percentage) nor whole bytes");
  const double total = static_cast<double>(task.workload.total_bytes());
  if (unit == "%") return value / 100.0 * total;
  if (unit == "GiB") return value * 1024.0 * 1024.0 * 1024.0;
  if (unit == "MiB") return value * 1024.0 * 1024.0;
  return value <= 1.0 ? value * total : value;
}

}  // namespace

int run_replan(Args& args, const Context& base) {
  const std::string task_path = args.require("task");
  const Context ctx = seeded(args, base);
  const std::string from = args.require("from");
  ReplanOptions options;
  options.sharder = args.value("sharder");
  options.cost = args.value("cost");
  options.judge = judge_option(args);
  const std::string max_move = args.get_or("max-move", "");
  options.reshard = args.flag("reshard");
  options.layout = parse_replan_layout(args.value("layout"), "--layout");
  const auto out = args.get("out");
  const auto curve_out = args.get("curve");
  const auto report = args.get("report");
  args.finish();
  check_paths({{"--task", task_path}, {"--from", from}}, {},
              {{"--out", out.value_or("")}, {"--curve", curve_out.value_or("")}, {"--report", report.value_or("")}});
  const Task task = read_task_file(task_path);
  const Plan old_plan = read_plan_file(from);
  options.max_move_bytes = max_move_bytes(max_move, task);
  const ReplanResult r = replan(task, old_plan, options, ctx);
  OutputSet outputs;
  if (out) outputs.add(*out, plan_to_json(r.plan));
  if (curve_out) outputs.add(*curve_out, replan_curve_csv(r));
  if (report) outputs.add(*report, replan_report_html(r));
  outputs.commit();
  std::printf("%14s %8s %10s %8s\n", "moved GiB", "share", "step ms", "tables");
  const std::size_t stride = std::max<std::size_t>(1, r.curve.size() / 12);
  for (std::size_t i = 0; i < r.curve.size(); ++i) {
    const ReplanPoint& p = r.curve[i];
    const bool chosen = p.moved_bytes == r.chosen.moved_bytes && p.step_ms == r.chosen.step_ms;
    if (i % stride != 0 && i + 1 != r.curve.size() && !chosen) continue;
    std::printf("%14.4f %7.2f%% %10.3f %8d%s\n", p.moved_bytes / 1073741824.0, 100.0 * p.moved_share, p.step_ms,
                p.tables_switched, chosen ? "  <- chosen" : "");
  }
  double most_sent = 0, most_received = 0;
  for (double b : r.movement.sent) most_sent = std::max(most_sent, b);
  for (double b : r.movement.received) most_received = std::max(most_received, b);
  std::printf("per device: at most %.4f GiB sent, %.4f GiB received; %.4f GiB of new tables created\n",
              most_sent / 1073741824.0, most_received / 1073741824.0, r.movement.created_bytes / 1073741824.0);
  std::cout << r.verdict << "\n";
  return 0;
}

}  // namespace embshard::cli
