// embshard eval --task T --plan P [--backend sim|cpu|reference|cuda] [--objective O] [--out R]
#include <iostream>

#include "commands.h"
#include "embshard/core/file_io.h"
#include "embshard/cost/breakdown.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/evaluator.h"
#include "embshard/plan/plan_io.h"

namespace embshard::cli {

int run_eval(Args& args, const Context& ctx) {
  const std::string task_path = args.require("task");
  const std::string plan_path = args.require("plan");
  EvalOptions options;
  options.backend = args.get_or("backend", "sim");
  options.batch_size = args.get_int("batch", 0);
  options.batch_number = static_cast<std::uint64_t>(args.get_int("draw", 0));
  options.measure = measure_options(args, options.measure);
  const Objective objective = parse_objective(args.get_or("objective", "step"));
  const auto out = args.get("out");
  args.finish();
  EMBSHARD_CHECK(options.batch_size >= 0 && options.batch_size <= (std::int64_t{1} << 24),
                 "--batch must lie in [1, 2^24] (0 or absent: the task's batch)");
  const Task task = read_task_file(task_path);
  const Plan plan = read_plan_file(plan_path);
  const EvalResult result = evaluate_plan(task, plan, options, ctx);
  if (out) write_file_atomic(*out, eval_result_json(result, task, plan));
  std::cout << eval_result_table(result) << to_string(objective) << " = "
            << objective_value(result.breakdown, objective) << "\n";
  return 0;
}

}  // namespace embshard::cli
