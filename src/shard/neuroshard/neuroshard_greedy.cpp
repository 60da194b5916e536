// NeuroShard's inner loop: pieces, the insertion-order cost cache and the greedy table-wise
// placement for one scale (refs-zha.md §5.4 `_greedy`; the algorithm is described in
// neuroshard.h).
#include <algorithm>
#include <numeric>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "shard/neuroshard/neuroshard.h"

namespace embshard::detail::neuroshard {

// ---- pieces ------------------------------------------------------------------------------------

std::vector<Piece> whole_tables(const Task& task) {
  std::vector<Piece> pieces;
  const auto& tables = task.workload.tables;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    pieces.push_back({static_cast<int>(t), 0, tables[t].dim});
  }
  return pieces;
}

std::int64_t piece_bytes(const Task& task, const Piece& piece) {
  const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(piece.table)];
  return spec.shard_bytes(spec.num_rows(), piece.cols());
}

PlacedShard placed_shard(const Task& task, const Piece& piece, int device) {
  PlacedShard placed;
  placed.table = piece.table;
  placed.shard.device = device;
  placed.shard.row_end = task.workload.tables[static_cast<std::size_t>(piece.table)].num_rows();
  placed.shard.col_begin = piece.col_begin;
  placed.shard.col_end = piece.col_end;
  return placed;
}

bool splittable(const Piece& piece) { return piece.cols() % 8 == 0; }

void split_piece(std::vector<Piece>& pieces, int index) {
  Piece& left = pieces.at(static_cast<std::size_t>(index));
  EMBSHARD_ASSERT(splittable(left));
  const Piece right{left.table, left.col_begin + left.cols() / 2, left.col_end};
  left.col_end = right.col_begin;
  pieces.push_back(right);
}

// ---- cost cache --------------------------------------------------------------------------------

std::size_t ShardCostCache::EdgeHash::operator()(const Edge& e) const {
  const auto u = [](int v) { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(v)); };
  return static_cast<std::size_t>(derive_seed((u(e.parent) << 32) | u(e.table), (u(e.col_begin) << 32) | u(e.col_end)));
}

ShardCostCache::ShardCostCache(ComputeModel& model) : model_(model), nodes_(1) {}

int ShardCostCache::child(int node, const PlacedShard& shard) {
  const Edge edge{node, shard.table, shard.shard.col_begin, shard.shard.col_end};
  const auto [it, added] = edges_.try_emplace(edge, static_cast<int>(nodes_.size()));
  if (added) nodes_.emplace_back();
  return it->second;
}

const DeviceCompute& ShardCostCache::lookup(const Task& task, int node, std::span<const PlacedShard> shards,
                                            const Context& ctx) {
  ++queries_;
  Node& entry = nodes_[static_cast<std::size_t>(node)];
  if (entry.known) {
    ++hits_;
  } else {
    entry.value = model_.device_compute(task, shards, ctx);
    entry.known = true;
  }
  return entry.value;
}

double ShardCostCache::total_ms(const Task& task, int node, std::span<const PlacedShard> shards, const Context& ctx) {
  const DeviceCompute& c = lookup(task, node, shards, ctx);
  return c.fw_ms + c.bw_ms;
}

DeviceCompute ShardCostCache::device_compute(const Task& task, std::span<const PlacedShard> shards,
                                             const Context& ctx) {
  int node = kEmptyList;
  for (const PlacedShard& p : shards) {
    const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(p.table)];
    EMBSHARD_ASSERT(p.shard.row_begin == 0 && p.shard.row_end == spec.num_rows() &&
                    p.shard.hbm_rows < 0);  // the key holds columns only
    node = child(node, p);
  }
  return lookup(task, node, shards, ctx);
}

// ---- split state -------------------------------------------------------------------------------

namespace {

/** Largest predicted single-piece compute first; ties: the higher index (refs-zha §5.4). */
std::vector<int> placement_order(const std::vector<double>& single_ms) {
  std::vector<int> order(single_ms.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const double ca = single_ms[static_cast<std::size_t>(a)];
    const double cb = single_ms[static_cast<std::size_t>(b)];
    return ca > cb || (ca == cb && a > b);
  });
  return order;
}

}  // namespace

SplitState make_split_state(const Task& task, std::vector<Piece> pieces, ShardCostCache& cache, const Context& ctx) {
  SplitState state;
  state.pieces = std::move(pieces);
  for (const Piece& piece : state.pieces) {
    const PlacedShard alone = placed_shard(task, piece, 0);
    const int node = cache.child(ShardCostCache::kEmptyList, alone);
    state.single_ms.push_back(cache.total_ms(task, node, {&alone, 1}, ctx));
    state.bytes.push_back(piece_bytes(task, piece));
  }
  state.order = placement_order(state.single_ms);
  return state;
}

// ---- greedy placement for one scale ------------------------------------------------------------

namespace {

/** What the greedy tracks per device. */
struct DeviceLoad {
  std::vector<PlacedShard> shards;  ///< in insertion order (the cache key)
  int node = ShardCostCache::kEmptyList;
  double compute_ms = 0.0;  ///< the model's fw+bw of the whole list
  std::int64_t bytes = 0;
  std::int64_t cols = 0;
};

/** The feasible device with the least predicted compute (ties: fewer bytes, lower id), or -1. */
int least_loaded_feasible(const Task& task, const std::vector<DeviceLoad>& loads, std::int64_t bytes, int cols,
                          double cap) {
  int best = -1;
  for (std::size_t d = 0; d < loads.size(); ++d) {
    const DeviceLoad& l = loads[d];
    if (l.bytes + bytes > task.topology.devices[d].hbm_bytes) continue;
    if (static_cast<double>(l.cols + cols) > cap) continue;
    if (best < 0) {
      best = static_cast<int>(d);
      continue;
    }
    const DeviceLoad& b = loads[static_cast<std::size_t>(best)];
    if (l.compute_ms < b.compute_ms || (l.compute_ms == b.compute_ms && l.bytes < b.bytes)) {
      best = static_cast<int>(d);
    }
  }
  return best;
}

/** Why no device takes a piece: memory, or the dim cap on every device with room. */
std::string why_nothing_fits(const Task& task, const std::vector<DeviceLoad>& loads, std::int64_t bytes, int cols,
                             double cap, double scale) {
  std::int64_t most_free = 0;
  for (std::size_t d = 0; d < loads.size(); ++d) {
    most_free = std::max(most_free, task.topology.devices[d].hbm_bytes - loads[d].bytes);
  }
  if (most_free < bytes) {
    return concat("needs ", bytes, " bytes, the most HBM left on a device is ", most_free);
  }
  return concat("its ", cols, " columns exceed the dim cap ", cap, " (scale ", scale, ") on every device with room");
}

void add_to_device(const Task& task, DeviceLoad& load, const PlacedShard& shard, std::int64_t bytes,
                   ShardCostCache& cache, const Context& ctx) {
  load.shards.push_back(shard);
  load.node = cache.child(load.node, shard);
  load.compute_ms = cache.total_ms(task, load.node, load.shards, ctx);  // re-predicted, not summed
  load.bytes += bytes;
  load.cols += shard.shard.num_cols();
}

}  // namespace

Placement greedy_place(const Task& task, const SplitState& state, double scale, ShardCostCache& cache,
                       const Context& ctx) {
  const int num_devices = task.topology.num_devices();
  std::int64_t total_cols = 0;
  for (const Piece& piece : state.pieces) total_cols += piece.cols();
  const double cap = scale * (static_cast<double>(total_cols) / num_devices);
  std::vector<DeviceLoad> loads(static_cast<std::size_t>(num_devices));
  const double empty_ms = cache.total_ms(task, ShardCostCache::kEmptyList, {}, ctx);
  for (DeviceLoad& load : loads) load.compute_ms = empty_ms;
  Placement placement;
  placement.devices.assign(state.pieces.size(), -1);
  for (const int p : state.order) {
    const Piece& piece = state.pieces[static_cast<std::size_t>(p)];
    const std::int64_t bytes = state.bytes[static_cast<std::size_t>(p)];
    const int d = least_loaded_feasible(task, loads, bytes, piece.cols(), cap);
    if (d < 0) {
      placement.failure = {p, why_nothing_fits(task, loads, bytes, piece.cols(), cap, scale)};
      return placement;
    }
    add_to_device(task, loads[static_cast<std::size_t>(d)], placed_shard(task, piece, d), bytes, cache, ctx);
    placement.devices[static_cast<std::size_t>(p)] = d;
  }
  return placement;
}

// ---- plans -------------------------------------------------------------------------------------

std::vector<double> grid_scales(int scales, double max_scale) {
  if (scales <= 1) return {1.0};
  std::vector<double> out;
  for (int i = 0; i < scales; ++i) out.push_back(1.0 + i * (max_scale - 1.0) / (scales - 1));
  return out;
}

Plan plan_of_pieces(const Task& task, std::span<const Piece> pieces, std::span<const int> devices,
                    std::span<const int> piece_order) {
  const auto& tables = task.workload.tables;
  std::vector<int> slot(tables.size(), -1);
  Plan plan;
  plan.provenance.task_id = task.id;
  plan.tables.reserve(tables.size());
  for (const int p : piece_order) {
    const Piece& piece = pieces[static_cast<std::size_t>(p)];
    int& s = slot[static_cast<std::size_t>(piece.table)];
    if (s < 0) {
      s = static_cast<int>(plan.tables.size());
      plan.tables.push_back({tables[static_cast<std::size_t>(piece.table)].name, ShardingType::kTableWise, {}});
    }
    plan.tables[static_cast<std::size_t>(s)].shards.push_back(
        placed_shard(task, piece, devices[static_cast<std::size_t>(p)]).shard);
  }
  for (TablePlacement& placement : plan.tables) {
    if (placement.shards.size() > 1) placement.type = ShardingType::kColumnWise;
  }
  EMBSHARD_ASSERT(plan.tables.size() == tables.size());
  return plan;
}

std::vector<int> task_order(std::span<const Piece> pieces) {
  std::vector<int> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const Piece& pa = pieces[static_cast<std::size_t>(a)];
    const Piece& pb = pieces[static_cast<std::size_t>(b)];
    return pa.table != pb.table ? pa.table < pb.table : pa.col_begin < pb.col_begin;
  });
  return order;
}

}  // namespace embshard::detail::neuroshard
