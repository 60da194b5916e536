#include "embshard/data/task_lookups.h"

#include <optional>

#include "embshard/core/error.h"
#include "embshard/core/parallel.h"
#include "embshard/data/random.h"

namespace embshard {

std::vector<PoolTable> task_lookup_models(const Task& task) {
  std::optional<Pool> pool;
  std::vector<PoolTable> models;
  models.reserve(task.workload.tables.size());
  for (std::size_t t = 0; t < task.workload.tables.size(); ++t) {
    const TableSpec& table = task.workload.tables[t];
    if (table.source_id < 0) {
      models.push_back(model_from_stats(table.stats, derive_seed(task.seed, t)));
      continue;
    }
    if (!pool) pool = Pool::generate(task.pool_seed);
    EMBSHARD_CHECK(table.source_id < static_cast<std::int64_t>(pool->tables().size()), "task table '", table.name,
                   "': pool_id ", table.source_id, " is not in pool ", task.pool_seed);
    const PoolTable& model = pool->table(table.source_id);
    EMBSHARD_CHECK(model.num_rows == table.num_rows(), "task table '", table.name, "': pool_id ", table.source_id,
                   " of pool ", task.pool_seed, " has ", model.num_rows, " rows but the task says ", table.num_rows(),
                   " (was the task made from another pool?)");
    models.push_back(model);
  }
  return models;
}

std::vector<TableBatch> draw_task_batch(const Task& task, std::int64_t batch_size, std::uint64_t batch_number,
                                        int threads) {
  EMBSHARD_CHECK(batch_size >= 1, "draw_task_batch: batch size must be positive, got ", batch_size);
  const std::vector<PoolTable> models = task_lookup_models(task);
  std::vector<TableBatch> batches(models.size());
  parallel_for(models.size(), threads,
               [&](std::size_t t) { batches[t] = materialise_table(models[t], batch_size, batch_number); });
  return batches;
}

}  // namespace embshard
