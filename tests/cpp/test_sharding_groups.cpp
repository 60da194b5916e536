// Tests of 2D plans (plan/sharding_groups.h): the layout, its checks, its cost, its file, and
// joint's choice of it.
#include <gtest/gtest.h>

#include <cmath>

#include "embshard/core/error.h"
#include "embshard/cost/cost_model.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/evaluator.h"
#include "embshard/plan/plan_io.h"
#include "embshard/plan/sharding_groups.h"
#include "embshard/plan/torchrec_export.h"
#include "embshard/shard/sharder.h"
#include "shard_test_util.h"

namespace embshard {
namespace {

using test_util::quiet;
using test_util::tiny_task;

/** The objective of `plan` on `task` under sim, a 2D plan by a model built for its group's task. */
double sim_value(const Task& task, const Plan& plan, Objective objective = Objective::kStep) {
  const auto cost = make_cost_model("sim", sharding_group_task(task, plan.groups));
  return objective_value(cost->estimate(task, plan, quiet()), objective);
}

/** Every table whole, on rank t % ranks of a group. */
Plan round_robin(const Task& task, int ranks, ShardingGroups groups) {
  std::vector<int> devices;
  for (std::size_t t = 0; t < task.workload.tables.size(); ++t) devices.push_back(static_cast<int>(t) % ranks);
  Plan plan = table_wise_plan(task, devices);
  plan.groups = groups;
  return plan;
}

TEST(ShardingGroups, RanksSitWhereDMPCollectionPutsThem) {
  // TorchRec's example (model_parallel.py, DMPCollection): 2 hosts of 4, groups of 4 ranks:
  // group 0 = [0, 2, 4, 6], group 1 = [1, 3, 5, 7]; replicas [0, 1], [2, 3], [4, 5], [6, 7].
  const ShardingGroups strided{4, GroupRanks::kStrided};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(global_device(strided, 8, 0, r), 2 * r);
    EXPECT_EQ(global_device(strided, 8, 1, r), 2 * r + 1);
  }
  // use_inter_host_allreduce: contiguous groups [0..3], [4..7]; replicas [0, 4], [1, 5], ...
  const ShardingGroups contiguous{4, GroupRanks::kContiguous};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(global_device(contiguous, 8, 1, r), 4 + r);
  const ReplicaSpread s = replica_spread(strided, 8, 4);
  EXPECT_EQ(s.per_host, 2);
  EXPECT_EQ(s.hosts, 1);
  const ReplicaSpread c = replica_spread(contiguous, 8, 4);
  EXPECT_EQ(c.per_host, 1);
  EXPECT_EQ(c.hosts, 2);
}

TEST(ShardingGroups, AGroupsTaskHasItsDevicesHostsShareOfTheBatchLeastMemoryAndSlowestLinks) {
  Task task = tiny_task(6, "v100:nodes=2,gpus_per_node=4", 1);
  task.topology.devices[5].hbm_bytes /= 2;  // rank 2 of strided group 1 (global 2·2 + 1)
  const Task strided = sharding_group_task(task, {4, GroupRanks::kStrided});
  ASSERT_EQ(strided.topology.num_devices(), 4);
  EXPECT_EQ(strided.topology.devices_per_host, 2);  // ranks 0, 2 on host 0; 4, 6 on host 1
  EXPECT_EQ(strided.workload.batch_size, task.workload.batch_size / 2);
  EXPECT_EQ(strided.topology.devices[2].hbm_bytes, task.topology.devices[5].hbm_bytes);
  EXPECT_EQ(strided.topology.devices[1].hbm_bytes, task.topology.devices[0].hbm_bytes);
  const Task contiguous = sharding_group_task(task, {4, GroupRanks::kContiguous});
  EXPECT_EQ(contiguous.topology.devices_per_host, 4);  // a group is one host
  EXPECT_EQ(contiguous.topology.devices[1].hbm_bytes, task.topology.devices[5].hbm_bytes);
  // Host 1 with another NIC and NVLink (mixed hardware): a rank takes its slowest replica's links.
  const double fast_nic = task.topology.inter_host_gbps, fast_link = task.topology.intra_host_gbps;
  for (int d = 4; d < 8; ++d) {
    task.topology.devices[static_cast<std::size_t>(d)].inter_host_gbps = fast_nic / 4;
    task.topology.devices[static_cast<std::size_t>(d)].intra_host_gbps = fast_link / 2;
  }
  const Topology strided_links = sharding_group_topology(task.topology, {4, GroupRanks::kStrided});
  EXPECT_EQ(strided_links.inter_gbps(0), fast_nic);      // replicas 0 and 1, host 0
  EXPECT_EQ(strided_links.inter_gbps(2), fast_nic / 4);  // replicas 4 and 5, host 1
  EXPECT_EQ(strided_links.intra_gbps(3), fast_link / 2);
  EXPECT_EQ(find_error_in_topology(strided_links, "group"), "");
  const Topology contiguous_links = sharding_group_topology(task.topology, {4, GroupRanks::kContiguous});
  for (int r = 0; r < 4; ++r) EXPECT_EQ(contiguous_links.inter_gbps(r), fast_nic / 4) << r;  // replicas r, 4 + r
  for (std::size_t t = 0; t < task.workload.tables.size(); ++t) {
    const TableStats& whole = task.workload.tables[t].stats;
    const TableStats& half = strided.workload.tables[t].stats;
    EXPECT_EQ(find_error_in_stats(half, "half"), "");
    EXPECT_NEAR(static_cast<double>(half.num_indices), whole.num_indices / 2.0, 1.0);
    EXPECT_LE(half.num_distinct, whole.num_distinct);
    EXPECT_GE(2 * half.num_distinct + 1, whole.num_distinct);  // half the samples see at least half the rows
  }
}

TEST(ShardingGroups, LayoutsATaskCannotTakeAreErrorsNamingTheField) {
  const Task one_host = tiny_task(4, "v100:gpus_per_node=4", 0);
  EXPECT_NE(find_error_in_groups(one_host, {2, GroupRanks::kStrided}).find("more than one host"), std::string::npos);
  Task task = tiny_task(4, "v100:nodes=3,gpus_per_node=4", 0);  // 12 devices
  task.workload.batch_size = 6144;
  EXPECT_NE(find_error_in_groups(task, {5, GroupRanks::kStrided}).find("must divide the 12 devices"),
            std::string::npos);
  EXPECT_NE(find_error_in_groups(task, {12, GroupRanks::kStrided}).find("must divide the 12 devices"),
            std::string::npos);
  // Strided groups of 2: 6 replicas neither divide the 4 devices of a host nor are a multiple of them.
  EXPECT_NE(find_error_in_groups(task, {2, GroupRanks::kStrided}).find("replica count 6"), std::string::npos);
  EXPECT_EQ(find_error_in_groups(task, {2, GroupRanks::kContiguous}), "");
  Task odd = task;
  odd.workload.batch_size = 1001;
  EXPECT_NE(find_error_in_groups(odd, {4, GroupRanks::kContiguous}).find("batch 1001"), std::string::npos);
  // find_error_in_plan names the field; the plan file rejects a size of 0 or less.
  const Plan plan = round_robin(task, 5, {5, GroupRanks::kStrided});
  EXPECT_EQ(find_error_in_plan(task, plan).rfind("plan: sharding_groups.size 5", 0), 0u)
      << find_error_in_plan(task, plan);
  std::string json = plan_to_json(round_robin(task, 4, {4, GroupRanks::kContiguous}));
  json.replace(json.find("\"size\": 4"), 9, "\"size\": 0");
  EXPECT_THROW((void)plan_from_json(json, "p.json"), Error);
  // No data-parallel table in a 2D plan.
  Plan copies = round_robin(task, 4, {4, GroupRanks::kContiguous});
  copies.tables[0].type = ShardingType::kDataParallel;
  copies.tables[0].shards.clear();
  for (int r = 0; r < 4; ++r)
    copies.tables[0].shards.push_back({r, 0, task.workload.tables[0].num_rows(), 0, task.workload.tables[0].dim, -1});
  EXPECT_NE(find_error_in_plan(task, copies).find("is data_parallel, which a 2D plan"), std::string::npos)
      << find_error_in_plan(task, copies);
  // A shard on a rank outside its group.
  Plan outside = round_robin(task, 4, {4, GroupRanks::kContiguous});
  outside.tables[0].shards[0].device = 5;
  EXPECT_NE(find_error_in_plan(task, outside).find("in a sharding group of 4 ranks"), std::string::npos)
      << find_error_in_plan(task, outside);
}

TEST(ShardingGroups, LayoutsThatPlaceGroupsAlikeAreListedOnceAndOthersEachTime) {
  // 4 hosts of 1 device: strided and contiguous groups of 2 spread over hosts alike; they are the
  // same layout when the devices are, and two when memory differs ([big, small, big, small]: a
  // strided rank's replicas include a small device, a contiguous rank's do not for rank 0).
  Task task = tiny_task(4, "v100:nodes=4,gpus_per_node=1", 4);
  task.workload.batch_size = 4096;
  const auto count = [&](int size) {
    int n = 0;
    for (const ShardingGroups& g : sharding_group_layouts(task)) n += g.size == size;
    return n;
  };
  EXPECT_EQ(count(2), 1);
  task.topology.devices[1].hbm_bytes /= 2;
  task.topology.devices[3].hbm_bytes /= 2;
  EXPECT_EQ(count(2), 2);
  EXPECT_NE(sharding_group_topology(task.topology, {2, GroupRanks::kStrided}).devices[0].hbm_bytes,
            sharding_group_topology(task.topology, {2, GroupRanks::kContiguous}).devices[0].hbm_bytes);
  // The same with equal memory and hosts 1 and 3 on a slower NIC (mixed hardware): links too.
  task.topology.devices[1].hbm_bytes = task.topology.devices[3].hbm_bytes = task.topology.devices[0].hbm_bytes;
  EXPECT_EQ(count(2), 1);
  task.topology.devices[1].inter_host_gbps = task.topology.devices[3].inter_host_gbps = 1.0;
  EXPECT_EQ(count(2), 2);
}

TEST(ShardingGroups, AStepIsTheGroupsStepPlusTheSyncWorkedByHand) {
  // 2 hosts of 2: strided groups of 2 put a rank's 2 replicas on one host (intra-host sync),
  // contiguous groups of 2 put them on the two hosts (one each: NIC sync).
  Task task = tiny_task(5, "h100:nodes=2,gpus_per_node=2", 3);
  for (const GroupRanks ranks : {GroupRanks::kStrided, GroupRanks::kContiguous}) {
    SCOPED_TRACE(to_string(ranks));
    const Plan plan = round_robin(task, 2, {2, ranks});
    ASSERT_EQ(find_error_in_plan(task, plan), "");
    // The group's task built by hand: 2 devices, on one host (contiguous) or two (strided), half the batch.
    Task group = task;
    group.topology.devices.resize(2);
    group.topology.devices_per_host = ranks == GroupRanks::kStrided ? 1 : 2;
    group.workload.batch_size = task.workload.batch_size / 2;
    for (TableSpec& t : group.workload.tables) t.stats = stats_of_batch_share(t.stats, 0.5);
    Plan one_d = plan;
    one_d.groups = {};
    const auto cost = make_cost_model("sim", group);
    const CostBreakdown expected = cost->estimate(group, one_d, quiet());
    const CostBreakdown got = cost->estimate(task, plan, quiet());
    ASSERT_EQ(got.devices.size(), 2u);
    const double gbps = ranks == GroupRanks::kStrided ? task.topology.intra_host_gbps : task.topology.inter_host_gbps;
    for (int r = 0; r < 2; ++r) {
      double bytes = 0.0;
      for (std::size_t t = r; t < task.workload.tables.size(); t += 2)
        bytes += static_cast<double>(task.workload.tables[t].size_bytes());
      // 2 replicas: 2 (2 − 1) / 2 · S over the one link they share, plus the latency.
      const double sync = task.topology.a2a_latency_us / 1000.0 + bytes / (gbps * 1e6);
      const DeviceCost& g = got.devices[static_cast<std::size_t>(r)];
      const DeviceCost& e = expected.devices[static_cast<std::size_t>(r)];
      EXPECT_DOUBLE_EQ(g.fw_comp_ms, e.fw_comp_ms);
      EXPECT_DOUBLE_EQ(g.fw_comm_ms, e.fw_comm_ms);
      EXPECT_DOUBLE_EQ(g.in_comm_ms, e.in_comm_ms);
      EXPECT_NEAR(g.ar_comm_ms, e.ar_comm_ms + sync, 1e-12 * sync);
    }
    // Syncing every 10 steps charges a tenth.
    Task rarely = task;
    rarely.workload.replica_sync_every = 10;
    const CostBreakdown tenth = cost->estimate(rarely, plan, quiet());
    EXPECT_NEAR(tenth.devices[0].ar_comm_ms - expected.devices[0].ar_comm_ms,
                (got.devices[0].ar_comm_ms - expected.devices[0].ar_comm_ms) / 10, 1e-9);
  }
}

TEST(ShardingGroups, APlanReadBackFromItsFileEvaluatesAsInMemory) {
  Task task = tiny_task(7, "v100:nodes=2,gpus_per_node=4", 5);
  task.workload.replica_sync_every = 4;
  const Task read_task = task_from_json(task_to_json(task), "t.json");
  EXPECT_EQ(read_task.workload.replica_sync_every, 4);
  const std::vector<ShardingGroups> layouts = sharding_group_layouts(task);
  ASSERT_GE(layouts.size(), 2u) << "2 hosts of 4 have groups of 4, strided and contiguous at least";
  for (const ShardingGroups& groups : layouts) {
    const Plan plan = round_robin(task, groups.size, groups);
    ASSERT_EQ(find_error_in_plan(task, plan), "");
    const Plan back = plan_from_json(plan_to_json(plan), "p.json");
    EXPECT_EQ(back.groups, groups);
    const EvalResult a = evaluate_plan(task, plan, kSimJudge, quiet());
    const EvalResult b = evaluate_plan(read_task, back, kSimJudge, quiet());
    EXPECT_EQ(a.step_ms, b.step_ms) << describe_groups(groups, 8);
    EXPECT_EQ(a.breakdown.devices.size(), static_cast<std::size_t>(groups.size));
  }
  std::string text = task_to_json(task);
  text.replace(text.find("\"replica_sync_every\": 4"), 23, "\"replica_sync_every\": 0");
  EXPECT_THROW((void)task_from_json(text, "t.json"), Error);
}

TEST(ShardingGroups, TheTorchrecExportIsOneGroupsPlanWithWhatDMPCollectionTakes) {
  Task task = tiny_task(6, "h100:nodes=2,gpus_per_node=4", 2);
  for (const GroupRanks ranks : {GroupRanks::kStrided, GroupRanks::kContiguous}) {
    Plan plan = round_robin(task, 4, {4, ranks});
    // A row-wise table over the group's 4 ranks, in TorchRec's blocks.
    TablePlacement& rows = plan.tables[0];
    const TableSpec& spec = task.workload.tables[0];
    rows.type = ShardingType::kRowWise;
    rows.shards.clear();
    const std::int64_t block = (spec.num_rows() + 3) / 4;
    for (int r = 0; r < 4; ++r)
      rows.shards.push_back(
          {r, std::min(spec.num_rows(), r * block), std::min(spec.num_rows(), (r + 1) * block), 0, spec.dim, -1});
    ASSERT_EQ(find_error_in_plan(task, plan), "");
    const std::string json = torchrec_plan_json(task, plan, TorchrecExportOptions{});
    const bool contiguous = ranks == GroupRanks::kContiguous;
    EXPECT_NE(json.find(std::string("\"sharding_group_size\": 4, \"node_group_size\": ") + (contiguous ? "4" : "2") +
                        ", \"use_inter_host_allreduce\": " + (contiguous ? "true" : "false")),
              std::string::npos)
        << json;
    EXPECT_NE(json.find("\"world_size\": 8"), std::string::npos);
    EXPECT_EQ(json.find("rank:4"), std::string::npos);  // only a group's ranks
    TorchrecExportOptions cpu;
    cpu.compute_device = TorchrecDevice::kCpu;
    try {
      (void)torchrec_plan_json(task, plan, cpu);
      ADD_FAILURE() << "a 2D plan exported for cpu";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("DMPCollection"), std::string::npos) << e.what();
    }
  }
}

/** A multi-host task where 2D pays: small tables, slow NICs, replicas synced rarely. */
Task task_where_2d_pays() {
  Task task = tiny_task(24, "v100:nodes=4,gpus_per_node=4", 11);
  task.topology.inter_host_gbps = 2.0;
  task.workload.replica_sync_every = 100000;
  return task;
}

TEST(Joint, Chooses2DWhereItPaysAnd1DWhereTheSyncCostsMore) {
  const Task cheap = task_where_2d_pays();
  const auto cost = make_cost_model("sim", cheap);
  const ShardResult one_d = plan_task("joint:groups=none", cheap, cost.get(), quiet(1));
  const ShardResult chosen = plan_task("joint", cheap, cost.get(), quiet(1));
  ASSERT_EQ(chosen.status, ShardStatus::kOk) << chosen.reason;
  EXPECT_TRUE(chosen.plan.groups.enabled()) << chosen.stats.solver;
  EXPECT_LT(sim_value(cheap, chosen.plan), sim_value(cheap, one_d.plan));
  EXPECT_GE(sim_value(cheap, chosen.plan) * (1 + 1e-12), *chosen.lower_bound);
  // Synced every step over links all as slow as those NICs, the replicas cost more than they save.
  Task dear = cheap;
  dear.workload.replica_sync_every = 1;
  dear.topology.intra_host_gbps = dear.topology.inter_host_gbps;  // no faster links inside a host either
  for (TableSpec& t : dear.workload.tables) t.optimizer = OptimizerState::kAdam;
  const auto dear_cost = make_cost_model("sim", dear);
  const ShardResult kept = plan_task("joint", dear, dear_cost.get(), quiet(1));
  ASSERT_EQ(kept.status, ShardStatus::kOk) << kept.reason;
  EXPECT_FALSE(kept.plan.groups.enabled()) << kept.stats.solver;
  // groups=G plans groups of G; a G the task cannot take is an error naming the parameter.
  const ShardResult four = plan_task("joint:groups=4", cheap, cost.get(), quiet(1));
  ASSERT_EQ(four.status, ShardStatus::kOk) << four.reason;
  EXPECT_EQ(four.plan.groups.size, 4);
  try {
    (void)plan_task("joint:groups=3", cheap, cost.get(), quiet(1));
    ADD_FAILURE() << "groups=3 on 16 devices was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("groups=3"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)plan_task("joint:groups=many", cheap, cost.get(), quiet(1)), Error);
  EXPECT_THROW((void)plan_task("joint:groups=4,objective=balance", cheap, cost.get(), quiet(1)), Error);
  // The plan's breakdown says what its rows are.
  const EvalResult judged = evaluate_plan(cheap, four.plan, kSimJudge, quiet());
  EXPECT_NE(eval_result_table(judged, sharding_group_topology(cheap.topology, four.plan.groups))
                .find("sharding groups of 4 ranks"),
            std::string::npos);
  EXPECT_NE(eval_result_json(judged, cheap, four.plan).find("\"sharding_groups\""), std::string::npos);
}

TEST(Joint, A2DPlanIsTheSameForItsSeedAndBudget) {
  const Task task = task_where_2d_pays();
  const auto cost = make_cost_model("sim", task);
  const ShardResult a = plan_task("joint:work=20000", task, cost.get(), quiet(3));
  const ShardResult b = plan_task("joint:work=20000", task, cost.get(), quiet(3));
  ASSERT_EQ(a.status, ShardStatus::kOk);
  Plan pa = a.plan, pb = b.plan;
  pa.provenance = pb.provenance = {};
  EXPECT_EQ(plan_to_json(pa), plan_to_json(pb));
}

}  // namespace
}  // namespace embshard
