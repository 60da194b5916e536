#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/data/data_io.h"
#include "embshard/data/topology.h"
#include "embshard/eval/task_gen.h"
#include "test_util.h"

namespace embshard {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const TableSource& source() {
  static const TableSource s = TableSource::from_pool(0, 65536);
  return s;
}

using test_util::error_of;

TEST(Topology, PresetsBuildWithTheirFigures) {
  for (const auto& entry : topology_registry().list()) {
    const Topology t = make_topology(entry.name);
    EXPECT_EQ(find_error_in_topology(t, entry.name), "") << entry.name;
    EXPECT_EQ(t.name, topology_registry().canonical(entry.name));
  }
  const Topology a100 = make_topology("a100:nodes=2,hbm_gib=4");
  EXPECT_EQ(a100.num_devices(), 16);
  EXPECT_EQ(a100.num_hosts(), 2);
  EXPECT_TRUE(a100.same_host(0, 7));
  EXPECT_FALSE(a100.same_host(7, 8));
  EXPECT_EQ(a100.devices[3].hbm_bytes, 4LL << 30);
  EXPECT_DOUBLE_EQ(a100.devices[0].hbm_gbps, 2039.0);
  EXPECT_GT(a100.a2a_latency_us, make_topology("a100").a2a_latency_us);
  EXPECT_EQ(make_topology("2080ti").num_devices(), 8);  // the seeds' server of eight (paper 003)
  EXPECT_EQ(make_topology("h100").num_devices(), 8);
  EXPECT_EQ(make_topology("cpu:devices=3").num_devices(), 3);
}

TEST(Topology, UnknownPresetListsKnownOnes) {
  const std::string err = error_of([] { (void)make_topology("tpu"); });
  EXPECT_NE(err.find("2080ti, v100, a100, h100, h200, cpu"), std::string::npos) << err;
}

TEST(Topology, AGpuNamedByCudaFindsItsPreset) {
  EXPECT_EQ(preset_for_gpu("NVIDIA H200"), "h200");
  EXPECT_EQ(preset_for_gpu("NVIDIA H100 80GB HBM3"), "h100");
  EXPECT_EQ(topology_preset_names(), (std::vector<std::string>{"2080ti", "v100", "a100", "h100", "h200", "cpu"}));
  const std::string err = error_of([] { (void)preset_for_gpu("NVIDIA B200"); });
  EXPECT_NE(err.find("no topology preset describes the GPU 'NVIDIA B200'; known GPUs: "), std::string::npos) << err;
  EXPECT_NE(err.find("'NVIDIA H200' (h200)"), std::string::npos) << err;
}

TEST(Topology, ZeroDevicesIsAnError) {
  Topology t = make_topology("v100");
  t.devices.clear();
  EXPECT_NE(find_error_in_topology(t, "x").find("no devices"), std::string::npos);
}

TEST(TaskGen, NeuroShardProtocol) {
  for (int devices : {4, 8}) {
    for (int max_dim : {4, 32, 128}) {
      const auto gen =
          make_task_generator("neuroshard:devices=" + std::to_string(devices) + ",max_dim=" + std::to_string(max_dim));
      std::set<int> dims_seen;
      bool duplicate_seen = false;
      for (int i = 0; i < 20; ++i) {
        const Task task = gen->generate(source(), 11, i);
        EXPECT_EQ(find_error_in_task(task, task.id), "");
        const auto n = static_cast<int>(task.workload.tables.size());
        EXPECT_GE(n, devices * 5 / 2);
        EXPECT_LT(n, devices * 15);
        EXPECT_EQ(task.topology.num_devices(), devices);
        EXPECT_EQ(task.topology.devices[0].hbm_bytes, 4LL << 30);
        EXPECT_LE(static_cast<double>(task.workload.total_bytes()), (4.0 * devices - 1) * kGiB);
        std::set<std::int64_t> ids;
        for (const auto& t : task.workload.tables) {
          EXPECT_EQ(t.dtype, WeightType::kF32);
          EXPECT_LE(t.dim, max_dim);
          EXPECT_EQ(max_dim % t.dim, 0);
          dims_seen.insert(t.dim);
          duplicate_seen = duplicate_seen || !ids.insert(t.source_id).second;
        }
      }
      int grid = 0;
      for (int d = max_dim; d >= 4; d /= 2) ++grid;
      EXPECT_EQ(static_cast<int>(dims_seen.size()), grid);
      if (devices == 8) {
        EXPECT_TRUE(duplicate_seen);  // tables are drawn with replacement
      }
    }
  }
}

TEST(TaskGen, DreamShardTrainAndTestTablesAreDisjoint) {
  const auto train = make_task_generator("dreamshard:tables=50,split=train");
  const auto test = make_task_generator("dreamshard:tables=50,split=test");
  std::set<std::int64_t> train_ids, test_ids;
  for (int i = 0; i < 30; ++i) {
    for (const auto* gen : {train.get(), test.get()}) {
      // Train and test tasks of different seeds (as bench/rl_protocols.sh draws them): the halves
      // follow split_seed alone, so no test table was ever a training table.
      const Task task = gen->generate(source(), gen == train.get() ? 0 : 1, i);
      EXPECT_EQ(task.workload.tables.size(), 50u);
      std::set<std::int64_t> ids;
      for (const auto& t : task.workload.tables) {
        EXPECT_EQ(t.dim, 16);
        EXPECT_EQ(t.dtype, WeightType::kF16);
        EXPECT_TRUE(ids.insert(t.source_id).second) << "no replacement within a task";
        (gen == train.get() ? train_ids : test_ids).insert(t.source_id);
      }
    }
  }
  for (auto id : train_ids) EXPECT_EQ(test_ids.count(id), 0u) << id;
  EXPECT_GT(train_ids.size(), 300u);
  // Another split seed cuts the pool differently.
  const auto other = make_task_generator("dreamshard:tables=50,split=test,split_seed=7");
  std::size_t moved = 0;
  for (int i = 0; i < 30; ++i)
    for (const auto& t : other->generate(source(), 1, i).workload.tables) moved += train_ids.count(t.source_id);
  EXPECT_GT(moved, 0u);
}

TEST(TaskGen, AutoShardUnseenRatioDrawsThatShareFromTheSecondHalf) {
  // The halves are DreamShard's (one pool_halves, one split_seed): its train split of half the pool is the first half.
  const std::size_t half = source().size() / 2;
  const auto first_gen = make_task_generator("dreamshard:tables=" + std::to_string(half) + ",split=train");
  std::set<std::int64_t> first;
  for (const auto& t : first_gen->generate(source(), 0, 0).workload.tables) first.insert(t.source_id);
  ASSERT_EQ(first.size(), half);
  const auto in_second = [&](const Task& task) {
    std::set<std::int64_t> ids;
    std::size_t second = 0;
    for (const auto& t : task.workload.tables) {
      EXPECT_TRUE(ids.insert(t.source_id).second) << "no replacement within a task";
      second += first.count(t.source_id) == 0 ? 1 : 0;
    }
    return second;
  };
  const auto train = make_task_generator("autoshard:split=train_half");
  std::map<std::int64_t, int> dim_of;  // a first-half table's dim in the training tasks (seed 0)
  for (int i = 0; i < 5; ++i) {
    const Task task = train->generate(source(), 0, i);
    EXPECT_EQ(in_second(task), 0u);
    for (const auto& t : task.workload.tables) dim_of[t.source_id] = t.dim;
  }
  for (const double ratio : {0.0, 0.25, 0.6, 1.0}) {
    const auto test = make_task_generator("autoshard:split=test_half,unseen_ratio=" + std::to_string(ratio));
    for (int i = 0; i < 5; ++i) {
      const Task task = test->generate(source(), 1, i);
      ASSERT_EQ(task.workload.tables.size(), 80u);
      EXPECT_EQ(in_second(task), static_cast<std::size_t>(std::llround(ratio * 80))) << ratio;
      for (const auto& t : task.workload.tables) {  // seen tables keep their dim across seeds
        if (dim_of.count(t.source_id) > 0) {
          EXPECT_EQ(t.dim, dim_of[t.source_id]) << t.source_id;
        }
      }
    }
  }
  EXPECT_NE(test_util::error_of([] {
              (void)make_task_generator("autoshard:split=test,unseen_ratio=0.5");
            }).find("unseen_ratio = 0.5 applies to split=test_half only"),
            std::string::npos);
}

TEST(TaskGen, AutoShardScalesTablesWithDevices) {
  for (int devices : {8, 80}) {
    const auto gen = make_task_generator("autoshard:devices=" + std::to_string(devices));
    std::map<std::int64_t, int> dim_of;
    for (int i = 0; i < 3; ++i) {
      const Task task = gen->generate(source(), 0, i);
      EXPECT_EQ(static_cast<int>(task.workload.tables.size()), 10 * devices);
      EXPECT_EQ(task.topology.num_devices(), devices);
      for (const auto& t : task.workload.tables) {
        EXPECT_TRUE(t.dim == 16 || t.dim == 32);
        auto [it, fresh] = dim_of.emplace(t.source_id, t.dim);
        EXPECT_EQ(it->second, t.dim) << "a pool table keeps its dim across tasks";
      }
    }
  }
}

TEST(TaskGen, IsDeterministicAndSeedDependent) {
  const auto gen = make_task_generator("neuroshard");
  const Task a = gen->generate(source(), 5, 2), b = gen->generate(source(), 5, 2), c = gen->generate(source(), 6, 2);
  EXPECT_EQ(task_to_json(a), task_to_json(b));
  EXPECT_NE(task_to_json(a), task_to_json(c));
}

TEST(TaskGen, UnknownProtocolOrParameterFails) {
  EXPECT_NE(error_of([] { (void)make_task_generator("deepshard"); }).find("neuroshard, dreamshard, autoshard"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)make_task_generator("neuroshard:max_dim=6"); }).find("multiple of 4"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)make_task_generator("neuroshard:gpus=3"); }).find("accepted"), std::string::npos);
}

TEST(TaskIo, RoundTripsThroughJson) {
  const Task task = make_task_generator("neuroshard:devices=8,max_dim=64")->generate(source(), 1, 0);
  const std::string text = task_to_json(task);
  const Task back = task_from_json(text, "mem");
  EXPECT_EQ(task_to_json(back), text);
  EXPECT_EQ(back.workload.tables.size(), task.workload.tables.size());
  EXPECT_EQ(back.topology.num_devices(), 8);
}

TEST(TaskIo, PoolIdWithoutStatsResolvesAgainstThePool) {
  const std::string text = R"({"schema_version": 1, "batch_size": 65536,
    "topology": {"preset": "v100:hbm_gib=4"}, "pool_seed": 0,
    "tables": [{"name": "a", "dim": 64, "pool_id": 3}, {"name": "b", "dim": 8, "pool_id": 9}]})";
  const Task task = task_from_json(text, "mem");
  const auto want = Pool::generate(0).expected_stats(3, 65536);
  EXPECT_EQ(task.workload.tables[0].stats.num_distinct, want.num_distinct);
  EXPECT_EQ(task.workload.tables[0].num_rows(), want.num_rows);
}

TEST(TaskIo, BadTasksNameTheProblem) {
  const std::string good = R"({"schema_version": 1, "batch_size": 65536,
    "topology": {"preset": "v100"},
    "tables": [{"name": "a", "dim": 64, "pool_id": 3}]})";
  ASSERT_NO_THROW((void)task_from_json(good, "t.json"));
  struct Case {
    std::string from, to, expect;
  };
  const std::vector<Case> cases = {
      {"\"dim\": 64", "\"dim\": 66", "multiple of 4"},
      {"\"dim\": 64", "\"dim\": -8", "tables[0].dim"},
      {"\"dim\": 64", "\"dim\": 131072", "more than the maximum 65536"},
      {"\"batch_size\": 65536", "\"batch_size\": -1", "batch_size"},
      {"\"batch_size\": 65536,", "", "batch_size: missing required field"},
      {"\"schema_version\": 1", "\"schema_version\": 2", "schema version 1"},
      {"\"preset\": \"v100\"", "\"preset\": \"v1000\"", "unknown topology preset"},
      {"\"pool_id\": 3", "\"pool_id\": 9999", "the pool has 856 tables"},
      {"\"pool_id\": 3", "\"pool_id\": -3", "tables[0].pool_id"},
      {"\"name\": \"a\", ", "", "tables[0].name: missing required field"},
      {"\"dim\": 64, ", "\"dim\": 64, \"dimm\": 3, ", "tables[0].dimm: unknown field"},
      {"[{\"name\": \"a\", \"dim\": 64, \"pool_id\": 3}]",
       "[{\"name\": \"a\", \"dim\": 64, \"pool_id\": 3}, {\"name\": \"a\", \"dim\": 8, \"pool_id\": 4}]",
       "duplicate table name"},
      {"[{\"name\": \"a\", \"dim\": 64, \"pool_id\": 3}]", "[]", "no tables"},
      {"\"tables\"", "\"tables\" x", "malformed JSON"},
      {"\"dim\": 64", "\"dim\": 64, \"dim\": 64", "tables[0].dim: duplicate key"},
      {"\"batch_size\": 65536", "\"batch_size\": 1e999", "number overflow"},
      {"\"batch_size\": 65536", "\"batch_size\": 18446744073709551615",
       "batch_size: got 18446744073709551615, more than the maximum"},
  };
  for (const auto& c : cases) {
    std::string text = good;
    const auto pos = text.find(c.from);
    ASSERT_NE(pos, std::string::npos) << c.from;
    text.replace(pos, c.from.size(), c.to);
    const std::string err = error_of([&] { (void)task_from_json(text, "t.json"); });
    EXPECT_NE(err.find("t.json"), std::string::npos) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << err;
  }
}

/** A task file with one inline-stats table named "big", edited by `edit`, read as "t.json". */
std::string task_file_error(const std::function<void(nlohmann::json&)>& edit) {
  Task task = make_task_generator("neuroshard:devices=2,max_dim=64")->generate(source(), 1, 0);
  task.workload.tables.resize(1);
  task.workload.tables[0].name = "big";
  task.workload.tables[0].source_id = -1;
  nlohmann::json j = nlohmann::json::parse(task_to_json(task));
  edit(j);
  return error_of([&] { (void)task_from_json(j.dump(), "t.json"); });
}

TEST(TaskIo, OutOfRangeNumbersNameFileAndTable) {
  // Every number a derived int64 (bytes, lookups, budgets) is built from is bounded at the door
  // (table.h, topology.h); before, num_rows = 2^63 − 1 overflowed the table's bytes.
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  };
  const auto stats = [](const char* field, const nlohmann::json& value) {
    return [field, value](nlohmann::json& j) { j["tables"][0]["stats"][field] = value; };
  };
  const auto device = [](const char* field, const nlohmann::json& value) {
    return [field, value](nlohmann::json& j) {
      j["topology"] = {
          {"devices_per_host", 1},
          {"intra_host_gbps", 100.0},
          {"inter_host_gbps", 10.0},
          {"a2a_latency_us", 25.0},
          {"devices", {{{"hbm_bytes", 1 << 30}, {"uvm_bytes", 0}, {"hbm_gbps", 900.0}, {"uvm_gbps", 16.0}}}}};
      j["topology"]["devices"][0][field] = value;
    };
  };
  const std::vector<Case> cases = {
      {stats("num_rows", std::numeric_limits<std::int64_t>::max()),
       "num_rows = 9223372036854775807 must lie in [1, 2^40]"},
      {stats("num_rows", (std::int64_t{1} << 40) + 1), "num_rows = 1099511627777 must lie in [1, 2^40]"},
      {[](nlohmann::json& j) {
         j["tables"][0]["dim"] = 64;
         j["tables"][0]["stats"]["num_rows"] = std::int64_t{1} << 40;
       },
       "1099511627776 rows × dim 64 = 281474976710656 bytes, more than the 2^46 bytes"},
      {stats("num_rows", 0), "num_rows = 0"},
      {stats("pooling_factor", 1e14), "pooling_factor = 1e+14 must be a finite number in [0, 1e6]"},
      {stats("pooling_factor", 1e308), "pooling_factor"},
      {stats("pooling_factor", -1.0), "pooling_factor"},
      {stats("num_indices", std::int64_t{1} << 62), "num_indices"},
      {stats("num_indices", -5), "num_indices"},
      {stats("batch_size", std::int64_t{1} << 40), "batch_size"},
      {stats("coverage", 1.5), "coverage"},
      {[](nlohmann::json& j) { j["tables"][0]["stats"]["icdf"][0] = -1.0; }, "icdf = -1"},
      {[](nlohmann::json& j) { j["tables"][0]["stats"]["icdf"][99] = 1e300; }, "icdf"},
      {device("hbm_bytes", std::int64_t{1} << 62), "hbm_bytes / uvm_bytes must be at most 2^44"},
      {device("uvm_bytes", std::numeric_limits<std::int64_t>::max()), "at most 2^44"},
      {device("hbm_gbps", 1e300), "hbm_gbps must be positive and at most 1e6"},
  };
  for (const auto& c : cases) {
    const std::string err = task_file_error(c.edit);
    EXPECT_EQ(err.rfind("t.json", 0), 0u) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << err;
    const bool about_table = c.expect.find("bytes / uvm") == std::string::npos &&
                             c.expect.find("2^44") == std::string::npos && c.expect.find("gbps") == std::string::npos;
    if (about_table) {
      EXPECT_NE(err.find("'big'"), std::string::npos) << err;
    }
  }
}

TEST(Task, NonFiniteAndHugeValuesAreErrors) {
  // NaN and inf cannot come through JSON, but tasks built in code pass the same check.
  const Task good = make_task_generator("neuroshard:devices=2,max_dim=64")->generate(source(), 1, 0);
  ASSERT_EQ(find_error_in_task(good, "mem"), "");
  const std::string name = good.workload.tables[0].name;
  for (double v : {std::nan(""), std::numeric_limits<double>::infinity(), 1e7, -0.5}) {
    Task task = good;
    task.workload.tables[0].stats.pooling_factor = v;
    const std::string err = find_error_in_task(task, "mem");
    EXPECT_NE(err.find("mem: table 0 ('" + name + "'): pooling_factor"), std::string::npos) << err;
  }
  for (double v : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    Task task = good;
    task.topology.devices[1].hbm_gbps = v;
    EXPECT_NE(find_error_in_task(task, "mem").find("device 1: hbm_gbps"), std::string::npos);
    task = good;
    task.topology.a2a_latency_us = v;
    EXPECT_NE(find_error_in_task(task, "mem").find("a2a_latency_us"), std::string::npos);
  }
  Task many = good;
  many.workload.tables.resize(static_cast<std::size_t>(kMaxTasksTables) + 1, good.workload.tables[0]);
  EXPECT_NE(find_error_in_task(many, "mem").find("more than 65536"), std::string::npos);
}

TEST(StatsIo, OutOfRangeNumbersNameFileAndTable) {
  std::vector<TableStats> stats = {source().stats(0)};
  nlohmann::json j = nlohmann::json::parse(stats_to_json(stats));
  j["tables"][0]["name"] = "hot";
  j["tables"][0]["pooling_factor"] = 1e308;
  const std::string err = error_of([&] { (void)stats_from_json(j.dump(), "s.json"); });
  EXPECT_EQ(err.rfind("s.json: tables[0] (table 'hot'): pooling_factor = 1e+308", 0), 0u) << err;
}

TEST(TaskIo, WriteTasksNamesFilesInOrder) {
  const auto dir = std::filesystem::path(test_util::temp_file("embshard_test", "tasks"));
  std::filesystem::remove_all(dir);
  const auto paths = write_tasks(*make_task_generator("dreamshard"), source(), 0, 3, dir.string());
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(std::filesystem::path(paths[2]).filename(), "002.json");
  EXPECT_EQ(read_task_file(paths[1]).workload.tables.size(), 50u);
  EXPECT_FALSE(std::filesystem::exists(paths[0] + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(StatsIo, RoundTripsAndRejectsBadFields) {
  std::vector<TableStats> stats;
  for (std::size_t i = 0; i < 5; ++i) stats.push_back(source().stats(i));
  const auto back = stats_from_json(stats_to_json(stats), "s.json");
  ASSERT_EQ(back.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(back[i].num_distinct, stats[i].num_distinct);
    EXPECT_EQ(back[i].bins, stats[i].bins);
    EXPECT_EQ(back[i].icdf, stats[i].icdf);
  }
  std::string bad = stats_to_json(stats);
  bad.replace(bad.find("\"coverage\": "), 12, "\"coverage\": 7");
  EXPECT_NE(error_of([&] { (void)stats_from_json(bad, "s.json"); }).find("coverage"), std::string::npos);
}

}  // namespace
}  // namespace embshard
