#pragma once
/**
 * @file task.h
 * @brief `Workload` (tables + batch) and `Task` (workload + topology + constraints).
 *
 * A task is the one input of every sharder. Whatever door it comes through (a task file, the
 * task generators, the built-in default) it is checked once with `find_error_in_task` before
 * anything else reads it.
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/data/table.h"
#include "embshard/data/topology.h"

namespace embshard {

/** Most steps between a 2D plan's replica syncs a task may name. */
inline constexpr int kMaxSyncEvery = 1'000'000;

/** Largest global batch a task may name (the dataset's batches are 65,536 and 131,072). */
inline constexpr std::int64_t kMaxBatchSize = kMaxStatsBatchSize;

struct Workload {
  std::vector<TableSpec> tables;
  std::int64_t batch_size = 65536;  ///< global batch (samples per training step)
  /// Steps between replica syncs of a 2D plan (plan/sharding_groups.h; TorchRec's
  /// DMPCollection.sync(), which its docs call after every step), in [1, kMaxSyncEvery].
  int replica_sync_every = 1;

  [[nodiscard]] std::int64_t total_bytes() const;
  [[nodiscard]] std::int64_t total_dim() const;
};

/**
 * Groups of tables placed together or apart (TorchRec users ask for both: pytorch/torchrec #2642,
 * #662). A `colocate` group's tables are each whole (table_wise) on one device, the same for all
 * of them; a `separate` group's tables share no device (no two of them have a shard on one device,
 * whatever their layouts). Each group names 2 or more distinct tables of the task; a table is in
 * at most one colocate group; two tables of one colocate group are never in one separate group; a
 * separate group has at most as many tables as the task has devices (a 2D plan: ranks per group);
 * a colocate group's tables allow table_wise. `find_error_in_task` checks this, `find_error_in_plan`
 * checks a plan against it (plan.h `find_placement_group_violation`).
 */
struct PlacementGroups {
  std::vector<std::vector<std::string>> colocate;
  std::vector<std::vector<std::string>> separate;
  [[nodiscard]] bool empty() const { return colocate.empty() && separate.empty(); }
};

/** What a plan may do beyond table-wise placement in HBM. */
struct Constraints {
  bool allow_column_split = true;  ///< tables may be split into column ranges (multiples of 4)
  bool allow_row_split = true;     ///< tables may be split into row ranges
  bool allow_uvm = false;          ///< rows may live in host memory reached through UVM
  PlacementGroups groups;          ///< tables placed together or apart

  /** Whether the task-wide switches allow `type` (splits of rows, of columns, or both for grids). */
  [[nodiscard]] bool allows(ShardingType type) const;
};

/** "colocate group 2 ('a', 'b', 'c')": how messages name a group (`index` from 0). */
[[nodiscard]] std::string describe_placement_group(const std::string& kind, std::size_t index,
                                                   const std::vector<std::string>& tables);

struct Task {
  std::string id;               ///< e.g. "neuroshard-d4-m128-007"; free text for users
  std::string protocol;         ///< canonical spec of the generator, or "" for hand-written
  std::uint64_t seed = 0;       ///< seed the generator used
  std::uint64_t pool_seed = 0;  ///< pool that tables' source ids refer to (if from the pool)
  Workload workload;
  Topology topology;
  Constraints constraints;
};

/** Whether the task-wide switches and `table`'s own constraints both allow `type`. */
[[nodiscard]] bool allows(const Task& task, const TableSpec& table, ShardingType type);
/** Whether some layout both allow splits `table`'s rows (row_wise, table_row_wise, grid_shard). */
[[nodiscard]] bool may_split_rows(const Task& task, const TableSpec& table);

/**
 * "" if `task` is valid, else one line naming the first problem, prefixed by `where` (a file
 * name) and naming the table: no tables or more than kMaxTasksTables, duplicate table names, a
 * dim that is not a positive multiple of 4, bad statistics, a table over kMaxTableBytes, a batch
 * outside [1, kMaxBatchSize], table constraints that contradict themselves or the task's, an
 * unusable topology (table.h and topology.h give the limits and why they keep every derived int64
 * exact).
 */
[[nodiscard]] std::string find_error_in_task(const Task& task, const std::string& where);

/** "" if a table's own constraints are usable under the task-wide ones, else the problem after `at`. */
[[nodiscard]] std::string find_error_in_table_constraints(const TableSpec& table, const Constraints& task_wide,
                                                          const std::string& at);

/** Throws Error with `find_error_in_task`'s message if the task is invalid. */
void check_task(const Task& task, const std::string& where);

}  // namespace embshard
