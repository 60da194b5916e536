// Tests of the plan layer: find_error_in_plan, plan_memory, plan JSON and plan files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/plan/plan.h"
#include "embshard/plan/plan_io.h"
#include "plan_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

using test_util::plan_of;
using test_util::shard;
using test_util::TableShape;
using test_util::task_of;

/// Task with one table t0 (1000 × 64 fp32) and a second table t1 (500 × 32), 4 devices.
Task two_table_task() { return task_of({{"t0", 1000, 64}, {"t1", 500, 32}}, 4); }

TablePlacement t1_whole(int device = 0) { return {"t1", ShardingType::kTableWise, {shard(device, 0, 500, 0, 32)}}; }

void expect_valid(const Task& task, const Plan& plan) { EXPECT_EQ(find_error_in_plan(task, plan), ""); }

void expect_error(const Task& task, const Plan& plan, std::initializer_list<const char*> words) {
  const std::string err = find_error_in_plan(task, plan);
  ASSERT_FALSE(err.empty()) << "plan accepted, expected an error with '" << *words.begin() << "'";
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  EXPECT_EQ(err.rfind("plan: ", 0), 0u) << err;
  for (const char* w : words) EXPECT_NE(err.find(w), std::string::npos) << "'" << w << "' not in: " << err;
}

// ---- valid plans ------------------------------------------------------------------------------

TEST(PlanCheck, AcceptsTableWise) {
  const Task task = task_of({{"a", 100, 16}, {"b", 200, 8}, {"c", 300, 4}}, 2);
  const Plan plan = table_wise_plan(task, {0, 1, 0});
  expect_valid(task, plan);
  ASSERT_EQ(plan.tables.size(), 3u);
  EXPECT_EQ(plan.tables[1].table, "b");
  EXPECT_EQ(plan.tables[1].shards[0].device, 1);
  EXPECT_EQ(plan.tables[2].shards[0].row_end, 300);
  EXPECT_EQ(plan.tables[2].shards[0].col_end, 4);
  EXPECT_EQ(plan.provenance.task_id, "test-task");
}

TEST(PlanCheck, AcceptsTablesInAnyOrder) {
  const Task task = two_table_task();
  expect_valid(task, plan_of({t1_whole(), {"t0", ShardingType::kTableWise, {shard(1, 0, 1000, 0, 64)}}}));
}

TEST(PlanCheck, AcceptsColumnWise) {
  const Task task = two_table_task();
  expect_valid(task, plan_of({{"t0", ShardingType::kColumnWise, {shard(2, 0, 1000, 16, 64), shard(1, 0, 1000, 0, 16)}},
                              t1_whole()}));
}

TEST(PlanCheck, AcceptsRowWise) {
  const Task task = two_table_task();
  expect_valid(task, plan_of({{"t0",
                               ShardingType::kRowWise,
                               {shard(0, 0, 300, 0, 64), shard(3, 700, 1000, 0, 64), shard(1, 300, 700, 0, 64)}},
                              t1_whole()}));
}

TEST(PlanCheck, AcceptsTableRowWise) {
  const Task task = task_of({{"t0", 1000, 64}, {"t1", 500, 32}}, 4, std::int64_t{1} << 40, std::int64_t{1} << 40,
                            /*devices_per_host=*/2);
  expect_valid(task,
               plan_of({{"t0", ShardingType::kTableRowWise, {shard(2, 0, 500, 0, 64), shard(3, 500, 1000, 0, 64)}},
                        t1_whole()}));
}

TEST(PlanCheck, AcceptsTieredRows) {
  Task task = two_table_task();
  task.constraints.allow_uvm = true;
  expect_valid(task,
               plan_of({{"t0", ShardingType::kRowWise, {shard(0, 0, 500, 0, 64, 100), shard(1, 500, 1000, 0, 64, 0)}},
                        {"t1", ShardingType::kTableWise, {shard(2, 0, 500, 0, 32, 500)}}}));
}

TEST(PlanCheck, AcceptsHbmRowsEqualToRowsWithoutUvm) {
  const Task task = two_table_task();
  expect_valid(task, plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64, 1000)}}, t1_whole()}));
}

TEST(PlanCheck, AcceptsSingleShardUnderEveryType) {
  const Task task = two_table_task();
  for (auto type :
       {ShardingType::kTableWise, ShardingType::kColumnWise, ShardingType::kRowWise, ShardingType::kTableRowWise}) {
    expect_valid(task, plan_of({{"t0", type, {shard(0, 0, 1000, 0, 64)}}, t1_whole()}));
  }
}

// ---- one test per check -----------------------------------------------------------------------

TEST(PlanCheck, RejectsUnknownTable) {
  const Task task = two_table_task();
  expect_error(task,
               plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64)}},
                        t1_whole(),
                        {"t9", ShardingType::kTableWise, {shard(0, 0, 10, 0, 4)}}}),
               {"table 't9'", "entry 2", "not in the task"});
}

TEST(PlanCheck, RejectsMissingTable) {
  const Task task = two_table_task();
  expect_error(task, plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64)}}}),
               {"table 't1'", "no placement"});
}

TEST(PlanCheck, RejectsDuplicateTable) {
  const Task task = two_table_task();
  expect_error(task, plan_of({t1_whole(0), {"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64)}}, t1_whole(1)}),
               {"table 't1'", "twice", "entries 0 and 2"});
}

TEST(PlanCheck, RejectsTableWithoutShards) {
  const Task task = two_table_task();
  expect_error(task, plan_of({{"t0", ShardingType::kTableWise, {}}, t1_whole()}), {"table 't0'", "no shards"});
}

TEST(PlanCheck, RejectsDeviceOutOfRange) {
  const Task task = two_table_task();
  expect_error(task, plan_of({{"t0", ShardingType::kTableWise, {shard(4, 0, 1000, 0, 64)}}, t1_whole()}),
               {"table 't0'", "shard 0", "device 4", "does not exist", "4 devices"});
  expect_error(task, plan_of({{"t0", ShardingType::kTableWise, {shard(-1, 0, 1000, 0, 64)}}, t1_whole()}),
               {"table 't0'", "device -1", "does not exist"});
}

TEST(PlanCheck, RejectsBadRowRange) {
  const Task task = two_table_task();
  const auto with = [](Shard s) {
    return plan_of({{"t0", ShardingType::kRowWise, {shard(0, 0, 500, 0, 64), s}}, t1_whole()});
  };
  expect_error(task, with(shard(1, 500, 1001, 0, 64)), {"table 't0'", "shard 1", "device 1", "rows [500, 1001)"});
  expect_error(task, with(shard(1, 500, 500, 0, 64)), {"table 't0'", "shard 1", "rows [500, 500)"});
  expect_error(task, with(shard(1, 600, 500, 0, 64)), {"table 't0'", "shard 1", "rows [600, 500)"});
  expect_error(task, plan_of({{"t0", ShardingType::kTableWise, {shard(0, -1, 1000, 0, 64)}}, t1_whole()}),
               {"table 't0'", "shard 0", "rows [-1, 1000)"});
}

TEST(PlanCheck, RejectsBadColumnRange) {
  const Task task = two_table_task();
  const auto with = [](Shard s) {
    return plan_of({t1_whole(), {"t0", ShardingType::kColumnWise, {shard(0, 0, 1000, 0, 32), s}}});
  };
  expect_error(task, with(shard(2, 0, 1000, 32, 68)), {"table 't0'", "shard 1", "device 2", "columns [32, 68)"});
  expect_error(task, with(shard(2, 0, 1000, 32, 32)), {"table 't0'", "shard 1", "columns [32, 32)"});
  expect_error(task, with(shard(2, 0, 1000, -4, 32)), {"table 't0'", "shard 1", "columns [-4, 32)"});
}

TEST(PlanCheck, RejectsColumnsNotMultipleOfFour) {
  const Task task = task_of({{"t7", 100, 72}}, 3);
  expect_error(task,
               plan_of({{"t7",
                         ShardingType::kColumnWise,
                         {shard(0, 0, 100, 0, 60), shard(1, 0, 100, 68, 72), shard(2, 0, 100, 60, 66)}}}),
               {"table 't7' shard 2 (device 2): columns [60, 66) are not a multiple of 4 wide"});
  expect_error(task,
               plan_of({{"t7",
                         ShardingType::kColumnWise,
                         {shard(0, 0, 100, 0, 4), shard(1, 0, 100, 2, 6), shard(2, 0, 100, 6, 72)}}}),
               {"table 't7' shard 1", "columns [2, 6)", "multiple of 4"});
}

TEST(PlanCheck, RejectsUncoveredCells) {
  const Task task = two_table_task();
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kRowWise, {shard(0, 0, 300, 0, 64), shard(1, 301, 1000, 0, 64)}}, t1_whole()}),
      {"table 't0'", "no shard covers row 300, column 0"});
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kColumnWise, {shard(0, 0, 1000, 0, 16), shard(1, 0, 1000, 20, 64)}}, t1_whole()}),
      {"table 't0'", "row 0, column 16"});
  expect_error(task, plan_of({{"t0", ShardingType::kRowWise, {shard(0, 0, 999, 0, 64)}}, t1_whole()}),
               {"table 't0'", "row 999"});
  expect_error(task, plan_of({{"t0", ShardingType::kRowWise, {shard(0, 1, 1000, 0, 64)}}, t1_whole()}),
               {"table 't0'", "row 0"});
}

TEST(PlanCheck, RejectsOverlappingShards) {
  const Task task = two_table_task();
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kRowWise, {shard(0, 0, 300, 0, 64), shard(1, 299, 1000, 0, 64)}}, t1_whole()}),
      {"table 't0': shard 1 (device 1)", "overlaps shard 0", "rows [0, 300)"});
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kColumnWise, {shard(0, 0, 1000, 0, 32), shard(1, 0, 1000, 28, 64)}}, t1_whole()}),
      {"table 't0'", "overlaps shard"});
  expect_error(task,
               plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64)}},
                        {"t1", ShardingType::kRowWise, {shard(0, 0, 500, 0, 32), shard(1, 0, 500, 0, 32)}}}),
               {"table 't1'", "overlaps shard 0"});
}

TEST(PlanCheck, RejectsBadHbmRows) {
  Task task = two_table_task();
  task.constraints.allow_uvm = true;
  expect_error(task, plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64, -2)}}, t1_whole()}),
               {"table 't0'", "shard 0", "device 0", "hbm_rows = -2"});
  expect_error(task, plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64, 1001)}}, t1_whole()}),
               {"table 't0'", "hbm_rows = 1001", "[0, 1000]"});
}

TEST(PlanCheck, RejectsUvmWhenNotAllowed) {
  const Task task = two_table_task();
  expect_error(task, plan_of({t1_whole(), {"t0", ShardingType::kTableWise, {shard(3, 0, 1000, 0, 64, 10)}}}),
               {"table 't0'", "shard 0", "device 3", "990 rows in UVM", "does not allow UVM"});
}

TEST(PlanCheck, RejectsColumnSplitWhenNotAllowed) {
  Task task = two_table_task();
  task.constraints.allow_column_split = false;
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kColumnWise, {shard(0, 0, 1000, 0, 16), shard(1, 0, 1000, 16, 64)}}, t1_whole()}),
      {"table 't0'", "shard 0", "column splits"});
}

TEST(PlanCheck, RejectsRowSplitWhenNotAllowed) {
  Task task = two_table_task();
  task.constraints.allow_row_split = false;
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kRowWise, {shard(0, 0, 100, 0, 64), shard(1, 100, 1000, 0, 64)}}, t1_whole()}),
      {"table 't0'", "shard 0", "row splits"});
}

TEST(PlanCheck, RejectsTableWiseWithSeveralShards) {
  const Task task = two_table_task();
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 100, 0, 64), shard(1, 100, 1000, 0, 64)}}, t1_whole()}),
      {"table 't0'", "table_wise", "exactly one shard, found 2"});
}

TEST(PlanCheck, RejectsColumnWiseShardNotSpanningRows) {
  const Task task = two_table_task();
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kColumnWise, {shard(0, 0, 100, 0, 64), shard(2, 100, 1000, 0, 64)}}, t1_whole()}),
      {"table 't0'", "column_wise", "all rows", "shard 0 (device 0)", "rows [0, 100)"});
}

TEST(PlanCheck, RejectsRowWiseShardNotSpanningColumns) {
  const Task task = two_table_task();
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kRowWise, {shard(0, 0, 1000, 0, 32), shard(2, 0, 1000, 32, 64)}}, t1_whole()}),
      {"table 't0'", "row_wise", "all columns", "shard 0", "columns [0, 32)"});
  expect_error(
      task,
      plan_of({{"t0", ShardingType::kTableRowWise, {shard(0, 0, 1000, 0, 32), shard(2, 0, 1000, 32, 64)}}, t1_whole()}),
      {"table 't0'", "table_row_wise", "all columns"});
}

TEST(PlanCheck, RejectsTableRowWiseAcrossHosts) {
  const Task task = task_of({{"t0", 1000, 64}, {"t1", 500, 32}}, 4, std::int64_t{1} << 40, std::int64_t{1} << 40,
                            /*devices_per_host=*/2);
  expect_error(task,
               plan_of({{"t0",
                         ShardingType::kTableRowWise,
                         {shard(0, 0, 300, 0, 64), shard(1, 300, 600, 0, 64), shard(2, 600, 1000, 0, 64)}},
                        t1_whole()}),
               {"table 't0'", "table_row_wise", "one host", "shard 2 (device 2)"});
}

TEST(PlanCheck, RejectsHbmOverBudget) {
  const Task task = task_of({{"a", 1 << 20, 256}, {"b", 1 << 20, 256}}, 2, /*hbm=*/kGiB + 10);
  expect_valid(task, table_wise_plan(task, {0, 1}));
  expect_error(task, table_wise_plan(task, {1, 1}),
               {"plan: device 1: HBM use 2.000 GiB (2147483648 bytes)", "HBM budget 1.000 GiB (1073741834 bytes)"});
}

TEST(PlanCheck, RejectsUvmOverBudget) {
  Task task = task_of({{"a", 1 << 20, 256}}, 2, /*hbm=*/kGiB, /*uvm=*/kGiB / 4);
  task.constraints.allow_uvm = true;
  const std::int64_t half = 1 << 19;
  expect_valid(task, plan_of({{"a", ShardingType::kTableWise, {shard(1, 0, 1 << 20, 0, 256, 3 * half / 2)}}}));
  expect_error(task, plan_of({{"a", ShardingType::kTableWise, {shard(1, 0, 1 << 20, 0, 256, half)}}}),
               {"plan: device 1: UVM use 0.500 GiB (536870912 bytes)", "UVM budget 0.250 GiB (268435456 bytes)"});
}

TablePlacement copies_of_t1(const std::vector<int>& devices) {
  TablePlacement tp{"t1", ShardingType::kDataParallel, {}};
  for (int d : devices) tp.shards.push_back(shard(d, 0, 500, 0, 32));
  return tp;
}

TEST(PlanCheck, DataParallelNeedsOneWholeCopyInHbmOnEveryDevice) {
  Task task = two_table_task();
  task.constraints.allow_uvm = true;
  const TablePlacement t0{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64)}};
  expect_valid(task, plan_of({t0, copies_of_t1({0, 1, 2, 3})}));
  expect_valid(task, plan_of({t0, copies_of_t1({3, 1, 0, 2})}));
  expect_error(task, plan_of({t0, copies_of_t1({0, 1, 2})}),
               {"table 't1': sharding type data_parallel needs one copy on each of the 4 devices, found 3"});
  expect_error(task, plan_of({t0, copies_of_t1({0, 1, 2, 2})}), {"shard 3 (device 2) is a second copy there"});
  TablePlacement half = copies_of_t1({0, 1, 2, 3});
  half.shards[2].row_end = 250;
  expect_error(task, plan_of({t0, half}), {"needs whole copies, but shard 2 (device 2) has rows [0, 250)"});
  TablePlacement tiered = copies_of_t1({0, 1, 2, 3});
  tiered.shards[1].hbm_rows = 100;
  expect_error(task, plan_of({t0, tiered}), {"keeps every row in HBM", "shard 1 (device 1) has hbm_rows = 100"});
  // Every copy counts in its device's memory, and a table's constraints may forbid copies.
  const auto memory = plan_memory(task, plan_of({t0, copies_of_t1({0, 1, 2, 3})}));
  for (const DeviceMemory& m : memory) EXPECT_GE(m.hbm_bytes, 500 * 32 * 4);
  task.workload.tables[1].constraints.sharding_types = {ShardingType::kTableWise};
  expect_error(task, plan_of({t0, copies_of_t1({0, 1, 2, 3})}),
               {"is data_parallel, but its constraints allow only table_wise"});
  EXPECT_FALSE(may_replicate(task, task.workload.tables[1]));
  EXPECT_TRUE(may_replicate(task, task.workload.tables[0]));
  EXPECT_FALSE(may_replicate(task_of({{"t", 10, 4}}, 1), task_of({{"t", 10, 4}}, 1).workload.tables[0]));
}

TEST(PlanCheck, GridNeedsColumnBlocksThatItsShardsShareWhole) {
  Task task = two_table_task();
  // t0 (1000 × 64): columns [0, 32) in rows [0, 400) and [400, 1000); columns [32, 64) in three row blocks.
  TablePlacement grid{"t0",
                      ShardingType::kGridShard,
                      {shard(0, 0, 400, 0, 32), shard(1, 400, 1000, 0, 32), shard(2, 0, 100, 32, 64),
                       shard(3, 100, 700, 32, 64), shard(0, 700, 1000, 32, 64)}};
  expect_valid(task, plan_of({grid, t1_whole()}));
  // The file keeps the type and every shard (what the evaluator and `check` read back).
  const Plan back = plan_from_json(plan_to_json(plan_of({grid, t1_whole(), copies_of_t1({0, 1, 2, 3})})), "grid.json");
  EXPECT_EQ(back.tables[0].type, ShardingType::kGridShard);
  EXPECT_EQ(back.tables[0].shards.size(), 5u);
  EXPECT_EQ(back.tables[2].type, ShardingType::kDataParallel);
  TablePlacement skew = grid;
  skew.shards[2].col_begin = 28;  // [28, 64) cuts across [0, 32), and the cells overlap
  expect_error(task, plan_of({skew, t1_whole()}), {"overlaps"});
  TablePlacement staircase{"t0",
                           ShardingType::kGridShard,
                           {shard(0, 0, 500, 0, 32), shard(1, 0, 500, 32, 64), shard(2, 500, 1000, 0, 16),
                            shard(3, 500, 1000, 16, 64)}};  // covers every cell, but no common column blocks
  expect_error(task, plan_of({staircase, t1_whole()}),
               {"grid_shard needs column blocks that shards share whole",
                "shard 0 (columns [0, 32)) cuts across shard 2 (columns [0, 16))"});
  task.workload.tables[0].constraints.min_partition = 64;  // the grid's 32-wide blocks are too narrow
  expect_error(task, plan_of({grid, t1_whole()}), {"below its min_partition 64"});
  task.workload.tables[0].constraints.min_partition = 0;
  task.constraints.allow_row_split = false;
  expect_error(task, plan_of({grid, t1_whole()}), {"split the table but the task does not allow row splits"});
}

// ---- helpers of the plan layer ----------------------------------------------------------------

TEST(PlanMemory, CountsHbmAndUvmPerDevice) {
  const Task task = task_of({{"a", 1000, 64}, {"b", 100, 8, WeightType::kF16}}, 3);
  const Plan plan = plan_of({{"a", ShardingType::kRowWise, {shard(0, 0, 400, 0, 64, 100), shard(2, 400, 1000, 0, 64)}},
                             {"b", ShardingType::kColumnWise, {shard(0, 0, 100, 0, 4), shard(1, 0, 100, 4, 8, 10)}}});
  const auto use = plan_memory(task, plan);
  ASSERT_EQ(use.size(), 3u);
  EXPECT_EQ(use[0].hbm_bytes, 100 * 64 * 4 + 100 * 4 * 2);
  EXPECT_EQ(use[0].uvm_bytes, 300 * 64 * 4);
  EXPECT_EQ(use[1].hbm_bytes, 10 * 4 * 2);
  EXPECT_EQ(use[1].uvm_bytes, 90 * 4 * 2);
  EXPECT_EQ(use[2].hbm_bytes, 600 * 64 * 4);
  EXPECT_EQ(use[2].uvm_bytes, 0);
}

TEST(PlanMemory, IgnoresUnknownTablesAndDevicesAndClampsRanges) {
  const Task task = task_of({{"a", 1000, 64}}, 2);
  const Plan plan = plan_of({{"zz", ShardingType::kTableWise, {shard(0, 0, 10, 0, 4)}},
                             {"a",
                              ShardingType::kRowWise,
                              {shard(7, 0, 10, 0, 4), shard(1, -5, 2000, -8, 100, 5000),
                               shard(0, std::numeric_limits<std::int64_t>::min(), -3, 0, 64)}}});
  const auto use = plan_memory(task, plan);
  EXPECT_EQ(use[0].hbm_bytes, 0);
  EXPECT_EQ(use[1].hbm_bytes, 1000 * 64 * 4);
  EXPECT_EQ(use[1].uvm_bytes, 0);
}

TEST(PlanTypes, RoundTripAndErrors) {
  for (auto type : {ShardingType::kTableWise, ShardingType::kColumnWise, ShardingType::kRowWise,
                    ShardingType::kTableRowWise, ShardingType::kDataParallel, ShardingType::kGridShard}) {
    EXPECT_EQ(parse_sharding_type(to_string(type), "x"), type);
  }
  EXPECT_STREQ(to_string(ShardingType::kTableRowWise), "table_row_wise");
  try {
    (void)parse_sharding_type("tablewise", "plan.json: tables[0]");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan.json: tables[0]: unknown sharding type 'tablewise'"), std::string::npos)
        << e.what();
  }
}

TEST(PlanTypes, TableWisePlanNeedsOneDevicePerTable) {
  const Task task = two_table_task();
  EXPECT_THROW((void)table_wise_plan(task, {0}), Error);
}

TEST(PlanVersion, HasVersionAndOptionalHash) {
  const std::string v = embshard_version();
  EXPECT_EQ(v.rfind("0.1.0", 0), 0u) << v;
  if (v.size() > 5) {
    EXPECT_EQ(v[5], '+') << v;
    EXPECT_GT(v.size(), 6u) << v;
  }
}

// ---- scale ------------------------------------------------------------------------------------

TEST(PlanScale, ManyTablesAndManyRowShards) {
  std::vector<TableShape> shapes;
  for (int t = 0; t < 5000; ++t) shapes.push_back({"t" + std::to_string(t), 1000 + t, 128});
  shapes.push_back({"big", 1 << 20, 64});
  const Task task = task_of(shapes, 64);
  Plan plan;
  for (int t = 0; t < 5000; ++t) {
    TablePlacement tp{shapes[t].name, ShardingType::kColumnWise, {}};
    for (int c = 0; c < 4; ++c) tp.shards.push_back(shard((t + c) % 64, 0, 1000 + t, 32 * c, 32 * c + 32));
    plan.tables.push_back(tp);
  }
  TablePlacement big{"big", ShardingType::kRowWise, {}};
  const std::int64_t step = (1 << 20) / 1024;
  for (int s = 1023; s >= 0; --s) big.shards.push_back(shard(s % 64, s * step, (s + 1) * step, 0, 64));
  plan.tables.push_back(big);
  expect_valid(task, plan);
  plan.tables.back().shards[500].row_end += 1;
  expect_error(task, plan, {"table 'big'", "overlaps"});
}

// ---- property test against a cell-painting reference --------------------------------------------

enum class Problem { kNone, kShard, kCoverage, kType };

Problem classify(const std::string& err) {
  if (err.empty()) return Problem::kNone;
  if (err.find("overlaps") != std::string::npos || err.find("no shard covers") != std::string::npos)
    return Problem::kCoverage;
  if (err.find("sharding type") != std::string::npos) return Problem::kType;
  return Problem::kShard;
}

bool shard_ok(const Task& task, const TableSpec& spec, const Shard& s) {
  return s.device >= 0 && s.device < task.topology.num_devices() && s.row_begin >= 0 && s.row_begin < s.row_end &&
         s.row_end <= spec.num_rows() && s.col_begin >= 0 && s.col_begin < s.col_end && s.col_end <= spec.dim &&
         s.col_begin % 4 == 0 && s.col_end % 4 == 0 && s.hbm_rows >= -1 && s.hbm_rows <= s.num_rows();
}

bool painted_once(const TableSpec& spec, const std::vector<Shard>& shards) {
  std::vector<int> cells(static_cast<std::size_t>(spec.num_rows() * spec.dim), 0);
  for (const Shard& s : shards)
    for (std::int64_t r = s.row_begin; r < s.row_end; ++r)
      for (int c = s.col_begin; c < s.col_end; ++c) ++cells[static_cast<std::size_t>(r * spec.dim + c)];
  return std::all_of(cells.begin(), cells.end(), [](int n) { return n == 1; });
}

bool type_ok(const Task& task, const TableSpec& spec, const TablePlacement& tp) {
  for (const Shard& s : tp.shards) {
    const bool all_rows = s.num_rows() == spec.num_rows();
    const bool all_cols = s.num_cols() == spec.dim;
    if (tp.type == ShardingType::kTableWise && tp.shards.size() != 1) return false;
    if (tp.type == ShardingType::kColumnWise && !all_rows) return false;
    if ((tp.type == ShardingType::kRowWise || tp.type == ShardingType::kTableRowWise) && !all_cols) return false;
    if (tp.type == ShardingType::kTableRowWise && !task.topology.same_host(s.device, tp.shards[0].device)) return false;
  }
  return true;
}

/// Slow reference: the first problem, table by table, in the order find_error_in_plan checks.
Problem reference_problem(const Task& task, const Plan& plan) {
  for (const TablePlacement& tp : plan.tables) {
    const auto& tables = task.workload.tables;
    const auto spec =
        std::find_if(tables.begin(), tables.end(), [&](const TableSpec& t) { return t.name == tp.table; });
    if (tp.shards.empty()) return Problem::kShard;
    for (const Shard& s : tp.shards)
      if (!shard_ok(task, *spec, s)) return Problem::kShard;
    if (!painted_once(*spec, tp.shards)) return Problem::kCoverage;
    if (!type_ok(task, *spec, tp)) return Problem::kType;
  }
  return Problem::kNone;
}

std::vector<std::int64_t> random_cuts(std::mt19937_64& rng, std::int64_t length, std::int64_t unit, int max_cuts) {
  std::vector<std::int64_t> cuts{0, length};
  const std::int64_t slots = length / unit - 1;
  const int n = static_cast<int>(std::min<std::int64_t>(slots, rng() % (max_cuts + 1)));
  while (static_cast<int>(cuts.size()) < n + 2) {
    const std::int64_t c = unit * (1 + static_cast<std::int64_t>(rng() % slots));
    if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

TablePlacement random_placement(std::mt19937_64& rng, const Task& task, const TableSpec& spec) {
  const int mode = static_cast<int>(rng() % 4);  // 0 whole, 1 rows, 2 columns, 3 grid
  const auto rows = random_cuts(rng, spec.num_rows(), 1, mode & 1 ? 5 : 0);
  const auto cols = random_cuts(rng, spec.dim, 4, mode & 2 ? 4 : 0);
  TablePlacement tp{spec.name, ShardingType::kColumnWise, {}};
  if (cols.size() == 2) tp.type = rng() % 2 ? ShardingType::kRowWise : ShardingType::kTableRowWise;
  if (rows.size() == 2 && cols.size() == 2) tp.type = ShardingType::kTableWise;
  const int n = task.topology.num_devices();
  const int dph = task.topology.devices_per_host;
  const int host_base = static_cast<int>(rng() % static_cast<unsigned>(task.topology.num_hosts())) * dph;
  for (std::size_t r = 0; r + 1 < rows.size(); ++r) {
    for (std::size_t c = 0; c + 1 < cols.size(); ++c) {
      Shard s = shard(static_cast<int>(rng() % static_cast<unsigned>(n)), rows[r], rows[r + 1],
                      static_cast<int>(cols[c]), static_cast<int>(cols[c + 1]));
      if (tp.type == ShardingType::kTableRowWise)
        s.device = std::min(n - 1, host_base + static_cast<int>(rng() % static_cast<unsigned>(dph)));
      s.hbm_rows = static_cast<std::int64_t>(rng() % static_cast<unsigned>(s.num_rows() + 2)) - 1;
      tp.shards.push_back(s);
    }
  }
  std::shuffle(tp.shards.begin(), tp.shards.end(), rng);
  return tp;
}

struct Case {
  Task task;
  Plan plan;
};

Case random_case(std::mt19937_64& rng) {
  std::vector<TableShape> shapes;
  const int num_tables = 1 + static_cast<int>(rng() % 5);
  for (int t = 0; t < num_tables; ++t)
    shapes.push_back({"t" + std::to_string(t), 1 + static_cast<std::int64_t>(rng() % 50),
                      4 * (1 + static_cast<int>(rng() % 8)), rng() % 2 ? WeightType::kF32 : WeightType::kF16});
  const int dph = 1 << (rng() % 3);
  Case c{task_of(shapes, 1 + static_cast<int>(rng() % 6), std::int64_t{1} << 40, std::int64_t{1} << 40, dph), {}};
  c.task.constraints.allow_uvm = true;
  for (const TableSpec& spec : c.task.workload.tables) c.plan.tables.push_back(random_placement(rng, c.task, spec));
  std::shuffle(c.plan.tables.begin(), c.plan.tables.end(), rng);
  return c;
}

void mutate(std::mt19937_64& rng, const Task& task, Plan& plan) {
  TablePlacement& tp = plan.tables[rng() % plan.tables.size()];
  const std::size_t i = rng() % tp.shards.size();
  Shard& s = tp.shards[i];
  const int sign = rng() % 2 ? 1 : -1;
  switch (rng() % 7) {
    case 0: s.col_begin += 4 * sign; break;
    case 1: s.col_end += 4 * sign; break;
    case 2: s.row_begin += sign; break;
    case 3: s.row_end += sign; break;
    case 4: tp.shards.erase(tp.shards.begin() + static_cast<std::ptrdiff_t>(i)); break;
    case 5: tp.shards.push_back(s); break;
    default: s.device = task.topology.num_devices(); break;
  }
}

TEST(PlanProperty, AgreesWithCellPaintingReference) {
  std::mt19937_64 rng(20240611);
  int grids = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Case c = random_case(rng);
    const Problem expected = reference_problem(c.task, c.plan);
    const std::string err = find_error_in_plan(c.task, c.plan);
    ASSERT_EQ(classify(err), expected) << "iteration " << iter << ": " << err;
    ASSERT_TRUE(expected == Problem::kNone || expected == Problem::kType) << iter;
    grids += expected == Problem::kType;

    mutate(rng, c.task, c.plan);
    const Problem after = reference_problem(c.task, c.plan);
    const std::string err_after = find_error_in_plan(c.task, c.plan);
    ASSERT_NE(after, Problem::kNone) << "iteration " << iter;
    ASSERT_EQ(classify(err_after), after) << "iteration " << iter << ": " << err_after;
  }
  EXPECT_GT(grids, 100);  // the sweep also saw 2-D grids
}

// ---- JSON -------------------------------------------------------------------------------------

void expect_same_plan(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.provenance.sharder, b.provenance.sharder);
  EXPECT_EQ(a.provenance.cost_model, b.provenance.cost_model);
  EXPECT_EQ(a.provenance.task_id, b.provenance.task_id);
  EXPECT_EQ(a.provenance.embshard_version, b.provenance.embshard_version);
  EXPECT_EQ(a.provenance.seed, b.provenance.seed);
  EXPECT_EQ(a.provenance.wall_ms, b.provenance.wall_ms);
  EXPECT_EQ(a.provenance.created_utc, b.provenance.created_utc);
  EXPECT_EQ(a.provenance.derived_stats_tables, b.provenance.derived_stats_tables);
  ASSERT_EQ(a.tables.size(), b.tables.size());
  for (std::size_t t = 0; t < a.tables.size(); ++t) {
    EXPECT_EQ(a.tables[t].table, b.tables[t].table);
    EXPECT_EQ(a.tables[t].type, b.tables[t].type);
    ASSERT_EQ(a.tables[t].shards.size(), b.tables[t].shards.size());
    for (std::size_t i = 0; i < a.tables[t].shards.size(); ++i) {
      const Shard& x = a.tables[t].shards[i];
      const Shard& y = b.tables[t].shards[i];
      EXPECT_EQ(x.device, y.device);
      EXPECT_EQ(x.row_begin, y.row_begin);
      EXPECT_EQ(x.row_end, y.row_end);
      EXPECT_EQ(x.col_begin, y.col_begin);
      EXPECT_EQ(x.col_end, y.col_end);
      EXPECT_EQ(x.rows_in_hbm(), y.rows_in_hbm());
    }
  }
}

TEST(PlanJson, RoundTripsRandomPlans) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    Case c = random_case(rng);
    c.plan.provenance = {"greedy:k=2",
                         "analytic",
                         "task \"q\" \\ \n ü",
                         embshard_version(),
                         iter == 0 ? std::numeric_limits<std::uint64_t>::max() : rng(),
                         static_cast<double>(rng() % 100000) / 7.0,
                         "2024-06-11T12:00:00Z",
                         iter % 2 == 0 ? std::vector<std::string>{} : std::vector<std::string>{"t0", "x\"y"}};
    const std::string text = plan_to_json(c.plan);
    const Plan back = plan_from_json(text, "mem.json");
    expect_same_plan(c.plan, back);
    EXPECT_EQ(find_error_in_plan(c.task, back), find_error_in_plan(c.task, c.plan));
    EXPECT_EQ(plan_to_json(back), text);
  }
}

TEST(PlanJson, RoundTripsEmptyPlan) {
  const Plan back = plan_from_json(plan_to_json(Plan{}), "mem.json");
  expect_same_plan(Plan{}, back);
}

TEST(PlanJson, WritesDocumentedFormat) {
  const Task task = two_table_task();
  Plan plan = table_wise_plan(task, {0, 3});
  plan.provenance.sharder = "greedy";
  plan.provenance.seed = 5;
  const std::string text = plan_to_json(plan);
  EXPECT_EQ(text.rfind("{\n  \"schema_version\": 1,\n  \"provenance\": {", 0), 0u) << text;
  EXPECT_NE(text.find("\"sharder\": \"greedy\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"seed\": 5"), std::string::npos) << text;
  EXPECT_NE(text.find("{\"table\": \"t1\", \"sharding_type\": \"table_wise\", \"shards\": ["), std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"device\": 3, \"rows\": [0, 500], \"cols\": [0, 32], \"hbm_rows\": 500}"), std::string::npos)
      << text;
}

const char* const kGoodPlan = R"({
  "schema_version": 1,
  "provenance": {"sharder": "greedy", "cost_model": "analytic", "task_id": "x",
                 "embshard_version": "0.1.0", "seed": 3, "wall_ms": 1.5, "created_utc": "now"},
  "tables": [
    {"table": "t0", "sharding_type": "row_wise", "shards": [
      {"device": 0, "rows": [0, 300], "cols": [0, 64], "hbm_rows": 300},
      {"device": 1, "rows": [300, 1000], "cols": [0, 64]}
    ]},
    {"table": "t1", "sharding_type": "table_wise", "shards": [
      {"device": 2, "rows": [0, 500], "cols": [0, 32], "hbm_rows": 500}
    ]}
  ]
})";

std::string good_with(const std::string& from, const std::string& to) {
  std::string text = kGoodPlan;
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

void expect_read_error(const std::string& text, std::initializer_list<const char*> words) {
  try {
    (void)plan_from_json(text, "plan.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("plan.json: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (const char* w : words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg;
  }
}

TEST(PlanJson, ReadsGoodPlan) {
  const Plan plan = plan_from_json(kGoodPlan, "plan.json");
  EXPECT_EQ(find_error_in_plan(two_table_task(), plan), "");
  ASSERT_EQ(plan.tables.size(), 2u);
  EXPECT_EQ(plan.tables[0].type, ShardingType::kRowWise);
  EXPECT_EQ(plan.tables[0].shards[0].hbm_rows, -1);  // 300 of its 300 rows: all, canonically -1
  EXPECT_EQ(plan.tables[0].shards[0].rows_in_hbm(), 300);
  EXPECT_EQ(plan.tables[0].shards[1].hbm_rows, -1);  // absent: all rows
  EXPECT_EQ(plan.tables[0].shards[1].row_begin, 300);
  EXPECT_EQ(plan.tables[1].shards[0].device, 2);
  EXPECT_EQ(plan.provenance.sharder, "greedy");
  EXPECT_EQ(plan.provenance.seed, 3u);
  EXPECT_EQ(plan.provenance.wall_ms, 1.5);
}

TEST(PlanJson, ProvenanceIsOptionalAndToleratesUnknownKeys) {
  const Plan plan = plan_from_json(
      good_with("\"seed\": 3,", "\"seed\": 3, \"hostname\": {\"a\": [1]}, \"future\": null,"), "plan.json");
  EXPECT_EQ(plan.provenance.seed, 3u);
  const Plan bare = plan_from_json(R"({"schema_version": 1, "tables": []})", "plan.json");
  EXPECT_TRUE(bare.tables.empty());
  EXPECT_EQ(bare.provenance.sharder, "");
}

TEST(PlanJson, RejectsMalformedJson) {
  expect_read_error(R"({"schema_version": 1,)", {"malformed JSON", "line 1, column"});
  expect_read_error("", {"malformed JSON"});
  expect_read_error(good_with("\"t0\"", "\"t\xff\""), {"malformed JSON"});
  expect_read_error(std::string(kGoodPlan) + " x", {"malformed JSON", "line 14"});
  expect_read_error(good_with("\"seed\": 3", "\"seed\": 1" + std::string(400, '0')),
                    {"malformed JSON", "number overflow", "..."});
  expect_read_error(good_with("\"t0\"", "\"t0\xff"), {"malformed JSON", "\\xff"});
}

TEST(PlanJson, RejectsMissingFields) {
  expect_read_error(R"({"tables": []})", {"schema_version: missing required field"});
  expect_read_error(R"({"schema_version": 1})", {"tables: missing required field"});
  expect_read_error(good_with("\"table\": \"t1\", ", ""), {"tables[1].table: missing required field"});
  expect_read_error(good_with("\"sharding_type\": \"row_wise\", ", ""), {"tables[0].sharding_type: missing"});
  expect_read_error(R"({"schema_version": 1, "tables": [{"table": "t", "sharding_type": "row_wise"}]})",
                    {"tables[0].shards: missing required field"});
  expect_read_error(good_with("{\"device\": 1, ", "{"), {"tables[0].shards[1].device: missing required field"});
  expect_read_error(good_with("\"rows\": [300, 1000], ", ""), {"tables[0].shards[1].rows: missing"});
  expect_read_error(good_with(", \"cols\": [0, 32]", ""), {"tables[1].shards[0].cols: missing"});
}

TEST(PlanJson, RejectsWrongTypes) {
  expect_read_error("[]", {"plan.json: top level: expected an object, got an array"});
  expect_read_error(good_with("\"device\": 1", "\"device\": \"1\""),
                    {"plan.json: tables[0].shards[1].device: expected an integer ≥ 0, got a string"});
  expect_read_error(good_with("\"device\": 1", "\"device\": 1.5"), {"shards[1].device", "got 1.5"});
  expect_read_error(good_with("\"device\": 1", "\"device\": true"), {"shards[1].device", "a boolean"});
  expect_read_error(good_with("\"rows\": [300, 1000]", "\"rows\": 300"), {"shards[1].rows: expected [begin, end]"});
  expect_read_error(good_with("\"rows\": [300, 1000]", "\"rows\": [300]"), {"shards[1].rows", "an array of 1"});
  expect_read_error(good_with("\"cols\": [0, 32]", "\"cols\": [0, null]"), {"tables[1].shards[0].cols[1]", "null"});
  expect_read_error(good_with("\"table\": \"t1\"", "\"table\": 1"), {"tables[1].table: expected a string"});
  expect_read_error(good_with("\"sharding_type\": \"table_wise\"", "\"sharding_type\": [\"x\"]"),
                    {"tables[1].sharding_type: expected a string"});
  expect_read_error(R"({"schema_version": 1, "tables": {}})", {"tables: expected an array, got an object"});
  expect_read_error(R"({"schema_version": 1, "tables": [{"table": "t", "sharding_type": "row_wise", "shards": {}}]})",
                    {"tables[0].shards: expected an array"});
  expect_read_error(R"({"schema_version": 1, "tables": [[]]})", {"tables[0]: expected an object"});
  expect_read_error(R"({"schema_version": 1, "tables": [], "provenance": []})", {"provenance: expected an object"});
  expect_read_error(good_with("\"sharder\": \"greedy\"", "\"sharder\": 7"), {"provenance.sharder: expected a string"});
  expect_read_error(good_with("\"wall_ms\": 1.5", "\"wall_ms\": \"1.5\""), {"provenance.wall_ms: expected a number"});
  expect_read_error(good_with("\"seed\": 3", "\"seed\": 3.5"), {"provenance.seed: expected an integer"});
}

TEST(PlanJson, RejectsNegativeAndHugeNumbers) {
  expect_read_error(good_with("\"device\": 1", "\"device\": -1"),
                    {"tables[0].shards[1].device: expected an integer ≥ 0, got -1"});
  expect_read_error(good_with("\"rows\": [300, 1000]", "\"rows\": [-300, 1000]"),
                    {"tables[0].shards[1].rows[0]", "-300"});
  expect_read_error(good_with("\"hbm_rows\": 300", "\"hbm_rows\": -1"), {"tables[0].shards[0].hbm_rows", "got -1"});
  expect_read_error(good_with("\"device\": 1", "\"device\": 3000000000"), {"shards[1].device", "maximum 262143"});
  expect_read_error(good_with("\"cols\": [0, 64]", "\"cols\": [0, 99999999999]"), {"shards[0].cols[1]", "maximum"});
  expect_read_error(good_with("\"rows\": [300, 1000]", "\"rows\": [300, 9223372036854775808]"),
                    {"shards[1].rows[1]", "maximum"});
  expect_read_error(good_with("\"seed\": 3", "\"seed\": -3"), {"provenance.seed", "got -3"});
  expect_read_error(good_with("\"wall_ms\": 1.5", "\"wall_ms\": -1.5"), {"provenance.wall_ms", "got -1.5"});
}

TEST(PlanJson, RejectsOtherSchemaVersions) {
  expect_read_error(good_with("\"schema_version\": 1", "\"schema_version\": 2"),
                    {"schema_version: version 2 is not supported", "reads version 1"});
  expect_read_error(good_with("\"schema_version\": 1", "\"schema_version\": \"1\""),
                    {"schema_version: expected an integer, got a string"});
  expect_read_error(good_with("\"schema_version\": 1", "\"schema_version\": 1.0"),
                    {"schema_version: expected an integer"});
}

TEST(PlanJson, RejectsUnknownFields) {
  expect_read_error(good_with("\"tables\"", "\"tabels\": [], \"tables\""),
                    {"plan.json: tabels: unknown field", "schema_version"});
  expect_read_error(good_with("{\"device\": 1", "{\"devce\": 1"),
                    {"tables[0].shards[1].devce: unknown field (expected device, rows, cols, hbm_rows)"});
  expect_read_error(good_with("\"table\": \"t1\"", "\"table\": \"t1\", \"type\": \"table_wise\""),
                    {"tables[1].type: unknown field"});
}

TEST(PlanJson, KeepsMessagesOnOneLine) {
  expect_read_error(good_with("{\"device\": 1", "{\"dev\\nice\": 1"),
                    {"tables[0].shards[1].dev\\x0aice: unknown field"});
  expect_read_error(good_with("\"row_wise\"", "\"row\\nwise\""), {"unknown sharding type 'row\\x0awise'"});
  const Plan plan = plan_from_json(good_with("\"t1\"", "\"t\\u00fc\\r\""), "plan.json");
  expect_error(two_table_task(), plan, {"table 't\xc3\xbc\\x0d'", "not in the task"});
}

TEST(PlanJson, RejectsDuplicateKeys) {
  expect_read_error(good_with("{\"device\": 1", "{\"device\": 1, \"device\": 2"),
                    {"plan.json: tables[0].shards[1].device: duplicate key"});
  expect_read_error(good_with("\"schema_version\": 1", "\"schema_version\": 1, \"schema_version\": 1"),
                    {"plan.json: schema_version: duplicate key"});
}

TEST(PlanJson, RejectsUnknownShardingType) {
  expect_read_error(good_with("\"row_wise\"", "\"rowwise\""),
                    {"plan.json: tables[0].sharding_type: unknown sharding type 'rowwise'"});
}

// ---- files ------------------------------------------------------------------------------------

class PlanFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("embshard-plan-test-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(PlanFile, WritesAndReadsBack) {
  const Task task = two_table_task();
  Plan plan = table_wise_plan(task, {1, 2});
  plan.provenance.sharder = "greedy";
  const std::string path = (dir_ / "sub" / "plan.json").string();
  write_plan_file(path, plan);
  expect_same_plan(plan, read_plan_file(path));
}

TEST_F(PlanFile, ReplacesExistingFileAndLeavesNoTemporary) {
  const std::string path = (dir_ / "plan.json").string();
  write_file_atomic(path, "old content");
  const Plan plan = table_wise_plan(two_table_task(), {0, 0});
  write_plan_file(path, plan);
  EXPECT_EQ(read_file(path), plan_to_json(plan));
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string(), "plan.json");
}

TEST_F(PlanFile, FailedWriteLeavesOldFileUntouched) {
  const std::string path = (dir_ / "plan.json").string();
  write_file_atomic(path, "old content");
  {
    const test_util::FileSizeLimit full_disk(16);  // the temporary cannot be written
    EXPECT_THROW(write_plan_file(path, table_wise_plan(two_table_task(), {0, 0})), Error);
  }
  EXPECT_EQ(read_file(path), "old content");
  for (const auto& entry : std::filesystem::directory_iterator(dir_))  // temporary removed
    EXPECT_EQ(entry.path().filename().string(), "plan.json");
}

TEST_F(PlanFile, ReadErrorsNameTheFile) {
  const std::string missing = (dir_ / "none.json").string();
  try {
    (void)read_plan_file(missing);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  const std::string bad = (dir_ / "bad.json").string();
  write_file_atomic(bad, good_with("\"device\": 1", "\"device\": -1"));
  try {
    (void)read_plan_file(bad);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad + ": tables[0].shards[1].device", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace embshard
