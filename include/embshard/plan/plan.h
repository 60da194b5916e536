#pragma once
/**
 * @file plan.h
 * @brief `Plan`: where every piece of every table lives, and how the plan was made.
 *
 * A table is cut into shards. Each shard is a rectangle of the table — rows [row_begin, row_end)
 * × columns [col_begin, col_end) — placed on one device. Of the shard's own rows, `hbm_rows` live
 * in the device's HBM and the rest in host memory reached through UVM. `hbm_rows` always counts
 * rows of the shard, never of the whole table: they are the shard's hottest rows, ranked within
 * its row range (RecShard's remapping of that range puts them first), and every part of embshard
 * reads it so — the plan file, `check`, the sim model (cost/analytic.h), the measured backends
 * (eval/evaluator.h) and the TorchRec export. Sharding types name the usual shapes:
 *
 *   table-wise     one shard, all rows and columns
 *   column-wise    shards span all rows, each a column range (a multiple of 4 wide)
 *   row-wise       shards span all columns, each a row range, on different devices
 *   table-row-wise row-wise within one host (TorchRec's TWRW)
 *   data-parallel  a copy of the whole table on every device (one shard per device, all rows and
 *                  columns, all in HBM: TorchRec's dense kernel has no UVM tier). Each copy looks
 *                  up only its own device's B/N samples, so no pooled vectors and no indices are
 *                  exchanged; instead the copies' dense gradients are all-reduced every step and
 *                  each copy applies the optimizer to the whole table (cost/breakdown.h,
 *                  cost/analytic.h). Worth it for small tables whose output exchange costs more.
 *   grid           column ranges, each cut into row ranges (`grid_shard`): no two shards' column
 *                  ranges overlap unless they are the same range
 *
 * Memory a shard uses: rows × cols × bytes_per_element, split between HBM (hbm_rows) and UVM.
 * Optimizer state is not counted (the papers count weights only).
 *
 * `find_error_in_plan` checks a plan against its task: every task table appears once, its shards
 * cover every (row, column) cell exactly once (a data-parallel table: one whole copy on each
 * device), widths are multiples of 4, devices exist, UVM is
 * used only where allowed, and each device's HBM and UVM use fits its budget.
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/core/version.h"
#include "embshard/data/sharding_type.h"
#include "embshard/data/task.h"
#include "embshard/plan/sharding_groups.h"

namespace embshard {

/** Version of the plan JSON; bump when a field changes meaning. */
inline constexpr int kPlanSchemaVersion = 1;

struct Shard {
  int device = 0;
  std::int64_t row_begin = 0;
  std::int64_t row_end = 0;  ///< exclusive
  int col_begin = 0;
  int col_end = 0;             ///< exclusive
  std::int64_t hbm_rows = -1;  ///< the shard's rows in HBM (its hottest); -1 means all of them

  [[nodiscard]] std::int64_t num_rows() const { return row_end - row_begin; }
  [[nodiscard]] int num_cols() const { return col_end - col_begin; }
  [[nodiscard]] std::int64_t rows_in_hbm() const { return hbm_rows < 0 ? num_rows() : hbm_rows; }
};

struct TablePlacement {
  std::string table;  ///< TableSpec::name
  ShardingType type = ShardingType::kTableWise;
  std::vector<Shard> shards;
};

/** How a plan was made; enough to reproduce it. */
struct Provenance {
  std::string sharder;     ///< canonical sharder spec
  std::string cost_model;  ///< canonical cost-model spec, "" if none
  std::string task_id;
  std::string embshard_version;  ///< library version and git hash
  std::uint64_t seed = 0;
  double wall_ms = 0.0;     ///< planning time
  std::string created_utc;  ///< ISO 8601
  /** Tables planned on statistics derived from their shape, not measured (derived_stats.h);
   *  empty when every table's statistics were given in full. */
  std::vector<std::string> derived_stats_tables;
};

struct Plan {
  std::vector<TablePlacement> tables;
  /** A 2D layout (plan/sharding_groups.h): shards then name ranks 0..G−1 of a sharding group,
   *  every group holding the same shards; the default is a 1D plan over all devices. */
  ShardingGroups groups;
  Provenance provenance;
};

/** Memory a plan uses on one device. */
struct DeviceMemory {
  std::int64_t hbm_bytes = 0;
  std::int64_t uvm_bytes = 0;
};

/** Per-device memory use of `plan` on `task` (devices outside the topology are ignored); for a 2D
 *  plan, per rank of a sharding group (every replica holds the same). */
[[nodiscard]] std::vector<DeviceMemory> plan_memory(const Task& task, const Plan& plan);

/**
 * "" if every placement honours its table's `TableConstraints` (table.h: sharding types, HBM only,
 * min_partition), else one line naming the table and the constraint. Placements of tables not in
 * the task are skipped (find_error_in_plan reports them).
 */
[[nodiscard]] std::string find_table_constraint_violation(const Task& task, const Plan& plan);

/**
 * "" if `plan` keeps the task's placement groups (data/task.h `PlacementGroups`: colocated tables
 * whole on one device, separated tables on no common device), else one line naming the group, the
 * tables and the device. Tables without a placement are skipped (find_error_in_plan names them).
 */
[[nodiscard]] std::string find_placement_group_violation(const Task& task, const Plan& plan);

/**
 * "" if `plan` is a valid plan for `task` (constraints and memory included), else one line naming
 * the first problem. A 2D plan must have a layout the task allows (`find_error_in_groups`) and be
 * a valid plan of its sharding group's task (`sharding_group_task`).
 */
[[nodiscard]] std::string find_error_in_plan(const Task& task, const Plan& plan);

/**
 * "" if `shards`, each a non-empty range inside a `rows` × `cols` table, cover every cell of it
 * exactly once; else the first problem, to follow the table's name: "shard i (device d) overlaps
 * shard j (rows …, columns …)" or "no shard covers row r, column c". A sweep over the rows,
 * O(s log s) for s shards.
 */
[[nodiscard]] std::string find_coverage_error(std::int64_t rows, int cols, const std::vector<Shard>& shards);

/**
 * Whether a plan of `task` may make `table` data-parallel: its constraints allow the type, the
 * topology has more than one device, and a whole copy fits every device's HBM budget on its own.
 * (`find_error_in_plan` still checks the plan's total memory.)
 */
[[nodiscard]] bool may_replicate(const Task& task, const TableSpec& table);
/** may_replicate of each of the task's tables, in their order: O(tables + devices) where asking
 *  table by table is O(tables × devices). */
[[nodiscard]] std::vector<bool> replicable_tables(const Task& task);

/** Bytes (TableSpec::shard_bytes) of the cells two shards of `table` share; 0 when disjoint. */
[[nodiscard]] std::int64_t shared_bytes(const TableSpec& table, const Shard& a, const Shard& b);

/** A table-wise plan from one device per table (index i of `devices` is task table i). */
[[nodiscard]] Plan table_wise_plan(const Task& task, const std::vector<int>& devices);

}  // namespace embshard
