// Mixed hardware (data/topology.h, cost/analytic.h): hosts of different presets in one task, each
// device costed by its own speed — the faster devices take more of the work, every sharder's plan
// stays above the bound, and the task file carries the hosts.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "embshard/data/data_io.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/evaluator.h"
#include "embshard/plan/plan.h"
#include "embshard/shard/sharder.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;
using test_util::quiet;

/** A pool task on one host of 4 H100-class devices and one of 4 A100-class ones. */
Task mixed_task(int tables, std::uint64_t seed) {
  static constexpr int kDims[] = {16, 32, 64};
  Task task = test_util::pool_task(tables, "h100:gpus_per_node=4", seed, kDims);
  task.workload.batch_size = 65536;
  nlohmann::json doc = nlohmann::json::parse(task_to_json(task));
  doc["topology"] = {{"hosts", {"h100:gpus_per_node=4", "a100:gpus_per_node=4"}}};
  return task_from_json(doc.dump(), "mixed");
}

TEST(MixedHardware, TheTaskFileCarriesHostsOfTwoKinds) {
  const Task task = mixed_task(20, 1);
  ASSERT_EQ(task.topology.num_devices(), 8);
  EXPECT_EQ(task.topology.num_hosts(), 2);
  EXPECT_GT(task.topology.devices[0].hbm_gbps, task.topology.devices[7].hbm_gbps);
  EXPECT_EQ(task.topology.inter_host_gbps,
            std::min(make_topology("h100:nodes=2").inter_host_gbps, make_topology("a100:nodes=2").inter_host_gbps));
  const Task back = task_from_json(task_to_json(task), "back");  // written as explicit devices
  EXPECT_EQ(back.topology.devices[7].hbm_gbps, task.topology.devices[7].hbm_gbps);
  EXPECT_NE(error_of([] {
              (void)task_from_json(
                  R"({"schema_version": 1, "batch_size": 8, "topology": {"hosts": ["h100:gpus_per_node=4", "a100"]},
                                      "tables": [{"name": "t", "dim": 4, "stats": {"num_rows": 10, "pooling_factor": 1}}]})",
                  "t.json");
            }).find("hosts of 8 devices beside hosts of 4"),
            std::string::npos);
  // An entry that is not a spec is named once.
  EXPECT_EQ(error_of([] {
              (void)task_from_json(
                  R"({"schema_version": 1, "batch_size": 8, "topology": {"hosts": [["v100"]]},
                                      "tables": [{"name": "t", "dim": 4, "stats": {"num_rows": 10, "pooling_factor": 1}}]})",
                  "t.json");
            }),
            "t.json: topology.hosts[0]: expected a string, got an array");
}

TEST(MixedHardware, EachHostKeepsItsPresetsLinksAndTheTaskFileCarriesThem) {
  const Task task = mixed_task(20, 1);
  const Topology h100 = make_topology("h100:nodes=2"), a100 = make_topology("a100:nodes=2");
  // A preset's canonical spec names its links, whole numbers written out.
  EXPECT_EQ(a100.name, "a100:nodes=2,gpus_per_node=8,hbm_gib=80,uvm_gib=256,intra_host_gbps=300,inter_host_gbps=25");
  EXPECT_FALSE(task.topology.uniform_links());
  EXPECT_EQ(task.topology.intra_gbps(0), h100.intra_host_gbps);
  EXPECT_EQ(task.topology.inter_gbps(3), h100.inter_host_gbps);
  EXPECT_EQ(task.topology.intra_gbps(4), a100.intra_host_gbps);
  EXPECT_EQ(task.topology.inter_gbps(7), a100.inter_host_gbps);
  // Written back device by device, it reads back with the same links and costs a plan alike.
  const Task back = task_from_json(task_to_json(task), "back");
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(back.topology.intra_gbps(d), task.topology.intra_gbps(d)) << d;
    EXPECT_EQ(back.topology.inter_gbps(d), task.topology.inter_gbps(d)) << d;
  }
  const auto cost = make_cost_model("sim", task, quiet());
  const ShardResult r = plan_task("greedy", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(evaluate_plan(back, r.plan, kSimJudge, quiet()).step_ms,
            evaluate_plan(task, r.plan, kSimJudge, quiet()).step_ms);
  // Presets with the same links (an H100's node and an H200's) name none of their own: the file
  // keeps the topology's one pair.
  nlohmann::json doc = nlohmann::json::parse(task_to_json(task));
  doc["topology"] = {{"hosts", {"h100:gpus_per_node=4", "h200:gpus_per_node=4"}}};
  const Task same = task_from_json(doc.dump(), "same links");
  EXPECT_TRUE(same.topology.uniform_links());
  EXPECT_EQ(nlohmann::json::parse(task_to_json(same))["topology"]["devices"][0].count("inter_host_gbps"), 0u);
}

TEST(MixedHardware, AHostWithAnotherNicIsCostedAtItsOwnRateAndBounded) {
  // Two H100 hosts, the second with an eighth of the NIC bandwidth (a preset's inter_host_gbps).
  // In an all-to-all every byte between the hosts crosses both NICs, so the slow one sets the
  // exchange whichever host holds the columns: a plan takes longer than with both NICs fast, and
  // no sharder's plan beats the bound, which is above the bound with both NICs fast. Every device
  // of the slow host sends or receives its share of the other host's bytes through that NIC
  // whatever the plan (analytic.cpp `with_slowest_nic`), so the bound is close to joint's plan
  // (at the mean NIC bandwidth it was 3.5× below it).
  for (const std::uint64_t seed : {5u, 6u}) {
    Task task = mixed_task(40, seed);
    nlohmann::json doc = nlohmann::json::parse(task_to_json(task));
    doc["topology"] = {{"hosts", {"h100:gpus_per_node=4", "h100:gpus_per_node=4,inter_host_gbps=6"}}};
    task = task_from_json(doc.dump(), "slow nic");
    const double fast_nic = make_topology("h100:nodes=2").inter_host_gbps;
    ASSERT_EQ(task.topology.inter_gbps(4), 6.0);
    ASSERT_EQ(task.topology.inter_gbps(0), fast_nic);
    Task both_fast = task;
    for (Device& d : both_fast.topology.devices) d.inter_host_gbps = 0.0;
    both_fast.topology.inter_host_gbps = fast_nic;
    const auto cost = make_cost_model("sim", task, quiet());
    const double bound = cost->lower_bound(task, Objective::kStep).value();
    // The bound knows the slow NIC: its averaging floor takes every link at the mean bandwidth.
    EXPECT_GT(bound, make_cost_model("sim", both_fast, quiet())->lower_bound(both_fast, Objective::kStep).value())
        << seed;
    for (const char* spec : {"joint", "greedy", "torchrec", "random"}) {
      const ShardResult r = plan_task(spec, task, cost.get(), quiet());
      ASSERT_EQ(r.status, ShardStatus::kOk) << spec << ": " << r.reason;
      const EvalResult slow = evaluate_plan(task, r.plan, kSimJudge, quiet());
      const EvalResult fast = evaluate_plan(both_fast, r.plan, kSimJudge, quiet());
      EXPECT_GT(slow.step_ms, fast.step_ms) << spec;
      EXPECT_LE(bound, slow.step_ms * (1 + 1e-9)) << spec;
      if (std::string(spec) == "joint") {
        EXPECT_GT(bound, 0.85 * slow.step_ms) << seed;  // 0.93–0.97 measured
      }
    }
  }
}

TEST(MixedHardware, FasterDevicesTakeMoreOfTheWorkAndNoPlanBeatsTheBound) {
  for (const std::uint64_t seed : {2u, 3u}) {
    const Task task = mixed_task(40, seed);
    const auto cost = make_cost_model("sim", task, quiet());
    const double bound = cost->lower_bound(task, Objective::kStep).value();
    const ShardResult r = plan_task("joint", task, cost.get(), quiet());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    // Work: what each device's shards would take on device 0 (one yardstick for both kinds).
    double fast = 0, slow = 0;
    std::vector<std::vector<PlacedShard>> by_device = shards_by_device(task, r.plan);
    for (std::size_t d = 0; d < by_device.size(); ++d) {
      for (PlacedShard& p : by_device[d]) p.shard.device = 0;
      const DeviceCompute c = cost->compute().device_compute(task, by_device[d], quiet());
      (d < 4 ? fast : slow) += c.fw_ms + c.bw_ms;
    }
    EXPECT_GT(fast, 1.3 * slow) << seed;  // H100s have 1.64× the A100s' bandwidth
    for (const char* spec : {"joint", "greedy", "torchrec", "neuroshard", "random"}) {
      const ShardResult p = plan_task(spec, task, cost.get(), quiet());
      if (p.status != ShardStatus::kOk) continue;
      EXPECT_LE(bound, evaluate_plan(task, p.plan, kSimJudge, quiet()).step_ms * (1 + 1e-9)) << spec;
    }
  }
}

TEST(MixedHardware, DevicesWithoutAUvmLinkAreCostedAndBounded) {
  // uvm_gbps 0 is valid where a device has no UVM memory (data/topology.h): its UVM term is 0,
  // never 0 × ∞, on either kind being device 0.
  for (const bool first : {true, false}) {
    Task task = mixed_task(20, 4);
    for (Device& d : task.topology.devices)
      if ((d.hbm_gbps == task.topology.devices.front().hbm_gbps) == first) d.uvm_gbps = 0.0, d.uvm_bytes = 0;
    ASSERT_EQ(find_error_in_task(task, "mixed"), "");
    const auto cost = make_cost_model("sim", task, quiet());
    const double bound = cost->lower_bound(task, Objective::kStep).value();
    EXPECT_TRUE(std::isfinite(bound) && bound > 0) << bound << " first " << first;
    const ShardResult r = plan_task("joint", task, cost.get(), quiet());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    const double step = evaluate_plan(task, r.plan, kSimJudge, quiet()).step_ms;
    EXPECT_TRUE(std::isfinite(step)) << step;
    EXPECT_LE(bound, step * (1 + 1e-9));
  }
}

}  // namespace
}  // namespace embshard
