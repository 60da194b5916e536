// embshard size --task T [--target-step MS] [--devices MIN-MAX] [--sharder S] [--cost C] [--out C.csv] [--report R.html]
// embshard fit  --task T [--sharder S] [--cost C] [--out T2.json [--apply K]]
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "embshard/core/markup.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/what_if.h"
#include "embshard/report/capacity_report.h"

namespace embshard::cli {
namespace {

/** --sharder, --cost and the judge's options, read the same way for both verbs. */
WhatIfOptions what_if_options(Args& args) {
  WhatIfOptions options;
  options.sharder = args.get_or("sharder", options.sharder);
  options.cost = args.get_or("cost", options.cost);
  options.judge.backend = args.get_or("backend", "sim");
  read_exchange_options(args, options.judge);
  return options;
}

/** --devices MIN-MAX (or N: that count alone); default 1 to 16 × today's count. */
std::pair<int, int> device_range(Args& args, const Task& task) {
  const std::string text = args.get_or("devices", "");
  if (text.empty()) return {1, std::min<int>(kMaxDevices, 16 * task.topology.num_devices())};
  int lo = 0, hi = 0;
  char end = 0;
  const int read = std::sscanf(text.c_str(), "%d-%d%c", &lo, &hi, &end);
  if (read == 1) hi = lo;
  EMBSHARD_CHECK((read == 1 || read == 2) && lo >= 1 && hi >= lo && hi <= kMaxDevices, "--devices: expected MIN-MAX with ",
                 "1 <= MIN <= MAX <= ", kMaxDevices, ", got '", one_line(text), "'");
  return {lo, hi};
}

std::string report_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

}  // namespace

int run_size(Args& args, const Context& ctx) {
  const std::string task_path = args.require("task");
  const WhatIfOptions options = what_if_options(args);
  const double target = args.get_double("target-step", 0.0);
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
  std::printf("%8s %6s %12s %12s %10s  %s\n", "devices", "hosts", "step ms", "bound ms", "plan s", "");
  for (const CapacityPoint& p : curve.points) {
    const bool ok = p.run.status == "ok";
    std::printf("%8d %6d %12s %12s %10.2f  %s\n", p.devices, p.hosts,
                ok ? report_number(p.run.eval.step_ms).c_str() : p.run.status.c_str(),
                p.bound_ms > 0 ? report_number(p.bound_ms).c_str() : "-", p.run.plan_ms / 1000.0,
                target > 0 && p.meets(target) ? "meets the target" : "");
  }
  std::cout << curve.verdict << "\n";
  return target > 0 && curve.fewest == 0 ? 1 : 0;
}

int run_fit(Args& args, const Context& ctx) {
  const std::string task_path = args.require("task");
  const WhatIfOptions options = what_if_options(args);
  const auto out = args.get("out");
  const auto apply = args.get_int("apply", 1);
  args.finish();
  EMBSHARD_CHECK(apply >= 1, "--apply: the change to write counts from 1, got ", apply);
  check_paths({{"--task", task_path}}, {}, {{"--out", out.value_or("")}});
  const Task task = read_task_file(task_path);
  const FitAdvice advice = advise_fit(task, options, ctx);
  if (advice.run.status == "ok") {
    std::printf("the task fits: %s plans it, step %.3f ms\n", advice.run.sharder.substr(0, advice.run.sharder.find(':')).c_str(),
                advice.run.eval.step_ms);
    EMBSHARD_CHECK(!out, "--out: the task fits as it is; there is no change to write");
    return 0;
  }
  std::cout << "the task does not fit:\n";
  for (const std::string& c : advice.conflicts) std::cout << "  - " << c << "\n";
  std::cout << (advice.changes.empty() ? "no single change tried makes it fit\n" : "smallest changes that make it fit, verified by planning:\n");
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
