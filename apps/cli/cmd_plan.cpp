// embshard plan --task T --sharder SPEC [--cost sim] [--objective O] [--seed S] --out P
//               [--format embshard|torchrec [--torchrec-device cuda|cpu] [--torchrec-module FQN]]
//               [--report R.html]
// embshard plan (no options): the main job on the built-in default task
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "embshard/core/clock.h"
#include "embshard/core/file_io.h"
#include "embshard/core/markup.h"
#include "embshard/core/spec.h"
#include "embshard/cost/cost_model.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/evaluator.h"
#include "embshard/eval/what_if.h"
#include "embshard/plan/plan_io.h"
#include "embshard/plan/torchrec_export.h"
#include "embshard/report/html_report.h"
#include "embshard/shard/sharder.h"
#include "verbs.h"

namespace embshard::cli {

namespace {

/** --colocate / --separate 'a,b;c,d,e': groups of table names, added to the task's (data/task.h). */
void add_table_groups(const std::string& text, std::vector<std::vector<std::string>>& groups) {
  for (const std::string& group : split_list(text, ';')) groups.push_back(split_list(group, ','));
}

/**
 * `sharder` told to optimise `objective` (--objective) where it takes one (joint, neuroshard,
 * exhaustive: an `objective` parameter); a spec naming another objective is an error. Other
 * sharders have one aim of their own and --objective only chooses the figure printed.
 */
std::string with_objective(const std::string& sharder, Objective objective) {
  Spec spec = parse_spec(sharder);
  const std::vector<std::string> choices = sharder_registry().choices(spec.name, "objective");
  if (choices.empty()) return sharder;  // no objective parameter: --objective picks the figure printed
  std::string allowed;
  for (const std::string& c : choices) allowed += (allowed.empty() ? "" : " or ") + c;
  EMBSHARD_CHECK(std::find(choices.begin(), choices.end(), to_string(objective)) != choices.end(), "--objective ",
                 to_string(objective), ": ", spec.name, " optimises ", allowed);
  for (const auto& [key, value] : spec.pairs) {
    EMBSHARD_CHECK(key != "objective" || value == to_string(objective), "--objective ", to_string(objective),
                   " contradicts the sharder spec's objective=", one_line(value));
  }
  set_spec_value(spec, "objective", to_string(objective));
  return format_spec(spec);
}

/** --explain: per table its placement and the best single change of it (eval/what_if.h). */
void print_explanations(const Task& task, const Plan& plan, CostModel& judge, const Context& ctx) {
  const std::vector<TableExplanation> why = explain_plan(task, plan, judge, ctx);
  std::printf("why each table is where it is (heaviest first; the best single change of the table alone%s):\n",
              plan.groups.enabled() ? "; devices are the ranks of a sharding group, every replica changing alike" : "");
  for (const TableExplanation& e : why) {
    if (e.next_best.empty()) {
      std::printf("  %-24s %-34s no other placement tried fits\n", one_line(e.table).c_str(), e.placement.c_str());
    } else {
      std::printf("  %-24s %-34s next best: %s, %+.3f ms\n", one_line(e.table).c_str(), e.placement.c_str(),
                  e.next_best.c_str(), e.next_best_delta_ms);
    }
  }
  if (why.size() < task.workload.tables.size())
    std::printf("  (%zu lighter tables not explained)\n", task.workload.tables.size() - why.size());
}

}  // namespace

int run_plan(Args& args, const Context& base_ctx) {
  const auto task_given = args.get("task");
  if (!task_given) {
    std::string planning_options;  // what asks for a task file to plan
    for (const std::string& key : args.given_options()) {
      const bool main_job_option = key == "report" || std::any_of(common_options().begin(), common_options().end(),
                                                                  [&](const OptionDoc& o) { return o.name == key; });
      if (!main_job_option) planning_options += (planning_options.empty() ? "--" : ", --") + key;
    }
    EMBSHARD_CHECK(planning_options.empty(), "embshard plan: missing --task, the task file to plan (", planning_options,
                   " given; plain `embshard plan` runs the main job)");
    return run_default(args, base_ctx);  // the main job: the built-in task
  }
  const std::string& task_path = *task_given;
  std::string sharder = args.value("sharder");
  const std::string cost_spec = args.value("cost");
  const bool objective_given = args.get("objective").has_value();
  const Objective objective = objective_option(args);
  if (objective_given) sharder = with_objective(sharder, objective);
  const auto out = args.get("out");
  const auto report = args.get("report");
  const std::string format = args.value("format");
  const std::string device = args.value("torchrec-device");
  const auto module_given = args.get("torchrec-module");
  const std::string module_path = module_given.value_or(TorchrecExportOptions{}.module_path);
  const bool explain = args.flag("explain");
  const std::string colocate = args.get_or("colocate", "");
  const std::string separate = args.get_or("separate", "");
  Context ctx = base_ctx;
  ctx.seed = static_cast<std::uint64_t>(args.get_int("seed"));
  args.finish();
  EMBSHARD_CHECK(format == "embshard" || format == "torchrec",
                 "--format must be 'embshard' or "
                 "'torchrec', got '",
                 format, "'");
  EMBSHARD_CHECK(device == "cuda" || device == "cpu", "--torchrec-device must be 'cuda' or 'cpu'");
  EMBSHARD_CHECK(!module_given || format == "torchrec",
                 "--torchrec-module names the module of a TorchRec plan: give "
                 "it with --format torchrec");
  // A TorchRec plan must be one TorchRec's training path runs: joint keeps to those layouts, and to
  // 1D (DistributedModelParallel's) unless the spec asks for 2D groups (DMPCollection's).
  if (format == "torchrec") sharder = torchrec_runnable_spec(sharder, "none", false);
  std::vector<NamedPath> inputs = spec_inputs("--sharder", sharder);
  for (const NamedPath& p : spec_inputs("--cost", cost_spec)) inputs.push_back(p);
  inputs.push_back({"--task", task_path});
  check_paths(inputs, {}, {{"--out", out.value_or("")}, {"--report", report.value_or("")}});
  Task task = read_task_file(task_path);
  add_table_groups(colocate, task.constraints.groups.colocate);
  add_table_groups(separate, task.constraints.groups.separate);
  if (format == "torchrec") {  // before planning: the file could not hold the plan
    const std::string mixed = find_error_in_one_module_export(task);
    EMBSHARD_CHECK(mixed.empty(), "plan --format torchrec: ", mixed);
    const bool sequence = !task.workload.tables.empty() && !task.workload.tables.front().pooled;
    EMBSHARD_CHECK(module_given || !sequence,
                   "plan --format torchrec: the task's tables are sequence tables, an EmbeddingCollection, which "
                   "the default module (torchrec.models.dlrm.DLRM's EmbeddingBagCollection) is not: give its path in "
                   "your model with --torchrec-module FQN ('.' when the collection is the model)");
  }
  const auto cost = make_cost_model(cost_spec, task, ctx);
  const ShardResult result = plan_task(sharder, task, cost.get(), ctx);
  if (result.status != ShardStatus::kOk) {
    std::cerr << "error: " << result.plan.provenance.sharder << ": " << to_string(result.status) << ": "
              << result.reason << "\n";
    return 1;
  }
  OutputSet outputs;  // the plan and its report are replaced together or not at all
  if (out && format == "embshard") outputs.add(*out, plan_to_json(result.plan));
  if (out && format == "torchrec") {
    TorchrecExportOptions options;
    options.compute_device = device == "cpu" ? TorchrecDevice::kCpu : TorchrecDevice::kCuda;
    options.module_path = module_path == "." ? "" : module_path;
    outputs.add(*out, torchrec_plan_json(task, result.plan, options));
  }
  if (report) {  // judged by the sim backend, as `embshard report --task T --plan P` would
    const EvalResult judged = evaluate_plan(task, result.plan, kSimJudge, ctx);
    outputs.add(*report, plan_report_html(task, {{result.plan, judged, out.value_or("(not saved)")}}));
  }
  outputs.commit();
  // A 2D plan is costed per sharding group by a model built for the group's task (sharding_groups.h).
  const Task costed = sharding_group_task(task, result.plan.groups);
  const auto group_cost = result.plan.groups.enabled() ? make_cost_model(cost_spec, costed, ctx) : nullptr;
  CostModel& judge = group_cost ? *group_cost : *cost;
  const CostBreakdown breakdown = judge.estimate(task, result.plan, ctx);
  const double value = objective_value(breakdown, objective);
  const auto bound = result.lower_bound && result.bound_objective == objective ? result.lower_bound
                                                                               : cost->lower_bound(task, objective);
  std::cout << result.plan.provenance.sharder << " planned " << task.workload.tables.size() << " tables in "
            << readable_ms(result.plan.provenance.wall_ms) << "\n";
  if (result.plan.groups.enabled())
    std::cout << describe_groups(result.plan.groups, task.topology.num_devices()) << "; costs per rank of a group\n";
  std::cout << eval_result_table(eval_result_of(breakdown, costed.workload.batch_size, cost->spec()), costed.topology);
  const ShardStats& st = result.stats;
  std::printf("search: %lld plans evaluated, %lld nodes visited, cost cache %lld queries, %lld hits\n",
              static_cast<long long>(st.plans_evaluated), static_cast<long long>(st.nodes_visited),
              static_cast<long long>(st.cache_queries), static_cast<long long>(st.cache_hits));
  if (!st.solver.empty()) std::printf("solver: %s\n", st.solver.c_str());
  if (const auto& derived = result.plan.provenance.derived_stats_tables; !derived.empty()) {
    std::string names;
    for (std::size_t i = 0; i < derived.size() && i < 8; ++i) names += (i ? ", " : "") + derived[i];
    std::printf("statistics derived from shape (rows, pooling factor) for %zu of %zu tables: %s%s\n", derived.size(),
                task.workload.tables.size(), names.c_str(), derived.size() > 8 ? ", ..." : "");
  }
  if (explain) print_explanations(task, result.plan, judge, ctx);
  const auto print_with_bound = [&](double v, const std::string& spec, double b) {
    std::printf("%s %.3f under %s; lower bound %.3f (gap %.1f%%)\n", to_string(objective), v, spec.c_str(), b,
                100.0 * gap_to_bound(v, b));
  };
  if (objective == Objective::kBalance) {  // a share in (0, 1], best at 1: no lower bound to give
    std::printf("balance %.3f under %s\n", value, cost->spec().c_str());
    return 0;
  }
  if (bound) {
    print_with_bound(value, cost->spec(), *bound);
    return 0;
  }
  std::printf("%s %.3f under %s (this judge offers no lower bound)\n", to_string(objective), value,
              cost->spec().c_str());
  // Every plan gets a certificate: the same plan under the sim judge, which has a bound.
  const auto sim = make_cost_model("sim", task, ctx);
  const auto sim_group = result.plan.groups.enabled() ? make_cost_model("sim", costed, ctx) : nullptr;
  const double sim_value = objective_value((sim_group ? *sim_group : *sim).estimate(task, result.plan, ctx), objective);
  if (const auto sim_bound = sim->lower_bound(task, objective)) print_with_bound(sim_value, sim->spec(), *sim_bound);
  return 0;
}

}  // namespace embshard::cli
