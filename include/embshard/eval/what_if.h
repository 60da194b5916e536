#pragma once
/**
 * @file what_if.h
 * @brief Planning a changed task: the fewest devices that meet a step target (capacity planning,
 *        `embshard size`), and for a task that does not fit, what conflicts and the smallest
 *        changes that make it fit (`embshard fit`).
 *
 * Every answer is verified by planning: each changed task is planned by the sharder and judged as
 * `compare` does (eval/compare.h), so "N devices meet 5 ms" means the sharder's plan on N devices
 * was judged at or under 5 ms, and "+1.25 GiB per device fits" means the sharder planned it.
 *
 * Capacity. The device counts a topology comes in (data/topology.h `device_counts`: 1 to a host,
 * then whole hosts; on mixed hardware, whole hosts of its last device's kind added to or taken
 * from the others) between a minimum and a maximum, with the global batch and the memory per
 * device kept. Up to 16 counts are all planned; beyond, a geometric grid (each count about twice
 * the last, plus both ends). With a target, the counts between the last grid count that misses
 * it and the first that meets it are bisected, so the answer's next smaller count is planned and
 * misses. The curve need not fall monotonically (more devices, more exchange): the answer is the
 * fewest count found to meet the target, every smaller grid count having missed it. Where the
 * judge is `sim`, each point carries the model's lower bound, and a target below every tried
 * count's bound is reported as one no plan at those counts can meet.
 *
 * Fit. The conflicts are read off the task before any planning: the tables' bytes against the
 * devices' memory (HBM, and UVM where allowed), and each table whose smallest piece under its
 * constraints exceeds every device; then the sharder's own reason. The changes tried, each the
 * smallest of its kind that the sharder plans:
 *   memory        HBM per device, in steps of 1/16 GiB (bisected; the step below is planned and fails);
 *                 every device the same, on a mix of several sizes from the largest up
 *   devices       the next device counts (doubling, then bisected; the count below fails); on a mix,
 *                 hosts of its last kind
 *   uvm           UVM allowed for the k largest tables that do not allow it (k bisected)
 *   row_split / column_split   the task-wide switch, where it is off
 *   table_types   any sharding type (and no min_partition) for the k largest constrained tables
 * Minimality assumes that a larger change of one kind never makes the sharder fail where a
 * smaller one planned; the next smaller change is always planned and shown failing. Ranking:
 * relaxed constraints first (they add no hardware), by the step of their plan; then hardware, by
 * the share it adds to today's (memory: added HBM / today's total; devices: added / devices),
 * then step.
 *
 * Explain (`embshard plan --explain`). For a plan that fits, per table, what the best single change
 * of that table alone would cost: a plan no single move improves shows every delta ≥ 0, and the
 * smallest delta says how firmly the table sits where it is (near 0: another place is as good).
 */
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/cost/cost_model.h"
#include "embshard/data/task.h"
#include "embshard/eval/compare.h"

namespace embshard {

/** How a changed task is planned and judged. */
struct WhatIfOptions {
  std::string sharder = "joint";  ///< the sharder spec every changed task is planned with
  std::string cost = "default";   ///< its cost model (eval/cost_model_registry.h)
  std::string judge = kSimJudge;  ///< the judge spec of every plan (eval/evaluator.h)
};

/** One device count planned. */
struct CapacityPoint {
  int devices = 0;
  int hosts = 0;
  CompareRow run;       ///< status, the judged step, planning time
  double bound_ms = 0;  ///< the judge's lower bound on the step at this count; 0 when it has none
  [[nodiscard]] bool meets(double target_ms) const { return run.ok() && run.eval.step_ms <= target_ms; }
};

struct CapacityCurve {
  std::string task_id;
  std::string sharder;   ///< canonical spec
  std::string judge;     ///< canonical judge spec
  double target_ms = 0;  ///< 0: no target (the curve alone)
  int min_devices = 0, max_devices = 0;
  std::vector<CapacityPoint> points;  ///< ascending devices
  int fewest = 0;                     ///< fewest devices found to meet the target; 0 when none
  std::string verdict;                ///< one line: the answer and its evidence, or why there is none
};

/**
 * The step at every device count in [min_devices, max_devices] of `task`'s hardware (file
 * comment), and with `target_ms` > 0 the fewest that meet it. Error naming the range when it
 * holds no count the topology comes in.
 */
[[nodiscard]] CapacityCurve plan_capacity(const Task& task, int min_devices, int max_devices, double target_ms,
                                          const WhatIfOptions& options, const Context& ctx);

/** The curve as CSV: devices,hosts,status,step_ms,lower_bound_ms,plan_ms,meets,reason. */
[[nodiscard]] std::string capacity_csv(const CapacityCurve& curve);

/** One change that makes a task fit, verified. */
struct FitChange {
  std::string kind;          ///< memory | devices | uvm | row_split | column_split | table_types
  std::string description;   ///< one line, for people
  double added_share = 0;    ///< hardware added, as a share of today's; 0 for a relaxed constraint
  Task task;                 ///< the changed task
  CompareRow run;            ///< its plan, judged (status ok)
  std::string next_smaller;  ///< the next smaller change of this kind and why it fails; "" if none is smaller
};

struct FitAdvice {
  CompareRow run;                        ///< the task as it is, planned
  std::vector<std::string> conflicts;    ///< what makes it not fit (file comment); empty when it fits
  std::vector<FitChange> changes;        ///< ranked (file comment); empty when it fits
  std::vector<std::string> not_helping;  ///< kinds tried that did not fit within their limits, and why
};

/** Why `task` does not fit and the smallest changes that make it fit (file comment). */
[[nodiscard]] FitAdvice advise_fit(const Task& task, const WhatIfOptions& options, const Context& ctx);

/** The structural conflicts of `task` (file comment), without planning. */
[[nodiscard]] std::vector<std::string> memory_conflicts(const Task& task);

/** Why one table of a plan is where it is: the next-best placement and what it would cost. */
struct TableExplanation {
  std::string table;
  std::string placement;          ///< "row_wise on devices 0-3", "table_wise on device 2"
  std::string next_best;          ///< "table_wise on device 1", or "" when no other placement fits
  double next_best_delta_ms = 0;  ///< its step minus the plan's (≥ 0 for a plan no single move improves)
};

/**
 * Per table of `plan` (file comment of what_if.h, "Explain"): its placement and the best of the
 * alternatives tried — the table whole on each other device, or split row-wise evenly over every
 * device when it is whole — each a valid plan judged by `judge` with every other table kept.
 * Devices tried per table: all up to 16, else the 8 least loaded and its own; tables explained:
 * all up to `most_tables`, else that many with the most lookups × dim (the rest are left out).
 * A 2D plan is explained in its sharding group (its devices are the group's ranks, every replica
 * changing alike), `judge` built for the group's task (plan/sharding_groups.h).
 */
[[nodiscard]] std::vector<TableExplanation> explain_plan(const Task& task, const Plan& plan, CostModel& judge,
                                                         const Context& ctx, std::size_t most_tables = 200);

/** Both results as JSON documents (Python's `embshard.size` / `embshard.fit`); changes carry their task. */
[[nodiscard]] std::string capacity_json(const CapacityCurve& curve);
[[nodiscard]] std::string fit_advice_json(const FitAdvice& advice);

}  // namespace embshard
