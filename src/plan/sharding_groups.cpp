#include "embshard/plan/sharding_groups.h"

#include <algorithm>
#include <array>
#include <utility>

#include "embshard/core/error.h"
#include "embshard/data/task.h"

namespace embshard {
namespace {

/** Whether `a` and `b` nest: one divides the other. */
bool nest(int a, int b) { return a > 0 && b > 0 && (a % b == 0 || b % a == 0); }

/** The number the layout must nest with the host size: R for strided ranks, G for contiguous. */
int nesting_count(const ShardingGroups& groups, int world) {
  return groups.ranks == GroupRanks::kStrided ? world / groups.size : groups.size;
}

/** Devices per host of one group (file comment). */
int group_devices_per_host(const ShardingGroups& groups, int world, int host_size) {
  const int replicas = world / groups.size;
  if (groups.ranks == GroupRanks::kStrided) return replicas <= host_size ? host_size / replicas : 1;
  return std::min(groups.size, host_size);
}

}  // namespace

namespace {

bool same_devices(const Device& a, const Device& b) {
  return a.hbm_bytes == b.hbm_bytes && a.uvm_bytes == b.uvm_bytes && a.hbm_gbps == b.hbm_gbps &&
         a.uvm_gbps == b.uvm_gbps && a.intra_host_gbps == b.intra_host_gbps && a.inter_host_gbps == b.inter_host_gbps;
}

/** Whether two valid layouts cost every plan alike: the same group devices and hosts, replica spread. */
bool same_layout(const Topology& topology, const ShardingGroups& a, const ShardingGroups& b) {
  const int world = topology.num_devices();
  const ReplicaSpread sa = replica_spread(a, world, topology.host_size());
  const ReplicaSpread sb = replica_spread(b, world, topology.host_size());
  if (sa.per_host != sb.per_host || sa.hosts != sb.hosts) return false;
  const Topology ga = sharding_group_topology(topology, a), gb = sharding_group_topology(topology, b);
  return ga.devices_per_host == gb.devices_per_host &&
         std::equal(ga.devices.begin(), ga.devices.end(), gb.devices.begin(), gb.devices.end(), same_devices);
}

}  // namespace

const char* to_string(GroupRanks ranks) { return ranks == GroupRanks::kStrided ? "strided" : "contiguous"; }

GroupRanks parse_group_ranks(const std::string& name, const std::string& where) {
  if (name == "strided") return GroupRanks::kStrided;
  if (name == "contiguous") return GroupRanks::kContiguous;
  EMBSHARD_THROW(where, ": '", detail::one_line(name), "' is not a rank layout (strided, contiguous)");
}

std::string find_error_in_groups(const Task& task, const ShardingGroups& groups) {
  if (!groups.enabled()) return "";
  if (groups.size < 0) return "sharding_groups.size " + std::to_string(groups.size) + " is negative";
  const int world = task.topology.num_devices();
  const int host_size = task.topology.host_size();
  if (groups.world != 0 && groups.world != world)
    return "sharding_groups.world " + std::to_string(groups.world) + ": the plan is for " +
           std::to_string(groups.world) + " ranks, the task has " + std::to_string(world) + " devices";
  const std::string at = "sharding_groups.size " + std::to_string(groups.size) + ": ";
  if (task.topology.num_hosts() <= 1)
    return at + "a 2D layout needs more than one host (the topology has one host of " + std::to_string(world) +
           " devices)";
  if (groups.size >= world || world % groups.size != 0)
    return at + "must divide the " + std::to_string(world) + " devices and be smaller";
  if (!nest(nesting_count(groups, world), host_size))
    return at + "with " + to_string(groups.ranks) + " ranks, " +
           (groups.ranks == GroupRanks::kStrided ? "the replica count " : "the group size ") +
           std::to_string(nesting_count(groups, world)) + " must divide the " + std::to_string(host_size) +
           " devices per host or be a multiple of them";
  const int replicas = world / groups.size;
  if (task.workload.batch_size % replicas != 0)
    return at + "the batch " + std::to_string(task.workload.batch_size) + " does not split into " +
           std::to_string(replicas) + " groups' equal shares";
  return "";
}

int global_device(const ShardingGroups& groups, int world, int group, int rank) {
  if (!groups.enabled()) return rank;
  const int replicas = world / groups.size;
  return groups.ranks == GroupRanks::kStrided ? rank * replicas + group : group * groups.size + rank;
}

ReplicaSpread replica_spread(const ShardingGroups& groups, int world, int host_size) {
  if (!groups.enabled()) return {};
  const int replicas = world / groups.size;
  if (groups.ranks == GroupRanks::kStrided) {
    if (replicas <= host_size) return {replicas, 1};
    return {host_size, replicas / host_size};
  }
  if (groups.size < host_size) return {host_size / groups.size, replicas * groups.size / host_size};
  return {1, replicas};
}

Topology sharding_group_topology(const Topology& topology, const ShardingGroups& groups) {
  if (!groups.enabled()) return topology;
  const int world = topology.num_devices();
  const int replicas = world / groups.size;
  Topology group = topology;
  group.devices.resize(static_cast<std::size_t>(groups.size));
  for (int r = 0; r < groups.size; ++r) {
    const int first = global_device(groups, world, 0, r);
    Device least = topology.devices[static_cast<std::size_t>(first)];
    least.intra_host_gbps = topology.intra_gbps(first), least.inter_host_gbps = topology.inter_gbps(first);
    for (int g = 1; g < replicas; ++g) {
      const int global = global_device(groups, world, g, r);
      const Device& d = topology.devices[static_cast<std::size_t>(global)];
      least.hbm_bytes = std::min(least.hbm_bytes, d.hbm_bytes);
      least.uvm_bytes = std::min(least.uvm_bytes, d.uvm_bytes);
      least.hbm_gbps = std::min(least.hbm_gbps, d.hbm_gbps);
      least.uvm_gbps = std::min(least.uvm_gbps, d.uvm_gbps);
      least.intra_host_gbps = std::min(least.intra_host_gbps, topology.intra_gbps(global));
      least.inter_host_gbps = std::min(least.inter_host_gbps, topology.inter_gbps(global));
    }
    group.devices[static_cast<std::size_t>(r)] = least;
  }
  group.devices_per_host = group_devices_per_host(groups, world, topology.host_size());
  return group;
}

Task sharding_group_task(const Task& task, const ShardingGroups& groups) {
  if (!groups.enabled()) return task;
  const std::string problem = find_error_in_groups(task, groups);
  EMBSHARD_CHECK(problem.empty(), "plan: ", problem);
  const int replicas = task.topology.num_devices() / groups.size;
  Task group = task;
  group.topology = sharding_group_topology(task.topology, groups);
  group.workload.batch_size = task.workload.batch_size / replicas;
  for (TableSpec& t : group.workload.tables) t.stats = stats_of_batch_share(std::move(t.stats), 1.0 / replicas);
  return group;
}

std::string describe_groups(const ShardingGroups& groups, int world) {
  if (!groups.enabled()) return "1D";
  return "2D: " + std::to_string(world / groups.size) + " groups of " + std::to_string(groups.size) + " ranks (" +
         to_string(groups.ranks) + ")";
}

std::vector<ShardingGroups> sharding_group_layouts(const Task& task) {
  std::vector<ShardingGroups> layouts;
  const int world = task.topology.num_devices();
  for (int size = 1; size < world; ++size) {
    if (world % size != 0) continue;
    for (GroupRanks ranks : {GroupRanks::kStrided, GroupRanks::kContiguous}) {
      const ShardingGroups g{size, ranks, world};
      if (!find_error_in_groups(task, g).empty()) continue;
      // Contiguous ranks that make the same group (devices, hosts) and the same replica spread as
      // strided ones (one rank per group, say, on identical devices): the strided layout stands for both.
      const ShardingGroups strided{size, GroupRanks::kStrided, world};
      if (ranks == GroupRanks::kContiguous && find_error_in_groups(task, strided).empty() &&
          same_layout(task.topology, g, strided))
        continue;
      layouts.push_back(g);
    }
  }
  return layouts;
}

}  // namespace embshard
