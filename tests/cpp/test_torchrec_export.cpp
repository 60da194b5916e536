// Tests of the TorchRec plan export: JSON fields per sharding type, kernels, and the invariants
// of TorchRec's training path that make a plan unexportable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/plan/plan.h"
#include "embshard/plan/torchrec_export.h"
#include "plan_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using Json = nlohmann::json;
using test_util::error_of;

constexpr const char* kModule = "sparse_arch.embedding_bag_collection";

using test_util::plan_of;
using test_util::shard;

/** A task of `shapes` on `num_devices` devices, `devices_per_host` per host, UVM allowed. */
Task task_of(const std::vector<test_util::TableShape>& shapes, int num_devices, int devices_per_host) {
  Task task = test_util::task_of(shapes, num_devices, std::int64_t{1} << 40, std::int64_t{1} << 40, devices_per_host);
  task.id = "torchrec-export-test";
  task.constraints.allow_uvm = true;
  return task;
}

/// Row-wise shards of `rows` × `dim` in blocks of `block` rows on devices first, first+1, ...
std::vector<Shard> row_blocks(std::int64_t rows, int dim, std::int64_t block, int first = 0) {
  std::vector<Shard> shards;
  for (std::int64_t begin = 0; begin < rows; begin += block)
    shards.push_back(shard(first + static_cast<int>(begin / block), begin, std::min(rows, begin + block), 0, dim));
  return shards;
}

Json export_json(const Task& task, const Plan& plan, const TorchrecExportOptions& options = {}) {
  return Json::parse(torchrec_plan_json(task, plan, options));
}

Json table_of(const Task& task, const Plan& plan, const std::string& table, const TorchrecExportOptions& options = {}) {
  return export_json(task, plan, options).at("plan").at(options.module_path).at(table);
}

Json shard_json(std::int64_t row_offset, int col_offset, std::int64_t rows, int cols, const std::string& placement) {
  return {{"shard_offsets", {row_offset, col_offset}}, {"shard_sizes", {rows, cols}}, {"placement", placement}};
}

TEST(TorchrecExport, HeaderFields) {
  const Task task = task_of({{"t0", 1000, 64}}, 8, 2);
  const Plan plan = plan_of({{"t0", ShardingType::kTableWise, {shard(3, 0, 1000, 0, 64)}}});
  const Json j = export_json(task, plan);
  EXPECT_EQ(j.at("world_size"), 8);
  EXPECT_EQ(j.at("local_world_size"), 2);
  EXPECT_EQ(j.at("compute_device"), "cuda");
  EXPECT_EQ(j.at("plan").size(), 1u);
  EXPECT_TRUE(j.at("plan").contains(kModule));
}

TEST(TorchrecExport, TableWiseLocalWorldSize2) {
  const Task task = task_of({{"t0", 1000, 64}}, 4, 2);
  const Plan plan = plan_of({{"t0", ShardingType::kTableWise, {shard(3, 0, 1000, 0, 64)}}});
  const Json want = {{"sharding_type", "table_wise"},
                     {"compute_kernel", "fused"},
                     {"ranks", {3}},
                     {"shards", {shard_json(0, 0, 1000, 64, "rank:3/cuda:1")}}};
  EXPECT_EQ(table_of(task, plan, "t0"), want);
}

TEST(TorchrecExport, DataParallelListsEveryRankOnTheDenseKernelWithoutShards) {
  const Task task = task_of({{"t0", 1000, 64}}, 4, 2);
  Plan plan = plan_of({{"t0", ShardingType::kDataParallel, {}}});
  for (int d : {2, 0, 3, 1}) plan.tables[0].shards.push_back(shard(d, 0, 1000, 0, 64));
  const Json want = {{"sharding_type", "data_parallel"},
                     {"compute_kernel", "dense"},
                     {"ranks", {0, 1, 2, 3}},
                     {"shards", Json::array()}};
  EXPECT_EQ(table_of(task, plan, "t0"), want);
  TorchrecExportOptions cpu;
  cpu.compute_device = TorchrecDevice::kCpu;  // TorchRec runs DP on cpu too
  EXPECT_EQ(table_of(task, plan, "t0", cpu).at("sharding_type"), "data_parallel");
}

TEST(TorchrecExport, GridIsNotExportedAndTheErrorNamesTheTable) {
  const Task task = task_of({{"t0", 1000, 64}}, 4, 4);
  const Plan plan = plan_of(
      {{"t0",
        ShardingType::kGridShard,
        {shard(0, 0, 500, 0, 32), shard(1, 500, 1000, 0, 32), shard(2, 0, 500, 32, 64), shard(3, 500, 1000, 32, 64)}}});
  EXPECT_NE(error_of([&] { (void)torchrec_plan_json(task, plan, {}); }).find("table 't0': grid_shard is not exported"),
            std::string::npos);
}

TEST(TorchrecExport, ColumnWiseSortedByColumnRanksRepeatLocalWorldSize8) {
  const Task task = task_of({{"t0", 100, 64}}, 16, 8);
  const Plan plan = plan_of({{"t0",
                              ShardingType::kColumnWise,
                              {shard(9, 0, 100, 32, 64), shard(12, 0, 100, 0, 16), shard(9, 0, 100, 16, 32)}}});
  const Json want = {{"sharding_type", "column_wise"},
                     {"compute_kernel", "fused"},
                     {"ranks", {12, 9, 9}},
                     {"shards",
                      {shard_json(0, 0, 100, 16, "rank:12/cuda:4"), shard_json(0, 16, 100, 16, "rank:9/cuda:1"),
                       shard_json(0, 32, 100, 32, "rank:9/cuda:1")}}};
  EXPECT_EQ(table_of(task, plan, "t0"), want);
}

TEST(TorchrecExport, RowWiseEvenBlocksInRankOrder) {
  const Task task = task_of({{"t0", 1000, 32}}, 4, 2);
  std::vector<Shard> shards = row_blocks(1000, 32, 250);
  std::swap(shards[0], shards[3]);  // listed out of order: the export sorts by row
  const Plan plan = plan_of({{"t0", ShardingType::kRowWise, shards}});
  const Json want = {{"sharding_type", "row_wise"},
                     {"compute_kernel", "fused"},
                     {"ranks", {0, 1, 2, 3}},
                     {"shards",
                      {shard_json(0, 0, 250, 32, "rank:0/cuda:0"), shard_json(250, 0, 250, 32, "rank:1/cuda:1"),
                       shard_json(500, 0, 250, 32, "rank:2/cuda:0"), shard_json(750, 0, 250, 32, "rank:3/cuda:1")}}};
  EXPECT_EQ(table_of(task, plan, "t0"), want);
}

TEST(TorchrecExport, RowWiseLastBlockShorter) {
  const Task task = task_of({{"t0", 1001, 32}}, 4, 8);  // a host larger than the world
  const Plan plan = plan_of({{"t0", ShardingType::kRowWise, row_blocks(1001, 32, 251)}});
  const Json t = table_of(task, plan, "t0");
  EXPECT_EQ(t.at("shards").back(), shard_json(753, 0, 248, 32, "rank:3/cuda:3"));
}

TEST(TorchrecExport, RowWiseRanksWithEmptyBlocksGetZeroRowShards) {
  // 100 rows over 16 ranks: block 7, ranks 0..13 hold 7 rows, rank 14 holds 2, rank 15 none.
  const Task task = task_of({{"t0", 100, 16}}, 16, 8);
  const Plan plan = plan_of({{"t0", ShardingType::kRowWise, row_blocks(100, 16, 7)}});
  ASSERT_EQ(plan.tables[0].shards.size(), 15u);
  const Json t = table_of(task, plan, "t0");
  ASSERT_EQ(t.at("shards").size(), 16u);
  ASSERT_EQ(t.at("ranks").size(), 16u);
  EXPECT_EQ(t.at("ranks").back(), 15);
  EXPECT_EQ(t.at("shards")[14], shard_json(98, 0, 2, 16, "rank:14/cuda:6"));
  EXPECT_EQ(t.at("shards")[15], shard_json(100, 0, 0, 16, "rank:15/cuda:7"));
}

TEST(TorchrecExport, TableRowWiseOnTheRanksOfOneHost) {
  const Task task = task_of({{"t0", 1000, 32}}, 8, 4);
  const Plan plan = plan_of({{"t0", ShardingType::kTableRowWise, row_blocks(1000, 32, 250, 4)}});
  const Json want = {{"sharding_type", "table_row_wise"},
                     {"compute_kernel", "fused"},
                     {"ranks", {4, 5, 6, 7}},
                     {"shards",
                      {shard_json(0, 0, 250, 32, "rank:4/cuda:0"), shard_json(250, 0, 250, 32, "rank:5/cuda:1"),
                       shard_json(500, 0, 250, 32, "rank:6/cuda:2"), shard_json(750, 0, 250, 32, "rank:7/cuda:3")}}};
  EXPECT_EQ(table_of(task, plan, "t0"), want);
}

TEST(TorchrecExport, UvmTierBecomesCachingKernelWithTheTablesHbmShare) {
  const Task task = task_of({{"tw", 1000, 64}, {"rw", 1000, 32}}, 2, 2);
  const Plan plan =
      plan_of({{"tw", ShardingType::kTableWise, {shard(1, 0, 1000, 0, 64, 250)}},
               {"rw", ShardingType::kRowWise, {shard(0, 0, 500, 0, 32, 100), shard(1, 500, 1000, 0, 32)}}});
  const Json j = export_json(task, plan);
  const Json& tw = j.at("plan").at(kModule).at("tw");
  EXPECT_EQ(tw.at("compute_kernel"), "fused_uvm_caching");
  EXPECT_EQ(tw.at("cache_params"), Json({{"algorithm", "LRU"}, {"load_factor", 0.25}}));
  const Json& rw = j.at("plan").at(kModule).at("rw");
  EXPECT_EQ(rw.at("compute_kernel"), "fused_uvm_caching");
  EXPECT_DOUBLE_EQ(rw.at("cache_params").at("load_factor").get<double>(), 0.6);
}

TEST(TorchrecExport, AllRowsInUvmBecomeUncachedUvmKernel) {
  const Task task = task_of({{"t0", 1000, 64}}, 2, 2);
  const Plan plan = plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64, 0)}}});
  const Json t = table_of(task, plan, "t0");
  EXPECT_EQ(t.at("compute_kernel"), "fused_uvm");
  EXPECT_FALSE(t.contains("cache_params"));
}

TEST(TorchrecExport, HbmOnlyTableHasNoCacheParams) {
  const Task task = task_of({{"t0", 1000, 64}}, 2, 2);
  const Plan plan = plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 64, 1000)}}});
  const Json t = table_of(task, plan, "t0");
  EXPECT_EQ(t.at("compute_kernel"), "fused");
  EXPECT_FALSE(t.contains("cache_params"));
}

TEST(TorchrecExport, CpuPlacementsAndModulePath) {
  const Task task = task_of({{"t0", 100, 64}}, 4, 2);
  const Plan plan = plan_of({{"t0", ShardingType::kColumnWise, {shard(3, 0, 100, 0, 32), shard(2, 0, 100, 32, 64)}}});
  TorchrecExportOptions options;
  options.module_path = "";
  options.compute_device = TorchrecDevice::kCpu;
  const Json j = export_json(task, plan, options);
  EXPECT_EQ(j.at("compute_device"), "cpu");
  const Json& t = j.at("plan").at("").at("t0");
  EXPECT_EQ(t.at("shards")[0].at("placement"), "rank:3/cpu");
  EXPECT_EQ(t.at("shards")[1].at("placement"), "rank:2/cpu");
}

TEST(TorchrecExport, TablesKeepPlanOrder) {
  const Task task = task_of({{"b", 100, 8}, {"a", 100, 8}}, 2, 2);
  const Plan plan = plan_of({{"b", ShardingType::kTableWise, {shard(0, 0, 100, 0, 8)}},
                             {"a", ShardingType::kTableWise, {shard(1, 0, 100, 0, 8)}}});
  const std::string text = torchrec_plan_json(task, plan, {});
  EXPECT_LT(text.find("\"b\""), text.find("\"a\""));
  EXPECT_EQ(text.back(), '\n');
}

TEST(TorchrecExport, NamesThatAreNotUtf8AreErrorsNotReplaced) {
  const Task task = task_of({{"t\xff", 100, 8}}, 2, 2);
  const Plan plan = plan_of({{"t\xff", ShardingType::kTableWise, {shard(0, 0, 100, 0, 8)}}});
  const std::string error = error_of([&] { (void)torchrec_plan_json(task, plan, {}); });
  EXPECT_NE(error.find("not valid UTF-8"), std::string::npos) << error;
}

// ---- plans TorchRec cannot run ------------------------------------------------------------------

TEST(TorchrecExport, RowWiseUnevenBlocksNameTheTable) {
  const Task task = task_of({{"t0", 1000, 32}}, 4, 2);
  const Plan plan = plan_of(
      {{"t0",
        ShardingType::kRowWise,
        {shard(0, 0, 300, 0, 32), shard(1, 300, 600, 0, 32), shard(2, 600, 800, 0, 32), shard(3, 800, 1000, 0, 32)}}});
  const std::string error = error_of([&] { (void)torchrec_plan_json(task, plan, {}); });
  EXPECT_NE(error.find("table 't0'"), std::string::npos) << error;
  EXPECT_NE(error.find("row_wise needs rows [0, 250) on rank 0"), std::string::npos) << error;
}

TEST(TorchrecExport, RowWiseOnASubsetOfRanksNamesTheTable) {
  const Task task = task_of({{"t0", 1000, 32}}, 4, 2);
  const Plan plan = plan_of({{"t0", ShardingType::kRowWise, row_blocks(1000, 32, 500)}});
  const std::string error = error_of([&] { (void)torchrec_plan_json(task, plan, {}); });
  EXPECT_NE(error.find("table 't0'"), std::string::npos) << error;
  EXPECT_NE(error.find("ceil(1000 / 4) = 250"), std::string::npos) << error;
}

TEST(TorchrecExport, RowWiseOutOfRankOrderNamesTheTable) {
  const Task task = task_of({{"t0", 1000, 32}}, 4, 2);
  std::vector<Shard> shards = row_blocks(1000, 32, 250);
  std::swap(shards[0].device, shards[1].device);
  const Plan plan = plan_of({{"t0", ShardingType::kRowWise, shards}});
  const std::string error = error_of([&] { (void)torchrec_plan_json(task, plan, {}); });
  EXPECT_NE(error.find("table 't0': row_wise needs rows [0, 250) on rank 0"), std::string::npos) << error;
}

TEST(TorchrecExport, TableRowWiseAcrossHostsNamesTheTable) {
  const Task task = task_of({{"t0", 1000, 32}}, 4, 2);
  const Plan plan = plan_of({{"t0", ShardingType::kTableRowWise, row_blocks(1000, 32, 500, 1)}});
  const std::string error = error_of([&] { (void)torchrec_plan_json(task, plan, {}); });
  EXPECT_NE(error.find("table 't0'"), std::string::npos) << error;
  EXPECT_NE(error.find("one host"), std::string::npos) << error;
}

TEST(TorchrecExport, TableRowWiseOnPartOfAHostNamesTheTable) {
  const Task task = task_of({{"t0", 1000, 32}}, 8, 4);
  const Plan plan = plan_of({{"t0", ShardingType::kTableRowWise, row_blocks(1000, 32, 500, 4)}});
  const std::string error = error_of([&] { (void)torchrec_plan_json(task, plan, {}); });
  EXPECT_NE(error.find("table 't0': table_row_wise needs"), std::string::npos) << error;
}

TEST(TorchrecExport, TableRowWiseOnAPartialHostNamesTheTable) {
  const Task task = task_of({{"t0", 1000, 32}}, 6, 4);  // host 1 has devices 4 and 5 only
  const Plan plan = plan_of({{"t0", ShardingType::kTableRowWise, row_blocks(1000, 32, 500, 4)}});
  const std::string error = error_of([&] { (void)torchrec_plan_json(task, plan, {}); });
  EXPECT_NE(error.find("table 't0': table_row_wise needs all 4 ranks of host 1"), std::string::npos) << error;
}

TEST(TorchrecExport, RowSplitsAndUvmAreRejectedOnCpu) {
  TorchrecExportOptions cpu;
  cpu.compute_device = TorchrecDevice::kCpu;
  const Task task = task_of({{"t0", 1000, 32}}, 2, 2);
  const Plan row_wise = plan_of({{"t0", ShardingType::kRowWise, row_blocks(1000, 32, 500)}});
  EXPECT_NE(error_of([&] { (void)torchrec_plan_json(task, row_wise, cpu); }).find("table 't0'"), std::string::npos);
  const Plan uvm = plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 32, 10)}}});
  const std::string error = error_of([&] { (void)torchrec_plan_json(task, uvm, cpu); });
  EXPECT_NE(error.find("table 't0': keeps 990 rows in UVM"), std::string::npos) << error;
}

TEST(TorchrecExport, InvalidPlanIsRejectedWithTheValidatorsMessage) {
  const Task task = task_of({{"t0", 1000, 32}}, 2, 2);
  const Plan plan = plan_of({{"t0", ShardingType::kTableWise, {shard(0, 0, 999, 0, 32)}}});
  const std::string error = error_of([&] { (void)torchrec_plan_json(task, plan, {}); });
  EXPECT_EQ(error.rfind("torchrec export: plan: table 't0'", 0), 0u) << error;
}

// ---- the fixture the Python loader test reads ---------------------------------------------------

/// Four hosts of two devices; one table of each sharding type, one of them with a UVM tier.
std::string fixture_plan_json() {
  const Task task = task_of({{"tw", 1000, 64}, {"cw", 500, 64}, {"rw", 1001, 32}, {"twrw", 800, 16}}, 8, 2);
  std::vector<Shard> rw;
  for (int rank = 0; rank < 8; ++rank) rw.push_back(shard(rank, rank * 126, std::min(1001, (rank + 1) * 126), 0, 32));
  const Plan plan = plan_of({{"tw", ShardingType::kTableWise, {shard(5, 0, 1000, 0, 64, 200)}},
                             {"cw", ShardingType::kColumnWise, {shard(3, 0, 500, 32, 64), shard(6, 0, 500, 0, 32)}},
                             {"rw", ShardingType::kRowWise, rw},
                             {"twrw", ShardingType::kTableRowWise, row_blocks(800, 16, 400, 2)}});
  return torchrec_plan_json(task, plan, {});
}

// Regenerate with EMBSHARD_UPDATE_TORCHREC_FIXTURE=1 after an intended format change.
TEST(TorchrecExport, FixtureForThePythonLoaderIsCurrent) {
  const std::string path = std::string(EMBSHARD_TEST_DATA_DIR) + "/torchrec/plan_tw_cw_rw.json";
  const std::string text = fixture_plan_json();
  if (std::getenv("EMBSHARD_UPDATE_TORCHREC_FIXTURE") != nullptr) {
    write_file_atomic(path, text);
    GTEST_SKIP() << "wrote " << path;
  }
  EXPECT_EQ(read_file(path), text) << "regenerate with EMBSHARD_UPDATE_TORCHREC_FIXTURE=1";
}

}  // namespace
}  // namespace embshard
