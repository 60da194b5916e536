#pragma once
/**
 * @file recshard.h
 * @brief The `recshard` sharder (paper 004, §4.2): a Task becomes RecShard's MILP input, the MILP
 *        (milp/recshard_milp.h) is solved with CBC, and its decisions become a table-wise plan in
 *        which each table's hottest rows are in its device's HBM (`Shard::hbm_rows`) and the rest
 *        in host memory reached through UVM.
 *
 * Task → RecShardInput (`recshard_input_of`):
 *   table j      rows = stats.num_rows, dim, bytes per element of its dtype;
 *                coverage = stats.coverage; pooling (the paper's avg_pool_j, lookups per sample
 *                that accesses the table) = stats.pooling_factor / coverage (0 when coverage is 0),
 *                so coverage_j · L_j of (11)–(12) is the table's mean lookups per sample × row
 *                bytes × B;
 *                icdf (K = 100) = {0, icdf[0] / rows, ..., icdf[99] / rows} of TableStats (its
 *                row counts for 1%..100% of the accesses, data/table.h). A table without lookups
 *                (num_indices = 0, or pooling 0) needs no row for any share: all zeros. A table
 *                with lookups and no ICDF is an Error naming it.
 *   GPU m        Cap_D = device.hbm_bytes; Cap_H = device.uvm_bytes when the task allows UVM,
 *                else 0. When no GPU has host memory, every row must be in HBM: the ICDF's last
 *                step is set to all rows (1), since its rows never accessed could otherwise go
 *                nowhere (with host memory they are the free cold tail RecShard exploits).
 *   bandwidths   BW_HBM / BW_UVM = the devices' hbm_gbps / uvm_gbps × 1e9 (one pair: devices
 *                with different bandwidths are an Error, the MILP has one BW per tier).
 *   batch        B = the task's global batch.
 *
 * Outcomes:
 *   - a table that fits no device at any split (R_j(i) rows in HBM, the rest within Cap_H: it
 *     fits nowhere even in host memory): kInfeasible naming the table, its bytes and the largest
 *     HBM + host of a device;
 *   - the MILP proven infeasible (the tables fit one by one but not together): kInfeasible;
 *   - a solution (optimal, or the best one at the time limit: CBC's incumbent, at worst the greedy
 *     warm start): kOk, or kTimeLimit when the Context's deadline, not `time_limit_s`, cut the
 *     search; no solution before the limit: kTimeLimit with an empty plan;
 *   - stats.solver says "milp <status>, objective X ms, bound Y ms, gap Z%, N s, M nodes,
 *     warm start <accepted|...>"; stats.solver_gap holds the relative gap; nodes_visited = CBC's
 *     nodes.
 *
 * Plan: one table-wise shard per table on the MILP's GPU, `hbm_rows` = R_j(step) (-1 when that is
 * every row). The plan is exactly the MILP's decision: evaluate_recshard of the plan's choices
 * (`recshard_choices_of`) reproduces the solver's objective.
 *
 * Parameters: time_limit_s (default 60; the Context deadline, if sooner, wins), symmetry
 * (ordered_loads | table_index | none), warm_start (on | off), gap (CBC's relative gap, default
 * 1e-4).
 */
#include <string>
#include <vector>

#include "embshard/data/task.h"
#include "embshard/milp/recshard_milp.h"
#include "embshard/plan/plan.h"

namespace embshard::detail {

/**
 * The MILP input of `task` (file comment). Throws Error naming the table for a table with lookups
 * but no ICDF, and for devices with different bandwidths. Does not check capacities.
 */
[[nodiscard]] RecShardInput recshard_input_of(const Task& task);

/** "" or the first table that fits on no device even with host memory, with its figures. */
[[nodiscard]] std::string find_table_that_fits_nowhere(const RecShardInput& input);

/** The table-wise plan of MILP decisions (hbm_rows = R_j(step), -1 when all rows). */
[[nodiscard]] Plan recshard_plan_of(const Task& task, const RecShardInput& input, const RecShardSolution& solution);

/**
 * The MILP decisions a table-wise plan of `task` stands for: per table its device and the
 * smallest step whose R_j(step) is at least the shard's HBM rows. Error for a plan that is not
 * table-wise with one shard per table.
 */
[[nodiscard]] std::vector<RecShardChoice> recshard_choices_of(const Task& task, const RecShardInput& input,
                                                              const Plan& plan);

}  // namespace embshard::detail
