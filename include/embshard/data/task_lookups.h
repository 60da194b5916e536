#pragma once
/**
 * @file task_lookups.h
 * @brief The lookups a task's tables make, drawn as every measured run draws them: the measured
 *        backends (eval/evaluator.h) and the TorchRec runtime judge (python/embshard/torchrec_runtime.py).
 *
 * A task table that came from the NeuroShard pool (`source_id` ≥ 0) is drawn from that pool
 * table's generative model (pool `task.pool_seed`); any other table from `model_from_stats` of
 * its statistics, seeded by (task.seed, its index). Batch `b` of a table is `materialise_table`'s
 * draw number b: the same lookups in every process and on every run.
 */
#include <cstdint>
#include <vector>

#include "embshard/data/index_batch.h"
#include "embshard/data/pool.h"
#include "embshard/data/task.h"

namespace embshard {

/**
 * The generative lookup model of every table of `task`, in task order (file comment). Throws
 * Error naming the table when its pool id is not in the pool or the pool table's rows differ from
 * the task's (a task made from another pool).
 */
[[nodiscard]] std::vector<PoolTable> task_lookup_models(const Task& task);

/**
 * Draw `batch_number` of `batch_size` samples of every table of `task` (CSR, rows 0-based), on up
 * to `threads` threads.
 */
[[nodiscard]] std::vector<TableBatch> draw_task_batch(const Task& task, std::int64_t batch_size,
                                                      std::uint64_t batch_number, int threads);

}  // namespace embshard
