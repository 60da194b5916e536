// A table's optimizer state and its own constraints (table.h): in the task file, in plan memory
// and the validator, and honoured — or reported as infeasible — by every default sharder.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "embshard/data/data_io.h"
#include "embshard/eval/compare.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/shard/sharder.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;

Context quiet() {
  Context ctx;
  ctx.verbosity = LogLevel::kQuiet;
  return ctx;
}

Task small_task(std::uint64_t seed) {
  static constexpr int kDims[] = {16, 32, 64};
  Task task = test_util::pool_task(10, "v100:gpus_per_node=4,hbm_gib=1", seed, kDims);
  return task;
}

TEST(TableOptions, RoundTripThroughTheTaskFile) {
  Task task = small_task(1);
  task.workload.tables[0].optimizer = OptimizerState::kAdam;
  task.workload.tables[1].optimizer = OptimizerState::kRowWiseAdagrad;
  task.workload.tables[2].constraints.sharding_types = {ShardingType::kRowWise, ShardingType::kColumnWise};
  task.workload.tables[2].constraints.allow_uvm = false;
  task.workload.tables[2].constraints.min_partition = 8;
  const std::string text = task_to_json(task);
  const Task back = task_from_json(text, "t.json");
  EXPECT_EQ(task_to_json(back), text);
  EXPECT_EQ(back.workload.tables[0].optimizer, OptimizerState::kAdam);
  EXPECT_EQ(back.workload.tables[2].constraints.sharding_types, task.workload.tables[2].constraints.sharding_types);
  EXPECT_FALSE(back.workload.tables[2].constraints.allow_uvm);
  // Defaults are not written: files of earlier versions read and write the same.
  EXPECT_EQ(text.find("\"optimizer\": \"none\""), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_FALSE(j["tables"][3].contains("constraints"));
}

TEST(TableOptions, BadOptionsNameTheTableAndField) {
  const Task task = small_task(2);
  const auto error_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(task_to_json(task));
    edit(j);
    return error_of([&] { (void)task_from_json(j.dump(), "t.json"); });
  };
  EXPECT_NE(error_with([](auto& j) {
              j["tables"][1]["optimizer"] = "adamw";
            }).find("t.json: tables[1].optimizer: unknown optimizer 'adamw'"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& j) {
              j["tables"][1]["constraints"] = {{"sharding_types", {"table_column_wise"}}};
            }).find("tables[1].constraints.sharding_types[0]: unknown sharding type 'table_column_wise'"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& j) {
              j["tables"][1]["constraints"] = {{"sharding_types", nlohmann::json::array()}};
            }).find("names no sharding type"),
            std::string::npos);
  EXPECT_NE(error_with([](auto& j) {
              j["tables"][1]["constraints"] = {{"min_partition", -4}};
            }).find("tables[1].constraints.min_partition"),
            std::string::npos);
  const std::string contradiction = error_with([](auto& j) {
    j["constraints"]["allow_row_split"] = false;
    j["tables"][1]["constraints"] = {{"sharding_types", {"row_wise"}}};
  });
  EXPECT_NE(contradiction.find("table 1 ('t1'): constraints.sharding_types allows only types the task's "
                               "constraints forbid"),
            std::string::npos)
      << contradiction;
}

TEST(TableOptions, OptimizerStateIsPartOfPlanMemory) {
  Task task = small_task(3);
  std::vector<int> devices(task.workload.tables.size(), 0);
  const Plan plan = table_wise_plan(task, devices);
  const std::int64_t weights = plan_memory(task, plan)[0].hbm_bytes;
  for (auto& t : task.workload.tables) t.optimizer = OptimizerState::kAdam;
  EXPECT_EQ(plan_memory(task, plan)[0].hbm_bytes, 3 * weights);
  // Room for the weights but not for the weights and the two Adam moments: the validator refuses.
  task.topology.devices[0].hbm_bytes = 2 * weights;
  EXPECT_NE(find_error_in_plan(task, plan).find("device 0"), std::string::npos) << find_error_in_plan(task, plan);
}

TEST(TableOptions, EverySharderHonoursStateAndConstraintsOrSaysWhichTable) {
  // plan_task refuses (InternalError) any plan that breaks memory or a table's constraints unless
  // the sharder reported it infeasible, so this runs every default sharder through both.
  for (std::uint64_t seed : {4u, 5u}) {
    Task task = small_task(seed);
    for (auto& t : task.workload.tables)
      t.optimizer = seed == 4 ? OptimizerState::kAdam : OptimizerState::kRowWiseAdagrad;
    task.workload.tables[0].constraints.sharding_types = {ShardingType::kTableWise};
    // The task allows UVM (each device has host memory), one table does not.
    task.constraints.allow_uvm = true;
    for (auto& d : task.topology.devices) d.uvm_bytes = task.workload.total_bytes();
    task.workload.tables[1].constraints.allow_uvm = false;
    // Room for everything with its state, but not twice over: the state decides what fits.
    std::int64_t largest = 0;
    for (const auto& t : task.workload.tables) largest = std::max(largest, t.size_bytes());
    for (auto& d : task.topology.devices) d.hbm_bytes = std::max(largest * 3 / 2, task.workload.total_bytes() * 2 / 5);
    int planned = 0;
    for (const std::string& spec : default_sharders()) {
      auto cost = make_cost_model("sim", task);
      const ShardResult r = plan_task(spec, task, cost.get(), quiet());
      if (r.status != ShardStatus::kOk) {
        EXPECT_FALSE(r.reason.empty()) << spec;
        continue;
      }
      ++planned;
      EXPECT_EQ(find_error_in_plan(task, r.plan), "") << spec;
      const auto memory = plan_memory(task, r.plan);
      for (std::size_t d = 0; d < memory.size(); ++d)
        EXPECT_LE(memory[d].hbm_bytes, task.topology.devices[d].hbm_bytes) << spec;
    }
    EXPECT_GE(planned, 5) << "too few sharders planned for the check to mean anything";
  }
}

}  // namespace
}  // namespace embshard
