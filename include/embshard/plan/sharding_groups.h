#pragma once
/**
 * @file sharding_groups.h
 * @brief 2D parallelism (TorchRec's `DMPCollection`): the tables are sharded within groups of G
 *        ranks and every group holds a replica of the same shards.
 *
 * A 2D plan (`Plan::groups.size` = G, 0 < G < N) places its shards on the G ranks 0..G−1 of one
 * sharding group; the N/G = R groups apply the same plan to their own ranks and each trains on its
 * own G·B/N samples of the global batch B. Rank r of group g is global device
 *
 *   strided    (DMPCollection's default)                  r · R + g   — a shard's R replicas sit on
 *              neighbouring ranks, so they sync over the host's links where R ≤ L
 *   contiguous (DMPCollection's use_inter_host_allreduce)  g · G + r   — a group fills whole hosts,
 *              so its all-to-alls stay on the host's links where G ≤ L
 *
 * (L devices per host, H hosts). Every group's ranks must spread over hosts alike — each host of
 * the group holding as many of them — and so must every rank's replicas, which holds when R
 * (strided ranks) or G (contiguous ranks) divides L or is a multiple of it (`find_error_in_groups`).
 *
 * Cost. A group's step is the 1D step of the plan on the group's task (`sharding_group_task`:
 * the G devices with their hosts as the layout places them, each with the smallest memory, the
 * slowest memory and links among its replicas (every replica runs the same plan), the batch
 * G·B/N and each table's statistics of that share, `stats_of_batch_share`), plus the replica
 * sync: DMPCollection.sync() all-reduces every shard's weights and optimizer state
 * (`TableSpec::shard_bytes`) across the rank's R replicas —
 * hierarchically, k replicas per host over m hosts (cost/link_model.h `replica_sync_ms`) — once
 * every `Workload::replica_sync_every` steps (the user calls sync(); TorchRec's docs: after each
 * train step), charged per step to the rank's `ar_comm_ms` (cost/breakdown.h).
 *
 * A plan records the world it was made for (`world`); checked against a task of another world,
 * it is an error naming the field, since its ranks' replicas would be others.
 *
 * A 2D layout needs more than one host (on one host the groups would share its links and gain
 * nothing TorchRec offers), G dividing N, and R dividing the global batch. A 2D plan has no
 * data-parallel table: TorchRec would all-reduce its gradient over all N ranks and leave it out
 * of the replica sync, which embshard does not cost; `find_error_in_plan` rejects one.
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/data/topology.h"

namespace embshard {

struct Task;

/** Where a sharding group's ranks sit (file comment). */
enum class GroupRanks { kStrided, kContiguous };
/** "strided", "contiguous". */
[[nodiscard]] const char* to_string(GroupRanks ranks);
/** Parses a GroupRanks name; throws Error naming `where` and the choices otherwise. */
[[nodiscard]] GroupRanks parse_group_ranks(const std::string& name, const std::string& where);

/** A plan's 2D layout (file comment); `size` 0 is a 1D plan over all ranks. */
struct ShardingGroups {
  int size = 0;  ///< G: ranks per sharding group; 0: no 2D layout
  GroupRanks ranks = GroupRanks::kStrided;
  /// N: the ranks of the job the plan was made for (the plan file's `sharding_groups.world`), which
  /// fixes each rank's replicas; 0: not recorded (plans of older builds), taken as the task's
  int world = 0;
  [[nodiscard]] bool enabled() const { return size != 0; }
  [[nodiscard]] bool operator==(const ShardingGroups&) const = default;
};

/** "" if `groups` is a usable layout for `task` (file comment) and, where it records its world, for
 *  that many ranks, else one line naming the field. */
[[nodiscard]] std::string find_error_in_groups(const Task& task, const ShardingGroups& groups);

/** The global device of rank `rank` of sharding group `group` (file comment). */
[[nodiscard]] int global_device(const ShardingGroups& groups, int world, int group, int rank);

/** How a rank's replicas spread: `per_host` of them on each of `hosts` hosts. */
struct ReplicaSpread {
  int per_host = 1;
  int hosts = 1;
};
[[nodiscard]] ReplicaSpread replica_spread(const ShardingGroups& groups, int world, int host_size);

/** A sharding group's devices and hosts (file comment); `groups` valid for the topology's task. */
[[nodiscard]] Topology sharding_group_topology(const Topology& topology, const ShardingGroups& groups);

/**
 * The task one sharding group plans and is costed on (file comment): its topology, the batch
 * share and statistics; `task` itself for a 1D layout. `groups` must be valid for the task
 * (find_error_in_groups).
 */
[[nodiscard]] Task sharding_group_task(const Task& task, const ShardingGroups& groups);

/** Short text for reports: "2D: 8 groups of 64 ranks (strided)" or "1D". */
[[nodiscard]] std::string describe_groups(const ShardingGroups& groups, int world);

/** Every 2D layout `find_error_in_groups` accepts for `task`, by increasing group size; a
 *  contiguous layout whose group (devices, hosts) and replica spread are the strided one's of the
 *  same size is left out for it. */
[[nodiscard]] std::vector<ShardingGroups> sharding_group_layouts(const Task& task);

}  // namespace embshard
