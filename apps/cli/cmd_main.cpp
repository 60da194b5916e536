// embshard (no verb): the main job on the built-in default workload.
// Until sharders exist it shows the workload and the judge: the pool against the published
// dataset figures, the default task (NeuroShard protocol, 4 devices, max dim 128) a planner will
// receive, and what a memory-balanced placement of it costs on the sim backend.
#include <algorithm>
#include <cstdio>

#include "commands.h"
#include "embshard/data/pool.h"
#include "embshard/eval/evaluator.h"
#include "embshard/eval/task_gen.h"
#include "embshard/plan/plan.h"

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
  std::printf("  hash size  max %.0f  mean %.0f   (published: max %lld, mean %.0f)\n", max_rows,
              rows / n, static_cast<long long>(kPublishedDlrm.max_rows), kPublishedDlrm.mean_rows);
  std::printf("  pooling    max %.1f  mean %.2f   (published: max %.0f, mean %.2f)\n", max_pooling,
              pooling / n, kPublishedDlrm.max_pooling, kPublishedDlrm.mean_pooling);
  std::printf("  full comparison: embshard pool --check\n\n");
}

void print_task(const Task& task) {
  const auto& tables = task.workload.tables;
  std::printf("default task %s\n  protocol %s\n  topology %s (%d devices, %.1f GiB each)\n",
              task.id.c_str(), task.protocol.c_str(), task.topology.name.c_str(),
              task.topology.num_devices(),
              static_cast<double>(task.topology.devices[0].hbm_bytes) / kGiB);
  std::printf("  %zu tables, %.2f GiB in all, batch %lld\n\n", tables.size(),
              static_cast<double>(task.workload.total_bytes()) / kGiB,
              static_cast<long long>(task.workload.batch_size));
  std::vector<const TableSpec*> order;
  for (const auto& t : tables) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return a->dim * a->stats.pooling_factor > b->dim * b->stats.pooling_factor;
  });
  std::printf("  %-14s %5s %10s %8s %9s %10s\n", "table", "dim", "rows", "pooling", "size GiB",
              "dim*pool");
  for (std::size_t i = 0; i < order.size() && i < 12; ++i) {
    const TableSpec& t = *order[i];
    std::printf("  %-14s %5d %10lld %8.2f %9.3f %10.1f\n", t.name.c_str(), t.dim,
                static_cast<long long>(t.num_rows()), t.stats.pooling_factor,
                static_cast<double>(t.size_bytes()) / kGiB, t.dim * t.stats.pooling_factor);
  }
  if (order.size() > 12) std::printf("  ... %zu more\n", order.size() - 12);
}

void print_evaluation(const Task& task, const Context& ctx) {
  const Plan plan = memory_balanced_plan(task);
  const std::string problem = find_error_in_plan(task, plan);
  if (!problem.empty()) {
    std::printf("\na memory-balanced placement does not fit: %s\n", problem.c_str());
    return;
  }
  std::printf("\na memory-balanced table-wise placement, judged by the sim backend "
              "(embshard eval --backend cpu measures instead):\n%s",
              eval_result_table(evaluate_plan(task, plan, {}, ctx)).c_str());
  std::printf("\nno sharder is built yet: this is the workload and the judge a planner will get.\n");
}

}  // namespace

int run_default(Args& args, const Context& ctx) {
  args.finish();
  print_pool_summary(Pool::generate(0));
  const Task task = default_task();
  print_task(task);
  print_evaluation(task, ctx);
  return 0;
}

}  // namespace embshard::cli
