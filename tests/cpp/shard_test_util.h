#pragma once
// Tasks for the sharder tests: hand-made tables and small tasks drawn from the built-in pool.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/data/pool.h"
#include "embshard/data/random.h"
#include "embshard/data/task.h"

namespace embshard::test_util {

/** A hand-made table: only dim, rows and pooling are set (what the greedy heuristics read). */
inline TableSpec hand_table(const std::string& name, int dim, std::int64_t rows, double pooling) {
  TableSpec t;
  t.name = name;
  t.dim = dim;
  t.stats.num_rows = rows;
  t.stats.pooling_factor = pooling;
  return t;
}

/** `n` tables of pool 0 with lookups, dims drawn from `dims`, on `topology`, at batch 4096. */
inline Task pool_task(int n, const std::string& topology, std::uint64_t seed, std::span<const int> dims) {
  static const Pool pool = Pool::generate(0);
  Rng rng(seed);
  Task task;
  task.id = "pool-" + std::to_string(seed);
  task.workload.batch_size = 4096;
  task.topology = make_topology(topology);
  while (static_cast<int>(task.workload.tables.size()) < n) {
    const auto id = static_cast<std::int64_t>(rng.below(pool.tables().size()));
    if (pool.table(id).pooling_factor <= 0) continue;
    TableSpec t;
    t.name = "t" + std::to_string(task.workload.tables.size());
    t.dim = dims[rng.below(dims.size())];
    t.source_id = id;
    t.stats = pool.expected_stats(id, task.workload.batch_size);
    task.workload.tables.push_back(t);
  }
  return task;
}

/** `n` pool tables with lookups, dims in {4..64}, on `topology`, at batch 4096. */
inline Task tiny_task(int n, const std::string& topology, std::uint64_t seed) {
  static constexpr int kDims[] = {4, 8, 16, 32, 64};
  Task task = pool_task(n, topology, seed, kDims);
  task.id = "tiny-" + std::to_string(seed);
  return task;
}

/** A context that logs nothing, with `seed`. */
inline Context quiet(std::uint64_t seed = 0) {
  Context ctx;
  ctx.verbosity = LogLevel::kQuiet;
  ctx.seed = seed;
  return ctx;
}

}  // namespace embshard::test_util
