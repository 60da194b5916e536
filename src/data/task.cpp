#include "embshard/data/task.h"

#include <set>

#include "embshard/core/error.h"

namespace embshard {

std::int64_t Workload::total_bytes() const {
  std::int64_t sum = 0;
  for (const auto& t : tables) sum += t.size_bytes();
  return sum;
}

std::int64_t Workload::total_dim() const {
  std::int64_t sum = 0;
  for (const auto& t : tables) sum += t.dim;
  return sum;
}

std::string find_error_in_table_constraints(const TableSpec& t, const Constraints& task_wide,
                                           const std::string& at) {
  const TableConstraints& c = t.constraints;
  if (c.min_partition < 0 || c.min_partition > kMaxTableDim)
    return at + ": constraints.min_partition = " + std::to_string(c.min_partition) +
           " must lie in [0, " + std::to_string(kMaxTableDim) + "]";
  const auto task_allows = [&](ShardingType type) {
    if (type == ShardingType::kColumnWise) return task_wide.allow_column_split;
    if (type == ShardingType::kRowWise || type == ShardingType::kTableRowWise)
      return task_wide.allow_row_split;
    if (type == ShardingType::kGridShard) return task_wide.allow_row_split && task_wide.allow_column_split;
    return true;
  };
  std::set<int> seen;
  bool any = c.sharding_types.empty();
  for (ShardingType type : c.sharding_types) {
    if (!seen.insert(static_cast<int>(type)).second)
      return at + ": constraints.sharding_types names " + to_string(type) + " twice";
    any = any || task_allows(type);
  }
  if (!any)
    return at + ": constraints.sharding_types allows only types the task's constraints forbid "
                "(allow_column_split / allow_row_split)";
  return "";
}

std::string find_error_in_task(const Task& task, const std::string& where) {
  const auto& tables = task.workload.tables;
  if (tables.empty()) return where + ": the task has no tables";
  if (static_cast<std::int64_t>(tables.size()) > kMaxTasksTables)
    return where + ": the task has " + std::to_string(tables.size()) + " tables, more than " +
           std::to_string(kMaxTasksTables);
  if (task.workload.batch_size <= 0 || task.workload.batch_size > kMaxBatchSize)
    return where + ": batch_size = " + std::to_string(task.workload.batch_size) +
           " must lie in [1, " + std::to_string(kMaxBatchSize) + "]";
  if (task.workload.replica_sync_every < 1 || task.workload.replica_sync_every > kMaxSyncEvery)
    return where + ": replica_sync_every = " + std::to_string(task.workload.replica_sync_every) +
           " must lie in [1, " + std::to_string(kMaxSyncEvery) + "]";
  std::set<std::string> names;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const TableSpec& t = tables[i];
    const std::string at = where + ": table " + std::to_string(i) + " ('" + t.name + "')";
    if (t.name.empty()) return at + ": empty name";
    if (!names.insert(t.name).second) return at + ": duplicate table name '" + t.name + "'";
    if (t.dim <= 0 || t.dim % 4 != 0 || t.dim > kMaxTableDim)
      return at + ": dim = " + std::to_string(t.dim) + " must be a positive multiple of 4, at most " +
             std::to_string(kMaxTableDim);
    if (auto err = find_error_in_stats(t.stats, at); !err.empty()) return err;
    if (t.size_bytes() > kMaxTableBytes)  // exact: rows ≤ 2^40, dim ≤ 2^16 (table.h)
      return at + ": " + std::to_string(t.num_rows()) + " rows × dim " + std::to_string(t.dim) +
             " = " + std::to_string(t.size_bytes()) + " bytes" +
             (t.optimizer == OptimizerState::kNone ? "" : " with optimizer state") + ", more than the 2^46 bytes (64 TiB) a table may hold";
    if (auto err = find_error_in_table_constraints(t, task.constraints, at); !err.empty()) return err;
  }
  return find_error_in_topology(task.topology, where);
}

void check_task(const Task& task, const std::string& where) {
  const std::string err = find_error_in_task(task, where);
  EMBSHARD_CHECK(err.empty(), err);
}

}  // namespace embshard
