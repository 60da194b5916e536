// embshard report --task T --plan 'P1[;P2...]' [--backend sim|cpu|reference|cuda] [--batch B] --out R.html
// embshard report --compare R.csv [--reference SPEC] --out R.html
#include <iostream>

#include "commands.h"
#include "embshard/core/file_io.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/compare.h"
#include "embshard/plan/plan_io.h"
#include "embshard/report/html_report.h"

namespace embshard::cli {
namespace {

int report_plans(Args& args, const Context& ctx, const std::string& out) {
  const std::string task_path = args.require("task");
  const std::vector<std::string> plan_paths = split_list(args.require("plan"));
  const std::string judge = judge_option(args);
  args.finish();
  EMBSHARD_CHECK(!plan_paths.empty(), "embshard report: --plan names no file");
  std::vector<NamedPath> inputs{{"--task", task_path}};
  for (const std::string& p : plan_paths) inputs.push_back({"--plan", p});
  check_paths(inputs, {}, {{"--out", out}});
  const Task task = read_task_file(task_path);
  std::vector<JudgedPlan> plans;
  for (const std::string& path : plan_paths) {
    JudgedPlan j{read_plan_file(path), {}, path};
    const std::string& made_for = j.plan.provenance.task_id;
    EMBSHARD_CHECK(made_for.empty() || made_for == task.id, path, ": the plan was made for task '", made_for,
                   "', not for ", task_path, " (task '", task.id, "')");
    if (const std::string error = find_error_in_plan(task, j.plan); !error.empty()) {
      EMBSHARD_THROW(path, ": the plan does not fit the task ", task_path, ": ", error);
    }
    j.eval = evaluate_plan(task, j.plan, judge, ctx);
    plans.push_back(std::move(j));
  }
  write_file_atomic(out, plan_report_html(task, plans));
  std::cout << "wrote the report of " << plans.size() << " plan(s) of task " << task.id << " to " << out << "\n";
  return 0;
}

int report_comparison(Args& args, const std::string& out) {
  const std::string csv = args.require("compare");
  const std::string reference = args.get_or("reference", "");
  args.finish();
  check_paths({{"--compare", csv}}, {}, {{"--out", out}});
  const std::vector<CompareRow> rows = read_compare_csv(csv);
  write_file_atomic(out, compare_report_html(rows, reference, csv));
  std::cout << "wrote the comparison report of " << rows.size() << " rows to " << out << "\n";
  return 0;
}

}  // namespace

int run_report(Args& args, const Context& ctx) {
  const std::string out = args.require("out");
  if (args.get("compare")) return report_comparison(args, out);
  return report_plans(args, ctx, out);
}

}  // namespace embshard::cli
