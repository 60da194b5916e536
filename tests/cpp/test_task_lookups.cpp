#include <gtest/gtest.h>

#include "embshard/core/error.h"
#include "embshard/data/pool.h"
#include "embshard/data/random.h"
#include "embshard/data/task_lookups.h"
#include "embshard/eval/task_gen.h"

namespace embshard {
namespace {

Task pool_task() {
  const auto gen = make_task_generator("neuroshard:devices=2,max_dim=16");
  return gen->generate(TableSource::from_pool(0, gen->batch_size()), 5, 0);
}

void expect_same(const TableBatch& a, const TableBatch& b) {
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.indices, b.indices);
}

TEST(TaskLookups, PoolTablesDrawTheirPoolModelAndOtherTablesOneFittedToTheirStats) {
  Task task = pool_task();
  ASSERT_GE(task.workload.tables.size(), 2u);
  task.workload.tables[1].source_id = -1;  // known by its statistics only
  const std::vector<TableBatch> drawn = draw_task_batch(task, 256, 3, 1);
  ASSERT_EQ(drawn.size(), task.workload.tables.size());
  const Pool pool = Pool::generate(task.pool_seed);
  for (std::size_t t = 0; t < drawn.size(); ++t) {
    const TableSpec& table = task.workload.tables[t];
    const PoolTable model =
        table.source_id >= 0 ? pool.table(table.source_id) : model_from_stats(table.stats, derive_seed(task.seed, t));
    expect_same(drawn[t], materialise_table(model, 256, 3));
    EXPECT_EQ(find_error_in_batch(drawn[t], table.num_rows(), table.name), "") << table.name;
  }
  // The draw is the batch number's, whatever the threads.
  const std::vector<TableBatch> threaded = draw_task_batch(task, 256, 3, 3);
  for (std::size_t t = 0; t < drawn.size(); ++t) expect_same(drawn[t], threaded[t]);
  EXPECT_NE(draw_task_batch(task, 256, 4, 1)[0].indices, drawn[0].indices);
}

TEST(TaskLookups, ATableOfAnotherPoolIsAnErrorNamingIt) {
  Task task = pool_task();
  task.workload.tables[0].source_id = 100000;
  try {
    (void)task_lookup_models(task);
    FAIL() << "a pool id outside the pool was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("task table '" + task.workload.tables[0].name + "'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)draw_task_batch(pool_task(), 0, 0, 1), Error);
}

}  // namespace
}  // namespace embshard
