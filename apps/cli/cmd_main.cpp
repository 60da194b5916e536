// embshard (no verb): the main job on the built-in default workload.
// It shows the pool against the published dataset figures, the default task (NeuroShard protocol,
// 4 devices, max dim 128), and that task planned by every sharder, judged by the sim backend: the
// best plan's per-device breakdown against the strongest of the papers' baselines. `--report R.html`
// also writes the plan report of every plan found (html_report.h).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "commands.h"
#include "embshard/core/clock.h"
#include "embshard/core/file_io.h"
#include "embshard/data/pool.h"
#include "embshard/eval/compare.h"
#include "embshard/eval/evaluator.h"
#include "embshard/eval/task_gen.h"
#include "embshard/plan/plan.h"
#include "embshard/report/html_report.h"
#include "embshard/shard/sharder.h"

namespace embshard::cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

void print_pool_summary(const Pool& pool) {
  double rows = 0, pooling = 0, max_rows = 0, max_pooling = 0;
  for (const auto& t : pool.tables()) {
    rows += static_cast<double>(t.num_rows);
    pooling += t.pooling_factor;
    max_rows = std::max(max_rows, static_cast<double>(t.num_rows));
    max_pooling = std::max(max_pooling, t.pooling_factor);
  }
  const double n = static_cast<double>(pool.tables().size());
  std::printf("built-in pool (seed %llu): %zu tables shaped like Meta's DLRM dataset\n",
              static_cast<unsigned long long>(pool.seed()), pool.tables().size());
  std::printf("  hash size  max %.0f  mean %.0f   (published: max %lld, mean %.0f)\n", max_rows, rows / n,
              static_cast<long long>(kPublishedDlrm.max_rows), kPublishedDlrm.mean_rows);
  std::printf("  pooling    max %.1f  mean %.2f   (published: max %.0f, mean %.2f)\n", max_pooling, pooling / n,
              kPublishedDlrm.max_pooling, kPublishedDlrm.mean_pooling);
  std::printf("  full comparison: embshard pool --check\n\n");
}

void print_task(const Task& task) {
  const auto& tables = task.workload.tables;
  std::printf("default task %s\n  protocol %s\n  topology %s (%d devices, %.1f GiB each)\n", task.id.c_str(),
              task.protocol.c_str(), task.topology.name.c_str(), task.topology.num_devices(),
              static_cast<double>(task.topology.devices[0].hbm_bytes) / kGiB);
  std::printf("  %zu tables, %.2f GiB in all, batch %lld\n\n", tables.size(),
              static_cast<double>(task.workload.total_bytes()) / kGiB,
              static_cast<long long>(task.workload.batch_size));
  std::vector<const TableSpec*> order;
  for (const auto& t : tables) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](auto* a, auto* b) { return a->dim * a->stats.pooling_factor > b->dim * b->stats.pooling_factor; });
  std::printf("  %-14s %5s %10s %8s %9s %10s\n", "table", "dim", "rows", "pooling", "size GiB", "dim*pool");
  for (std::size_t i = 0; i < order.size() && i < 12; ++i) {
    const TableSpec& t = *order[i];
    std::printf("  %-14s %5d %10lld %8.2f %9.3f %10.1f\n", t.name.c_str(), t.dim, static_cast<long long>(t.num_rows()),
                t.stats.pooling_factor, static_cast<double>(t.size_bytes()) / kGiB, t.dim * t.stats.pooling_factor);
  }
  if (order.size() > 12) std::printf("  ... %zu more\n", order.size() - 12);
}

void print_breakdown(const char* title, const CompareRow& row, const Task& task) {
  std::printf("\n%s: %s (planned in %s)\n%s", title, short_sharder_spec(row.sharder).c_str(),
              readable_ms(row.plan_ms).c_str(), eval_result_table(row.eval, task.topology).c_str());
}

/** embshard's planner against TorchRec's logic and the best of the papers' heuristics. */
void print_against(const std::vector<CompareRow>& rows) {
  const CompareRow* joint = fastest_row(rows, [](const std::string& s) { return s.rfind("joint", 0) == 0; });
  const CompareRow* torchrec = fastest_row(rows, [](const std::string& s) { return s.rfind("torchrec", 0) == 0; });
  const CompareRow* heuristic = fastest_row(rows, is_baseline);
  if (joint == nullptr) return;
  std::printf("\nembshard's planner (joint): step %.3f ms, %.1f%% above the lower bound %.3f ms\n", joint->eval.step_ms,
              100.0 * gap_to_bound(joint->eval.step_ms, joint->lower_bound_ms), joint->lower_bound_ms);
  const std::pair<const char*, const CompareRow*> others[] = {{"TorchRec's planner", torchrec},
                                                              {"the best heuristic", heuristic}};
  for (const auto& other : others) {
    if (other.second == nullptr) continue;
    std::printf("  against %s (%s): %.3f ms, joint %+.1f%%\n", other.first,
                short_sharder_spec(other.second->sharder).c_str(), other.second->eval.step_ms,
                100.0 * (joint->eval.step_ms / other.second->eval.step_ms - 1.0));
  }
}

/** The plan report of every plan that was found, best first (the report's side-by-side order). */
std::string report_of(const Task& task, const std::vector<CompareRow>& rows, const std::vector<Plan>& plans) {
  std::vector<JudgedPlan> judged;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].ok())
      judged.push_back({plans[i], rows[i].eval, "the main job (" + short_sharder_spec(rows[i].sharder) + ")"});
  }
  std::stable_sort(judged.begin(), judged.end(),
                   [](const JudgedPlan& a, const JudgedPlan& b) { return a.eval.step_ms < b.eval.step_ms; });
  return plan_report_html(task, judged);
}

/**
 * Plans `task` with every default sharder, judged by sim; prints the best against the best
 * baseline, and writes the plan report of them all to `report` when given.
 */
void print_planning(const Task& task, const Context& ctx, const std::optional<std::string>& report) {
  CompareOptions options;
  options.sharders = default_sharders();
  std::vector<Plan> plans;
  const std::vector<CompareRow> rows = run_compare({task}, options, ctx, &plans);
  if (report) write_file_atomic(*report, report_of(task, rows, plans));
  std::printf("\nevery sharder on it, judged by the sim backend (lower bound %.3f ms):\n", rows.front().lower_bound_ms);
  for (const CompareRow& r : rows) {
    if (r.ok()) {
      std::printf("  %-32s step %9.3f ms  gap %5.1f%%  (planned in %s)\n", short_sharder_spec(r.sharder).c_str(),
                  r.eval.step_ms, 100.0 * gap_to_bound(r.eval.step_ms, r.lower_bound_ms),
                  readable_ms(r.plan_ms).c_str());
    } else {
      std::printf("  %-32s %s\n", short_sharder_spec(r.sharder).c_str(), r.status.c_str());
    }
  }
  const CompareRow* best = fastest_row(rows);
  const CompareRow* baseline = fastest_row(rows, is_baseline);
  if (best == nullptr) {
    std::printf("no sharder found a plan that fits\n");
    return;
  }
  print_against(rows);
  print_breakdown("best plan", *best, task);
  if (baseline != nullptr && baseline != best) {
    print_breakdown("strongest baseline", *baseline, task);
  } else {
    std::printf("\nthe best plan is itself one of the papers' baselines\n");
  }
  std::printf("\n(embshard eval --backend cpu measures a plan on this machine's kernels)\n");
}

}  // namespace

int run_default(Args& args, const Context& ctx) {
  const auto report = args.get("report");
  args.finish();
  check_paths({}, {}, {{"--report", report.value_or("")}});
  print_pool_summary(Pool::generate(0));
  const Task task = default_task();
  print_task(task);
  print_planning(task, ctx, report);
  if (report) std::printf("report of every plan: %s\n", report->c_str());
  return 0;
}

}  // namespace embshard::cli
