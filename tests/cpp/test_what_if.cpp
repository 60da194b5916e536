// What-if planning (eval/what_if.h): device counts and memory changed on a topology, capacity
// curves against planning every count, and fit advice whose every change plans and whose next
// smaller change does not — each checked by planning the changed task independently.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "embshard/data/data_io.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/what_if.h"
#include "embshard/plan/plan.h"
#include "embshard/plan/sharding_groups.h"
#include "embshard/report/capacity_report.h"
#include "embshard/shard/sharder.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;
using test_util::quiet;
using test_util::tiny_task;

constexpr std::int64_t kStep = std::int64_t{1} << 26;  // fit's memory step, 1/16 GiB

/** A fast sharder for the many plans these tests make; joint is covered once below. */
WhatIfOptions greedy_options() {
  WhatIfOptions o;
  o.sharder = "greedy:balance=lookup";
  return o;
}

/** `task` planned and judged on its own, as a user would (`plan` then `eval`). */
std::optional<double> independent_step(const Task& task, const WhatIfOptions& options) {
  const auto cost = make_cost_model(options.cost, task, quiet());
  const ShardResult r = plan_task(options.sharder, task, cost.get(), quiet());
  if (r.status != ShardStatus::kOk) return std::nullopt;
  EXPECT_EQ(find_error_in_plan(task, r.plan), "");
  return evaluate_plan(task, r.plan, options.judge, quiet()).step_ms;
}

Task with_devices(const Task& task, int devices) {
  Task t = task;
  t.topology = topology_with_devices(task.topology, devices);
  return t;
}

Task with_hbm(const Task& task, std::int64_t bytes) {
  Task t = task;
  t.topology = topology_with_hbm(task.topology, bytes);
  return t;
}

/** The HBM of device 0. */
std::int64_t hbm(const Task& task) { return task.topology.devices.front().hbm_bytes; }

TEST(WhatIfTopology, DeviceCountsAreOneHostThenWholeHosts) {
  const Topology t = make_topology("v100:nodes=1,gpus_per_node=4");
  EXPECT_EQ(device_counts(t, 1, 20), (std::vector<int>{1, 2, 3, 4, 8, 12, 16, 20}));
  EXPECT_EQ(device_counts(t, 5, 7), std::vector<int>{});
  EXPECT_EQ(device_counts(make_topology("cpu:devices=2"), 1, 6), (std::vector<int>{1, 2, 3, 4, 5, 6}));
}

TEST(WhatIfTopology, APresetKeepsItsNameAndFiguresAndRoundTripsThroughTheTaskFile) {
  Task task = tiny_task(6, "v100:nodes=1,gpus_per_node=4,hbm_gib=4", 1);
  const Task bigger = with_devices(task, 12);
  EXPECT_EQ(bigger.topology.num_devices(), 12);
  EXPECT_EQ(bigger.topology.num_hosts(), 3);
  EXPECT_NE(bigger.topology.name.find("nodes=3"), std::string::npos) << bigger.topology.name;
  EXPECT_EQ(hbm(bigger), hbm(task));
  EXPECT_EQ(bigger.topology.inter_host_gbps, task.topology.inter_host_gbps);
  const Task smaller = with_devices(task, 3);
  EXPECT_EQ(smaller.topology.num_devices(), 3);
  EXPECT_EQ(smaller.topology.num_hosts(), 1);
  // An odd memory figure survives the preset's GiB parameter exactly.
  const Task odd = with_hbm(task, 77 * kStep + 12345);
  EXPECT_EQ(hbm(odd), 77 * kStep + 12345);
  EXPECT_EQ(hbm(task_from_json(task_to_json(odd), "odd")), 77 * kStep + 12345);
  EXPECT_NE(error_of([&] { (void)with_devices(task, 6); }).find("6 devices is not a size"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)with_hbm(task, -1); }).find("outside"), std::string::npos);
}

TEST(WhatIfTopology, CountsStopWhereThePresetStopsAndEveryOneBuilds) {
  const Topology gpu = make_topology("v100:gpus_per_node=8");
  EXPECT_EQ(device_counts(gpu, 1, 1 << 20).back(), 4096 * 8);  // the preset's 4096 nodes
  EXPECT_EQ(topology_with_devices(gpu, 4096 * 8).num_devices(), 4096 * 8);
  const Topology cpu = make_topology("cpu:devices=2");
  EXPECT_EQ(device_counts(cpu, 1, 1 << 20).back(), 4096);
  EXPECT_EQ(topology_with_devices(cpu, 4096).num_devices(), 4096);
  EXPECT_NE(error_of([&] { (void)topology_with_devices(cpu, 4097); }).find("(1 to 4096 on one host)"),
            std::string::npos);
}

TEST(WhatIfTopology, ACustomTopologyRepeatsItsDeviceAndAOneHostMixKeepsItsCount) {
  Task task = tiny_task(6, "v100:nodes=1,gpus_per_node=4", 2);
  task.topology.name = "custom";
  const Task bigger = with_devices(task, 8);
  EXPECT_EQ(bigger.topology.num_devices(), 8);
  EXPECT_EQ(hbm(with_hbm(task, 5 * kStep)), 5 * kStep);
  // One host of two kinds: no host of one kind to add, but every device can take more memory.
  task.topology.devices[1].hbm_gbps *= 2;
  EXPECT_NE(error_of([&] { (void)with_devices(task, 8); }).find("device 1 differs"), std::string::npos);
  const Task more = with_hbm(task, 5 * kStep);
  for (std::size_t d = 0; d < 4; ++d) {
    EXPECT_EQ(more.topology.devices[d].hbm_bytes, 5 * kStep) << d;
    EXPECT_EQ(more.topology.devices[d].hbm_gbps, task.topology.devices[d].hbm_gbps) << d;
  }
}

/** `task` on two hosts of 4 V100-class devices (4 GiB each) and one of 4 A100-class ones, each
 *  host with its preset's links (a mix, as a task file's `"hosts"` writes it). */
Task on_mixed_hosts(const Task& task) {
  nlohmann::json doc = nlohmann::json::parse(task_to_json(task));
  doc["topology"] = {{"hosts", {"v100:nodes=2,gpus_per_node=4,hbm_gib=4", "a100:gpus_per_node=4,hbm_gib=4"}}};
  return task_from_json(doc.dump(), "mix");
}

TEST(WhatIfTopology, MixedHardwareGrowsAndShrinksByHostsOfItsLastKind) {
  const Task task = on_mixed_hosts(tiny_task(6, "v100:nodes=1,gpus_per_node=4", 1));
  const Topology& mix = task.topology;
  ASSERT_EQ(mix.num_devices(), 12);
  ASSERT_FALSE(mix.uniform_links());
  EXPECT_EQ(device_counts(mix, 1, 24), (std::vector<int>{8, 12, 16, 20, 24}));
  EXPECT_EQ(device_counts(mix, 13, 19), (std::vector<int>{16}));
  EXPECT_EQ(describe_device_counts(mix), "8 (the hosts before the last kind's), then whole hosts of 4 like device 11");
  // Grown: the kept hosts as they were, then hosts like the last device, each keeping its links;
  // the file carries them and a plan costs alike read back.
  const Task bigger = with_devices(task, 20);
  ASSERT_EQ(bigger.topology.num_devices(), 20);
  EXPECT_EQ(bigger.topology.num_hosts(), 5);
  for (int d = 0; d < 20; ++d) {
    const int like = d < 8 ? d : 11;
    EXPECT_EQ(bigger.topology.devices[d].hbm_gbps, mix.devices[like].hbm_gbps) << d;
    EXPECT_EQ(bigger.topology.devices[d].hbm_bytes, mix.devices[like].hbm_bytes) << d;
    EXPECT_EQ(bigger.topology.inter_gbps(d), mix.inter_gbps(like)) << d;
    EXPECT_EQ(bigger.topology.intra_gbps(d), mix.intra_gbps(like)) << d;
  }
  EXPECT_EQ(bigger.topology.slowest_inter_gbps(), mix.slowest_inter_gbps());
  EXPECT_EQ(bigger.topology.a2a_latency_us, mix.a2a_latency_us);
  const Task back = task_from_json(task_to_json(bigger), "back");
  const ShardResult r = plan_task("greedy", bigger, make_cost_model("sim", bigger, quiet()).get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(evaluate_plan(back, r.plan, kSimJudge, quiet()).step_ms,
            evaluate_plan(bigger, r.plan, kSimJudge, quiet()).step_ms);
  // Shrunk to the kept hosts: one kind, the topology's links alone.
  const Task kept = with_devices(task, 8);
  EXPECT_LT(kept.topology.first_unlike_device(), 0);
  EXPECT_TRUE(kept.topology.uniform_links());
  EXPECT_EQ(kept.topology.inter_host_gbps, make_topology("v100:nodes=2").inter_host_gbps);
  EXPECT_EQ(with_devices(task, 12).topology.devices.size(), 12u);
  // Counts the rule does not give, and mixes it cannot resize, are named.
  EXPECT_NE(error_of([&] { (void)with_devices(task, 4); }).find("4 devices is not a size"), std::string::npos);
  Task last_host_mixed = task;
  last_host_mixed.topology.devices[9].hbm_gbps *= 2;  // the last host's second device
  EXPECT_NE(error_of([&] {
              (void)with_devices(last_host_mixed, 16);
            }).find("topology: device 9 differs from device 11 on the last host; changing the number of devices needs"),
            std::string::npos);
}

/**
 * `size` over every count of `task` in [1, `most`] (at most 16: all planned), with a target between
 * the steps of the counts at `middle` and the next: each point is the step of planning that count's
 * task on its own, above its bound, and the answer is the first count that meets the target.
 */
void expect_every_count_planned_as_its_own_task(const Task& task, int most, std::size_t middle) {
  const WhatIfOptions options = greedy_options();
  const std::vector<int> counts = device_counts(task.topology, 1, most);
  ASSERT_LE(counts.size(), 16u);
  ASSERT_GT(counts.size(), middle + 1);
  std::vector<std::optional<double>> reference;
  for (int n : counts) reference.push_back(independent_step(with_devices(task, n), options));
  ASSERT_TRUE(reference[middle] && reference[middle + 1]);
  const double target = 0.5 * (*reference[middle] + *reference[middle + 1]);
  const CapacityCurve curve = plan_capacity(task, 1, most, target, options, quiet());
  ASSERT_EQ(curve.points.size(), counts.size());
  int first = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const CapacityPoint& p = curve.points[i];
    EXPECT_EQ(p.devices, counts[i]);
    EXPECT_EQ(p.run.ok(), reference[i].has_value()) << p.devices;
    if (reference[i] && p.run.ok()) {
      EXPECT_DOUBLE_EQ(p.run.eval.step_ms, *reference[i]) << p.devices;
      EXPECT_LE(p.bound_ms, p.run.eval.step_ms * (1 + 1e-9)) << p.devices;
    }
    if (!first && reference[i] && *reference[i] <= target) first = counts[i];
  }
  EXPECT_EQ(curve.fewest, first);
  EXPECT_NE(curve.verdict.find(std::to_string(first) + " devices"), std::string::npos) << curve.verdict;
}

TEST(WhatIfCapacity, TheFewestDevicesAreThoseOfPlanningEveryCount) {
  // 7 counts: 1 to 4 on one host, then 8, 12, 16.
  expect_every_count_planned_as_its_own_task(tiny_task(12, "v100:nodes=1,gpus_per_node=4,hbm_gib=4", 3), 16, 3);
}

TEST(WhatIfCapacity, BeyondTheGridTheAnswersNextSmallerCountIsPlannedAndMisses) {
  const Task task = tiny_task(12, "v100:nodes=1,gpus_per_node=4,hbm_gib=4", 4);
  const WhatIfOptions options = greedy_options();
  const std::vector<int> counts = device_counts(task.topology, 1, 64);  // 19 counts: a grid, then bisection
  const auto at24 = independent_step(with_devices(task, 24), options);
  ASSERT_TRUE(at24);
  const double target = *at24 * 1.0001;
  const CapacityCurve curve = plan_capacity(task, 1, 64, target, options, quiet());
  ASSERT_GT(curve.fewest, 0) << curve.verdict;
  EXPECT_LT(curve.points.size(), counts.size());
  const auto fewest = independent_step(with_devices(task, curve.fewest), options);
  ASSERT_TRUE(fewest);
  EXPECT_LE(*fewest, target);
  const auto below = *(std::find(counts.begin(), counts.end(), curve.fewest) - 1);
  const auto below_step = independent_step(with_devices(task, below), options);
  EXPECT_TRUE(!below_step || *below_step > target) << below;
  for (const CapacityPoint& p : curve.points) {
    if (p.devices < curve.fewest) {
      EXPECT_FALSE(p.meets(target)) << p.devices;
    }
  }
  EXPECT_TRUE(std::is_sorted(curve.points.begin(), curve.points.end(),
                             [](const CapacityPoint& a, const CapacityPoint& b) { return a.devices < b.devices; }));
  // The CSV and the report carry every point.
  const std::string csv = capacity_csv(curve);
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')), curve.points.size() + 1);
  EXPECT_NE(capacity_report_html(curve).find("<svg"), std::string::npos);
}

TEST(WhatIfCapacity, OnMixedHardwareEachCountIsPlannedAsItsTaskAndTheBoundHolds) {
  // The fewest hosts of the last kind (A100s beside two V100 hosts) that meet a target.
  const Task task = on_mixed_hosts(tiny_task(16, "v100:nodes=1,gpus_per_node=4", 14));
  ASSERT_EQ(device_counts(task.topology, 1, 24), (std::vector<int>{8, 12, 16, 20, 24}));
  expect_every_count_planned_as_its_own_task(task, 24, 1);
}

TEST(WhatIfCapacity, ATargetNoCountMeetsSaysSoWithTheBound) {
  const Task task = tiny_task(8, "v100:nodes=1,gpus_per_node=4,hbm_gib=4", 5);
  const CapacityCurve curve = plan_capacity(task, 1, 8, 1e-6, greedy_options(), quiet());
  EXPECT_EQ(curve.fewest, 0);
  EXPECT_NE(curve.verdict.find("no device count tried between 1 and 8 meets"), std::string::npos) << curve.verdict;
  EXPECT_NE(curve.verdict.find("lower bound is at least"), std::string::npos) << curve.verdict;
}

TEST(WhatIfCapacity, ACountTooSmallForASeparateGroupIsAPointNotAnError) {
  Task task = tiny_task(8, "v100:nodes=1,gpus_per_node=4", 13);
  task.constraints.groups.separate = {
      {task.workload.tables[0].name, task.workload.tables[1].name, task.workload.tables[2].name}};
  const CapacityCurve curve = plan_capacity(task, 1, 8, 0, greedy_options(), quiet());
  ASSERT_EQ(curve.points.size(), 5u);
  EXPECT_EQ(curve.points[0].run.status, "invalid");
  EXPECT_NE(curve.points[1].run.reason.find("has 3 tables but the task has 2 devices"), std::string::npos);
  EXPECT_NE(curve.points[2].run.status, "invalid");
}

TEST(WhatIfCapacity, BadInputIsOneLineNamingIt) {
  const Task task = tiny_task(4, "v100:nodes=1,gpus_per_node=4", 6);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(error_of([&] { (void)plan_capacity(task, 1, 4, nan, greedy_options(), quiet()); }).find("target step"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)plan_capacity(task, 5, 7, 1, greedy_options(), quiet());
            }).find("no device count between 5 and 7"),
            std::string::npos);
}

/** A pool task whose tables need about 3× the devices' HBM. */
Task infeasible_task(std::uint64_t seed) {
  Task task = tiny_task(14, "v100:nodes=1,gpus_per_node=4,hbm_gib=4,uvm_gib=64", seed);
  task.constraints.allow_uvm = false;
  const std::int64_t need = task.workload.total_bytes() / task.topology.num_devices();
  task.topology = topology_with_hbm(task.topology, need / 3);
  return task;
}

/** The change's task with this kind's field put back to the original's: equal to the original. */
void expect_only_its_kind_changed(const Task& original, const FitChange& change) {
  Task undone = change.task;
  if (change.kind == "memory" || change.kind == "devices") undone.topology = original.topology;
  if (change.kind == "uvm") {
    undone.constraints.allow_uvm = original.constraints.allow_uvm;
    for (std::size_t i = 0; i < undone.workload.tables.size(); ++i)
      undone.workload.tables[i].constraints.allow_uvm = original.workload.tables[i].constraints.allow_uvm;
  }
  if (change.kind == "table_types") undone.workload.tables = original.workload.tables;
  EXPECT_EQ(task_to_json(undone), task_to_json(original)) << change.kind;
}

TEST(WhatIfFit, EveryChangePlansAndTheNextSmallerOfItsKindDoesNot) {
  for (const std::uint64_t seed : {7u, 8u}) {
    const Task task = infeasible_task(seed);
    const WhatIfOptions options;  // joint: it splits tables, so more devices help too
    ASSERT_FALSE(independent_step(task, options));
    const FitAdvice advice = advise_fit(task, options, quiet());
    ASSERT_NE(advice.run.status, "ok");
    ASSERT_FALSE(advice.conflicts.empty());
    EXPECT_NE(advice.conflicts.front().find("tables need"), std::string::npos) << advice.conflicts.front();
    std::vector<std::string> kinds;
    for (const FitChange& c : advice.changes) kinds.push_back(c.kind);
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "memory"), 1);
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "devices"), 1);
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "uvm"), 1);
    for (const std::string& n : advice.not_helping) ADD_FAILURE() << n;
    for (const FitChange& c : advice.changes) {
      SCOPED_TRACE(c.kind + ": " + c.description);
      const auto step = independent_step(c.task, options);
      ASSERT_TRUE(step);
      EXPECT_DOUBLE_EQ(*step, c.run.eval.step_ms);
      expect_only_its_kind_changed(task, c);
      EXPECT_FALSE(c.next_smaller.empty());
      if (c.kind == "memory") {
        EXPECT_EQ(hbm(c.task) % kStep, 0);
        EXPECT_FALSE(independent_step(with_hbm(task, hbm(c.task) - kStep), options));
      }
      if (c.kind == "devices") {
        const std::vector<int> counts = device_counts(task.topology, 1, c.task.topology.num_devices() - 1);
        EXPECT_FALSE(independent_step(with_devices(task, counts.back()), options)) << counts.back();
      }
      if (c.kind == "uvm") {  // the same relaxation with its smallest table taken back
        Task smaller = c.task;
        TableSpec* least = nullptr;
        for (TableSpec& t : smaller.workload.tables) {
          if (t.constraints.allow_uvm && (!least || t.size_bytes() <= least->size_bytes())) least = &t;
        }
        ASSERT_NE(least, nullptr);
        least->constraints.allow_uvm = false;
        EXPECT_FALSE(independent_step(smaller, options));
      }
    }
    // Relaxations (no hardware) first, then the hardware added, least first.
    for (std::size_t i = 1; i < advice.changes.size(); ++i) {
      const FitChange &a = advice.changes[i - 1], &b = advice.changes[i];
      EXPECT_TRUE(a.added_share == 0 || (b.added_share != 0 && a.added_share <= b.added_share))
          << a.kind << " " << b.kind;
    }
  }
}

TEST(WhatIfFit, ATableThatMayNotBeSplitIsNamedAndFreeingItsTypesIsOffered) {
  Task task = tiny_task(8, "v100:nodes=1,gpus_per_node=4,hbm_gib=4", 9);
  auto largest =
      std::max_element(task.workload.tables.begin(), task.workload.tables.end(),
                       [](const TableSpec& a, const TableSpec& b) { return a.size_bytes() < b.size_bytes(); });
  largest->constraints.sharding_types = {ShardingType::kTableWise};
  task.topology = topology_with_hbm(task.topology, largest->size_bytes() * 3 / 4);
  const WhatIfOptions options;  // joint: it splits the table once it may
  const FitAdvice advice = advise_fit(task, options, quiet());
  ASSERT_NE(advice.run.status, "ok");
  const bool named = std::any_of(advice.conflicts.begin(), advice.conflicts.end(), [&](const std::string& c) {
    return c.find("table '" + largest->name + "'") != std::string::npos;
  });
  EXPECT_TRUE(named) << advice.conflicts.front();
  const auto types = std::find_if(advice.changes.begin(), advice.changes.end(),
                                  [](const FitChange& c) { return c.kind == "table_types"; });
  ASSERT_NE(types, advice.changes.end()) << (advice.not_helping.empty() ? "" : advice.not_helping.front());
  EXPECT_NE(types->description.find(largest->name), std::string::npos) << types->description;
  EXPECT_TRUE(independent_step(types->task, options));
  expect_only_its_kind_changed(task, *types);
}

TEST(WhatIfFit, AOneHostMixIsListedAsNotResizableAndTheOtherKindsAreStillTried) {
  Task task = infeasible_task(11);
  task.topology.name = "custom";
  task.topology.devices[1].hbm_gbps *= 2;
  const FitAdvice advice = advise_fit(task, WhatIfOptions{}, quiet());
  const auto listed = [&](const std::string& kind) {
    return std::any_of(advice.not_helping.begin(), advice.not_helping.end(), [&](const std::string& line) {
      return line.rfind(kind + ": topology: device 1 differs from device 0", 0) == 0;
    });
  };
  EXPECT_TRUE(listed("devices"));
  std::vector<std::string> kinds;
  for (const FitChange& c : advice.changes) kinds.push_back(c.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"uvm", "memory"}));
}

TEST(WhatIfFit, OnMixedHardwareDevicesAreAddedAsHostsOfTheLastKind) {
  // Too little memory on two V100 hosts and one A100 host with 4/3 theirs: the `devices` change
  // adds A100 hosts and plans, and one host fewer does not; the `memory` change gives every device
  // as much, no less than the A100s have.
  Task task = on_mixed_hosts(infeasible_task(12));
  const std::int64_t v100_hbm = infeasible_task(12).topology.devices.front().hbm_bytes;
  for (int d = 0; d < 12; ++d) task.topology.devices[d].hbm_bytes = d < 8 ? v100_hbm * 3 / 4 : v100_hbm;
  const WhatIfOptions options;
  ASSERT_FALSE(independent_step(task, options));
  const FitAdvice advice = advise_fit(task, options, quiet());
  const auto devices = std::find_if(advice.changes.begin(), advice.changes.end(),
                                    [](const FitChange& c) { return c.kind == "devices"; });
  for (const std::string& line : advice.not_helping) ADD_FAILURE() << line;
  ASSERT_NE(devices, advice.changes.end());
  const Topology& grown = devices->task.topology;
  ASSERT_GT(grown.num_devices(), 12);
  for (int d = 12; d < grown.num_devices(); ++d) {
    EXPECT_EQ(grown.devices[d].hbm_gbps, task.topology.devices.back().hbm_gbps) << d;
    EXPECT_EQ(grown.inter_gbps(d), task.topology.inter_gbps(11)) << d;
  }
  EXPECT_TRUE(independent_step(devices->task, options));
  if (grown.num_devices() > 16) {
    EXPECT_FALSE(independent_step(with_devices(task, grown.num_devices() - 4), options));
  }
  expect_only_its_kind_changed(task, *devices);
  const auto memory =
      std::find_if(advice.changes.begin(), advice.changes.end(), [](const FitChange& c) { return c.kind == "memory"; });
  ASSERT_NE(memory, advice.changes.end());
  const std::int64_t each = memory->task.topology.devices.front().hbm_bytes;
  EXPECT_GE(each, v100_hbm);
  for (const Device& d : memory->task.topology.devices) EXPECT_EQ(d.hbm_bytes, each);
  EXPECT_NE(memory->description.find(" a device)"), std::string::npos) << memory->description;
  EXPECT_TRUE(independent_step(memory->task, options));
  if (each - kStep >= v100_hbm) {
    EXPECT_FALSE(independent_step(with_hbm(task, each - kStep), options));
  }
  expect_only_its_kind_changed(task, *memory);
}

/** The explain test's body on `task`, its plan in layout `groups` (1D, or a 2D plan whose devices
 *  0..3 are the ranks of a sharding group of 4). */
void expect_each_next_best_is_the_best_move(const Task& task, const ShardingGroups& groups) {
  const std::vector<int> devices = {0, 0, 0, 0, 1, 1, 2, 3};  // device 0 overloaded
  const auto whole_tables = [&](const std::vector<int>& on) {
    Plan p = table_wise_plan(task, on);
    p.groups = groups;
    return p;
  };
  const Plan plan = whole_tables(devices);
  const auto judge = make_cost_model("sim", sharding_group_task(task, groups), quiet());
  const auto step = [&](const Plan& p) { return objective_value(judge->estimate(task, p, quiet()), Objective::kStep); };
  const double base = step(plan);
  const std::vector<TableExplanation> why = explain_plan(task, plan, *judge, quiet());
  ASSERT_EQ(why.size(), task.workload.tables.size());
  bool some_move_helps = false;
  for (const TableExplanation& e : why) {
    const auto i = static_cast<std::size_t>(std::find_if(task.workload.tables.begin(), task.workload.tables.end(),
                                                         [&](const TableSpec& t) { return t.name == e.table; }) -
                                            task.workload.tables.begin());
    double best = std::numeric_limits<double>::infinity();
    for (int d = 0; d < 4; ++d) {  // the slow reference: every other device, then rows over all four
      if (d == devices[i]) continue;
      std::vector<int> moved = devices;
      moved[i] = d;
      const Plan p = whole_tables(moved);
      if (find_error_in_plan(task, p).empty()) best = std::min(best, step(p) - base);
    }
    Plan rows = plan;
    const TableSpec& t = task.workload.tables[i];
    rows.tables[i].type = ShardingType::kRowWise;
    rows.tables[i].shards.clear();
    const std::int64_t block = (t.num_rows() + 3) / 4;
    for (int d = 0; d < 4; ++d) {
      Shard s;
      s.device = d, s.row_begin = d * block, s.row_end = std::min(t.num_rows(), (d + 1) * block), s.col_end = t.dim;
      rows.tables[i].shards.push_back(s);
    }
    if (find_error_in_plan(task, rows).empty()) best = std::min(best, step(rows) - base);
    EXPECT_EQ(e.placement, "table_wise on device " + std::to_string(devices[i]));
    EXPECT_NEAR(e.next_best_delta_ms, best, 1e-9 * base) << e.table << ": " << e.next_best;
    some_move_helps = some_move_helps || e.next_best_delta_ms < 0;
  }
  EXPECT_TRUE(some_move_helps);  // device 0 holds half the tables
}

TEST(WhatIfExplain, EachTablesNextBestIsTheBestOfMovingItWholeOrSpreadingItsRows) {
  expect_each_next_best_is_the_best_move(tiny_task(8, "v100:nodes=1,gpus_per_node=4,hbm_gib=4", 12), {});
}

TEST(WhatIfExplain, A2DPlanIsExplainedInItsShardingGroup) {
  // 2 hosts of 4, groups of 4 strided ranks: the plan's devices 0..3 are a group's ranks.
  const Task task = tiny_task(8, "v100:nodes=2,gpus_per_node=4,hbm_gib=4", 12);
  expect_each_next_best_is_the_best_move(task, {4, GroupRanks::kStrided, 8});
}

TEST(WhatIfFit, ATaskThatFitsNeedsNoChangeAndJointIsTheDefault) {
  const Task task = tiny_task(6, "v100:nodes=1,gpus_per_node=4,hbm_gib=4", 10);
  const FitAdvice advice = advise_fit(task, WhatIfOptions{}, quiet());
  EXPECT_EQ(advice.run.status, "ok");
  EXPECT_EQ(advice.run.sharder.rfind("joint", 0), 0u);
  EXPECT_TRUE(advice.changes.empty());
  EXPECT_TRUE(advice.conflicts.empty());
}

}  // namespace
}  // namespace embshard
