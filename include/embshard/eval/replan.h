#pragma once
/**
 * @file replan.h
 * @brief Re-planning with little movement (`embshard replan`): the best plan for a changed task
 *        (new statistics, tables added or removed, another world size) among those that move at
 *        most a given number of bytes from the plan that runs today, with the trade-off curve.
 *
 * Movement. Devices keep their ranks across the change (rank r before is rank r after; added
 * ranks come last, as a job that grows does). A plan moves, for every shard, the bytes of its
 * region (rows × columns, weights and optimizer state: `TableSpec::shard_bytes`) that its device
 * did not hold in the old plan; each moved region is sent by the old devices that held it. A table
 * the old plan does not have with the same shape (added, or its rows or dim changed) is created,
 * not moved: its bytes count as `created`, never as moved. Where a row or column piece is
 * re-cut, only the part not already on its device travels.
 *
 * The search, between two plans:
 *   kept      every table the old plan has, with the same shape and every shard on a device that
 *             still exists, stays as it was; the others take the target's layout. It moves only
 *             what the change forces.
 *   target    the sharder's plan of the new task from scratch (default `joint:groups=none`), its
 *             devices relabelled to keep the most bytes in place: each host pair's best device
 *             matching, then hosts matched by what those keep, each a maximum-weight assignment
 *             (Hungarian algorithm) of the bytes already there (beyond 128 hosts, hosts by the
 *             bytes between them), unless the labels as they are keep more. On devices of one kind
 *             a relabelling leaves the step as it was (the link model is symmetric in hosts and in
 *             a host's devices), so this costs nothing. On mixed hardware hosts swap labels only
 *             with hosts of their own kind (the same devices and links); where a host holds
 *             devices of several kinds, no label changes.
 * From the kept plan, tables switch to their target layout one at a time, in the order of their
 * step gain alone per byte they move (the largest gains per byte first, free switches first of
 * all); each prefix is a point of the curve (bytes moved, step), kept where it fits memory. The
 * last point is the target itself. Then joint searches from the kept plan with every moved byte
 * priced (`plan_task_from`, shard/sharder.h `PlanOrigin`; the options' sharder when it is joint,
 * else joint): at fixed prices, then bisected between the two that straddle the budget, and once
 * more at the highest price that moved too much, held to the budget (PlanOrigin::max_moved_bytes:
 * it stops taking moves where the budget ends), then twice more so, each from the kept plan with
 * the overloaded devices' densest tables placed again first (PlanOrigin::rebuild_bytes: whole
 * tables, then split ones too; not under `reshard`). A search that moved just too much is not lost:
 * the one that moved least beyond the budget, where it is faster than every plan within it, is
 * walked back like the target, table by table from the kept plan, and its prefixes are points
 * too (while no point is within the budget, the next nearest as well). The answer is the fastest
 * point within `max_move_bytes`: the fastest plan found, not proven the fastest there is, so
 * another budget, which searches at other prices, may find a faster one even when it is smaller.
 *
 * 2D plans (plan/sharding_groups.h, TorchRec's DMPCollection). A 2D plan's shard of rank r is on
 * every replica of r, so moving it moves it once per replica, each from a device that held it;
 * `plan_movement` counts every device's bytes that way (an old plan's replicas are those of the
 * world it records, `ShardingGroups::world`, else of the task's). A 2D old plan is re-planned in
 * its own layout, with its ranks keeping their devices: at the same world the same groups; at
 * another world, strided groups (device r·R + g) keep their replicas R and take N / R ranks each,
 * contiguous ones (device g·G + r) keep their size G and add or drop replicas — either way old
 * ranks keep their devices and added ones come last; an added replica receives every table. The
 * whole search above then runs on one group's task (`sharding_group_task`) from the old plan's
 * group, every point judged as the 2D plan of the whole task (the replica sync included, which
 * the priced searches also see: `PlanOrigin::replica_sync`) and its movement counted on every
 * replica (`plan_movement`, each moved region sent from the same replica where it had one);
 * joint's cap per group is the budget less what the added replicas receive, over the replicas
 * that remain. The from-scratch plan is joint's own 2D plan at the layout's group size
 * (`groups=G`, searched with the sync) where the sharder is joint and it takes the layout's ranks, else the sharder's
 * plan of one group's task without data-parallel tables.
 * A 2D old plan is also re-planned in 1D (`ReplanOptions::layout`; by default both, and the
 * faster chosen plan wins, the layout kept on a tie; where the layout cannot be kept, or the
 * budget does not cover what its added replicas receive, 1D alone): the whole search above on the
 * whole task, from the 1D plan that keeps each table on one of its replicas that the task still
 * has (each table on the replica keeping the fewest bytes so far, largest tables first), which
 * moves nothing; joint's price counts every replica's copy as held by its device, so a piece
 * placed where another replica holds it moves nothing either. Under `best` the verdict says what
 * the other layout found. Another group size is not searched.
 */
#include <limits>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/data/task.h"
#include "embshard/eval/evaluator.h"
#include "embshard/plan/plan.h"

namespace embshard {

/** What a plan moves from an old plan (file comment). */
struct Movement {
  double moved_bytes = 0;              ///< bytes that travel between devices
  double created_bytes = 0;            ///< bytes of tables the old plan did not hold
  double kept_bytes = 0;               ///< bytes already on their device
  std::vector<double> sent, received;  ///< per device (max of the old and new device counts)
};

/**
 * The movement of `plan` (for `task`) from `old_plan` (file comment; either may be 2D). Table
 * shapes of the old plan are read off its shards. Error when the old plan shares no table with
 * the task (a plan of another task) or a 2D layout does not suit the task.
 */
[[nodiscard]] Movement plan_movement(const Task& task, const Plan& plan, const Plan& old_plan);

/**
 * Why TorchRec's `DistributedModelParallel.reshard` cannot move a running job from `old_plan` to
 * `plan`, or "" when it can: it moves shards between the ranks of the job's world and nothing
 * else, so every table of `plan` must be in `old_plan` with the same sharding type and the same
 * shards (rows, columns, rows in HBM), table-wise and column-wise ones on other ranks of the old
 * plan if need be, every other type's on its own ranks (python: embshard.torchrec.reshard_delta
 * builds TorchRec's argument). The reason names the first table that differs.
 */
[[nodiscard]] std::string torchrec_reshard_problem(const Plan& old_plan, const Plan& plan);

/** Where a 2D old plan is re-planned (file comment, "2D plans"); a 1D one is re-planned in 1D. */
enum class ReplanLayout {
  kBest,  ///< in its own layout and in 1D: the faster chosen plan (the layout kept on a tie)
  kKept,  ///< in its own layout only (a job that stays on DMPCollection)
  k1D,    ///< in 1D only (a job moving to DistributedModelParallel)
};
[[nodiscard]] std::string to_string(ReplanLayout layout);
/** "best", "kept" or "1d"; Error naming `what` otherwise. */
[[nodiscard]] ReplanLayout parse_replan_layout(const std::string& text, const std::string& what);

struct ReplanOptions {
  /// the from-scratch plan (1D; from a 2D old plan in its layout, joint runs at the kept layout's
  /// group size and another sharder plans one group's task; in 1D, joint with groups=none or the
  /// sharder plans the whole task)
  std::string sharder = "joint:groups=none";
  std::string cost = "default";
  std::string judge = kSimJudge;  ///< the judge spec of every point's step (eval/evaluator.h)
  double max_move_bytes = std::numeric_limits<double>::infinity();
  /// Only plans TorchRec's reshard can run (`torchrec_reshard_problem`): the task keeps the old
  /// plan's ranks, the curve switches only the tables whose target keeps their shards, and the
  /// chosen plan is the fastest such point within the budget
  bool reshard = false;
  ReplanLayout layout = ReplanLayout::kBest;  ///< of a 2D old plan
};

struct ReplanPoint {
  double moved_bytes = 0;
  double moved_share = 0;  ///< of the task's table bytes (Workload::total_bytes)
  double step_ms = 0;
  int tables_switched = 0;  ///< a point of the curve: tables on their target layout; −1 for a search
  double price = -1;        ///< a search from the kept plan: its price of movement (× the kept step per
                            ///< table bytes moved); −1 for a point of the curve
  /// a search from the kept plan rebuilt first (PlanOrigin::rebuild_bytes): "whole" (whole tables
  /// placed again) or "split" (tables in pieces too); "" otherwise
  std::string rebuilt;
};

struct ReplanResult {
  Plan plan;  ///< the fastest point moving at most max_move_bytes
  ReplanPoint chosen;
  Movement movement;               ///< of `plan`
  ReplanPoint kept, target;        ///< the curve's ends
  double scratch_moved_bytes = 0;  ///< the from-scratch plan before relabelling
  std::vector<ReplanPoint> curve;  ///< the valid points, by bytes moved
  std::string verdict;             ///< one line
  bool kept_fits = false;          ///< whether the kept plan fits the new task (else `kept` is not a plan)
  // What the run was, for reports (report/replan_report.h):
  std::string task_id;
  std::string sharder;  ///< the from-scratch plan's sharder, canonical
  std::string judge;    ///< the judge of every point's step, canonical
  double max_move_bytes = std::numeric_limits<double>::infinity();
  double table_bytes = 0;  ///< the task's table bytes (the budget's share is of them)
  bool reshard = false;    ///< the chosen plan is one TorchRec's reshard can run (ReplanOptions::reshard)
};

/**
 * Re-plans `task` from `old_plan` (file comment; `options.reshard`: only plans TorchRec's reshard
 * can run, docs/what_if.md). Error naming the cause when the old plan is of another task, a 2D
 * one is given with `reshard` or cannot keep its ranks' devices under `ReplanLayout::kKept`, the
 * sharder finds no plan of the new task, or no point of the curve moves at most
 * `max_move_bytes` (the message gives the least any valid point moves; of a 2D plan under `best`,
 * each layout's reason, or one where both share it).
 */
[[nodiscard]] ReplanResult replan(const Task& task, const Plan& old_plan, const ReplanOptions& options,
                                  const Context& ctx);

/** The result as JSON (Python's `embshard.replan`): chosen, kept and target points, the curve,
 *  per-device sent and received bytes, created bytes and the verdict (the plan is not in it). */
[[nodiscard]] std::string replan_json(const ReplanResult& result);

/** The curve as CSV: moved_bytes,moved_share,step_ms,tables_switched,price,chosen,rebuilt. */
[[nodiscard]] std::string replan_curve_csv(const ReplanResult& result);

}  // namespace embshard
