// Placement groups (data/task.h PlacementGroups): tables colocated whole on one device or kept on
// no common device — checked in the task, checked in every plan, kept by joint, and reported as
// infeasible (naming the group) by sharders that cannot keep them.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "embshard/data/data_io.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/evaluator.h"
#include "embshard/plan/plan.h"
#include "embshard/shard/sharder.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::quiet;
using test_util::tiny_task;

std::string name(const Task& task, int i) { return task.workload.tables[static_cast<std::size_t>(i)].name; }

/** A task of `n` pool tables on 4 V100s with tables 0–2 colocated and 3–5 separated. */
Task grouped_task(int n, std::uint64_t seed) {
  Task task = tiny_task(n, "v100:nodes=1,gpus_per_node=4", seed);
  task.constraints.groups.colocate = {{name(task, 0), name(task, 1), name(task, 2)}};
  task.constraints.groups.separate = {{name(task, 3), name(task, 4), name(task, 5)}};
  return task;
}

TEST(PlacementGroups, TheTaskFileCarriesThemAndContradictionsAreOneLineErrors) {
  Task task = grouped_task(8, 1);
  EXPECT_EQ(find_error_in_task(task, "t"), "");
  const Task back = task_from_json(task_to_json(task), "t");
  EXPECT_EQ(back.constraints.groups.colocate, task.constraints.groups.colocate);
  EXPECT_EQ(back.constraints.groups.separate, task.constraints.groups.separate);
  const auto error = [&](const std::function<void(PlacementGroups&)>& edit) {
    Task t = task;
    edit(t.constraints.groups);
    return find_error_in_task(t, "t");
  };
  const std::string a = name(task, 0), b = name(task, 1), c = name(task, 3);
  EXPECT_NE(error([&](PlacementGroups& g) {
              g.colocate.push_back({a, "nope"});
            }).find("names table 'nope', which the task does not have"),
            std::string::npos);
  EXPECT_NE(error([&](PlacementGroups& g) { g.separate.push_back({c}); }).find("must name at least 2 tables"),
            std::string::npos);
  EXPECT_NE(error([&](PlacementGroups& g) { g.separate.push_back({c, c}); }).find("twice"), std::string::npos);
  EXPECT_NE(error([&](PlacementGroups& g) {
              g.colocate.push_back({a, c});
            }).find("is already in colocate group 1"),
            std::string::npos);
  EXPECT_NE(error([&](PlacementGroups& g) {
              g.separate.push_back({a, b});
            }).find("contradicts colocate group 1"),
            std::string::npos);
  EXPECT_NE(error([&](PlacementGroups& g) {
              g.separate.push_back({name(task, 3), name(task, 4), name(task, 5), name(task, 6), name(task, 7)});
            }).find("has 5 tables but the task has 4 devices"),
            std::string::npos);
  task.workload.tables[0].constraints.sharding_types = {ShardingType::kRowWise};
  EXPECT_NE(find_error_in_task(task, "t").find("does not allow table_wise"), std::string::npos);
}

TEST(PlacementGroups, APlanThatBreaksAGroupIsNamedWithTheTablesAndDevice) {
  const Task task = grouped_task(8, 2);
  std::vector<int> devices = {1, 1, 1, 0, 2, 3, 0, 0};
  EXPECT_EQ(find_placement_group_violation(task, table_wise_plan(task, devices)), "");
  devices[2] = 2;
  EXPECT_NE(find_error_in_plan(task, table_wise_plan(task, devices))
                .find("colocate group 1 ('" + name(task, 0) + "', '" + name(task, 1) + "', '" + name(task, 2) +
                      "'): table '" + name(task, 2) + "' is on device 2, table '" + name(task, 0) + "' on device 1"),
            std::string::npos);
  devices = {1, 1, 1, 0, 2, 0, 0, 0};
  EXPECT_NE(find_error_in_plan(task, table_wise_plan(task, devices))
                .find("tables '" + name(task, 3) + "' and '" + name(task, 5) + "' both have a shard on device 0"),
            std::string::npos);
}

/** The best table-wise plan that keeps the groups, by enumeration (the slow reference). */
double best_table_wise_step(const Task& task) {
  const int n = task.topology.num_devices();
  const auto cost = make_cost_model("sim", task, quiet());
  std::vector<int> devices(task.workload.tables.size(), 0);
  double best = std::numeric_limits<double>::infinity();
  const std::function<void(std::size_t)> visit = [&](std::size_t t) {
    if (t == devices.size()) {
      const Plan plan = table_wise_plan(task, devices);
      if (find_error_in_plan(task, plan).empty())
        best = std::min(best, objective_value(cost->estimate(task, plan, quiet()), Objective::kStep));
      return;
    }
    for (int d = 0; d < n; ++d) devices[t] = d, visit(t + 1);
  };
  visit(0);
  return best;
}

TEST(PlacementGroups, JointKeepsThemAndIsNoWorseThanEveryTableWisePlanThatDoes) {
  for (const std::uint64_t seed : {3u, 4u, 5u}) {
    const Task task = grouped_task(7, seed);
    const auto cost = make_cost_model("sim", task, quiet());
    const ShardResult r = plan_task("joint", task, cost.get(), quiet());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_EQ(find_placement_group_violation(task, r.plan), "");
    const double step = objective_value(cost->estimate(task, r.plan, quiet()), Objective::kStep);
    EXPECT_LE(step, best_table_wise_step(task) * (1 + 1e-9)) << seed;
  }
}

TEST(PlacementGroups, EverySharderKeepsThemOrSaysItCannotNamingTheGroup) {
  const Task task = grouped_task(12, 6);
  const auto cost = make_cost_model("sim", task, quiet());
  int kept = 0;
  for (const char* spec : {"joint", "greedy", "greedy:balance=size", "random", "torchrec", "neuroshard"}) {
    const ShardResult r = plan_task(spec, task, cost.get(), quiet());
    if (r.status == ShardStatus::kOk) {
      EXPECT_EQ(find_error_in_plan(task, r.plan), "") << spec;
      ++kept;
    } else {
      EXPECT_NE(r.reason.find(" group 1 ("), std::string::npos) << spec << ": " << r.reason;
    }
  }
  EXPECT_GE(kept, 1);  // joint at least
}

TEST(PlacementGroups, AColocateGroupTooBigForADeviceIsNamedInJointsReason) {
  // Every table colocated, on devices that hold about half of them: joint finds no plan, and its
  // reason says the table that fits nowhere must share a device with its group.
  Task task = tiny_task(8, "v100:nodes=1,gpus_per_node=4", 7);
  std::vector<std::string> all;
  std::int64_t bytes = 0;
  for (const TableSpec& t : task.workload.tables) all.push_back(t.name), bytes += t.size_bytes();
  task.constraints.groups.colocate = {all};
  task.constraints.allow_uvm = false;
  for (Device& d : task.topology.devices) d.hbm_bytes = bytes / 2;
  ASSERT_EQ(find_error_in_task(task, task.id), "");
  const auto cost = make_cost_model("sim", task, quiet());
  const ShardResult r = plan_task("joint", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kInfeasible);
  EXPECT_NE(r.reason.find("it is in a colocate group of 8 tables"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("which must share one device"), std::string::npos) << r.reason;
}

TEST(PlacementGroups, AtScaleAColocatedGroupFindsItsDeviceAmongTheCandidates) {
  // More than 32 devices: a piece is tried on the least loaded devices only; a colocated table
  // must still reach its group's device, and stays whole even where the heaviest table, which
  // above one host starts in row pieces (joint.h step 2), is one of the group.
  Task task = tiny_task(80, "v100:nodes=6,gpus_per_node=8", 7);
  const auto& tables = task.workload.tables;
  const auto heaviest = std::max_element(tables.begin(), tables.end(), [](const TableSpec& a, const TableSpec& b) {
    return a.stats.num_indices * a.dim < b.stats.num_indices * b.dim;
  });
  const int h = static_cast<int>(heaviest - tables.begin());
  ASSERT_TRUE(h != 11 && h != 21 && h != 10 && h != 20) << h;
  task.constraints.groups.colocate = {{name(task, 10), name(task, 20), name(task, h)}};
  task.constraints.groups.separate = {{name(task, 11), name(task, 21)}};
  const auto cost = make_cost_model("sim", task, quiet());
  const ShardResult r = plan_task("joint:work=20000", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(find_error_in_plan(task, r.plan), "");
}

TEST(PlacementGroups, TwoDevicesRepartitionedOnTheFastPathKeepThem) {
  // 64 devices (joint.h step 3 re-partitions two devices' whole tables): with few tables a device
  // every split is estimated; with many (beyond 16 a pair) none is, and the search goes on.
  for (const int n : {300, 2500}) {
    Task task = tiny_task(n, "v100:nodes=8,gpus_per_node=8", 5);
    task.constraints.groups.colocate = {{name(task, 10), name(task, 20)}};
    task.constraints.groups.separate = {{name(task, 11), name(task, 21), name(task, 31)},
                                        {name(task, 12), name(task, 22)}};
    const auto cost = make_cost_model("sim", task, quiet());
    for (const char* spec : {"joint:work=200000", "joint:work=200000,keep_layouts=true"}) {
      const ShardResult r = plan_task(spec, task, cost.get(), quiet());
      ASSERT_EQ(r.status, ShardStatus::kOk) << n << " tables, " << spec << ": " << r.reason;
      EXPECT_EQ(find_error_in_plan(task, r.plan), "") << n << " tables, " << spec;
    }
  }
}

}  // namespace
}  // namespace embshard
