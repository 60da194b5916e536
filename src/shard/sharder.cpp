#include "embshard/shard/sharder.h"

#include <algorithm>
#include <functional>

#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/spec.h"
#include "shard/builtin_sharders.h"

namespace embshard {

const char* to_string(ShardStatus status) {
  switch (status) {
    case ShardStatus::kOk: return "ok";
    case ShardStatus::kInfeasible: return "infeasible";
    case ShardStatus::kTimeLimit: return "time_limit";
  }
  return "?";
}

const Registry<Sharder>& sharder_registry() {
  static const Registry<Sharder> registry = [] {
    Registry<Sharder> r("sharder");
    detail::register_baselines(r);
    detail::register_exhaustive(r);
    detail::register_torchrec(r);
    detail::register_neuroshard(r);
    detail::register_dreamshard(r);
    detail::register_autoshard(r);
    detail::register_recshard(r);
    detail::register_joint(r);
    return r;
  }();
  return registry;
}

std::string canonical_sharder_spec(const std::string& spec) { return sharder_registry().canonical(spec); }

std::string short_sharder_spec(const std::string& spec) { return sharder_registry().short_spec(spec); }

std::unique_ptr<Sharder> make_sharder(const std::string& spec) { return sharder_registry().create(spec, Context{}); }

std::string torchrec_runnable_spec(const std::string& text, const std::string& groups, bool memory_is_net) {
  Spec spec = parse_spec(text);
  const auto has = [&](const char* key) {
    return std::any_of(spec.pairs.begin(), spec.pairs.end(), [&](const auto& pair) { return pair.first == key; });
  };
  const auto set_unless_given = [&](const char* key, const std::string& value) {
    if (!has(key)) set_spec_value(spec, key, value);
  };
  if (spec.name == "joint") {
    set_unless_given("torchrec", "true");
    set_unless_given("groups", groups);
  } else if (spec.name == "torchrec" && memory_is_net && !has("storage_reservation") && !has("reservation")) {
    set_spec_value(spec, "storage_reservation", "0");
    set_spec_value(spec, "reservation", "fixed_percentage");
  } else {
    return text;
  }
  return format_spec(spec);
}

namespace {

/**
 * On one device a data-parallel table is one whole copy on device 0, which is also what a
 * table-wise one is. The tables that allow data_parallel but not table_wise, which sharders placing
 * whole tables would call infeasible there; empty on more devices.
 */
std::vector<std::size_t> one_device_copies(const Task& task) {
  std::vector<std::size_t> copies;
  if (task.topology.num_devices() != 1) return copies;
  for (std::size_t t = 0; t < task.workload.tables.size(); ++t) {
    const TableSpec& table = task.workload.tables[t];
    if (table.allows(ShardingType::kDataParallel) && !table.allows(ShardingType::kTableWise)) copies.push_back(t);
  }
  return copies;
}

/** `task` with those tables offered to the sharder as table-wise too. */
Task offering_table_wise(Task task, const std::vector<std::size_t>& copies) {
  for (std::size_t t : copies) task.workload.tables[t].constraints.sharding_types.push_back(ShardingType::kTableWise);
  return task;
}

/** Names those tables' whole-table shards data_parallel again (a split one stays as it is and is
 *  reported against the table's constraints). */
void name_copies(const Task& task, const std::vector<std::size_t>& copies, Plan& plan) {
  for (std::size_t t : copies) {
    for (TablePlacement& tp : plan.tables) {
      const TableSpec& table = task.workload.tables[t];
      if (tp.table != table.name || tp.type != ShardingType::kTableWise || tp.shards.size() != 1) continue;
      const Shard& s = tp.shards.front();
      if (s.row_begin == 0 && s.row_end == table.num_rows() && s.col_begin == 0 && s.col_end == table.dim &&
          s.rows_in_hbm() == s.num_rows())
        tp.type = ShardingType::kDataParallel;
    }
  }
}

}  // namespace

ShardResult Sharder::shard_from(const Task&, CostModel*, const PlanOrigin&, const Context&) const {
  EMBSHARD_THROW("this sharder cannot search from a plan (re-planning uses joint)");
}

namespace {

/** plan_task and plan_task_from: the sharder run by `run`, its plan checked and stamped. */
ShardResult run_sharder(const std::string& spec, const Task& task, CostModel* cost, const Context& ctx,
                        const std::function<ShardResult(const Sharder&, const Task&)>& run) {
  check_task(task, "plan: task");
  const std::unique_ptr<Sharder> sharder = sharder_registry().create(spec, ctx);
  EMBSHARD_CHECK(!sharder->uses_cost_model() || cost != nullptr, "sharder '", spec,
                 "' needs a cost model (--cost sim)");
  const double start_ms = now_ms();
  const std::vector<std::size_t> copies = one_device_copies(task);
  ShardResult result = copies.empty() ? run(*sharder, task) : run(*sharder, offering_table_wise(task, copies));
  if (result.status == ShardStatus::kOk) name_copies(task, copies, result.plan);
  Provenance& p = result.plan.provenance;
  p.sharder = canonical_sharder_spec(spec);
  p.cost_model = sharder->uses_cost_model() ? cost->spec() : "";
  p.task_id = task.id;
  p.embshard_version = embshard_version();
  p.seed = ctx.seed;
  p.wall_ms = now_ms() - start_ms;
  p.created_utc = utc_timestamp();
  for (const TableSpec& t : task.workload.tables)
    if (t.has_derived_stats()) p.derived_stats_tables.push_back(t.name);
  if (result.status == ShardStatus::kOk) {
    // A sharder that cannot express a table's constraints says so as infeasible, naming the table.
    if (std::string violation = find_table_constraint_violation(task, result.plan); !violation.empty()) {
      result.status = ShardStatus::kInfeasible;
      result.reason = "sharder '" + short_sharder_spec(spec) + "' cannot honour the table constraints: " + violation;
      return result;
    }
    if (std::string violation = find_placement_group_violation(task, result.plan); !violation.empty()) {
      result.status = ShardStatus::kInfeasible;
      result.reason = "sharder '" + short_sharder_spec(spec) + "' does not keep the placement groups: " + violation;
      return result;
    }
    const std::string problem = find_error_in_plan(task, result.plan);
    if (!problem.empty()) {
      throw InternalError(detail::concat("sharder '", p.sharder, "' returned an invalid plan: ", problem));
    }
  }
  return result;
}

}  // namespace

ShardResult plan_task(const std::string& spec, const Task& task, CostModel* cost, const Context& ctx) {
  return run_sharder(spec, task, cost, ctx, [&](const Sharder& s, const Task& t) { return s.shard(t, cost, ctx); });
}

ShardResult plan_task_from(const std::string& spec, const Task& task, CostModel* cost, const PlanOrigin& origin,
                           const Context& ctx) {
  EMBSHARD_CHECK(origin.start && origin.old, "plan_task_from: a start plan and the old plan are both needed");
  const std::string problem = find_error_in_plan(task, *origin.start);
  EMBSHARD_CHECK(problem.empty(), "plan_task_from: the start plan is not a valid plan of the task: ", problem);
  return run_sharder(spec, task, cost, ctx,
                     [&](const Sharder& s, const Task& t) { return s.shard_from(t, cost, origin, ctx); });
}

}  // namespace embshard
