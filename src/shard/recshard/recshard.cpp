// RecShard's sharder: Task → MILP (milp/recshard_milp.h) → table-wise plan with HBM rows
// (recshard.h documents the mapping and the outcomes).
#include "shard/recshard/recshard.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/milp/cbc_solver.h"
#include "shard/builtin_sharders.h"

namespace embshard::detail {

RecShardInput recshard_input_of(const Task& task) {
  RecShardInput input;
  for (const TableSpec& spec : task.workload.tables) {
    const TableStats& s = spec.stats;
    RecShardTable t;
    t.name = spec.name;
    t.rows = s.num_rows;
    t.dim = spec.dim;
    t.bytes_per_element = bytes_per_element(spec.dtype);
    t.state_bytes_per_row = spec.shard_bytes(1, spec.dim) - spec.dim * t.bytes_per_element;
    t.coverage = s.coverage;
    t.pooling = s.coverage > 0 ? s.pooling_factor / s.coverage : 0.0;
    const bool has_lookups = s.num_indices > 0 && s.pooling_factor > 0;
    if (!has_lookups) {
      t.icdf.assign(static_cast<std::size_t>(kNumIcdfSteps) + 1, 0.0);
    } else {
      EMBSHARD_CHECK(s.icdf.size() == static_cast<std::size_t>(kNumIcdfSteps), "recshard: table '", spec.name,
                     "' has lookups but its statistics carry no ICDF (", s.icdf.size(), " of ", kNumIcdfSteps,
                     " steps); RecShard needs each table's inverse value-frequency CDF "
                     "(embshard stats computes it from index data)");
      t.icdf.push_back(0.0);
      for (double rows : s.icdf) t.icdf.push_back(rows / static_cast<double>(s.num_rows));
    }
    input.tables.push_back(std::move(t));
  }
  const std::vector<Device>& devices = task.topology.devices;
  bool any_host = false;
  for (const Device& d : devices) any_host = any_host || (task.constraints.allow_uvm && d.uvm_bytes > 0);
  if (!any_host) {  // the rows no access needs must then be in HBM too: step K holds every row
    for (RecShardTable& t : input.tables) t.icdf.back() = 1.0;
  }
  EMBSHARD_CHECK(!devices.empty(), "recshard: the topology has no devices");
  for (std::size_t m = 0; m < devices.size(); ++m) {
    const Device& d = devices[m];
    EMBSHARD_CHECK(d.hbm_gbps == devices[0].hbm_gbps && d.uvm_gbps == devices[0].uvm_gbps, "recshard: device ", m,
                   " has bandwidths HBM ", d.hbm_gbps, " / UVM ", d.uvm_gbps, " GB/s, device 0 ", devices[0].hbm_gbps,
                   " / ", devices[0].uvm_gbps, "; the MILP takes one bandwidth per memory tier");
    input.gpus.push_back({d.hbm_bytes, task.constraints.allow_uvm ? d.uvm_bytes : 0});
  }
  input.hbm_bytes_per_s = devices[0].hbm_gbps * 1e9;
  input.uvm_bytes_per_s = devices[0].uvm_gbps * 1e9;
  input.batch_size = task.workload.batch_size;
  return input;
}

std::string find_table_that_fits_nowhere(const RecShardInput& input) {
  std::int64_t largest = 0;
  for (const RecShardGpu& g : input.gpus) largest = std::max(largest, g.hbm_bytes + g.host_bytes);
  for (const RecShardTable& t : input.tables) {
    const std::int64_t row_bytes =  // weights and optimizer state, as the MILP counts them
        static_cast<std::int64_t>(t.dim) * t.bytes_per_element + t.state_bytes_per_row;
    const std::int64_t bytes = t.rows * row_bytes;
    bool fits = false;
    for (const RecShardGpu& g : input.gpus) {
      for (int i = 0; i < static_cast<int>(t.icdf.size()) && !fits; ++i) {
        const std::int64_t hbm = recshard_hbm_rows(t, i) * row_bytes;
        fits = hbm <= g.hbm_bytes && bytes - hbm <= g.host_bytes;
      }
      if (fits) break;
    }
    if (!fits) {
      return concat("table '", t.name, "' (", bytes,
                    " bytes) fits on no device even using host "
                    "memory: the largest HBM + host memory of a device is ",
                    largest, " bytes",
                    bytes <= largest ? " (its rows that no access needs must go to host memory, "
                                       "which is too small)"
                                     : "");
    }
  }
  return "";
}

Plan recshard_plan_of(const Task& task, const RecShardInput& input, const RecShardSolution& solution) {
  std::vector<int> devices;
  for (const RecShardTablePlacement& p : solution.tables) devices.push_back(p.gpu);
  Plan plan = table_wise_plan(task, devices);
  for (std::size_t j = 0; j < plan.tables.size(); ++j) {
    const std::int64_t hbm = solution.tables[j].hbm_rows;
    plan.tables[j].shards.at(0).hbm_rows = hbm >= input.tables[j].rows ? -1 : hbm;
  }
  return plan;
}

std::vector<RecShardChoice> recshard_choices_of(const Task& task, const RecShardInput& input, const Plan& plan) {
  EMBSHARD_CHECK(plan.tables.size() == task.workload.tables.size(), "recshard: the plan has ", plan.tables.size(),
                 " tables, the task ", task.workload.tables.size());
  std::vector<RecShardChoice> choices;
  for (std::size_t j = 0; j < plan.tables.size(); ++j) {
    const TablePlacement& tp = plan.tables[j];
    EMBSHARD_CHECK(tp.table == task.workload.tables[j].name && tp.shards.size() == 1, "recshard: table ", j,
                   " of the plan ('", tp.table, "') is not the task's table in one table-wise shard");
    const RecShardTable& t = input.tables[j];
    const std::int64_t hbm = tp.shards[0].rows_in_hbm();
    const int steps = static_cast<int>(t.icdf.size()) - 1;
    int step = steps;
    for (int i = 0; i <= steps; ++i) {
      if (recshard_hbm_rows(t, i) >= hbm) {
        step = i;
        break;
      }
    }
    // Among steps with the same HBM rows the largest share of accesses is the one that holds.
    while (step < steps && recshard_hbm_rows(t, step + 1) == recshard_hbm_rows(t, step)) ++step;
    choices.push_back({tp.shards[0].device, step});
  }
  return choices;
}

namespace {

RecShardSymmetry parse_symmetry(const std::string& name) {
  if (name == "none") return RecShardSymmetry::kNone;
  if (name == "table_index") return RecShardSymmetry::kTableIndex;
  return RecShardSymmetry::kOrderedLoads;
}

std::string solver_line(const RecShardResult& r) {
  const MilpResult& m = r.milp;
  char line[320];
  std::snprintf(line, sizeof line,
                "milp %s, objective %.4g ms, bound %.4g ms, gap %.3g%%, %.1f s, %lld nodes, "
                "%d variables, %d constraints, warm start %s",
                to_string(m.status), m.objective, m.best_bound,
                std::isfinite(m.relative_gap) ? 100.0 * m.relative_gap : INFINITY, m.wall_seconds,
                static_cast<long long>(m.nodes), r.num_variables, r.num_constraints,
                m.warm_start.empty() ? "none" : m.warm_start.c_str());
  std::string text = line;
  if (!m.message.empty()) text += " (" + m.message + ")";
  return text;
}

/** Memory of one MILP variable: itself, its name and its share of the rows' terms (about four). */
constexpr double kBytesPerVariable = 160.0;

class RecShardSharder final : public Sharder {
 public:
  RecShardSharder(double time_limit_s, RecShardOptions options, double gap)
      : time_limit_s_(time_limit_s), options_(options), gap_(gap) {}

  [[nodiscard]] ShardResult shard(const Task& task, CostModel*, const Context& ctx) const override {
    ShardResult result;
    const RecShardInput input = recshard_input_of(task);
    if (std::string nowhere = find_table_that_fits_nowhere(input); !nowhere.empty()) {
      result.status = ShardStatus::kInfeasible;
      result.reason = "recshard: " + nowhere + (task.constraints.allow_uvm ? "" : " (the task does not allow UVM)");
      return result;
    }
    // time_limit_s covers building the model too (it grows with tables × GPUs), the context's
    // deadline when sooner.
    const auto start = std::chrono::steady_clock::now();
    auto deadline = start + std::chrono::microseconds(static_cast<std::int64_t>(time_limit_s_ * 1e6));
    const bool deadline_binds = ctx.deadline && *ctx.deadline < deadline;
    if (deadline_binds) deadline = *ctx.deadline;
    const double variables = recshard_milp_variables(input);
    result.reason =
        find_memory_shortfall(static_cast<std::uint64_t>(variables * kBytesPerVariable),
                              concat("recshard: its MILP of about ", variables, " variables (3 per table and GPU)"));
    if (!result.reason.empty()) {  // too big to plan in this machine's memory: a status naming the estimate
      result.status = ShardStatus::kInfeasible;
      return result;
    }
    CbcOptions cbc;
    cbc.relative_gap = gap_;
    cbc.time_limit_s = time_limit_s_;  // less what the build took (solve_recshard)
    const RecShardResult solved = solve_recshard(input, options_, cbc, deadline);
    if (!solved.built) {
      result.status = ShardStatus::kTimeLimit;
      result.reason =
          concat("recshard: its MILP (about ", static_cast<std::int64_t>(variables),
                 " variables: 3 per table and GPU) was not built within ",
                 deadline_binds ? "the context's deadline" : concat("time_limit_s = ", time_limit_s_, " s"),
                 solved.warm_start ? "; the plan is its greedy warm start" : "; its greedy warm start placed no plan");
      if (solved.warm_start) result.plan = recshard_plan_of(task, input, *solved.warm_start);
      return result;
    }
    result.stats.solver = solver_line(solved);
    result.stats.solver_gap = solved.milp.relative_gap;
    result.stats.nodes_visited = solved.milp.nodes;
    switch (solved.milp.status) {
      case MilpStatus::kOptimal:
      case MilpStatus::kFeasible: {
        EMBSHARD_ASSERT(solved.solution.has_value());
        EMBSHARD_ASSERT(solved.solution->capacity_error.empty());
        result.plan = recshard_plan_of(task, input, *solved.solution);
        result.stats.plans_evaluated = 1;
        if (solved.milp.status == MilpStatus::kFeasible && deadline_binds) {
          result.status = ShardStatus::kTimeLimit;
          result.reason = "recshard: the context's deadline stopped the MILP: " + result.stats.solver;
        }
        return result;
      }
      case MilpStatus::kInfeasible:
        result.status = ShardStatus::kInfeasible;
        result.reason = concat(
            "recshard: every table fits some device, but no placement fits "
            "them all together (",
            task.workload.tables.size(), " tables, ", task.topology.num_devices(), " devices): ", result.stats.solver);
        return result;
      case MilpStatus::kNoSolution:
        result.status = ShardStatus::kTimeLimit;
        result.reason =
            "recshard: no placement found within the time limit (the greedy warm "
            "start failed too): " +
            result.stats.solver;
        return result;
      case MilpStatus::kUnbounded:
      case MilpStatus::kError: break;
    }
    EMBSHARD_THROW("recshard: the solver failed: ", result.stats.solver);
  }

 private:
  double time_limit_s_;
  RecShardOptions options_;
  double gap_;
};

}  // namespace

void register_recshard(Registry<Sharder>& registry) {
  registry.add({"recshard",
                "RecShard's MILP (paper 004 §4.2) solved with CBC: each table whole on one device, its "
                "hottest rows in HBM and the rest in host memory via UVM, minimising the largest device cost",
                {{"time_limit_s",
                  ParamType::kFloat,
                  "60",
                  0.001,
                  1e6,
                  {},
                  "CBC's wall-clock limit, seconds (the context deadline wins if sooner)"},
                 {"symmetry",
                  ParamType::kString,
                  "ordered_loads",
                  {},
                  {},
                  {"ordered_loads", "table_index", "none"},
                  "symmetry-breaking rows between identical devices"},
                 {"warm_start", ParamType::kString, "on", {}, {}, {"on", "off"}, "start CBC from the greedy placement"},
                 {"gap",
                  ParamType::kFloat,
                  "0.0001",
                  0.0,
                  1.0,
                  {},
                  "relative gap at which CBC stops and calls the solution optimal"}}},
               [](const Params& p, const Context&) {
                 RecShardOptions options;
                 options.symmetry = parse_symmetry(p.get_string("symmetry"));
                 options.warm_start = p.get_string("warm_start") == "on";
                 return std::make_unique<RecShardSharder>(p.get_float("time_limit_s"), options, p.get_float("gap"));
               });
}

}  // namespace embshard::detail
