#pragma once
/**
 * @file sharder.h
 * @brief `Sharder`: an algorithm that turns a task into a plan, built from a spec string.
 *
 * `make_sharder("greedy:balance=lookup")` finds the algorithm in the registry (an unknown name or
 * key fails and lists what exists); `plan_task` runs it and stamps the plan's provenance with the
 * canonical spec (which round-trips: `make_sharder(result.plan.provenance.sharder)` builds the
 * same sharder), the cost model's spec, the task id, the library version, the seed of the
 * context, the planning wall time and the UTC time.
 *
 * Outcomes that are expected are statuses, not exceptions:
 *   kOk          the plan is valid for the task (checked)
 *   kInfeasible  no plan this sharder can build fits; `reason` names the table and the devices
 *   kTimeLimit   the context's deadline passed; `plan` is the best found so far (may be empty)
 *
 * Members (one folder each under src/shard/): `random`, `greedy` (the papers' baselines),
 * `exhaustive` (every table-wise plan of a tiny task, under a cost model: the exact reference),
 * `torchrec` (TorchRec's planner: its enumerator, perf / storage estimators, proposers and
 * partitioners, with its own cost formulas), `neuroshard` (NeuroShard's column-split beam search
 * around a greedy grid search, under the cost model it is given), `dreamshard` and `autoshard`
 * (trained RL policies run greedily: policy/dreamshard_policy.h, policy/autoshard_policy.h), `recshard` (RecShard's
 * MILP with CBC: every table whole on one device, its hottest rows in HBM and the rest in UVM; `greedy` with
 * on_full=uvm gives its baselines), `joint` (embshard's own planner and the default: every table's layout — whole,
 * rows, columns, HBM/UVM split — chosen with the device of every piece by local search on the cost model's exact
 * objective; src/shard/joint/joint.h).
 */
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "embshard/core/context.h"
#include "embshard/core/registry.h"
#include "embshard/cost/cost_model.h"
#include "embshard/cost/link_model.h"
#include "embshard/plan/plan.h"

namespace embshard {

enum class ShardStatus { kOk, kInfeasible, kTimeLimit };
[[nodiscard]] const char* to_string(ShardStatus status);

struct ShardStats {
  std::int64_t plans_evaluated = 0;  ///< complete plans the cost model was asked about
  std::int64_t nodes_visited = 0;    ///< search nodes (partial plans) expanded
  std::int64_t cache_queries = 0;    ///< cost-cache look-ups (sharders with a cache; else 0)
  std::int64_t cache_hits = 0;       ///< of those, answered without the cost model
  /// Sharders that call a solver (recshard): its status, objective, bound, gap and time; else "".
  std::string solver;
  double solver_gap = -1.0;  ///< the solver's relative gap (+inf without a solution); -1: none
};

struct ShardResult {
  Plan plan;
  ShardStatus status = ShardStatus::kOk;
  std::string reason;  ///< why, when not ok
  ShardStats stats;
  /// The cost model's lower bound on `bound_objective`, where the sharder computed it for its gap
  /// (joint): callers use it instead of computing it again (it is costly at scale).
  std::optional<double> lower_bound;
  Objective bound_objective = Objective::kStep;
};

/**
 * Where a re-plan starts and what moving data costs it (eval/replan.h): `start` is a valid plan of
 * the task to search from, `old` the plan that runs today (devices keep their ranks; its tables are
 * matched by name and shape), and every byte a piece holds that its device did not hold in `old`
 * adds `ms_per_moved_byte` to the objective the search minimises (a Lagrangian price: 0 searches
 * from `start` for the step alone), and no plan moving more than `max_moved_bytes` is taken (a cap; a
 * `start` that moves more is infeasible). Only sharders that search from a plan take it (joint).
 */
struct PlanOrigin {
  const Plan* start = nullptr;
  const Plan* old = nullptr;
  double ms_per_moved_byte = 0.0;
  /// No plan moving more than this many bytes is taken (a cap, beside or instead of the price)
  double max_moved_bytes = std::numeric_limits<double>::infinity();
  /// Before searching, up to this many bytes (within what `max_moved_bytes` leaves after `start`'s
  /// own moves) of the whole tables of the devices above the mean load are taken out of `start`
  /// and placed again as a plan from scratch places them, those with the most load per byte first
  /// (0: none; ignored under joint's `keep_layouts`; joint.h "Re-planning"): a ruin and
  /// re-creation that lets the search leave `start`'s basin. `start` stays a candidate, so the
  /// search still never ends worse than it by its objective (the step plus the moved bytes' price)
  double rebuild_bytes = 0.0;
  /// The rebuild also takes tables in several pieces (any layout but whole), each piece counted on
  /// its device
  bool rebuild_split_tables = false;
  /// Searching one sharding group's task for a 2D plan (eval/replan.h): every device's replica sync,
  /// which the search then sees as joint's 2D layouts do; none for a 1D plan
  ReplicaSyncCost replica_sync{};
};

class Sharder {
 public:
  virtual ~Sharder() = default;
  /** Whether `shard` needs a cost model (others ignore it and accept nullptr). */
  [[nodiscard]] virtual bool uses_cost_model() const { return false; }
  /** The plan for `task`; provenance is filled by `plan_task`. */
  [[nodiscard]] virtual ShardResult shard(const Task& task, CostModel* cost, const Context& ctx) const = 0;
  /** The plan for `task` searched from `origin` (PlanOrigin); Error for sharders that cannot. */
  [[nodiscard]] virtual ShardResult shard_from(const Task& task, CostModel* cost, const PlanOrigin& origin,
                                               const Context& ctx) const;
};

/** Every built-in sharder with its parameters. */
[[nodiscard]] const Registry<Sharder>& sharder_registry();

/** The canonical form of a sharder spec (all parameters); throws Error for unknown ones. */
[[nodiscard]] std::string canonical_sharder_spec(const std::string& spec);

/** The spec with only its non-default parameters, for people to read (`Registry::short_spec`). */
[[nodiscard]] std::string short_sharder_spec(const std::string& spec);

/**
 * `spec` as a plan for TorchRec's training path needs it, where the spec does not say otherwise:
 * `joint` gets torchrec=true (only the layouts TorchRec runs) and groups=`groups` ("none": 1D, what
 * DistributedModelParallel takes; "auto" or G: DMPCollection's 2D). With `memory_is_net` (the
 * task's memory is already net of TorchRec's reservation, as EmbshardPlanner makes it) the
 * `torchrec` sharder holds nothing back again (storage_reservation=0, reservation=fixed_percentage).
 * Other specs are returned unchanged. The CLI's `plan --format torchrec` and Python's planner use it.
 */
[[nodiscard]] std::string torchrec_runnable_spec(const std::string& spec, const std::string& groups,
                                                 bool memory_is_net);

/** Builds a sharder from its spec; throws Error listing names or keys. */
[[nodiscard]] std::unique_ptr<Sharder> make_sharder(const std::string& spec);

/**
 * Checks the task, runs the sharder named by `spec` (with `cost` when it uses one; Error if it
 * needs one and none is given), checks an ok plan against the task (a failure is a bug) and fills
 * the provenance (file comment).
 */
[[nodiscard]] ShardResult plan_task(const std::string& spec, const Task& task, CostModel* cost, const Context& ctx);

/** `plan_task` searching from `origin` (PlanOrigin; `Sharder::shard_from`), checked and stamped alike. */
[[nodiscard]] ShardResult plan_task_from(const std::string& spec, const Task& task, CostModel* cost,
                                         const PlanOrigin& origin, const Context& ctx);

}  // namespace embshard
