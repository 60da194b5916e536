// Re-planning with little movement (eval/replan.h): movement counted on a hand-worked example,
// the chosen plan within its budget and judged as the user would judge it, the relabelled
// from-scratch plan as fast as the sharder's own, joint searching from a plan, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

#include <nlohmann/json.hpp>

#include "embshard/data/data_io.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/replan.h"
#include "embshard/plan/plan.h"
#include "embshard/plan/plan_io.h"
#include "embshard/report/replan_report.h"
#include "embshard/shard/sharder.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;
using test_util::hand_table;
using test_util::quiet;
using test_util::tiny_task;

double step_of(const Task& task, const Plan& plan) { return evaluate_plan(task, plan, kSimJudge, quiet()).step_ms; }

Plan planned(const Task& task, const std::string& sharder = "joint:groups=none") {
  const auto cost = make_cost_model("default", task, quiet());
  ShardResult r = plan_task(sharder, task, cost.get(), quiet());
  EXPECT_EQ(r.status, ShardStatus::kOk) << r.reason;
  return r.plan;
}

Shard shard(int device, std::int64_t r0, std::int64_t r1, int c0, int c1) {
  Shard s;
  s.device = device, s.row_begin = r0, s.row_end = r1, s.col_begin = c0, s.col_end = c1;
  return s;
}

TEST(ReplanMovement, AHandWorkedExampleCountsWhatTravelsAndWhatIsCreated) {
  Task task;
  task.id = "moves";
  task.topology = make_topology("v100:nodes=1,gpus_per_node=4");
  task.workload.tables = {hand_table("a", 8, 1000, 1.0), hand_table("b", 4, 500, 1.0), hand_table("c", 16, 100, 1.0)};
  Plan old;
  old.tables = {{"a", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 8)}},
                {"c", ShardingType::kTableWise, {shard(2, 0, 90, 0, 16)}}};  // c had 90 rows then: another shape
  Plan now;
  now.tables = {{"a", ShardingType::kRowWise, {shard(0, 0, 400, 0, 8), shard(1, 400, 1000, 0, 8)}},
                {"b", ShardingType::kTableWise, {shard(3, 0, 500, 0, 4)}},
                {"c", ShardingType::kTableWise, {shard(2, 0, 100, 0, 16)}}};
  const Movement m = plan_movement(task, now, old);
  const TableSpec &a = task.workload.tables[0], &b = task.workload.tables[1], &c = task.workload.tables[2];
  EXPECT_DOUBLE_EQ(m.moved_bytes, static_cast<double>(a.shard_bytes(600, 8)));
  EXPECT_DOUBLE_EQ(m.kept_bytes, static_cast<double>(a.shard_bytes(400, 8)));
  EXPECT_DOUBLE_EQ(m.created_bytes, static_cast<double>(b.size_bytes() + c.size_bytes()));
  ASSERT_EQ(m.sent.size(), 4u);
  EXPECT_DOUBLE_EQ(m.sent[0], m.moved_bytes);
  EXPECT_DOUBLE_EQ(m.received[1], m.moved_bytes);
  EXPECT_DOUBLE_EQ(std::accumulate(m.received.begin(), m.received.end(), 0.0), m.moved_bytes);
  // A plan moves nothing from itself.
  old.tables.pop_back();
  EXPECT_EQ(plan_movement(task, old, old).moved_bytes, 0.0);
}

TEST(ReplanMovement, A2DPlanMovesWhatEveryReplicaMoves) {
  // 2 hosts of 2; groups of 2 strided ranks: rank r of group g is device 2r + g (sharding_groups.h).
  Task task;
  task.id = "replicas";
  task.topology = make_topology("v100:nodes=2,gpus_per_node=2");
  task.workload.tables = {hand_table("a", 8, 1000, 1.0), hand_table("b", 4, 500, 1.0)};
  const TableSpec &a = task.workload.tables[0], &b = task.workload.tables[1];
  Plan old;
  old.groups = {2, GroupRanks::kStrided, 4};
  old.tables = {{"a", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 8)}},  // devices 0 and 1
                {"b", ShardingType::kTableWise, {shard(1, 0, 500, 0, 4)}}};  // devices 2 and 3
  Plan now = old;
  now.tables[0].shards[0].device = 1;  // a to devices 2 and 3, each from a replica: 0 → 2, 1 → 3
  const Movement m = plan_movement(task, now, old);
  EXPECT_DOUBLE_EQ(m.moved_bytes, 2.0 * static_cast<double>(a.size_bytes()));
  EXPECT_DOUBLE_EQ(m.kept_bytes, 2.0 * static_cast<double>(b.size_bytes()));
  const double a_bytes = static_cast<double>(a.size_bytes());
  EXPECT_EQ(m.sent, (std::vector<double>{a_bytes, a_bytes, 0.0, 0.0}));
  EXPECT_EQ(m.received, (std::vector<double>{0.0, 0.0, a_bytes, a_bytes}));
  // From a 1D plan with a on device 0 and b on device 3: a's copy on device 1 travels, b's on 2 too.
  Plan one_d;
  one_d.tables = {{"a", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 8)}},
                  {"b", ShardingType::kTableWise, {shard(3, 0, 500, 0, 4)}}};
  const Movement from_1d = plan_movement(task, old, one_d);
  EXPECT_DOUBLE_EQ(from_1d.moved_bytes, static_cast<double>(a.size_bytes() + b.size_bytes()));
  EXPECT_DOUBLE_EQ(from_1d.kept_bytes, static_cast<double>(a.size_bytes() + b.size_bytes()));
  EXPECT_DOUBLE_EQ(from_1d.sent[0], static_cast<double>(a.size_bytes()));
  EXPECT_DOUBLE_EQ(from_1d.sent[3], static_cast<double>(b.size_bytes()));
  EXPECT_EQ(plan_movement(task, old, old).moved_bytes, 0.0);
  // Contiguous groups of 2 (device 2g + r): each replica's copy comes from its own replica's old
  // copy, 0 → 1 and 2 → 3, not both from one device.
  old.groups.ranks = now.groups.ranks = GroupRanks::kContiguous;
  const Movement contiguous = plan_movement(task, now, old);
  EXPECT_DOUBLE_EQ(contiguous.moved_bytes, 2 * a_bytes);
  EXPECT_EQ(contiguous.sent, (std::vector<double>{a_bytes, 0.0, a_bytes, 0.0}));
  EXPECT_EQ(contiguous.received, (std::vector<double>{0.0, a_bytes, 0.0, a_bytes}));
}

/** `task` with every `k`-th table's lookups 4× (a statistics drift). */
Task drifted_every(const Task& task, std::size_t k) {
  Task drifted = task;
  for (std::size_t i = 0; i < drifted.workload.tables.size(); i += k) {
    TableStats& st = drifted.workload.tables[i].stats;
    st.num_indices *= 4;
    st.pooling_factor = static_cast<double>(st.num_indices) / static_cast<double>(st.batch_size);
  }
  check_task(drifted, "drifted");
  return drifted;
}

/** A 2D re-plan's result as a user meets it: a 2D plan of `after` in the layout kept from `old`,
 *  within the budget, moving and stepping as reported, the same once written and read back. */
void expect_2d_replan_as_reported(const Task& after, const Plan& old, const ReplanResult& r, double budget,
                                  const ShardingGroups& layout) {
  SCOPED_TRACE(r.verdict);
  EXPECT_EQ(r.plan.groups, layout);
  EXPECT_EQ(find_error_in_plan(after, r.plan), "");
  const Movement m = plan_movement(after, r.plan, old);
  EXPECT_LE(m.moved_bytes, budget * (1 + 1e-12));
  EXPECT_NEAR(m.moved_bytes, r.chosen.moved_bytes, 1e-9 * (1 + r.chosen.moved_bytes));
  EXPECT_NEAR(r.chosen.moved_share, r.chosen.moved_bytes / static_cast<double>(after.workload.total_bytes()), 1e-12);
  EXPECT_NEAR(step_of(after, r.plan), r.chosen.step_ms, 1e-9 * r.chosen.step_ms);
  if (r.kept_fits) {
    EXPECT_LE(r.chosen.step_ms, r.kept.step_ms * (1 + 1e-12));
  }
  const Plan read = plan_from_json(plan_to_json(r.plan), "replanned.json");
  EXPECT_EQ(read.groups, layout);
  EXPECT_EQ(step_of(after, read), step_of(after, r.plan));
  EXPECT_EQ(plan_movement(after, read, old).moved_bytes, m.moved_bytes);
}

TEST(Replan, A2DPlanReplansInsideItsGroupsAndEveryReplicaMovesAlike) {
  const Task before = tiny_task(16, "v100:nodes=2,gpus_per_node=4,hbm_gib=4", 31);
  const std::string sharder = "joint:groups=4,work=150000";
  const Plan old = planned(before, sharder);
  ASSERT_TRUE(old.groups.enabled());
  EXPECT_EQ(old.groups.world, 8);                 // recorded in the plan: its replicas are known when the world changes
  const Task drifted = drifted_every(before, 2);  // the statistics drift
  ReplanOptions options;
  options.sharder = "joint:groups=none,work=150000";
  options.max_move_bytes = 0.3 * static_cast<double>(drifted.workload.total_bytes());
  options.layout = ReplanLayout::kKept;
  const ReplanResult r = replan(drifted, old, options, quiet());
  expect_2d_replan_as_reported(drifted, old, r, options.max_move_bytes, old.groups);
  EXPECT_NE(r.verdict.find("every replica moving what its group does"), std::string::npos);
  EXPECT_EQ(r.verdict.find("records no world"), std::string::npos);
  // A plan of an older build records no world: taken as the task's, and the verdict says so.
  Plan unrecorded = old;
  unrecorded.groups.world = 0;
  const ReplanResult assumed = replan(drifted, unrecorded, options, quiet());
  EXPECT_NE(assumed.verdict.find("the old plan records no world (sharding_groups.world): taken as the task's 8"),
            std::string::npos)
      << assumed.verdict;
  EXPECT_EQ(assumed.chosen.step_ms, r.chosen.step_ms);  // the same world: the same re-plan
  // A sharder that plans no 2D layout itself (joint balancing, or `groups=auto`) plans the group's task.
  for (const char* spec : {"joint:objective=balance,work=150000", "joint:groups=auto,work=150000"}) {
    ReplanOptions other = options;
    other.sharder = spec;
    expect_2d_replan_as_reported(drifted, old, replan(drifted, old, other, quiet()), other.max_move_bytes, old.groups);
  }
  // A host added: strided groups keep their 2 replicas and grow to 6 ranks; the old ranks keep
  // their devices, the added ones come last.
  Task grown = before;
  grown.topology = topology_with_devices(before.topology, 12);
  const ReplanResult g = replan(grown, old, options, quiet());
  ShardingGroups six = old.groups;
  six.size = 6, six.world = 12;
  ASSERT_EQ(old.groups.ranks, GroupRanks::kStrided);
  expect_2d_replan_as_reported(grown, old, g, options.max_move_bytes, six);
}

TEST(Replan, ContiguousGroupsGrowByReplicasThatReceiveEveryTable) {
  // Contiguous groups (device g·G + r) keep their size in a larger world: the old groups keep
  // their devices and each added group is a replica that receives every table.
  const Task before = tiny_task(12, "v100:nodes=2,gpus_per_node=4,hbm_gib=4", 32);
  Plan old = planned(before, "joint:groups=4,work=150000");
  ASSERT_TRUE(old.groups.enabled());
  old.groups.ranks = GroupRanks::kContiguous;  // a group per host
  ASSERT_EQ(find_error_in_plan(before, old), "");
  Task grown = before;  // two hosts added: 4 groups (the batch splits into 4, not 3)
  grown.topology = topology_with_devices(before.topology, 16);
  const double tables = static_cast<double>(grown.workload.total_bytes());
  ReplanOptions options;
  options.sharder = "joint:groups=none,work=150000";
  options.max_move_bytes = 2.4 * tables;
  options.layout = ReplanLayout::kKept;
  const ReplanResult r = replan(grown, old, options, quiet());
  expect_2d_replan_as_reported(grown, old, r, options.max_move_bytes, {4, GroupRanks::kContiguous, 16});
  EXPECT_GE(r.chosen.moved_bytes, 2 * tables * (1 - 1e-12));  // the added groups' copies of every table
  options.max_move_bytes = 1.5 * tables;
  const std::string short_budget = error_of([&] { (void)replan(grown, old, options, quiet()); });
  EXPECT_NE(short_budget.find("the added replicas each receive every table"), std::string::npos) << short_budget;
  // A table added beside: it is created on every replica, not received, so the budget need only
  // cover the old tables' copies (it would not cover the new one's too).
  Task added = grown;
  const std::int64_t rows = grown.workload.total_bytes() / (4 * 64 * 4);  // about a quarter of the bytes
  added.workload.tables.push_back(hand_table("added", 64, rows, 1.0));
  options.max_move_bytes = 2.3 * tables;
  ASSERT_LT(options.max_move_bytes, 2.0 * static_cast<double>(added.workload.total_bytes()));
  const ReplanResult with_added = replan(added, old, options, quiet());
  expect_2d_replan_as_reported(added, old, with_added, options.max_move_bytes, {4, GroupRanks::kContiguous, 16});
  EXPECT_GT(with_added.movement.created_bytes, 0.0);
}

TEST(Replan, A2DPlanIsAlsoReplannedIn1DAndTheFasterWins) {
  const Task before = tiny_task(16, "v100:nodes=2,gpus_per_node=4,hbm_gib=4", 31);
  const Plan old = planned(before, "joint:groups=4,work=150000");
  ASSERT_TRUE(old.groups.enabled());
  const Task drifted = drifted_every(before, 3);
  ReplanOptions options;
  options.sharder = "joint:groups=none,work=150000";
  options.max_move_bytes = 0.1 * static_cast<double>(drifted.workload.total_bytes());
  options.layout = ReplanLayout::k1D;
  const ReplanResult flat = replan(drifted, old, options, quiet());
  expect_2d_replan_as_reported(drifted, old, flat, options.max_move_bytes, {});
  // The kept plan keeps each table on one of its replicas: a 1D plan that moves nothing.
  EXPECT_TRUE(flat.kept_fits);
  EXPECT_EQ(flat.kept.moved_bytes, 0.0);
  options.layout = ReplanLayout::kKept;
  const ReplanResult kept = replan(drifted, old, options, quiet());
  expect_2d_replan_as_reported(drifted, old, kept, options.max_move_bytes, old.groups);
  options.layout = ReplanLayout::kBest;
  const ReplanResult best = replan(drifted, old, options, quiet());
  const bool flat_wins = flat.chosen.step_ms < kept.chosen.step_ms;
  expect_2d_replan_as_reported(drifted, old, best, options.max_move_bytes, flat_wins ? ShardingGroups{} : old.groups);
  EXPECT_EQ(best.chosen.step_ms, std::min(flat.chosen.step_ms, kept.chosen.step_ms));
  EXPECT_NE(best.verdict.find(flat_wins ? "1D, faster than the old plan's 2D layout kept" : "; in 1D: step"),
            std::string::npos)
      << best.verdict;
  // With nothing to move, joint still moves tables onto devices where another replica holds them
  // (its price counts every replica's copy as held): faster than the kept plan, moving nothing.
  options.max_move_bytes = 0;
  options.layout = ReplanLayout::k1D;
  const ReplanResult still = replan(drifted, old, options, quiet());
  expect_2d_replan_as_reported(drifted, old, still, 0.0, {});
  EXPECT_EQ(still.movement.moved_bytes, 0.0);
  double searched = std::numeric_limits<double>::infinity();  // joint's own moving nothing, not the curve's
  for (const ReplanPoint& p : still.curve)
    if (p.price >= 0 && p.moved_bytes == 0) searched = std::min(searched, p.step_ms);
  EXPECT_LT(searched, still.kept.step_ms);
  EXPECT_LE(still.chosen.step_ms, searched);
  // A sharder spec that would plan 2D still re-plans 1D here; the verdict names no other layout.
  options.sharder = "joint:groups=4,work=150000";
  const ReplanResult spec_2d = replan(drifted, old, options, quiet());
  expect_2d_replan_as_reported(drifted, old, spec_2d, 0.0, {});
  EXPECT_EQ(spec_2d.verdict.find("2D layout"), std::string::npos) << spec_2d.verdict;
  // A reason both layouts share is said once.
  options.sharder = "nosuch";
  options.layout = ReplanLayout::kBest;
  const std::string unknown = error_of([&] { (void)replan(drifted, old, options, quiet()); });
  EXPECT_EQ(unknown.find("in 1D"), std::string::npos) << unknown;
  EXPECT_EQ(unknown.find("replan: replan"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("nosuch"), std::string::npos) << unknown;
}

TEST(Replan, A2DPlanThatCannotKeepItsDevicesIsReplannedIn1DOrRefusedInOneLine) {
  const Task before = tiny_task(12, "v100:nodes=2,gpus_per_node=4,hbm_gib=4", 32);
  Plan old = planned(before, "joint:groups=4,work=150000");
  ASSERT_TRUE(old.groups.enabled());
  Task grown = before;
  grown.topology = topology_with_devices(before.topology, 12);
  old.groups.ranks = GroupRanks::kStrided, old.groups.world = 24;  // 6 replicas: 8 devices hold no 6 groups
  ReplanOptions keep;
  keep.layout = ReplanLayout::kKept;
  const std::string strided = error_of([&] { (void)replan(before, old, keep, quiet()); });
  EXPECT_NE(strided.find("6 replicas of 4 ranks (strided) do not split the task's 8 devices"), std::string::npos)
      << strided;
  EXPECT_EQ(strided.find('\n'), std::string::npos);
  // By default it is re-planned in 1D, from the replicas whose devices remain.
  ReplanOptions best;
  best.sharder = "joint:groups=none,work=150000";
  const ReplanResult flat = replan(before, old, best, quiet());
  expect_2d_replan_as_reported(before, old, flat, best.max_move_bytes, {});
  EXPECT_NE(flat.verdict.find("1D: the old plan's 2D layout cannot be kept (its 6 replicas"), std::string::npos)
      << flat.verdict;
  old.groups.world = 6;  // 6 is no multiple of 4
  EXPECT_NE(error_of([&] {
              (void)replan(before, old, ReplanOptions{}, quiet());
            }).find("world of 6 ranks (its sharding_groups.world) is not a multiple"),
            std::string::npos);
  old.groups.world = 8;
  ReplanOptions reshard;
  reshard.reshard = true;
  EXPECT_NE(error_of([&] { (void)replan(before, old, reshard, quiet()); }).find("old plan is 2D"), std::string::npos);
  // A plan for 8 ranks checked against 12 devices names the field.
  Plan recorded = old;
  EXPECT_NE(find_error_in_plan(grown, recorded).find("sharding_groups.world 8"), std::string::npos);
}

TEST(Replan, AnUnchangedTaskWithNoBudgetKeepsItsPlan) {
  const Task task = tiny_task(10, "v100:nodes=1,gpus_per_node=4", 21);
  const Plan old = planned(task);
  ReplanOptions options;
  options.max_move_bytes = 0;
  const ReplanResult r = replan(task, old, options, quiet());
  EXPECT_EQ(r.chosen.moved_bytes, 0.0);
  EXPECT_EQ(plan_movement(task, r.plan, old).moved_bytes, 0.0);
  EXPECT_NEAR(r.chosen.step_ms, step_of(task, old), 1e-9 * step_of(task, old));
}

TEST(Replan, AfterAHostIsAddedTheChosenPlanKeepsItsBudgetAndIsJudgedAsReported) {
  const Task before = tiny_task(24, "v100:nodes=2,gpus_per_node=4,hbm_gib=4", 22);
  Task after = before;
  after.topology = topology_with_devices(before.topology, 12);
  // A small budget: the properties hold at any budget, and the sanitizer build runs 20× slower.
  const std::string sharder = "joint:groups=none,work=150000";
  const Plan old = planned(before, sharder);
  const double total = static_cast<double>(after.workload.total_bytes());
  for (const double share : {0.05, 0.2, 1.0}) {
    ReplanOptions options;
    options.sharder = sharder;
    options.max_move_bytes = share * total;
    const ReplanResult r = replan(after, old, options, quiet());
    SCOPED_TRACE(r.verdict);
    EXPECT_EQ(find_error_in_plan(after, r.plan), "");
    const Movement m = plan_movement(after, r.plan, old);
    EXPECT_LE(m.moved_bytes, options.max_move_bytes * (1 + 1e-12));
    EXPECT_DOUBLE_EQ(m.moved_bytes, r.chosen.moved_bytes);
    EXPECT_NEAR(step_of(after, r.plan), r.chosen.step_ms, 1e-9 * r.chosen.step_ms);
    EXPECT_LE(r.chosen.step_ms, r.kept.step_ms * (1 + 1e-12));  // the kept plan is a candidate
    // The relabelled from-scratch plan is as fast as the sharder's own, and moves no more.
    EXPECT_NEAR(r.target.step_ms, step_of(after, planned(after, sharder)), 1e-9 * r.target.step_ms);
    EXPECT_LE(r.target.moved_bytes, r.scratch_moved_bytes * (1 + 1e-12));
    EXPECT_TRUE(std::is_sorted(r.curve.begin(), r.curve.end(), [](const ReplanPoint& x, const ReplanPoint& y) {
      return x.moved_bytes < y.moved_bytes;
    }));
  }
}

TEST(ReplanReport, ShowsEveryCandidateTheBudgetAndEachDevicesTraffic) {
  Task before = tiny_task(16, "v100:nodes=2,gpus_per_node=4,hbm_gib=4", 22);
  before.id = "host<added>";
  Task after = before;
  after.topology = topology_with_devices(before.topology, 12);
  ReplanOptions options;
  options.sharder = "joint:groups=none,work=150000";  // the report, not the search, is tested here
  options.max_move_bytes = 0.1 * static_cast<double>(after.workload.total_bytes());
  const ReplanResult r = replan(after, planned(before, options.sharder), options, quiet());
  EXPECT_EQ(r.task_id, "host<added>");
  EXPECT_EQ(r.max_move_bytes, options.max_move_bytes);
  EXPECT_NE(r.judge.find("sim"), std::string::npos);
  const std::string html = replan_report_html(r);
  EXPECT_EQ(html.find("host<added>"), std::string::npos) << "the task id is escaped";
  EXPECT_NE(html.find("Re-plan: host&lt;added&gt;"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("<title>chosen: "), std::string::npos);
  EXPECT_NE(html.find("(10.00% of the tables)"), std::string::npos);
  // One row per device (12 now) in the traffic table, one per candidate in the last.
  const std::size_t traffic = html.find("<h2>What each device sends and receives (the chosen plan)</h2>");
  const std::size_t candidates = html.find("<h2>Every candidate</h2>");
  ASSERT_NE(traffic, std::string::npos);
  ASSERT_NE(candidates, std::string::npos);
  const auto rows = [&](std::size_t from, std::size_t to) {
    std::size_t n = 0;
    for (std::size_t at = html.find("<tr><td>", from); at < to; at = html.find("<tr><td>", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(rows(traffic, candidates), 12u);
  EXPECT_EQ(rows(candidates, std::string::npos), r.curve.size());
  // The searches from a rebuilt start are named, in the report and in the curve's file.
  const auto rebuilt =
      std::count_if(r.curve.begin(), r.curve.end(), [](const ReplanPoint& p) { return !p.rebuilt.empty(); });
  EXPECT_GE(rebuilt, 1);
  EXPECT_NE(html.find(", rebuilt (whole tables)"), std::string::npos);
  const std::string csv = replan_curve_csv(r);
  EXPECT_EQ(csv.rfind("moved_bytes,moved_share,step_ms,tables_switched,price,chosen,rebuilt\n", 0), 0u);
  EXPECT_NE(csv.find(",whole\n"), std::string::npos);
  ReplanResult empty;
  EXPECT_NE(error_of([&] { (void)replan_report_html(empty); }).find("has no point"), std::string::npos);
}

/** The old plan is `task`'s from-scratch plan with device d relabelled `label[d]`: the relabelling
 *  finds the labels back, so the target moves nothing, at the same step. */
void expect_the_labels_found_back(const Task& task, const std::vector<int>& label) {
  const Plan scratch = planned(task);
  Plan old = scratch;
  for (TablePlacement& p : old.tables)
    for (Shard& s : p.shards) s.device = label[static_cast<std::size_t>(s.device)];
  ASSERT_GT(plan_movement(task, scratch, old).moved_bytes, 0.0);
  const ReplanResult r = replan(task, old, ReplanOptions{}, quiet());
  EXPECT_EQ(r.target.moved_bytes, 0.0);
  EXPECT_NEAR(r.target.step_ms, step_of(task, scratch), 1e-9 * r.target.step_ms);
  // The answer moves bytes only for a step faster than the target's, which moves none.
  EXPECT_LE(r.chosen.step_ms, r.target.step_ms * (1 + 1e-12));
  if (r.chosen.moved_bytes > 0) {
    EXPECT_LT(r.chosen.step_ms, r.target.step_ms);
  }
}

TEST(Replan, AnOldPlanWithItsDevicesRelabelledIsRecognisedAndMovesNothing) {
  // Hosts swapped and devices permuted in them.
  expect_the_labels_found_back(tiny_task(16, "v100:nodes=2,gpus_per_node=4", 26), {6, 4, 7, 5, 1, 3, 0, 2});
}

TEST(Replan, OnMixedHardwareHostsOfOneKindSwapLabelsAndTheStepStays) {
  // Two V100 hosts and two A100 hosts, the hosts of each kind swapped and devices permuted in them:
  // relabelling finds the labels back within each kind (an A100 host's shards never go to a V100
  // host, which would change the step).
  nlohmann::json doc = nlohmann::json::parse(task_to_json(tiny_task(16, "v100:nodes=1,gpus_per_node=4", 27)));
  doc["topology"] = {{"hosts", {"v100:nodes=2,gpus_per_node=4", "a100:nodes=2,gpus_per_node=4"}}};
  const Task task = task_from_json(doc.dump(), "mix");
  ASSERT_GE(task.topology.first_unlike_device(), 0);
  expect_the_labels_found_back(task, {6, 4, 7, 5, 1, 3, 0, 2, 13, 15, 12, 14, 9, 8, 11, 10});
}

TEST(Replan, JointSearchingFromAPlanNeverEndsWorseThanItAndOthersRefuse) {
  const Task task = tiny_task(16, "v100:nodes=1,gpus_per_node=4", 23);
  const Plan start = planned(task, "greedy:balance=lookup");
  const auto cost = make_cost_model("sim", task, quiet());
  const PlanOrigin origin{&start, &start, 0.0};
  const ShardResult r = plan_task_from("joint", task, cost.get(), origin, quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_LE(step_of(task, r.plan), step_of(task, start) * (1 + 1e-12));
  // Movement priced very high: nothing moves.
  const PlanOrigin dear{&start, &start, 1e3};
  const ShardResult still = plan_task_from("joint", task, cost.get(), dear, quiet());
  EXPECT_EQ(plan_movement(task, still.plan, start).moved_bytes, 0.0);
  EXPECT_NE(error_of([&] {
              (void)plan_task_from("greedy", task, cost.get(), origin, quiet());
            }).find("cannot search from a plan"),
            std::string::npos);
  Plan partial = start;
  partial.tables.pop_back();
  const PlanOrigin broken{&partial, &start, 0.0};
  EXPECT_NE(error_of([&] {
              (void)plan_task_from("joint", task, cost.get(), broken, quiet());
            }).find("the start plan is not a valid plan"),
            std::string::npos);
  // Replan with another sharder from scratch still searches with joint.
  ReplanOptions greedy;
  greedy.sharder = "greedy:balance=lookup";
  EXPECT_EQ(find_error_in_plan(task, replan(task, start, greedy, quiet()).plan), "");
}

TEST(Replan, JointSearchingFromAPlanTakesRowShardsInAnyOrder) {
  // A plan file may list a table's row shards in any order; joint's row shifts re-make pieces by
  // position, so it takes them in row order. Every plan it returns from such a start is valid and
  // no slower than the start.
  for (const std::uint64_t seed : {23u, 24u, 25u}) {
    const Task task = tiny_task(16, "v100:nodes=1,gpus_per_node=4", seed);
    Plan start = planned(task, "greedy:balance=lookup");
    const auto heaviest = std::max_element(
        task.workload.tables.begin(), task.workload.tables.end(),
        [](const TableSpec& a, const TableSpec& b) { return a.stats.num_indices < b.stats.num_indices; });
    for (TablePlacement& p : start.tables) {
      if (p.table != heaviest->name) continue;
      const std::int64_t rows = heaviest->num_rows(), third = rows / 3;
      p.type = ShardingType::kRowWise;
      p.shards = {shard(2, 2 * third, rows, 0, heaviest->dim), shard(1, third, 2 * third, 0, heaviest->dim),
                  shard(0, 0, third, 0, heaviest->dim)};
    }
    ASSERT_EQ(find_error_in_plan(task, start), "");
    const auto cost = make_cost_model("sim", task, quiet());
    const PlanOrigin origin{&start, &start, 0.0};
    const ShardResult r = plan_task_from("joint", task, cost.get(), origin, quiet(seed));
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_EQ(find_error_in_plan(task, r.plan), "") << seed;
    EXPECT_LE(step_of(task, r.plan), step_of(task, start) * (1 + 1e-12)) << seed;
  }
}

TEST(Replan, JointHeldToAMovementCapNeverMovesMoreNorEndsWorse) {
  const Task before = tiny_task(24, "v100:nodes=2,gpus_per_node=4,hbm_gib=4", 22);
  Task after = before;
  after.topology = topology_with_devices(before.topology, 12);
  const Plan old = planned(before);
  const auto cost = make_cost_model("sim", after, quiet());
  const double total = static_cast<double>(after.workload.total_bytes());
  const PlanOrigin uncapped{&old, &old, 0.0};
  const ShardResult unheld = plan_task_from("joint:groups=none", after, cost.get(), uncapped, quiet());
  ASSERT_EQ(unheld.status, ShardStatus::kOk) << unheld.reason;
  EXPECT_GT(plan_movement(after, unheld.plan, old).moved_bytes, 0.05 * total);  // so the caps below bind
  for (const double share : {0.0, 0.02, 0.05}) {
    SCOPED_TRACE(share);
    const PlanOrigin held{&old, &old, 0.0, share * total};
    const ShardResult r = plan_task_from("joint:groups=none", after, cost.get(), held, quiet());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_LE(plan_movement(after, r.plan, old).moved_bytes, share * total);
    EXPECT_LE(step_of(after, r.plan), step_of(after, old) * (1 + 1e-12));
  }
  // A start that already moves more than the cap is refused, naming both.
  const PlanOrigin beyond{&unheld.plan, &old, 0.0, 0.01 * total};
  const ShardResult refused = plan_task_from("joint:groups=none", after, cost.get(), beyond, quiet());
  EXPECT_EQ(refused.status, ShardStatus::kInfeasible);
  EXPECT_NE(refused.reason.find("the start plan moves"), std::string::npos) << refused.reason;
}

/** `plan` with every table whole on device `device(i)`, i the table's index, but `split`: rows
 *  halved over devices 0 and 1. */
Plan whole_on(const Task& task, Plan plan, const std::function<int(std::size_t)>& device, const std::string& split) {
  for (std::size_t i = 0; i < plan.tables.size(); ++i) {
    TablePlacement& p = plan.tables[i];
    const TableSpec& t = *std::find_if(task.workload.tables.begin(), task.workload.tables.end(),
                                       [&](const TableSpec& s) { return s.name == p.table; });
    p.type = ShardingType::kTableWise;
    p.shards = {shard(device(i), 0, t.num_rows(), 0, t.dim)};
    if (p.table != split) continue;
    p.type = ShardingType::kRowWise;
    p.shards = {shard(0, 0, t.num_rows() / 2, 0, t.dim), shard(1, t.num_rows() / 2, t.num_rows(), 0, t.dim)};
  }
  return plan;
}

TEST(Replan, JointRebuildingTheOverloadedDevicesSpreadsTheirTablesWithinTheCapAndNeverEndsWorse) {
  // Every table on device 0 of 4, and a budget of one unit of work: the search alone barely
  // leaves the start, while a rebuild (PlanOrigin::rebuild_bytes, outside the budget) first takes
  // device 0's densest tables, the only device above the mean, out and places them again.
  const Task task = tiny_task(16, "v100:nodes=1,gpus_per_node=4,hbm_gib=32", 23);
  const Plan balanced = planned(task);
  const Plan start = whole_on(
      task, balanced, [](std::size_t) { return 0; }, "");
  ASSERT_EQ(find_error_in_plan(task, start), "");
  const auto cost = make_cost_model("sim", task, quiet());
  const std::string sharder = "joint:groups=none,work=1";
  const double total = static_cast<double>(task.workload.total_bytes());
  const double start_step = step_of(task, start);
  const ShardResult alone = plan_task_from(sharder, task, cost.get(), PlanOrigin{&start, &start, 0.0}, quiet());
  ASSERT_EQ(alone.status, ShardStatus::kOk) << alone.reason;
  for (const double cap : {0.1 * total, std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(cap);
    const PlanOrigin origin{&start, &start, 0.0, cap, 0.5 * total};
    const ShardResult r = plan_task_from(sharder, task, cost.get(), origin, quiet());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_EQ(find_error_in_plan(task, r.plan), "");
    const double moved = plan_movement(task, r.plan, start).moved_bytes;
    EXPECT_GT(moved, 0.0);
    EXPECT_LE(moved, std::min(cap, 0.5 * total));
    EXPECT_LT(step_of(task, r.plan), step_of(task, alone.plan));
    EXPECT_LE(step_of(task, r.plan), start_step * (1 + 1e-12));
  }
  // A start that already moves from the old plan: the rebuild keeps to what the cap leaves.
  const double start_moved = plan_movement(task, start, balanced).moved_bytes;
  const double cap = start_moved + 0.05 * total;
  const PlanOrigin near_cap{&start, &balanced, 0.0, cap, total};
  const ShardResult capped = plan_task_from(sharder, task, cost.get(), near_cap, quiet());
  ASSERT_EQ(capped.status, ShardStatus::kOk) << capped.reason;
  EXPECT_LE(plan_movement(task, capped.plan, balanced).moved_bytes, cap);
  // Where nothing may move, the rebuild takes nothing out and the start is kept.
  const PlanOrigin frozen{&start, &start, 0.0, 0.0, 0.5 * total};
  const ShardResult kept = plan_task_from(sharder, task, cost.get(), frozen, quiet());
  ASSERT_EQ(kept.status, ShardStatus::kOk) << kept.reason;
  EXPECT_EQ(plan_movement(task, kept.plan, start).moved_bytes, 0.0);
}

TEST(Replan, JointSettingRowCutsAtOnceKeepsToTheCapAndNeverEndsWorseThanWithout) {
  // After a drift, joint re-plans from the old plan held to a cap, with movement priced: with
  // step 5 (joint.h: every row cut set at once, its moved rows within what the cap leaves) its
  // objective, the step plus the price of what moved, is never above cut_rows=0's, and on some
  // task below it (on seeds 1 and 3 of these three).
  int lower = 0;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(seed);
    const Task task = tiny_task(24, "v100:nodes=2,gpus_per_node=4,hbm_gib=32", seed);
    const Plan old = planned(task);
    const Task after = drifted_every(task, 3);
    const auto cost = make_cost_model("sim", after, quiet());
    const double total = static_cast<double>(after.workload.total_bytes());
    const double per_byte = 0.1 * step_of(after, old) / total, cap = 0.05 * total;
    const auto objective = [&](const Plan& plan) {
      return step_of(after, plan) + per_byte * plan_movement(after, plan, old).moved_bytes;
    };
    const PlanOrigin origin{&old, &old, per_byte, cap};
    const ShardResult without = plan_task_from("joint:groups=none,cut_rows=0", after, cost.get(), origin, quiet());
    const ShardResult with = plan_task_from("joint:groups=none", after, cost.get(), origin, quiet());
    ASSERT_EQ(with.status, ShardStatus::kOk) << with.reason;
    ASSERT_EQ(without.status, ShardStatus::kOk) << without.reason;
    EXPECT_EQ(find_error_in_plan(after, with.plan), "");
    EXPECT_LE(plan_movement(after, with.plan, old).moved_bytes, cap);
    EXPECT_LE(objective(with.plan), objective(without.plan) * (1 + 1e-12));
    if (objective(with.plan) < objective(without.plan) * (1 - 1e-9)) ++lower;
  }
  EXPECT_GT(lower, 0);
}

TEST(Replan, JointRebuildsTablesInPiecesOnlyWhenAskedAndKeepsAGivenPlanThatIsBetter) {
  const Task task = tiny_task(16, "v100:nodes=1,gpus_per_node=4,hbm_gib=32", 23);
  const auto cost = make_cost_model("sim", task, quiet());
  const std::string sharder = "joint:groups=none,work=1";
  const double total = static_cast<double>(task.workload.total_bytes());
  const Plan balanced = planned(task);
  // Devices 0 and 1 hold everything, the heaviest table in two row pieces over them.
  const std::string heavy =
      std::max_element(task.workload.tables.begin(), task.workload.tables.end(),
                       [](const TableSpec& a, const TableSpec& b) { return a.stats.num_indices < b.stats.num_indices; })
          ->name;
  const Plan start = whole_on(
      task, balanced, [](std::size_t i) { return static_cast<int>(i % 2); }, heavy);
  ASSERT_EQ(find_error_in_plan(task, start), "");
  for (const bool split : {false, true}) {
    SCOPED_TRACE(split);
    const PlanOrigin origin{&start, &start, 0.0, std::numeric_limits<double>::infinity(), 10 * total, split};
    const ShardResult r = plan_task_from(sharder, task, cost.get(), origin, quiet());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_EQ(find_error_in_plan(task, r.plan), "");
    const auto placed = std::find_if(r.plan.tables.begin(), r.plan.tables.end(),
                                     [&](const TablePlacement& p) { return p.table == heavy; });
    ASSERT_NE(placed, r.plan.tables.end());
    // Placed again, the heavy table starts whole (one host); left alone, it keeps its two pieces.
    EXPECT_EQ(placed->shards.size(), split ? 1U : 2U);
    EXPECT_LE(step_of(task, r.plan), step_of(task, start) * (1 + 1e-12));
  }
  // From joint's own plan on a task where placing most tables again with no work left to mend
  // them ends 1.3% slower, the plan given is kept.
  const Task other = tiny_task(12, "v100:nodes=1,gpus_per_node=4,hbm_gib=32", 23);
  const auto other_cost = make_cost_model("sim", other, quiet());
  const Plan best = planned(other);
  const double bytes = static_cast<double>(other.workload.total_bytes());
  const PlanOrigin rebuilt{&best, &best, 0.0, std::numeric_limits<double>::infinity(), 10 * bytes};
  const ShardResult r = plan_task_from(sharder, other, other_cost.get(), rebuilt, quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_NE(r.stats.solver.find("tables placed again"), std::string::npos) << r.stats.solver;
  EXPECT_LE(step_of(other, r.plan), step_of(other, best) * (1 + 1e-12)) << r.stats.solver;
}

TEST(ReplanReshard, OnlyShardsMovingBetweenTheOldRanksAreWhatTorchrecCanReshard) {
  Plan old;
  old.tables = {{"a", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 8)}},
                {"b", ShardingType::kColumnWise, {shard(1, 0, 500, 0, 4), shard(2, 0, 500, 4, 8)}}};
  Plan moved = old;
  moved.tables[0].shards[0].device = 2;
  std::swap(moved.tables[1].shards[0].device, moved.tables[1].shards[1].device);
  EXPECT_EQ(torchrec_reshard_problem(old, moved), "");
  Plan retyped = old;
  retyped.tables[0] = {"a", ShardingType::kRowWise, {shard(0, 0, 500, 0, 8), shard(1, 500, 1000, 0, 8)}};
  EXPECT_NE(torchrec_reshard_problem(old, retyped).find("table 'a' changes its sharding type (table_wise to row_wise)"),
            std::string::npos);
  Plan resized = old;
  resized.tables[1].shards[0].col_end = 2, resized.tables[1].shards[1].col_begin = 2;
  EXPECT_NE(torchrec_reshard_problem(old, resized).find("table 'b' changes its shards"), std::string::npos);
  Plan tiered = old;
  tiered.tables[0].shards[0].hbm_rows = 100;
  EXPECT_NE(torchrec_reshard_problem(old, tiered).find("table 'a' changes its shards"), std::string::npos);
  Plan wider = old;
  wider.tables[0].shards[0].device = 3;  // the old plan uses ranks 0 to 2
  EXPECT_NE(torchrec_reshard_problem(old, wider).find("moves to rank 3, beyond the old plan's 3"), std::string::npos)
      << torchrec_reshard_problem(old, wider);
  Plan fewer = old;
  fewer.tables.pop_back();
  EXPECT_NE(torchrec_reshard_problem(old, fewer).find("table 'b' of the old plan is not in the plan"),
            std::string::npos);
}

TEST(ReplanReshard, AfterADriftTheChosenPlanIsOneTorchrecCanReshardAndNoSlowerThanKept) {
  const Task before = tiny_task(24, "v100:nodes=1,gpus_per_node=4,hbm_gib=4", 23);
  Task after = before;
  for (std::size_t t = 0; t < after.workload.tables.size(); t += 3) {  // every third table: 4× the lookups
    TableStats& s = after.workload.tables[t].stats;
    s.num_indices *= 4;
    s.pooling_factor = static_cast<double>(s.num_indices) / static_cast<double>(s.batch_size);
  }
  check_task(after, "drifted");
  const Plan old = planned(before);
  ReplanOptions options;
  options.reshard = true;
  const ReplanResult r = replan(after, old, options, quiet());
  SCOPED_TRACE(r.verdict);
  EXPECT_TRUE(r.reshard);
  EXPECT_EQ(torchrec_reshard_problem(old, r.plan), "");
  EXPECT_EQ(find_error_in_plan(after, r.plan), "");
  EXPECT_LE(r.chosen.step_ms, r.kept.step_ms * (1 + 1e-12));
  EXPECT_NEAR(step_of(after, r.plan), r.chosen.step_ms, 1e-9 * r.chosen.step_ms);
  // A new world, or a table the old plan does not have, cannot be resharded: one line naming it.
  Task wider = after;
  wider.topology = topology_with_devices(after.topology, 8);
  EXPECT_NE(error_of([&] {
              (void)replan(wider, old, options, quiet());
            }).find("replan --reshard: the task has 8 devices but the old plan uses 4 ranks"),
            std::string::npos);
  Task more = after;
  more.workload.tables.push_back(hand_table("new_table", 8, 1000, 1.0));
  EXPECT_NE(
      error_of([&] { (void)replan(more, old, options, quiet()); }).find("table 'new_table' is not in the old plan"),
      std::string::npos);
}

TEST(ReplanReshard, JointKeepingLayoutsOnlyMovesShardsTorchrecCanMove) {
  // A start with table-wise, column-wise and row-wise tables (TorchRec's plan of this task); the
  // search may move pieces only, so every result is one TorchRec's reshard can run from the start.
  const Task task = tiny_task(16, "v100:nodes=1,gpus_per_node=4", 32);
  const Plan start = planned(task, "torchrec");
  std::set<ShardingType> types;
  for (const TablePlacement& p : start.tables) types.insert(p.type);
  ASSERT_GE(types.size(), 2u) << "the start should mix layouts";
  const auto cost = make_cost_model("sim", task, quiet());
  for (const char* spec : {"joint:groups=none,keep_layouts=true", "joint:groups=none,keep_layouts=true,chains=1"}) {
    const PlanOrigin origin{&start, &start, 0.0};
    const ShardResult r = plan_task_from(spec, task, cost.get(), origin, quiet());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_EQ(torchrec_reshard_problem(start, r.plan), "") << spec;
    EXPECT_LE(step_of(task, r.plan), step_of(task, start) * (1 + 1e-12));
  }
  // Without it the search re-lays tables out (on this task), which TorchRec's reshard cannot run.
  const ShardResult free = plan_task_from("joint:groups=none", task, cost.get(), {&start, &start, 0.0}, quiet());
  EXPECT_NE(torchrec_reshard_problem(start, free.plan), "");
}

TEST(Replan, BadInputIsOneLineNamingIt) {
  const Task task = tiny_task(8, "v100:nodes=2,gpus_per_node=4", 24);
  const Plan old = planned(task);
  Task other = tiny_task(8, "v100:nodes=2,gpus_per_node=4", 25);
  for (TableSpec& t : other.workload.tables) t.name = "other_" + t.name;
  EXPECT_NE(error_of([&] { (void)replan(other, old, ReplanOptions{}, quiet()); }).find("shares no table"),
            std::string::npos);
  Plan two_d = old;  // shards on devices 4..7 are no ranks of groups of 4
  two_d.groups.size = 4;
  EXPECT_NE(error_of([&] { (void)replan(task, two_d, ReplanOptions{}, quiet()); }).find("beyond its sharding groups"),
            std::string::npos);
  Task shrunk = task;
  shrunk.topology = topology_with_devices(task.topology, 4);  // the tables on devices 4..7 must move
  ReplanOptions none;
  none.max_move_bytes = 0;
  EXPECT_NE(error_of([&] { (void)replan(shrunk, old, none, quiet()); }).find("no plan that fits moves at most"),
            std::string::npos);
  none.max_move_bytes = -1;
  EXPECT_NE(error_of([&] { (void)replan(task, old, none, quiet()); }).find("≥ 0"), std::string::npos);
}

TEST(Replan, AnOldPlanWhoseShardsAreNotAPlanIsRefusedNamingTheTable) {
  // The old task is not known, but an old plan's shards must still be shards that tile their
  // table: each mutation below is refused, naming the table, before anything is searched.
  const Task task = tiny_task(8, "v100:nodes=2,gpus_per_node=4", 24);
  const Plan old = planned(task);
  const auto whole = std::find_if(old.tables.begin(), old.tables.end(),
                                  [](const TablePlacement& p) { return p.type == ShardingType::kTableWise; });
  ASSERT_NE(whole, old.tables.end());
  const auto at = static_cast<std::size_t>(whole - old.tables.begin());
  const std::string name = whole->table;
  const auto refused = [&](const std::function<void(TablePlacement&)>& mutate, const std::string& why) {
    Plan bad = old;
    mutate(bad.tables[at]);
    const std::string error = error_of([&] { (void)replan(task, bad, ReplanOptions{}, quiet()); });
    EXPECT_NE(error.find("'" + name + "' of the old plan"), std::string::npos) << error;
    EXPECT_NE(error.find(why), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  };
  refused([](TablePlacement& p) { p.shards.clear(); }, "has no shards");
  refused([](TablePlacement& p) { std::swap(p.shards[0].row_begin, p.shards[0].row_end); }, "is not a shard");
  refused([](TablePlacement& p) { p.shards.push_back(p.shards[0]); }, "table_wise but has 2 shards");
  refused(
      [](TablePlacement& p) {
        p.type = ShardingType::kRowWise;
        p.shards.push_back(p.shards[0]);
        p.shards.back().device = (p.shards[0].device + 1) % 8;
      },
      "overlaps shard 0");
  refused(
      [](TablePlacement& p) {
        p.type = ShardingType::kColumnWise;
        p.shards[0].col_end = 4;    // the rest of the columns on no shard (the shape is read off them:
        Shard other = p.shards[0];  // so a second shard sets the width)
        other.col_begin = 8;
        other.col_end = 12;
        other.device = (other.device + 1) % 8;
        p.shards.push_back(other);
      },
      "no shard covers row 0, column 4");
  Plan twice = old;
  twice.tables.push_back(twice.tables[at]);
  EXPECT_NE(error_of([&] { (void)replan(task, twice, ReplanOptions{}, quiet()); }).find("appears twice"),
            std::string::npos);
}

}  // namespace
}  // namespace embshard
