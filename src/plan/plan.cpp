#include "embshard/plan/plan.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "embshard/core/error.h"
#include "embshard/core/markup.h"

namespace embshard {
namespace {

/// `name` in quotes, on one line (detail::one_line).
std::string quoted(const std::string& name) { return "'" + detail::one_line(name) + "'"; }

std::string table_prefix(const std::string& name) { return "plan: table " + quoted(name); }

std::string shard_prefix(const std::string& name, std::size_t index, const Shard& s) {
  return table_prefix(name) + " shard " + std::to_string(index) + " (device " + std::to_string(s.device) + ")";
}

std::string range(std::int64_t begin, std::int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

std::string gib_and_bytes(std::int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f GiB (%lld bytes)", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0),
                static_cast<long long>(bytes));
  return buf;
}

/// First problem of one shard on its own: device, bounds, alignment, HBM rows.
std::string find_error_in_shard(const Task& task, const TableSpec& spec, std::size_t index, const Shard& s) {
  const std::string at = shard_prefix(spec.name, index, s);
  const int num_devices = task.topology.num_devices();
  if (s.device < 0 || s.device >= num_devices)
    return at + ": device " + std::to_string(s.device) + " does not exist (the topology has " +
           std::to_string(num_devices) + " devices)";
  if (s.row_begin < 0 || s.row_begin >= s.row_end || s.row_end > spec.num_rows())
    return at + ": rows " + range(s.row_begin, s.row_end) + " are not a non-empty range inside " +
           range(0, spec.num_rows());
  if (s.col_begin < 0 || s.col_begin >= s.col_end || s.col_end > spec.dim)
    return at + ": columns " + range(s.col_begin, s.col_end) + " are not a non-empty range inside " +
           range(0, spec.dim);
  if ((s.col_end - s.col_begin) % 4 != 0)
    return at + ": columns " + range(s.col_begin, s.col_end) + " are not a multiple of 4 wide";
  if (s.col_begin % 4 != 0)
    return at + ": columns " + range(s.col_begin, s.col_end) + " do not start on a multiple of 4";
  if (s.hbm_rows < -1 || s.hbm_rows > s.num_rows())
    return at + ": hbm_rows = " + std::to_string(s.hbm_rows) + " must be -1 (all) or in [0, " +
           std::to_string(s.num_rows()) + "]";
  return "";
}

/// First constraint of the task that the shard breaks (UVM, column split, row split).
std::string find_constraint_error(const Task& task, const TableSpec& spec, std::size_t index, const Shard& s) {
  const std::string at = shard_prefix(spec.name, index, s);
  const Constraints& c = task.constraints;
  if (!c.allow_uvm && s.rows_in_hbm() < s.num_rows())
    return at + ": keeps " + std::to_string(s.num_rows() - s.rows_in_hbm()) +
           " rows in UVM but the task does not allow UVM";
  if (!c.allow_column_split && s.num_cols() < spec.dim)
    return at + ": columns " + range(s.col_begin, s.col_end) +
           " split the table but the task does not allow column splits";
  if (!c.allow_row_split && s.num_rows() < spec.num_rows())
    return at + ": rows " + range(s.row_begin, s.row_end) + " split the table but the task does not allow row splits";
  return "";
}

struct Event {
  std::int64_t row;
  bool is_end;  ///< ends sort before begins at the same row
  std::size_t shard;
};

/// The first cell of row `row` that no interval in `active` (col_begin -> shard) covers.
int first_gap(const std::map<int, std::size_t>& active, const std::vector<Shard>& shards) {
  int col = 0;
  for (const auto& [begin, index] : active) {
    if (begin != col) return col;
    col = shards[index].col_end;
  }
  return col;
}

std::vector<Event> sorted_events(const std::vector<Shard>& shards) {
  std::vector<Event> events;
  events.reserve(2 * shards.size());
  for (std::size_t i = 0; i < shards.size(); ++i) {
    events.push_back({shards[i].row_begin, false, i});
    events.push_back({shards[i].row_end, true, i});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.row != b.row) return a.row < b.row;
    if (a.is_end != b.is_end) return a.is_end;
    return a.shard < b.shard;
  });
  return events;
}

/// An active shard whose columns meet those of `s`, or shards.size(); `active` is disjoint.
std::size_t overlapping_shard(const std::map<int, std::size_t>& active, const std::vector<Shard>& shards,
                              const Shard& s) {
  const auto next = active.lower_bound(s.col_begin);
  if (next != active.end() && next->first < s.col_end) return next->second;
  if (next != active.begin() && shards[std::prev(next)->second].col_end > s.col_begin) return std::prev(next)->second;
  return shards.size();
}

/// What the sharding type needs that shard `s` lacks ({need, has}), or two empty strings.
std::pair<std::string, std::string> type_mismatch(const Task& task, const TableSpec& spec, const TablePlacement& tp,
                                                  const Shard& s) {
  const bool row_wise = tp.type == ShardingType::kRowWise || tp.type == ShardingType::kTableRowWise;
  if (tp.type == ShardingType::kColumnWise && s.num_rows() != spec.num_rows())
    return {"shards that span all rows", "has rows " + range(s.row_begin, s.row_end)};
  if (row_wise && s.num_cols() != spec.dim)
    return {"shards that span all columns", "has columns " + range(s.col_begin, s.col_end)};
  const int first = tp.shards.front().device;
  if (tp.type == ShardingType::kTableRowWise && !task.topology.same_host(s.device, first))
    return {"all shards on one host", "is on another host than device " + std::to_string(first)};
  return {};
}

/// A grid's column ranges: two shards' ranges are the same or do not meet.
std::string find_grid_error(const std::string& at, const std::vector<Shard>& shards) {
  std::vector<std::pair<std::pair<int, int>, std::size_t>> ranges;
  for (std::size_t i = 0; i < shards.size(); ++i) ranges.push_back({{shards[i].col_begin, shards[i].col_end}, i});
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    const auto& [a, ia] = ranges[i - 1];
    const auto& [b, ib] = ranges[i];
    if (a != b && b.first < a.second)
      return at + " needs column blocks that shards share whole, but shard " + std::to_string(ib) + " (columns " +
             range(b.first, b.second) + ") cuts across shard " + std::to_string(ia) + " (columns " +
             range(a.first, a.second) + ")";
  }
  return "";
}

std::string find_type_error(const Task& task, const TableSpec& spec, const TablePlacement& tp) {
  const std::string at = table_prefix(spec.name) + ": sharding type " + to_string(tp.type);
  if (tp.type == ShardingType::kGridShard) return find_grid_error(at, tp.shards);
  if (tp.type == ShardingType::kTableWise && tp.shards.size() != 1)
    return at + " needs exactly one shard, found " + std::to_string(tp.shards.size());
  for (std::size_t i = 0; i < tp.shards.size(); ++i) {
    const Shard& s = tp.shards[i];
    const auto [need, has] = type_mismatch(task, spec, tp, s);
    if (!need.empty())
      return at + " needs " + need + ", but shard " + std::to_string(i) + " (device " + std::to_string(s.device) +
             ") " + has;
  }
  return "";
}

/// A data-parallel table: one copy of the whole table, all in HBM, on each device exactly once.
std::string find_replica_error(const Task& task, const TableSpec& spec, const TablePlacement& tp) {
  const std::string at = table_prefix(spec.name) + ": sharding type data_parallel";
  const int n = task.topology.num_devices();
  if (static_cast<std::int64_t>(tp.shards.size()) != n)
    return at + " needs one copy on each of the " + std::to_string(n) + " devices, found " +
           std::to_string(tp.shards.size()) + " shards";
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (std::size_t i = 0; i < tp.shards.size(); ++i) {
    const Shard& s = tp.shards[i];
    const std::string shard = " shard " + std::to_string(i) + " (device " + std::to_string(s.device) + ")";
    if (s.row_begin != 0 || s.row_end != spec.num_rows() || s.col_begin != 0 || s.col_end != spec.dim)
      return at + " needs whole copies, but" + shard + " has rows " + range(s.row_begin, s.row_end) + ", columns " +
             range(s.col_begin, s.col_end);
    if (s.rows_in_hbm() != s.num_rows())
      return at + " keeps every row in HBM (TorchRec's dense kernel has no UVM tier), but" + shard +
             " has hbm_rows = " + std::to_string(s.hbm_rows);
    if (seen[static_cast<std::size_t>(s.device)])
      return at + " needs one copy per device, but" + shard + " is a second copy there";
    seen[static_cast<std::size_t>(s.device)] = true;
  }
  return "";
}

std::string find_error_in_placement(const Task& task, const TableSpec& spec, const TablePlacement& tp) {
  if (tp.shards.empty()) return table_prefix(spec.name) + ": has no shards";
  for (std::size_t i = 0; i < tp.shards.size(); ++i)
    if (auto err = find_error_in_shard(task, spec, i, tp.shards[i]); !err.empty()) return err;
  if (tp.type == ShardingType::kDataParallel) return find_replica_error(task, spec, tp);
  if (auto err = find_coverage_error(spec.num_rows(), spec.dim, tp.shards); !err.empty())
    return table_prefix(spec.name) + ": " + err;
  if (auto err = find_type_error(task, spec, tp); !err.empty()) return err;
  for (std::size_t i = 0; i < tp.shards.size(); ++i)
    if (auto err = find_constraint_error(task, spec, i, tp.shards[i]); !err.empty()) return err;
  return "";
}

std::vector<DeviceMemory> shard_memory(const Task& task, const Plan& plan);

std::string find_memory_error(const Task& task, const Plan& plan) {
  const auto use = shard_memory(task, plan);
  for (int d = 0; d < task.topology.num_devices(); ++d) {
    const Device& dev = task.topology.devices[static_cast<std::size_t>(d)];
    const DeviceMemory& m = use[static_cast<std::size_t>(d)];
    const std::string at = "plan: device " + std::to_string(d) + ": ";
    if (m.hbm_bytes > dev.hbm_bytes)
      return at + "HBM use " + gib_and_bytes(m.hbm_bytes) + " exceeds its HBM budget " + gib_and_bytes(dev.hbm_bytes);
    if (m.uvm_bytes > dev.uvm_bytes)
      return at + "UVM use " + gib_and_bytes(m.uvm_bytes) + " exceeds its UVM budget " + gib_and_bytes(dev.uvm_bytes);
  }
  return "";
}

std::unordered_map<std::string, std::size_t> table_index(const Task& task) {
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < task.workload.tables.size(); ++i) index.emplace(task.workload.tables[i].name, i);
  return index;
}

}  // namespace

// A sweep over rows with the active column intervals kept sorted: an overlap shows up as a
// neighbour clash when a shard starts, a hole as an active width below the table's.
std::string find_coverage_error(std::int64_t rows, int cols, const std::vector<Shard>& shards) {
  const std::vector<Event> events = sorted_events(shards);
  std::map<int, std::size_t> active;  // col_begin -> shard
  std::int64_t width = 0;
  std::size_t e = 0;
  for (std::int64_t row = 0; row < rows; row = e < events.size() ? events[e].row : rows) {
    for (; e < events.size() && events[e].row == row; ++e) {
      const Shard& s = shards[events[e].shard];
      if (events[e].is_end) {
        active.erase(s.col_begin);
        width -= s.num_cols();
        continue;
      }
      if (const std::size_t o = overlapping_shard(active, shards, s); o != shards.size())
        return "shard " + std::to_string(events[e].shard) + " (device " + std::to_string(s.device) +
               ") overlaps shard " + std::to_string(o) + " (rows " + range(shards[o].row_begin, shards[o].row_end) +
               ", columns " + range(shards[o].col_begin, shards[o].col_end) + ")";
      active.emplace(s.col_begin, events[e].shard);
      width += s.num_cols();
    }
    if (width != cols)
      return "no shard covers row " + std::to_string(row) + ", column " + std::to_string(first_gap(active, shards));
  }
  return "";
}

namespace {

/** plan_memory of `plan`'s shards on `task`'s devices, its layout aside. */
std::vector<DeviceMemory> shard_memory(const Task& task, const Plan& plan) {
  std::vector<DeviceMemory> use(task.topology.devices.size());
  const auto index = table_index(task);
  for (const TablePlacement& tp : plan.tables) {
    const auto it = index.find(tp.table);
    if (it == index.end()) continue;
    const TableSpec& spec = task.workload.tables[it->second];
    for (const Shard& s : tp.shards) {
      if (s.device < 0 || s.device >= task.topology.num_devices()) continue;
      const std::int64_t n = std::max<std::int64_t>(spec.num_rows(), 0);
      const int dim = std::max(spec.dim, 0);
      const std::int64_t rows = std::max<std::int64_t>(
          std::clamp(s.row_end, std::int64_t{0}, n) - std::clamp(s.row_begin, std::int64_t{0}, n), 0);
      const std::int64_t cols = std::max(std::clamp(s.col_end, 0, dim) - std::clamp(s.col_begin, 0, dim), 0);
      const std::int64_t hbm = s.hbm_rows < 0 ? rows : std::min(s.hbm_rows, rows);
      DeviceMemory& m = use[static_cast<std::size_t>(s.device)];
      m.hbm_bytes += spec.shard_bytes(hbm, cols);
      m.uvm_bytes += spec.shard_bytes(rows - hbm, cols);
    }
  }
  return use;
}

}  // namespace

std::vector<DeviceMemory> plan_memory(const Task& task, const Plan& plan) {
  std::vector<DeviceMemory> use = shard_memory(task, plan);
  // A 2D plan's shards name the ranks 0..G−1 of a group (memory depends on the table's shape only).
  if (plan.groups.size > 0 && plan.groups.size < static_cast<int>(use.size()))
    use.resize(static_cast<std::size_t>(plan.groups.size));
  return use;
}

namespace {

/** find_table_constraint_violation with the task's table index already built. */
std::string constraint_violation(const Task& task, const Plan& plan,
                                 const std::unordered_map<std::string, std::size_t>& index) {
  for (const TablePlacement& tp : plan.tables) {
    const auto it = index.find(tp.table);
    if (it == index.end()) continue;
    const TableSpec& spec = task.workload.tables[it->second];
    const TableConstraints& c = spec.constraints;
    if (c.allows(tp.type) && !spec.allows(tp.type))
      return table_prefix(tp.table) + " is " + to_string(tp.type) +
             ", which TorchRec's EmbeddingCollection does not run for a sequence table (pooled: false); it takes "
             "table_wise, column_wise, row_wise or data_parallel";
    if (!c.allows(tp.type)) {
      std::string allowed;
      for (ShardingType t : c.sharding_types) allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(t));
      return table_prefix(tp.table) + " is " + to_string(tp.type) + ", but its constraints allow only " + allowed;
    }
    for (const Shard& s : tp.shards) {
      if (!c.allow_uvm && s.hbm_rows >= 0 && s.hbm_rows < s.num_rows())
        return table_prefix(tp.table) + " keeps rows in UVM on device " + std::to_string(s.device) +
               ", but its constraints allow HBM only";
      if ((tp.type == ShardingType::kColumnWise || tp.type == ShardingType::kGridShard) &&
          s.num_cols() < c.min_partition && s.num_cols() < task.workload.tables[it->second].dim)
        return table_prefix(tp.table) + " has a column shard " + std::to_string(s.num_cols()) + " wide on device " +
               std::to_string(s.device) + ", below its min_partition " + std::to_string(c.min_partition);
    }
  }
  return "";
}

}  // namespace

std::string find_table_constraint_violation(const Task& task, const Plan& plan) {
  return constraint_violation(task, plan, table_index(task));
}

namespace {

/** find_error_in_plan of `plan`'s shards on `task`'s devices, its layout aside. */
std::string find_error_in_shards(const Task& task, const Plan& plan) {
  const auto index = table_index(task);
  std::vector<std::int64_t> entry_of(task.workload.tables.size(), -1);
  for (std::size_t p = 0; p < plan.tables.size(); ++p) {
    const TablePlacement& tp = plan.tables[p];
    const auto it = index.find(tp.table);
    if (it == index.end()) return table_prefix(tp.table) + " (entry " + std::to_string(p) + ") is not in the task";
    if (entry_of[it->second] >= 0)
      return table_prefix(tp.table) + " appears twice (entries " + std::to_string(entry_of[it->second]) + " and " +
             std::to_string(p) + ")";
    entry_of[it->second] = static_cast<std::int64_t>(p);
    const TableSpec& spec = task.workload.tables[it->second];
    if (auto err = find_error_in_placement(task, spec, tp); !err.empty()) return err;
  }
  for (std::size_t t = 0; t < entry_of.size(); ++t)
    if (entry_of[t] < 0) return table_prefix(task.workload.tables[t].name) + " of the task has no placement";
  if (auto err = constraint_violation(task, plan, index); !err.empty()) return err;
  if (auto err = find_placement_group_violation(task, plan); !err.empty()) return err;
  return find_memory_error(task, plan);
}

}  // namespace

std::string find_placement_group_violation(const Task& task, const Plan& plan) {
  const PlacementGroups& groups = task.constraints.groups;
  if (groups.empty()) return "";
  std::map<std::string, const TablePlacement*> placed;
  for (const TablePlacement& tp : plan.tables) placed[tp.table] = &tp;
  const auto devices_of = [&](const std::string& table) {
    std::set<int> devices;
    if (const auto it = placed.find(table); it != placed.end())
      for (const Shard& s : it->second->shards) devices.insert(s.device);
    return devices;
  };
  for (std::size_t g = 0; g < groups.colocate.size(); ++g) {
    const auto& group = groups.colocate[g];
    const std::string at = "plan: " + describe_placement_group("colocate", g, group) + ": table '";
    int device = -1;
    std::string first;
    for (const std::string& t : group) {
      const auto it = placed.find(t);
      if (it == placed.end()) continue;  // find_error_in_plan names a missing table
      if (it->second->shards.size() != 1 || it->second->type != ShardingType::kTableWise)
        return at + one_line(t) + "' is " + to_string(it->second->type) + "; colocated tables are whole (table_wise)";
      const int d = it->second->shards.front().device;
      if (device >= 0 && d != device)
        return at + one_line(t) + "' is on device " + std::to_string(d) + ", table '" + one_line(first) +
               "' on device " + std::to_string(device);
      if (device < 0) device = d, first = t;
    }
  }
  for (std::size_t g = 0; g < groups.separate.size(); ++g) {
    const auto& group = groups.separate[g];
    std::map<int, std::string> holder;
    for (const std::string& t : group) {
      for (const int d : devices_of(t)) {
        const auto [it, fresh] = holder.emplace(d, t);
        if (!fresh)
          return "plan: " + describe_placement_group("separate", g, group) + ": tables '" + one_line(it->second) +
                 "' and '" + one_line(t) + "' both have a shard on device " + std::to_string(d);
      }
    }
  }
  return "";
}

std::string find_error_in_plan(const Task& task, const Plan& plan) {
  if (!plan.groups.enabled()) return find_error_in_shards(task, plan);
  if (auto err = find_error_in_groups(task, plan.groups); !err.empty()) return "plan: " + err;
  for (const TablePlacement& tp : plan.tables)
    if (tp.type == ShardingType::kDataParallel)
      return table_prefix(tp.table) +
             " is data_parallel, which a 2D plan (sharding_groups) does not take: "
             "its tables are sharded within each group";
  const std::string err = find_error_in_shards(sharding_group_task(task, plan.groups), plan);
  if (err.empty()) return "";
  return err + " (in a sharding group of " + std::to_string(plan.groups.size) + " ranks)";
}

namespace {

std::int64_t smallest_hbm_bytes(const Topology& topology) {
  std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
  for (const Device& d : topology.devices) smallest = std::min(smallest, d.hbm_bytes);
  return smallest;
}

bool may_replicate(const Task& task, const TableSpec& table, std::int64_t smallest_hbm) {
  return task.topology.num_devices() > 1 && table.allows(ShardingType::kDataParallel) &&
         table.shard_bytes(table.num_rows(), table.dim) <= smallest_hbm;
}

}  // namespace

bool may_replicate(const Task& task, const TableSpec& table) {
  return may_replicate(task, table, smallest_hbm_bytes(task.topology));
}

std::vector<bool> replicable_tables(const Task& task) {
  const std::int64_t smallest = smallest_hbm_bytes(task.topology);
  std::vector<bool> out;
  out.reserve(task.workload.tables.size());
  for (const TableSpec& t : task.workload.tables) out.push_back(may_replicate(task, t, smallest));
  return out;
}

Plan table_wise_plan(const Task& task, const std::vector<int>& devices) {
  const auto& tables = task.workload.tables;
  EMBSHARD_CHECK(devices.size() == tables.size(), "table_wise_plan: ", devices.size(), " devices given for ",
                 tables.size(), " tables");
  Plan plan;
  plan.provenance.task_id = task.id;
  plan.provenance.embshard_version = embshard_version();
  plan.tables.reserve(tables.size());
  for (std::size_t i = 0; i < tables.size(); ++i) {
    Shard shard;
    shard.device = devices[i];
    shard.row_end = tables[i].num_rows();
    shard.col_end = tables[i].dim;
    plan.tables.push_back({tables[i].name, ShardingType::kTableWise, {shard}});
  }
  return plan;
}

std::int64_t shared_bytes(const TableSpec& table, const Shard& a, const Shard& b) {
  const std::int64_t rows = std::min(a.row_end, b.row_end) - std::max(a.row_begin, b.row_begin);
  const int cols = std::min(a.col_end, b.col_end) - std::max(a.col_begin, b.col_begin);
  return rows > 0 && cols > 0 ? table.shard_bytes(rows, cols) : 0;
}

}  // namespace embshard
