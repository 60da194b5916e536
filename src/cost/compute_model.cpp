#include "embshard/cost/compute_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "embshard/core/error.h"

namespace embshard {

std::vector<std::vector<PlacedShard>> shards_by_device(const Task& task, const Plan& plan) {
  std::map<std::string, int> table_index;
  const auto& tables = task.workload.tables;
  for (std::size_t t = 0; t < tables.size(); ++t) table_index[tables[t].name] = static_cast<int>(t);
  std::vector<std::vector<PlacedShard>> by_device(static_cast<std::size_t>(task.topology.num_devices()));
  for (const TablePlacement& placement : plan.tables) {
    const auto it = table_index.find(placement.table);
    EMBSHARD_CHECK(it != table_index.end(), "plan names table '", placement.table, "', which the task does not have");
    const int replicas = placement.type == ShardingType::kDataParallel ? static_cast<int>(placement.shards.size()) : 0;
    for (const Shard& shard : placement.shards) {
      EMBSHARD_CHECK(shard.device >= 0 && shard.device < task.topology.num_devices(), "plan: table '", placement.table,
                     "': device ", shard.device, " does not exist");
      by_device[static_cast<std::size_t>(shard.device)].push_back({it->second, shard, replicas});
    }
  }
  return by_device;
}

std::vector<std::int64_t> device_dim_sums(const std::vector<std::vector<PlacedShard>>& by_device) {
  std::vector<std::int64_t> sums;
  for (const auto& shards : by_device) {
    std::int64_t sum = 0;
    for (const PlacedShard& p : shards)
      if (!p.is_replica()) sum += p.shard.num_cols();
    sums.push_back(sum);
  }
  return sums;
}

bool outputs_partial_sums(const Task& task, const PlacedShard& p) {
  const TableSpec& table = task.workload.tables[static_cast<std::size_t>(p.table)];
  return table.pooled && !p.is_replica() && p.shard.num_rows() < table.num_rows();
}

std::int64_t output_columns(const Task& task, const PlacedShard& p) {
  const TableSpec& table = task.workload.tables[static_cast<std::size_t>(p.table)];
  if (table.pooled) return p.shard.num_cols();
  // Rounded up, so no plan's exchange falls below the exact widths the lower bound charges.
  const double width = table.output_width(p.shard.num_cols(), table.row_share(p.shard.num_rows()));
  return static_cast<std::int64_t>(std::ceil(width - 1e-9 * width));
}

OutputDims device_output_dims(const Task& task, const std::vector<std::vector<PlacedShard>>& by_device) {
  OutputDims out;
  out.pooled.assign(by_device.size(), 0);
  out.partial.assign(by_device.size(), 0);
  out.reduced.assign(static_cast<std::size_t>(task.topology.num_hosts()), 0);
  std::set<std::tuple<int, int, int>> reduced;  // (host, table, first column) counted once
  for (std::size_t d = 0; d < by_device.size(); ++d) {
    const int host = task.topology.host_of(static_cast<int>(d));
    for (const PlacedShard& p : by_device[d]) {
      if (p.is_replica()) continue;
      if (!outputs_partial_sums(task, p)) {
        out.pooled[d] += output_columns(task, p);
        continue;
      }
      out.partial[d] += p.shard.num_cols();
      if (reduced.emplace(host, p.table, p.shard.col_begin).second)
        out.reduced[static_cast<std::size_t>(host)] += p.shard.num_cols();
    }
  }
  return out;
}

std::vector<std::int64_t> OutputDims::totals() const {
  std::vector<std::int64_t> sums(pooled.size());
  for (std::size_t d = 0; d < sums.size(); ++d) sums[d] = total(d);
  return sums;
}

DeviceCompute ComputeModel::shard_compute(const Task&, const PlacedShard&) {
  throw InternalError("compute model '" + spec() + "' is not additive: shard_compute has no meaning");
}

DeviceCompute ComputeModel::device_overhead() const {
  throw InternalError("compute model '" + spec() + "' is not additive: device_overhead has no meaning");
}

}  // namespace embshard
