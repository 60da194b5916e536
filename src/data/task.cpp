#include "embshard/data/task.h"

#include <algorithm>
#include <map>
#include <set>

#include "embshard/core/error.h"
#include "embshard/core/markup.h"

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

bool Constraints::allows(ShardingType type) const {
  if (type == ShardingType::kColumnWise) return allow_column_split;
  if (type == ShardingType::kRowWise || type == ShardingType::kTableRowWise) return allow_row_split;
  if (type == ShardingType::kGridShard) return allow_row_split && allow_column_split;
  return true;
}

bool allows(const Task& task, const TableSpec& table, ShardingType type) {
  return task.constraints.allows(type) && table.allows(type);
}

bool may_split_rows(const Task& task, const TableSpec& table) {
  return allows(task, table, ShardingType::kRowWise) || allows(task, table, ShardingType::kTableRowWise) ||
         allows(task, table, ShardingType::kGridShard);
}

std::string find_error_in_table_constraints(const TableSpec& t, const Constraints& task_wide, const std::string& at) {
  const TableConstraints& c = t.constraints;
  if (c.min_partition < 0 || c.min_partition > kMaxTableDim)
    return at + ": constraints.min_partition = " + std::to_string(c.min_partition) + " must lie in [0, " +
           std::to_string(kMaxTableDim) + "]";
  std::set<int> seen;
  bool any = c.sharding_types.empty();
  for (ShardingType type : c.sharding_types) {
    if (!seen.insert(static_cast<int>(type)).second)
      return at + ": constraints.sharding_types names " + to_string(type) + " twice";
    any = any || task_wide.allows(type);
  }
  if (!any)
    return at +
           ": constraints.sharding_types allows only types the task's constraints forbid "
           "(allow_column_split / allow_row_split)";
  if (!t.pooled && !c.sharding_types.empty() &&
      std::none_of(c.sharding_types.begin(), c.sharding_types.end(), [&](ShardingType type) { return t.allows(type); }))
    return at +
           ": constraints.sharding_types allows only types a sequence table (pooled: false) cannot take: "
           "TorchRec's EmbeddingCollection runs table_wise, column_wise, row_wise and data_parallel";
  return "";
}

std::string describe_placement_group(const std::string& kind, std::size_t index,
                                     const std::vector<std::string>& tables) {
  std::string names;
  for (std::size_t i = 0; i < tables.size() && i < 6; ++i) names += (i ? ", '" : "'") + one_line(tables[i]) + "'";
  if (tables.size() > 6) names += ", ...";
  return kind + " group " + std::to_string(index + 1) + " (" + names + ")";
}

namespace {

/** find_error_in_task's checks of the placement groups (task.h `PlacementGroups`). */
std::string find_error_in_groups(const Task& task, const std::string& where) {
  std::map<std::string, const TableSpec*> tables;
  for (const TableSpec& t : task.workload.tables) tables[t.name] = &t;
  const std::string at = where + ": constraints.";
  std::map<std::string, std::size_t> colocated;  // table → its colocate group
  const auto check_names = [&](const std::string& kind, std::size_t g, const std::vector<std::string>& group) {
    const std::string name = describe_placement_group(kind, g, group);
    if (group.size() < 2) return at + name + " must name at least 2 tables";
    std::set<std::string> seen;
    for (const std::string& t : group) {
      if (!tables.count(t)) return at + name + " names table '" + one_line(t) + "', which the task does not have";
      if (!seen.insert(t).second) return at + name + " names table '" + one_line(t) + "' twice";
    }
    return std::string();
  };
  const auto& groups = task.constraints.groups;
  for (std::size_t g = 0; g < groups.colocate.size(); ++g) {
    if (auto e = check_names("colocate", g, groups.colocate[g]); !e.empty()) return e;
    for (const std::string& t : groups.colocate[g]) {
      const std::string name = describe_placement_group("colocate", g, groups.colocate[g]);
      if (!colocated.emplace(t, g).second)
        return at + name + ": table '" + one_line(t) + "' is already in " +
               describe_placement_group("colocate", colocated[t], groups.colocate[colocated[t]]);
      if (!tables[t]->allows(ShardingType::kTableWise))
        return at + name + ": table '" + one_line(t) + "' does not allow table_wise, which colocated tables take";
    }
  }
  for (std::size_t g = 0; g < groups.separate.size(); ++g) {
    const auto& group = groups.separate[g];
    if (auto e = check_names("separate", g, group); !e.empty()) return e;
    const std::string name = describe_placement_group("separate", g, group);
    if (static_cast<int>(group.size()) > task.topology.num_devices())
      return at + name + " has " + std::to_string(group.size()) + " tables but the task has " +
             std::to_string(task.topology.num_devices()) + " devices";
    for (std::size_t i = 0; i < group.size(); ++i) {
      for (std::size_t j = i + 1; j < group.size(); ++j) {
        const auto a = colocated.find(group[i]), b = colocated.find(group[j]);
        if (a != colocated.end() && b != colocated.end() && a->second == b->second)
          return at + name + " contradicts " +
                 describe_placement_group("colocate", a->second, groups.colocate[a->second]) + ": tables '" +
                 one_line(group[i]) + "' and '" + one_line(group[j]) + "' must share a device and must not";
      }
    }
  }
  return "";
}

}  // namespace

std::string find_error_in_task(const Task& task, const std::string& where) {
  const auto& tables = task.workload.tables;
  if (tables.empty()) return where + ": the task has no tables";
  if (static_cast<std::int64_t>(tables.size()) > kMaxTasksTables)
    return where + ": the task has " + std::to_string(tables.size()) + " tables, more than " +
           std::to_string(kMaxTasksTables);
  if (task.workload.batch_size <= 0 || task.workload.batch_size > kMaxBatchSize)
    return where + ": batch_size = " + std::to_string(task.workload.batch_size) + " must lie in [1, " +
           std::to_string(kMaxBatchSize) + "]";
  if (task.workload.replica_sync_every < 1 || task.workload.replica_sync_every > kMaxSyncEvery)
    return where + ": replica_sync_every = " + std::to_string(task.workload.replica_sync_every) + " must lie in [1, " +
           std::to_string(kMaxSyncEvery) + "]";
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
      return at + ": " + std::to_string(t.num_rows()) + " rows × dim " + std::to_string(t.dim) + " = " +
             std::to_string(t.size_bytes()) + " bytes" +
             (t.optimizer == OptimizerState::kNone ? "" : " with optimizer state") +
             ", more than the 2^46 bytes (64 TiB) a table may hold";
    if (auto err = find_error_in_table_constraints(t, task.constraints, at); !err.empty()) return err;
  }
  if (auto err = find_error_in_topology(task.topology, where); !err.empty()) return err;
  return find_error_in_groups(task, where);
}

void check_task(const Task& task, const std::string& where) {
  const std::string err = find_error_in_task(task, where);
  EMBSHARD_CHECK(err.empty(), err);
}

}  // namespace embshard
