#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "embshard/data/data_io.h"
#include "embshard/data/derived_stats.h"
#include "embshard/data/index_batch.h"
#include "embshard/data/pool.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/plan/plan_io.h"
#include "embshard/shard/sharder.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;

TEST(DerivedStats, AreValidStatisticsAcrossShapes) {
  const DerivedStatsModel model = pool_median_model();
  for (std::int64_t rows : {1LL, 7LL, 1000LL, 4000000LL, 1000000000LL})
    for (double pooling : {0.0, 0.02, 1.0, 3.5, 90.0})
      for (std::int64_t batch : {1LL, 512LL, 65536LL}) {
        const TableStats s = derive_table_stats(rows, pooling, -1.0, batch, model, "t");
        EXPECT_EQ(find_error_in_stats(s, "t"), "") << rows << " " << pooling << " " << batch;
        EXPECT_EQ(s.num_rows, rows);
        EXPECT_DOUBLE_EQ(s.coverage, std::min(1.0, pooling));
        EXPECT_LE(s.num_distinct, rows);
      }
}

TEST(DerivedStats, MatchWhatIsMeasuredOnIndicesDrawnFromTheModel) {
  // The derived statistics are the model's expectation, so a batch drawn from the same model
  // must measure close to them.
  const DerivedStatsModel model = pool_median_model();
  const TableStats derived = derive_table_stats(2000000, 4.0, -1.0, 16384, model, "t");
  PoolTable t;
  t.num_rows = 2000000;
  t.pooling_factor = 4.0;
  t.coverage = 1.0;
  t.zipf_alpha = model.zipf_alpha;
  t.zipf_offset = model.zipf_offset;
  t.active_rows = std::llround(model.active_ratio * 4.0 * 65536);
  const TableStats measured = compute_table_stats(materialise_table(t, 16384));
  EXPECT_NEAR(static_cast<double>(measured.num_distinct) / derived.num_distinct, 1.0, 0.05);
  EXPECT_NEAR(measured.pooling_factor, derived.pooling_factor, 0.1);
}

TEST(DerivedStats, SkewParametersMoveTheDistinctCount) {
  DerivedStatsModel flat = pool_median_model();
  DerivedStatsModel skewed = flat;
  flat.zipf_alpha = 0.2;
  skewed.zipf_alpha = 1.6;
  const auto distinct = [](const DerivedStatsModel& m) {
    return derive_table_stats(10000000, 8.0, -1.0, 65536, m, "t").num_distinct;
  };
  EXPECT_GT(distinct(flat), distinct(skewed));
  DerivedStatsModel wide = pool_median_model();
  wide.active_ratio = 0.9;
  EXPECT_GT(distinct(wide), distinct(pool_median_model()));
}

TEST(DerivedStats, BadShapesAndModelsNameTheField) {
  const DerivedStatsModel m = pool_median_model();
  EXPECT_NE(error_of([&] { (void)derive_table_stats(0, 1.0, -1.0, 8, m, "table 'x'"); }).find("table 'x': num_rows"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)derive_table_stats(10, -1.0, -1.0, 8, m, "x"); }).find("pooling_factor"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)derive_table_stats(10, 0.5, 0.9, 8, m, "x"); }).find("above the pooling factor"),
            std::string::npos);
  DerivedStatsModel bad = m;
  bad.zipf_alpha = -1;
  EXPECT_NE(find_error_in_model(bad, "x").find("zipf_alpha"), std::string::npos);
}

const char* kShapeOnlyTask = R"({"schema_version": 1, "batch_size": 4096,
  "topology": {"preset": "v100:hbm_gib=4"},
  "tables": [{"name": "user", "dim": 64, "stats": {"num_rows": 5000000, "pooling_factor": 1}},
             {"name": "item", "dim": 32, "dtype": "fp16",
              "stats": {"num_rows": 200000, "pooling_factor": 12.5, "coverage": 0.6}},
             {"name": "given", "dim": 16, "pool_id": 4}]})";

TEST(DerivedStats, TaskJsonDerivesShapeOnlyTablesAndRoundTripsExactly) {
  const Task task = task_from_json(kShapeOnlyTask, "t.json");
  const auto& tables = task.workload.tables;
  EXPECT_EQ(tables[0].stats_origin, pool_median_model().origin());
  EXPECT_DOUBLE_EQ(tables[1].stats.coverage, 0.6);
  EXPECT_EQ(tables[1].stats.batch_size, 4096);
  EXPECT_EQ(tables[2].stats_origin, "");
  const std::string text = task_to_json(task);
  const Task back = task_from_json(text, "back.json");
  EXPECT_EQ(task_to_json(back), text);
  EXPECT_EQ(back.workload.tables[0].stats.num_distinct, tables[0].stats.num_distinct);
  EXPECT_EQ(back.workload.tables[0].stats_origin, tables[0].stats_origin);
}

TEST(DerivedStats, TaskLevelModelIsUsedAndChecked) {
  std::string text = kShapeOnlyTask;
  text.insert(text.find("\"tables\""), R"("derived_stats": {"zipf_alpha": 1.3}, )");
  const Task task = task_from_json(text, "t.json");
  EXPECT_NE(task.workload.tables[0].stats_origin.find("zipf_alpha=1.3"), std::string::npos);
  std::string bad = kShapeOnlyTask;
  bad.insert(bad.find("\"tables\""), R"("derived_stats": {"zipf_alpha": 9}, )");
  const std::string err = error_of([&] { (void)task_from_json(bad, "t.json"); });
  EXPECT_NE(err.find("t.json: derived_stats: zipf_alpha"), std::string::npos) << err;
  std::string negative = kShapeOnlyTask;
  negative.replace(negative.find("\"coverage\": 0.6"), 15, "\"coverage\": -0.5");
  const std::string err3 = error_of([&] { (void)task_from_json(negative, "t.json"); });
  EXPECT_NE(err3.find("t.json: tables[1].stats.coverage"), std::string::npos) << err3;
  std::string extra = kShapeOnlyTask;
  extra.replace(extra.find("\"pooling_factor\": 1}"), 20, "\"pooling_factor\": 1, \"num_distinct\": 4}");
  const std::string err2 = error_of([&] { (void)task_from_json(extra, "t.json"); });
  EXPECT_NE(err2.find("num_distinct: unknown field"), std::string::npos) << err2;
}

TEST(DerivedStats, PlansNameTheTablesWithDerivedStatistics) {
  const Task task = task_from_json(kShapeOnlyTask, "t.json");
  auto cost = make_cost_model("sim", task);
  const Plan plan = plan_task("greedy", task, cost.get(), Context{}).plan;
  EXPECT_EQ(plan.provenance.derived_stats_tables, (std::vector<std::string>{"user", "item"}));
  const Plan back = plan_from_json(plan_to_json(plan), "p.json");
  EXPECT_EQ(back.provenance.derived_stats_tables, plan.provenance.derived_stats_tables);
  EXPECT_EQ(plan_to_json(back), plan_to_json(plan));
}

}  // namespace
}  // namespace embshard
