// Tests of the sharder framework, the baselines, the exhaustive reference and the lower bound.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "embshard/cost/cost_model.h"
#include "embshard/data/pool.h"
#include "embshard/data/random.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/shard/sharder.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;

using test_util::quiet;
using test_util::tiny_task;

TableSpec table(const std::string& name, int dim, std::int64_t rows, double pooling) {
  return test_util::hand_table(name, dim, rows, pooling);
}

Task hand_task(std::vector<TableSpec> tables, int devices, double hbm_gib) {
  Task task;
  task.id = "hand";
  task.workload.tables = std::move(tables);
  task.topology =
      make_topology("v100:gpus_per_node=" + std::to_string(devices) + ",hbm_gib=" + std::to_string(hbm_gib));
  return task;
}

std::vector<int> devices_of(const Plan& plan) {
  std::vector<int> out;
  for (const auto& t : plan.tables) out.push_back(t.shards.at(0).device);
  return out;
}

TEST(Sharders, UnknownNamesAndKeysListWhatExists) {
  EXPECT_NE(error_of([] { (void)make_sharder("magic"); }).find("known: random, greedy, exhaustive"), std::string::npos);
  EXPECT_NE(error_of([] { (void)make_sharder("greedy:balance=speed"); }).find("size_and_lookup"), std::string::npos);
  EXPECT_NE(error_of([] { (void)make_sharder("greedy:depth=3"); }).find("balance"), std::string::npos);
  const Task task = tiny_task(4, "cpu:devices=2", 1);
  EXPECT_NE(error_of([&] { (void)plan_task("exhaustive", task, nullptr, quiet()); }).find("needs a cost model"),
            std::string::npos);
}

TEST(Sharders, ProvenanceCarriesTheCanonicalSpecWhichRoundTrips) {
  const Task task = tiny_task(6, "cpu:devices=2", 2);
  const auto cost = make_cost_model("sim", task);
  const ShardResult r = plan_task("greedy:balance=dim", task, cost.get(), quiet(5));
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(r.plan.provenance.sharder, "greedy:balance=dim,on_full=infeasible,pooling=float");
  EXPECT_EQ(r.plan.provenance.cost_model, "");
  EXPECT_EQ(r.plan.provenance.task_id, task.id);
  EXPECT_EQ(r.plan.provenance.seed, 5u);
  EXPECT_FALSE(r.plan.provenance.created_utc.empty());
  const ShardResult again = plan_task(r.plan.provenance.sharder, task, cost.get(), quiet(5));
  EXPECT_EQ(devices_of(again.plan), devices_of(r.plan));
  EXPECT_EQ(plan_task("exhaustive", task, cost.get(), quiet()).plan.provenance.cost_model,
            "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4,exchanges=fused");
}

TEST(Sharders, ATaskTooBigToPlanInMemoryIsAStatusNamingTheEstimate) {
  // 20,000 tables on 262,144 GPUs: TorchRec's options (a shard per rank per row-wise option) and
  // RecShard's MILP (3 variables per table and GPU) need terabytes, more than any test machine has;
  // both say so, with the estimate, before allocating (never bad_alloc).
  Task task = test_util::pool_task(1, "a100:nodes=4096,gpus_per_node=64", 3, std::vector<int>{64});
  const TableSpec one = task.workload.tables.front();
  task.workload.tables.clear();
  for (int t = 0; t < 20000; ++t) {
    TableSpec copy = one;
    copy.name = "t" + std::to_string(t);
    task.workload.tables.push_back(copy);
  }
  task.constraints.allow_uvm = true;
  for (const char* spec : {"torchrec", "recshard"}) {
    const ShardResult r = plan_task(spec, task, nullptr, quiet());
    EXPECT_EQ(r.status, ShardStatus::kInfeasible) << spec;
    EXPECT_NE(r.reason.find("GiB of memory but"), std::string::npos) << spec << ": " << r.reason;
    EXPECT_NE(r.reason.find(std::string(spec) + ":"), std::string::npos) << r.reason;
  }
}

TEST(Sharders, OnOneDeviceATableThatMayOnlyBeDataParallelIsPlannedAsOne) {
  // One device: a data-parallel table is one whole copy, as a table-wise one is; every sharder
  // that places whole tables plans it (it used to be infeasible for greedy and joint) and the plan
  // names it data_parallel, as its constraints ask. On two devices nothing changes.
  Task task = hand_task({table("dp", 16, 1000, 2.0), table("free", 16, 5000, 3.0)}, 1, 4);
  task.workload.batch_size = 1024;
  task.workload.tables[0].constraints.sharding_types = {ShardingType::kDataParallel};
  const auto cost = make_cost_model("sim", task);
  for (const char* spec :
       {"greedy", "greedy:balance=size", "random", "joint", "torchrec", "neuroshard", "exhaustive"}) {
    const ShardResult r = plan_task(spec, task, cost.get(), quiet());
    ASSERT_EQ(r.status, ShardStatus::kOk) << spec << ": " << r.reason;
    EXPECT_EQ(r.plan.tables.at(0).type, ShardingType::kDataParallel) << spec;
    EXPECT_EQ(find_error_in_plan(task, r.plan), "") << spec;
  }
  Task two = hand_task(task.workload.tables, 2, 4);
  two.workload.batch_size = 1024;
  const ShardResult greedy = plan_task("greedy", two, nullptr, quiet());
  EXPECT_EQ(greedy.status, ShardStatus::kInfeasible);
  EXPECT_NE(greedy.reason.find("table 'dp'"), std::string::npos) << greedy.reason;
}

TEST(Greedy, FollowsThePapersOrderAndTieBreaking) {
  // Costs (dim): a=8, b=8, c=8, d=4. Sizes: a 400 rows, b 800, c 800 (index 2 > 1), d 100.
  // Order: c (ties on cost and size → larger index), b, a, d.
  // c → device 0 (all empty: lowest id); b → 1; a → 2; d → 0/1/2 by cost sum 8 each, size sums
  // 3200·4 / 3200·4 / 1600·4 → device 2 (smaller size sum).
  const Task task =
      hand_task({table("a", 8, 400, 1), table("b", 8, 800, 1), table("c", 8, 800, 1), table("d", 4, 100, 1)}, 3, 1.0);
  const ShardResult r = plan_task("greedy:balance=dim", task, nullptr, quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(devices_of(r.plan), (std::vector<int>{2, 1, 0, 2}));
}

TEST(Greedy, BalancesEachCostDefinition) {
  // One heavy-lookup table and three light ones of different sizes.
  const Task task = hand_task(
      {table("big", 64, 1000000, 1), table("hot", 16, 1000, 50), table("mid", 32, 100000, 2), table("tiny", 4, 100, 1)},
      2, 1.0);
  const auto placed = [&](const std::string& balance) {
    return devices_of(plan_task("greedy:balance=" + balance, task, nullptr, quiet()).plan);
  };
  EXPECT_EQ(placed("size"), (std::vector<int>{0, 1, 1, 1}));    // 256 MB alone, the rest together
  EXPECT_EQ(placed("lookup"), (std::vector<int>{1, 0, 1, 1}));  // 800 lookups vs 64 + 64 + 4
  EXPECT_EQ(placed("dim"), (std::vector<int>{0, 1, 1, 1}));     // 64 vs 32 + 16 + 4
}

TEST(Greedy, IntegerPoolingTruncatesAsTheAuthorsCodeDoes) {
  // Lookup costs with the float pooling: a 16 × 1.9 = 30.4, b 8 × 3.5 = 28, c 32 × 0.5 = 16 →
  // a → 0, b → 1, c → 1. Truncated: b 24, a 16, c 0 → b → 0, a → 1, c → 1 (16 < 24).
  const Task task = hand_task({table("a", 16, 1000, 1.9), table("b", 8, 1000, 3.5), table("c", 32, 1000, 0.5)}, 2, 1.0);
  EXPECT_EQ(devices_of(plan_task("greedy", task, nullptr, quiet()).plan), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(devices_of(plan_task("greedy:pooling=int", task, nullptr, quiet()).plan), (std::vector<int>{1, 0, 1}));
}

TEST(Greedy, ATableThatFitsNowhereIsInfeasibleNamingIt) {
  const Task task = hand_task({table("small", 4, 1000, 1), table("huge", 128, 4000000, 1)}, 2, 1.0);
  const ShardResult r = plan_task("greedy", task, nullptr, quiet());
  EXPECT_EQ(r.status, ShardStatus::kInfeasible);
  EXPECT_NE(r.reason.find("table 'huge'"), std::string::npos) << r.reason;
  const ShardResult parity = plan_task("greedy:on_full=last_device", task, nullptr, quiet());
  EXPECT_EQ(parity.status, ShardStatus::kInfeasible);  // dumped on the last device, which overflows
  EXPECT_NE(parity.reason.find("device 1"), std::string::npos) << parity.reason;
}

TEST(RandomSharder, IsSeededAndRetriesUntilItFits) {
  const Task task = tiny_task(8, "cpu:devices=3", 3);
  const auto a = plan_task("random", task, nullptr, quiet(1));
  const auto b = plan_task("random", task, nullptr, quiet(1));
  EXPECT_EQ(devices_of(a.plan), devices_of(b.plan));
  bool differs = false;
  for (std::uint64_t seed = 2; seed < 6 && !differs; ++seed) {
    differs = devices_of(plan_task("random", task, nullptr, quiet(seed)).plan) != devices_of(a.plan);
  }
  EXPECT_TRUE(differs);
  Task tight = hand_task({table("x", 64, 2000000, 1), table("y", 64, 2000000, 1)}, 2, 0.6);
  const auto r = plan_task("random:attempts=200", tight, nullptr, quiet(3));
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_NE(r.plan.tables[0].shards[0].device, r.plan.tables[1].shards[0].device);
}

/** The best objective over every assignment, by plain enumeration (no pruning, no symmetry). */
double brute_force(const Task& task, CostModel& cost, Objective objective) {
  const int n = task.topology.num_devices();
  const std::size_t tables = task.workload.tables.size();
  std::vector<int> devices(tables, 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    const Plan plan = table_wise_plan(task, devices);
    if (find_error_in_plan(task, plan).empty()) {
      best = std::min(best, objective_value(cost.estimate(task, plan, quiet()), objective));
    }
    std::size_t i = 0;
    while (i < tables && ++devices[i] == n) devices[i++] = 0;
    if (i == tables) return best;
  }
}

TEST(Exhaustive, FindsTheOptimumAndNoBaselineBeatsIt) {
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    const Task task =
        tiny_task(5 + static_cast<int>(seed % 3), seed % 2 ? "cpu:devices=3" : "v100:gpus_per_node=2", seed);
    const auto cost = make_cost_model("sim", task);
    for (const Objective objective : {Objective::kStep, Objective::kMaxSum}) {
      const ShardResult best =
          plan_task(std::string("exhaustive:objective=") + to_string(objective), task, cost.get(), quiet());
      ASSERT_EQ(best.status, ShardStatus::kOk) << best.reason;
      const double value = objective_value(cost->estimate(task, best.plan, quiet()), objective);
      EXPECT_NEAR(value, brute_force(task, *cost, objective), 1e-9) << "seed " << seed;
      EXPECT_GE(value + 1e-9, *cost->lower_bound(task, objective)) << "seed " << seed;
      for (const char* baseline :
           {"greedy:balance=size", "greedy:balance=dim", "greedy:balance=lookup", "greedy:balance=size_lookup",
            "greedy:balance=size_and_lookup", "random:attempts=50"}) {
        const ShardResult r = plan_task(baseline, task, cost.get(), quiet(seed));
        if (r.status != ShardStatus::kOk) continue;
        EXPECT_GE(objective_value(cost->estimate(task, r.plan, quiet()), objective) + 1e-9, value)
            << baseline << ", seed " << seed;
      }
    }
  }
}

TEST(Exhaustive, RefusesTasksBeyondItsSize) {
  const Task task = tiny_task(11, "cpu:devices=2", 1);
  const auto cost = make_cost_model("sim", task);
  EXPECT_NE(error_of([&] { (void)plan_task("exhaustive", task, cost.get(), quiet()); }).find("tiny tasks"),
            std::string::npos);
}

TEST(LowerBound, NoPlanBeatsItOnAnyPreset) {
  for (const char* preset : {"cpu:devices=4", "a100:nodes=2,gpus_per_node=2", "2080ti"}) {
    const Task task = tiny_task(12, preset, 7);
    const auto cost = make_cost_model("sim", task);
    int checked = 0;
    for (std::uint64_t seed = 0; seed < 30; ++seed) {
      const ShardResult r = plan_task("random:attempts=20", task, cost.get(), quiet(seed));
      if (r.status != ShardStatus::kOk) continue;
      const CostBreakdown b = cost->estimate(task, r.plan, quiet());
      for (const Objective o : {Objective::kStep, Objective::kMaxSum}) {
        EXPECT_GE(objective_value(b, o) + 1e-12, *cost->lower_bound(task, o)) << preset;
      }
      ++checked;
    }
    EXPECT_GE(checked, 20) << preset << ": too few random plans were valid to test the bound";
    EXPECT_EQ(*cost->lower_bound(task, Objective::kBalance), 1.0);
  }
}

}  // namespace
}  // namespace embshard
