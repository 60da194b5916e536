// TorchRec planner, part 2: GreedyPerfPartitioner and MemoryBalancedPartitioner (§1.8), the
// NoopPerfModel rating (§1.10) and the conversion to an embshard Plan (§1.4 shard shapes).
// Follows TorchRec commit a48cef79 (1.4.0a0), digest /work/shared/docs/references/torchrec-planner.md.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <tuple>

#include "embshard/core/error.h"
#include "shard/torchrec/torchrec_planner.h"

namespace embshard::detail::torchrec {
namespace {

/** Free storage and accumulated perf per rank while a proposal is partitioned. */
struct DeviceState {
  std::vector<double> perf_ms;
  std::vector<std::int64_t> hbm_free_bytes;
  std::vector<std::int64_t> ddr_free_bytes;
  std::vector<std::int64_t> hbm_used_bytes;

  [[nodiscard]] bool fits(int rank, const Storage& s) const {
    return s.hbm_bytes <= hbm_free_bytes[rank] && s.ddr_bytes <= ddr_free_bytes[rank];
  }
  void place(int rank, const OptionShard& shard) {
    perf_ms[rank] += shard.perf.total_ms();
    hbm_free_bytes[rank] -= shard.storage.hbm_bytes;
    ddr_free_bytes[rank] -= shard.storage.ddr_bytes;
    hbm_used_bytes[rank] += shard.storage.hbm_bytes;
  }
};

DeviceState initial_state(const TorchrecTopology& topo) {
  const auto w = static_cast<std::size_t>(topo.world_size);
  return {std::vector<double>(w, 0.0), topo.hbm_cap_bytes, topo.ddr_cap_bytes, std::vector<std::int64_t>(w, 0)};
}

std::string describe(const Task& task, const ShardingOption& option) {
  return concat("table '", task.workload.tables[option.table].name, "' (", to_string(option.type), ", ",
                to_string(option.kernel), ")");
}

/**
 * Min-heap key of the device partitioner: (accumulated perf, rank % L, rank) (§1.8). A rank whose
 * perf changes outside the heap (host placement) is pushed again; keys whose perf no longer
 * matches the rank's are stale and skipped when popped (lazy deletion).
 */
using HeapKey = std::tuple<double, int, int>;
using MinHeap = std::priority_queue<HeapKey, std::vector<HeapKey>, std::greater<>>;

MinHeap build_heap(const DeviceState& state, int local_world_size) {
  std::vector<HeapKey> keys;
  for (int r = 0; r < static_cast<int>(state.perf_ms.size()); ++r) {
    keys.emplace_back(state.perf_ms[r], r % local_world_size, r);
  }
  return MinHeap(std::greater<>(), std::move(keys));
}

/** `uniform` (RW): shard i on rank i; needs num_shards == world_size. "" or the failure. */
std::string place_uniform(const Task& task, const ShardingOption& option, DeviceState& state, std::vector<int>& ranks) {
  if (static_cast<int>(option.shards.size()) != static_cast<int>(state.perf_ms.size())) {
    return describe(task, option) + ": uniform placement needs one shard per rank";
  }
  for (int i = 0; i < static_cast<int>(option.shards.size()); ++i) {
    if (!state.fits(i, option.shards[i].storage)) {
      return concat(describe(task, option), ": shard ", i, " needs ", option.shards[i].storage.hbm_bytes,
                    " HBM bytes, rank ", i, " has ", state.hbm_free_bytes[i], " free");
    }
    state.place(i, option.shards[i]);
    ranks[i] = i;
  }
  return "";
}

/** `device` (TW, CW): each shard onto the first rank popped from the min-heap that fits it. */
std::string place_on_devices(const Task& task, const ShardingOption& option, DeviceState& state, MinHeap& heap,
                             std::vector<int>& ranks) {
  for (std::size_t s = 0; s < option.shards.size(); ++s) {
    std::vector<HeapKey> popped;
    int chosen = -1;
    while (!heap.empty() && chosen < 0) {
      const HeapKey key = heap.top();
      heap.pop();
      const int rank = std::get<2>(key);
      if (std::get<0>(key) != state.perf_ms[rank]) continue;  // stale: the rank was re-pushed
      if (state.fits(rank, option.shards[s].storage)) {
        chosen = rank;
        state.place(rank, option.shards[s]);
        heap.emplace(state.perf_ms[rank], std::get<1>(key), rank);
      } else {
        popped.push_back(key);
      }
    }
    for (const HeapKey& key : popped) heap.push(key);
    if (chosen < 0) {
      return concat(describe(task, option), ": shard ", s, " (", option.shards[s].storage.hbm_bytes,
                    " HBM bytes) fits on no rank");
    }
    ranks[s] = chosen;
  }
  return "";
}

/** `host` (TWRW): hosts by summed perf; the first whole host with room takes shard i on local rank i. */
std::string place_on_host(const Task& task, const ShardingOption& option, DeviceState& state, int local_world_size,
                          std::vector<int>& ranks) {
  const int num_hosts = static_cast<int>(state.perf_ms.size()) / local_world_size;
  std::vector<std::pair<double, int>> hosts;
  for (int h = 0; h < num_hosts; ++h) {
    const auto first = state.perf_ms.begin() + static_cast<std::ptrdiff_t>(h) * local_world_size;
    hosts.emplace_back(std::accumulate(first, first + local_world_size, 0.0), h);
  }
  std::stable_sort(hosts.begin(), hosts.end());
  for (const auto& [perf, h] : hosts) {
    bool fits = true;
    for (int i = 0; i < local_world_size && fits; ++i) {
      fits = state.fits(h * local_world_size + i, option.shards[i].storage);
    }
    if (!fits) continue;
    for (int i = 0; i < local_world_size; ++i) {
      state.place(h * local_world_size + i, option.shards[i]);
      ranks[i] = h * local_world_size + i;
    }
    return "";
  }
  return describe(task, option) + ": fits on no host";
}

/** Groups (one option each) by descending storage (hbm, ddr) or perf; stable like Python's sort. */
std::vector<std::size_t> non_uniform_order(const std::vector<const ShardingOption*>& proposal, bool by_perf) {
  using SortKey = std::tuple<double, std::int64_t, std::int64_t>;
  std::vector<std::pair<SortKey, std::size_t>> keyed;
  for (std::size_t k = 0; k < proposal.size(); ++k) {
    const ShardingOption& o = *proposal[k];
    if (o.is_uniform()) continue;
    keyed.push_back({by_perf ? SortKey{o.perf_sum_ms(), 0, 0} : SortKey{0.0, o.hbm_sum_bytes(), o.ddr_sum_bytes()}, k});
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::size_t> order;
  for (const auto& [key, k] : keyed) order.push_back(k);
  return order;
}

PartitionOutcome failed(std::string why) { return {false, {}, std::move(why)}; }

}  // namespace

PartitionOutcome greedy_partition(const std::vector<const ShardingOption*>& proposal, const Task& task,
                                  const TorchrecTopology& topo, bool by_perf) {
  DeviceState state = initial_state(topo);
  Partition partition;
  partition.ranks.resize(proposal.size());
  for (std::size_t k = 0; k < proposal.size(); ++k) {
    partition.ranks[k].assign(proposal[k]->shards.size(), -1);
    if (!proposal[k]->is_uniform()) continue;
    if (auto why = place_uniform(task, *proposal[k], state, partition.ranks[k]); !why.empty()) {
      return failed(why);
    }
  }
  MinHeap heap = build_heap(state, topo.local_world_size);
  for (std::size_t k : non_uniform_order(proposal, by_perf)) {
    const ShardingOption& option = *proposal[k];
    std::string why;
    if (option.is_host()) {
      why = place_on_host(task, option, state, topo.local_world_size, partition.ranks[k]);
      for (int r : partition.ranks[k]) {  // re-push the host's ranks; their old keys go stale
        if (r >= 0) heap.emplace(state.perf_ms[r], r % topo.local_world_size, r);
      }
    } else {
      why = place_on_devices(task, option, state, heap, partition.ranks[k]);
    }
    if (!why.empty()) return failed(why);
  }
  // NoopPerfModel sums each rank's shards in proposal order, not in placement order: the same
  // value up to rounding, and ties between proposals are decided by that rounding (§1.10).
  partition.perf_by_rank_ms.assign(state.perf_ms.size(), 0.0);
  for (std::size_t k = 0; k < proposal.size(); ++k) {
    for (std::size_t s = 0; s < proposal[k]->shards.size(); ++s) {
      const int r = partition.ranks[k][s];
      if (r >= 0) partition.perf_by_rank_ms[static_cast<std::size_t>(r)] += proposal[k]->shards[s].perf.total_ms();
    }
  }
  partition.hbm_by_rank_bytes = std::move(state.hbm_used_bytes);
  return {true, std::move(partition), ""};
}

PartitionOutcome memory_balanced_partition(const std::vector<const ShardingOption*>& proposal, const Task& task,
                                           const TorchrecTopology& topo) {
  constexpr int kMaxSearchCount = 10;
  constexpr double kTolerance = 0.02;
  PartitionOutcome best = greedy_partition(proposal, task, topo, /*by_perf=*/true);
  if (!best.ok) return best;
  const double original_rating = rate_partition(best.partition);
  const auto& hbm = best.partition.hbm_by_rank_bytes;
  std::int64_t max_hbm = *std::max_element(hbm.begin(), hbm.end());
  std::int64_t largest_shard = 0;
  for (const ShardingOption* o : proposal) {
    for (const auto& s : o->shards) largest_shard = std::max(largest_shard, s.storage.hbm_bytes);
  }
  std::int64_t min_hbm =
      std::max(std::accumulate(hbm.begin(), hbm.end(), std::int64_t{0}) / topo.world_size, largest_shard);
  TorchrecTopology capped = topo;
  for (int search = 0; search < kMaxSearchCount && min_hbm + kMemoryBalancedStepBytes < max_hbm; ++search) {
    const std::int64_t mid = (min_hbm + max_hbm) / 2;
    for (std::size_t r = 0; r < capped.hbm_cap_bytes.size(); ++r) {
      capped.hbm_cap_bytes[r] = std::min(topo.hbm_cap_bytes[r], mid);
    }
    PartitionOutcome next = greedy_partition(proposal, task, capped, /*by_perf=*/true);
    if (!next.ok || rate_partition(next.partition) > original_rating * (1.0 + kTolerance)) {
      min_hbm = mid;
    } else {
      best = std::move(next);
      max_hbm = mid;
    }
  }
  return best;
}

double rate_partition(const Partition& partition) {
  const auto& perf = partition.perf_by_rank_ms;
  return perf.empty() ? 0.0 : *std::max_element(perf.begin(), perf.end());
}

Plan to_plan(const Task& task, const std::vector<const ShardingOption*>& proposal, const Partition& partition) {
  Plan plan;
  plan.provenance.task_id = task.id;
  for (std::size_t k = 0; k < proposal.size(); ++k) {
    const ShardingOption& option = *proposal[k];
    TablePlacement placement{task.workload.tables[option.table].name, option.type, {}};
    for (std::size_t s = 0; s < option.shards.size(); ++s) {
      const OptionShard& os = option.shards[s];
      if (os.num_rows == 0) continue;  // RW/TWRW tails hold no rows (§1.4)
      Shard shard{partition.ranks[k][s],       os.row_offset,
                  os.row_offset + os.num_rows, os.col_offset,
                  os.col_offset + os.num_cols, -1};
      if (option.kernel == ComputeKernel::kFusedUvm) shard.hbm_rows = 0;
      if (option.kernel == ComputeKernel::kFusedUvmCaching) {
        shard.hbm_rows =
            std::min<std::int64_t>(os.num_rows, std::llround(kUvmCachingRatio * static_cast<double>(os.num_rows)));
      }
      placement.shards.push_back(shard);
    }
    plan.tables.push_back(std::move(placement));
  }
  return plan;
}

}  // namespace embshard::detail::torchrec
