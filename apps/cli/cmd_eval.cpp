// embshard eval --task T --plan P [--backend sim|cpu|reference|cuda] [--objective O] [--out R]
//               [--comm auto|model|mpi]   (mpi: under mpirun -n <devices>; auto: mpi for a measured
//                                          backend started by mpirun, else the link model)
#include <iostream>
#include <optional>

#include "commands.h"
#include "embshard/core/file_io.h"
#include "embshard/cost/breakdown.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/evaluator.h"
#include "embshard/plan/plan_io.h"
#include "embshard/profile/all_to_all.h"

namespace embshard::cli {

namespace {

void report(const EvalResult& result, const Task& task, const Plan& plan, Objective objective,
            const std::optional<std::string>& out) {
  if (out) write_file_atomic(*out, eval_result_json(result, task, plan));
  std::cout << eval_result_table(result, sharding_group_topology(task.topology, plan.groups)) << to_string(objective)
            << " = " << objective_value(result.breakdown, objective) << "\n";
}

/**
 * Under `mpirun -n D` (D = the task's devices): every rank measures the plan's all-to-alls
 * together, then rank 0 alone measures the compute and reports; the other ranks return first.
 */
int eval_with_measured_comm(const Task& task, const Plan& plan, const std::string& judge, MeasureOptions comm_options,
                            Objective objective, const std::optional<std::string>& out, const Context& ctx) {
  MpiSession session;
  EMBSHARD_CHECK(session.size() == task.topology.num_devices(), "eval --comm mpi: the task has ",
                 task.topology.num_devices(), " devices but the job has ", session.size(),
                 " MPI ranks (run it as mpirun -n ", task.topology.num_devices(), " embshard eval ...)");
  // The all-to-alls are timed with --warmup / --repeats (whatever the judge), at the judge's batch and input mode.
  comm_options.flush_cache = false;  // 2 × LLC per rank per repeat would dominate the run
  const auto by_device = shards_by_device(task, plan);
  const InputCommOptions input = judge_input_comm(judge);
  const std::vector<DeviceTiming> measured = measure_plan_all_to_all(
      session, make_judge(task, judge, ctx)->batch_size(task), device_output_dims(task, by_device).totals(),
      comm_options,
      input.mode == InputCommMode::kOmit ? std::vector<double>{} : device_input_bytes(task, by_device, input));
  if (!session.is_root()) return 0;
  report(evaluate_plan(task, plan, judge, ctx, measured), task, plan, objective, out);
  return 0;
}

}  // namespace

std::string judge_option(Args& args) {
  std::string judge = args.value("backend");
  static const std::vector<std::pair<std::string, std::string>> kJudgeOptions = {
      {"batch", "batch"},        {"draw", "draw"},   {"warmup", "warmup"},
      {"repeats", "repeats"},    {"remap", "remap"}, {"input-comm", "input_comm"},
      {"exchanges", "exchanges"}};
  for (const auto& [option, key] : kJudgeOptions) {
    if (args.given(option)) judge = set_judge_value(judge, key, args.require(option));
  }
  if (args.given("no-flush") && args.flag("no-flush")) judge = set_judge_value(judge, "flush", "false");
  // The measuring options apply to judges that measure; how the exchanges are counted, to every judge.
  for (const auto& [option, key] : {std::pair{"input-comm", "input_comm"}, {"exchanges", "exchanges"}}) {
    EMBSHARD_CHECK(!args.given(option) || judge.find(std::string(key) + "=") != std::string::npos, "--", option,
                   ": the judge '", judge, "' takes no ", key, " (name its model: sim, neural:…, measured:…)");
  }
  try {
    (void)judge_spec(judge);
  } catch (const Error& e) {
    EMBSHARD_THROW("--backend: ", e.what());
  }
  return judge;
}

Objective objective_option(Args& args) {
  const std::string name = args.value("objective");
  try {
    return parse_objective(name);
  } catch (const Error& e) {
    EMBSHARD_THROW("--objective: ", e.what());
  }
}

int run_eval(Args& args, const Context& ctx) {
  const std::string task_path = args.require("task");
  const std::string plan_path = args.require("plan");
  const std::string judge = judge_option(args);
  const MeasureOptions comm_measure = measure_options(args, MeasureOptions{});  // --comm mpi's all-to-alls
  const Objective objective = objective_option(args);
  const auto out = args.get("out");
  std::string comm = args.value("comm");
  args.finish();
  EMBSHARD_CHECK(comm == "auto" || comm == "model" || comm == "mpi", "--comm must be 'auto', 'model' or 'mpi', got '",
                 comm, "'");
  check_paths({{"--task", task_path}, {"--plan", plan_path}}, {}, {{"--out", out.value_or("")}});
  const Task task = read_task_file(task_path);
  const Plan plan = read_plan_file(plan_path);
  const std::string problem = find_error_in_plan(task, plan);
  EMBSHARD_CHECK(problem.empty(), plan_path, ": the plan does not fit the task ", task_path, ": ", problem);
  EMBSHARD_CHECK(comm != "mpi" || !plan.groups.enabled(), plan_path,
                 ": --comm mpi cannot measure a 2D plan's "
                 "exchanges (they run inside each sharding group); judge it with --comm model");
  // auto: a judge that times kernels, started by mpirun, measures the all-to-alls too; the link model otherwise.
  if (comm == "auto")
    comm =
        built_with_mpi() && launched_by_mpirun() && !plan.groups.enabled() && make_judge(task, judge, ctx)->measures()
            ? "mpi"
            : "model";
  if (comm == "mpi") return eval_with_measured_comm(task, plan, judge, comm_measure, objective, out, ctx);
  const EvalResult result = evaluate_plan(task, plan, judge, ctx);
  report(result, task, plan, objective, out);
  return 0;
}

}  // namespace embshard::cli
