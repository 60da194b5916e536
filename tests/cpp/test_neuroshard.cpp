// Tests of the `neuroshard` sharder: valid plans on protocol tasks, splits where they are needed or
// help, the greedy grid search against a naive re-implementation, the cost cache, parameters,
// statuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "embshard/cost/cost_model.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/task_gen.h"
#include "embshard/shard/sharder.h"
#include "shard/neuroshard/neuroshard.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

namespace ns = detail::neuroshard;
using test_util::error_of;

constexpr char kCanonical[] =
    "neuroshard:beam_width=3,candidates=10,max_depth=10,scales=11,max_scale=1.5,objective=step,time_ms=0";

Context quiet() { return test_util::quiet_context(); }

Task protocol_task(int index, int devices = 4, int max_dim = 128) {
  const auto gen =
      make_task_generator("neuroshard:devices=" + std::to_string(devices) + ",max_dim=" + std::to_string(max_dim));
  static const TableSource source = TableSource::from_pool(0, gen->batch_size());
  return gen->generate(source, 0, index);
}

double step_of(const Task& task, CostModel& cost, const Plan& plan) {
  return objective_value(cost.estimate(task, plan, quiet()), Objective::kStep);
}

bool has_column_split(const Plan& plan) {
  return std::any_of(plan.tables.begin(), plan.tables.end(),
                     [](const TablePlacement& t) { return t.type == ShardingType::kColumnWise; });
}

/** Every shard is a column range dim / 2^k wide (k ≥ 0), a multiple of 4, spanning all rows. */
void expect_halving_shards(const Task& task, const Plan& plan) {
  for (std::size_t t = 0; t < plan.tables.size(); ++t) {
    const TableSpec& spec = task.workload.tables[t];
    ASSERT_EQ(plan.tables[t].table, spec.name);  // task order
    for (const Shard& s : plan.tables[t].shards) {
      EXPECT_EQ(s.num_cols() % 4, 0) << spec.name;
      int width = spec.dim;
      while (width > s.num_cols() && width % 8 == 0) width /= 2;
      EXPECT_EQ(width, s.num_cols()) << spec.name << " is " << spec.dim << " wide";
      EXPECT_EQ(s.num_rows(), spec.num_rows());
    }
  }
}

/**
 * A protocol task whose widest table is made twice as large as all others together, on 4 devices
 * of 1.2 × the others' bytes: the table fits on no device whole, but its halves do.
 */
Task oversized_table_task() {
  Task task = protocol_task(1);
  auto& tables = task.workload.tables;
  const auto widest = std::max_element(tables.begin(), tables.end(),
                                       [](const TableSpec& a, const TableSpec& b) { return a.dim < b.dim; });
  widest->dim = 128;
  std::int64_t others = task.workload.total_bytes() - widest->size_bytes();
  widest->stats.num_rows = 2 * others / (128 * 4);
  for (Device& d : task.topology.devices) d.hbm_bytes = others * 6 / 5;
  check_task(task, "oversized");
  return task;
}

// ---- the naive reference ----------------------------------------------------------------------

double naive_compute(const Task& task, CostModel& cost, const std::vector<PlacedShard>& shards) {
  const DeviceCompute c = cost.compute().device_compute(task, shards, quiet());
  return c.fw_ms + c.bw_ms;
}

PlacedShard whole(const Task& task, int t, int device) {
  PlacedShard p;
  p.table = t;
  p.shard.device = device;
  p.shard.row_end = task.workload.tables[static_cast<std::size_t>(t)].num_rows();
  p.shard.col_end = task.workload.tables[static_cast<std::size_t>(t)].dim;
  return p;
}

/** refs-zha §5.4's greedy for one scale, straight from the text: no cache, no bookkeeping. */
std::vector<int> naive_greedy(const Task& task, CostModel& cost, double scale) {
  const int n = static_cast<int>(task.workload.tables.size());
  const int devices = task.topology.num_devices();
  std::vector<std::pair<double, int>> order;  // (single cost, index) ascending, taken from the end
  for (int t = 0; t < n; ++t) order.emplace_back(naive_compute(task, cost, {whole(task, t, 0)}), t);
  std::sort(order.begin(), order.end());
  const double cap = scale * (static_cast<double>(task.workload.total_dim()) / devices);
  std::vector<std::vector<PlacedShard>> on(static_cast<std::size_t>(devices));
  std::vector<int> chosen(static_cast<std::size_t>(n), -1);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int t = it->second;
    const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(t)];
    int best = -1;
    double best_cost = 0.0;
    std::int64_t best_bytes = 0;
    for (int d = 0; d < devices; ++d) {
      std::int64_t bytes = 0;
      std::int64_t dims = 0;
      for (const PlacedShard& p : on[static_cast<std::size_t>(d)]) {
        bytes += task.workload.tables[static_cast<std::size_t>(p.table)].size_bytes();
        dims += p.shard.num_cols();
      }
      if (bytes + spec.size_bytes() > task.topology.devices[static_cast<std::size_t>(d)].hbm_bytes) continue;
      if (static_cast<double>(dims + spec.dim) > cap) continue;
      const double c = naive_compute(task, cost, on[static_cast<std::size_t>(d)]);
      if (best < 0 || c < best_cost || (c == best_cost && bytes < best_bytes)) {
        best = d;
        best_cost = c;
        best_bytes = bytes;
      }
    }
    if (best < 0) return {};
    on[static_cast<std::size_t>(best)].push_back(whole(task, t, best));
    chosen[static_cast<std::size_t>(t)] = best;
  }
  return chosen;
}

std::vector<int> devices_of(const Plan& plan) {
  std::vector<int> out;
  for (const auto& t : plan.tables) out.push_back(t.shards.at(0).device);
  return out;
}

// ---- tests ------------------------------------------------------------------------------------

TEST(NeuroShard, PlansEveryProtocolTaskValidlyAndNeverWorseThanItsUnsplitGrid) {
  int compared = 0;
  for (int index = 0; index < 6; ++index) {
    const Task task = protocol_task(index);
    const auto cost = make_cost_model("sim", task);
    const ShardResult r = plan_task("neuroshard", task, cost.get(), quiet());  // checks validity
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    expect_halving_shards(task, r.plan);
    EXPECT_GE(step_of(task, *cost, r.plan) + 1e-9, *cost->lower_bound(task, Objective::kStep));
    const ShardResult unsplit = plan_task("neuroshard:max_depth=0", task, cost.get(), quiet());
    if (unsplit.status != ShardStatus::kOk) continue;  // only a split plan fits: nothing to compare
    ++compared;
    EXPECT_FALSE(has_column_split(unsplit.plan));
    EXPECT_EQ(unsplit.stats.nodes_visited, 11);
    EXPECT_LE(step_of(task, *cost, r.plan), step_of(task, *cost, unsplit.plan) + 1e-9) << task.id;
    EXPECT_GT(r.stats.cache_hits, 0);
    EXPECT_LE(r.stats.cache_hits, r.stats.cache_queries);
    EXPECT_GE(r.stats.plans_evaluated, 1);
    EXPECT_LE(r.stats.plans_evaluated, r.stats.nodes_visited);
  }
  EXPECT_GE(compared, 3);
}

TEST(NeuroShard, SplitsATableNoDeviceHoldsWhereEveryGreedyBaselineFails) {
  const Task task = oversized_table_task();
  const auto cost = make_cost_model("sim", task);
  for (const char* baseline : {"greedy:balance=size", "greedy:balance=dim", "greedy:balance=lookup",
                               "greedy:balance=size_lookup", "greedy:balance=size_and_lookup"}) {
    EXPECT_EQ(plan_task(baseline, task, cost.get(), quiet()).status, ShardStatus::kInfeasible) << baseline;
  }
  const ShardResult r = plan_task("neuroshard", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_TRUE(has_column_split(r.plan));
  expect_halving_shards(task, r.plan);
}

TEST(NeuroShard, WithoutColumnSplitsTheOversizedTaskIsInfeasibleNamingTheTable) {
  Task task = oversized_table_task();
  task.constraints.allow_column_split = false;
  const auto widest =
      std::max_element(task.workload.tables.begin(), task.workload.tables.end(),
                       [](const TableSpec& a, const TableSpec& b) { return a.size_bytes() < b.size_bytes(); });
  const auto cost = make_cost_model("sim", task);
  const ShardResult r = plan_task("neuroshard", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kInfeasible);
  EXPECT_NE(r.reason.find("'" + widest->name + "'"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("HBM"), std::string::npos) << r.reason;
  EXPECT_EQ(r.stats.nodes_visited, 11);  // the unsplit grid only
}

TEST(NeuroShard, SplitsAHotWideTableWhenThatLowersTheStep) {
  static constexpr int kDims[] = {32};
  Task task = test_util::pool_task(6, "cpu:devices=2", 3, kDims);
  auto& tables = task.workload.tables;
  const auto hot = std::max_element(tables.begin(), tables.end(), [](const TableSpec& a, const TableSpec& b) {
    return a.stats.num_indices < b.stats.num_indices;
  });
  hot->dim = 128;
  hot->stats.num_indices *= 8;  // far more lookups than all other tables together
  check_task(task, "hot");
  const auto cost = make_cost_model("sim", task);
  const ShardResult unsplit = plan_task("neuroshard:max_depth=0", task, cost.get(), quiet());
  const ShardResult r = plan_task("neuroshard", task, cost.get(), quiet());
  ASSERT_EQ(unsplit.status, ShardStatus::kOk) << unsplit.reason;
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  const TablePlacement& placed = r.plan.tables.at(static_cast<std::size_t>(hot - tables.begin()));
  EXPECT_EQ(placed.type, ShardingType::kColumnWise);
  EXPECT_LT(step_of(task, *cost, r.plan), step_of(task, *cost, unsplit.plan) - 1e-6);
}

TEST(NeuroShard, GreedyMatchesANaiveReferenceAndNeverBeatsExhaustive) {
  static constexpr int kDims[] = {4};  // nothing can be split
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    const Task task = test_util::pool_task(5 + static_cast<int>(seed % 3),
                                           seed % 2 ? "cpu:devices=3" : "v100:gpus_per_node=2", seed, kDims);
    const auto cost = make_cost_model("sim", task);
    ns::ShardCostCache cache(cost->compute());
    const ns::SplitState state = ns::make_split_state(task, ns::whole_tables(task), cache, quiet());
    double best_value = std::numeric_limits<double>::infinity();
    std::vector<int> best_devices;
    for (const double scale : ns::grid_scales(11, 1.5)) {
      const std::vector<int> naive = naive_greedy(task, *cost, scale);
      const ns::Placement placement = ns::greedy_place(task, state, scale, cache, quiet());
      EXPECT_EQ(placement.ok() ? placement.devices : std::vector<int>{}, naive)
          << "seed " << seed << ", scale " << scale;
      if (naive.empty()) continue;
      const double value = step_of(task, *cost, table_wise_plan(task, naive));
      if (value < best_value) {
        best_value = value;
        best_devices = naive;
      }
    }
    const ShardResult r = plan_task("neuroshard", task, cost.get(), quiet());
    if (best_devices.empty()) {
      EXPECT_EQ(r.status, ShardStatus::kInfeasible) << "seed " << seed;
      continue;
    }
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_FALSE(has_column_split(r.plan));
    EXPECT_EQ(devices_of(r.plan), best_devices) << "seed " << seed;
    EXPECT_NEAR(step_of(task, *cost, r.plan), best_value, 1e-9);
    const ShardResult optimum = plan_task("exhaustive", task, cost.get(), quiet());
    ASSERT_EQ(optimum.status, ShardStatus::kOk);
    EXPECT_GE(step_of(task, *cost, r.plan) + 1e-9, step_of(task, *cost, optimum.plan)) << "seed " << seed;
  }
}

/** Splittable pieces among the top `n` by bytes ∪ top `n` by single compute (all if n > count). */
int splittable_candidates(const ns::SplitState& state, int n) {
  const int count = static_cast<int>(state.pieces.size());
  std::vector<bool> chosen(static_cast<std::size_t>(count), n > count);
  const auto mark_top = [&](auto value_of) {
    std::vector<int> idx;
    for (int i = 0; i < count; ++i) idx.push_back(i);
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return value_of(a) > value_of(b); });
    for (int i = 0; i < std::min(n, count); ++i)
      chosen[static_cast<std::size_t>(idx[static_cast<std::size_t>(i)])] = true;
  };
  mark_top([&](int i) { return static_cast<double>(state.bytes[static_cast<std::size_t>(i)]); });
  mark_top([&](int i) { return state.single_ms[static_cast<std::size_t>(i)]; });
  int splittable = 0;
  for (int i = 0; i < count; ++i) {
    splittable += chosen[static_cast<std::size_t>(i)] && state.pieces[static_cast<std::size_t>(i)].cols() % 8 == 0;
  }
  return splittable;
}

TEST(NeuroShard, OneRoundGridSearchesEachSplittableCandidateOnce) {
  int searched = 0;
  for (int index = 0; index < 5; ++index) {
    const Task task = protocol_task(index);
    const auto cost = make_cost_model("sim", task);
    ns::ShardCostCache cache(cost->compute());
    const ns::SplitState state = ns::make_split_state(task, ns::whole_tables(task), cache, quiet());
    ASSERT_GE(state.pieces.size(), 10u);
    for (const int n : {10, 3, 1000}) {
      const int tried = splittable_candidates(state, n);
      const ShardResult r =
          plan_task("neuroshard:max_depth=1,scales=4,candidates=" + std::to_string(n), task, cost.get(), quiet());
      if (r.status != ShardStatus::kOk) continue;  // a one-round search may find no fit: the count is the same
      ++searched;
      EXPECT_EQ(r.stats.nodes_visited, 4 * (1 + tried)) << task.id << ", candidates " << n;
    }
  }
  EXPECT_GE(searched, 6);
}

TEST(NeuroShard, ADeadlineMidSearchReturnsTheBestSoFar) {
  const Task task = protocol_task(5);
  const auto cost = make_cost_model("sim", task);
  Context ctx = quiet();
  ctx.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(3);
  const ShardResult r = plan_task("neuroshard", task, cost.get(), ctx);
  ASSERT_EQ(r.status, ShardStatus::kTimeLimit) << r.reason;
  const ShardResult full = plan_task("neuroshard", task, cost.get(), quiet());
  EXPECT_LT(r.stats.nodes_visited, full.stats.nodes_visited);
  if (!r.plan.tables.empty()) {
    EXPECT_EQ(find_error_in_plan(task, r.plan), "");
  }
}

TEST(NeuroShard, GridScalesRunFromOneToTheMaximum) {
  const std::vector<double> scales = ns::grid_scales(11, 1.5);
  ASSERT_EQ(scales.size(), 11u);
  EXPECT_EQ(scales.front(), 1.0);
  EXPECT_DOUBLE_EQ(scales[1], 1.05);
  EXPECT_DOUBLE_EQ(scales.back(), 1.5);
  EXPECT_EQ(ns::grid_scales(1, 1.5), std::vector<double>{1.0});
}

TEST(NeuroShard, SplitsHalveInPlaceAndAppendTheCopy) {
  std::vector<ns::Piece> pieces{{0, 0, 16}, {1, 0, 12}};
  EXPECT_FALSE(ns::splittable(pieces[1]));  // 12 / 2 = 6 is no multiple of 4
  ns::split_piece(pieces, 0);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].col_end, 8);
  EXPECT_EQ(pieces[2].table, 0);
  EXPECT_EQ(pieces[2].col_begin, 8);
  EXPECT_EQ(pieces[2].col_end, 16);
  ns::split_piece(pieces, 2);
  EXPECT_EQ(pieces[2].cols(), 4);
  EXPECT_EQ(pieces[3].col_begin, 12);
  EXPECT_FALSE(ns::splittable(pieces[3]));
}

TEST(NeuroShard, CacheKeysKeepInsertionOrderAndCountHits) {
  const Task task = protocol_task(0);
  const auto cost = make_cost_model("sim", task);
  ns::ShardCostCache cache(cost->compute());
  const std::vector<PlacedShard> ab{whole(task, 0, 0), whole(task, 1, 0)};
  const std::vector<PlacedShard> ba{ab[1], ab[0]};
  const DeviceCompute first = cache.device_compute(task, ab, quiet());
  const DeviceCompute again = cache.device_compute(task, ab, quiet());
  EXPECT_EQ(first.fw_ms, again.fw_ms);
  EXPECT_EQ(cache.queries(), 2);
  EXPECT_EQ(cache.hits(), 1);
  (void)cache.device_compute(task, ba, quiet());
  EXPECT_EQ(cache.hits(), 1);  // a permutation is another key
  const DeviceCompute direct = cost->compute().device_compute(task, ab, quiet());
  EXPECT_EQ(first.fw_ms, direct.fw_ms);
  EXPECT_EQ(first.bw_ms, direct.bw_ms);
}

TEST(NeuroShard, IsDeterministic) {
  const Task task = protocol_task(2);
  const auto cost = make_cost_model("sim", task);
  const ShardResult a = plan_task("neuroshard", task, cost.get(), quiet());
  const ShardResult b = plan_task("neuroshard", task, cost.get(), quiet());
  ASSERT_EQ(a.status, ShardStatus::kOk);
  ASSERT_EQ(a.plan.tables.size(), b.plan.tables.size());
  for (std::size_t t = 0; t < a.plan.tables.size(); ++t) {
    const auto& x = a.plan.tables[t].shards;
    const auto& y = b.plan.tables[t].shards;
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t s = 0; s < x.size(); ++s) {
      EXPECT_EQ(x[s].device, y[s].device);
      EXPECT_EQ(x[s].col_begin, y[s].col_begin);
      EXPECT_EQ(x[s].col_end, y[s].col_end);
    }
  }
  EXPECT_EQ(a.stats.cache_queries, b.stats.cache_queries);
  EXPECT_EQ(a.stats.plans_evaluated, b.stats.plans_evaluated);
}

TEST(NeuroShard, SpecIsCanonicalAndRoundTrips) {
  EXPECT_EQ(canonical_sharder_spec("neuroshard"), kCanonical);
  EXPECT_EQ(canonical_sharder_spec(kCanonical), kCanonical);
  EXPECT_EQ(canonical_sharder_spec("neuroshard:objective=max_sum,max_scale=2"),
            "neuroshard:beam_width=3,candidates=10,max_depth=10,scales=11,max_scale=2,objective=max_sum,time_ms=0");
  const Task task = protocol_task(0, 4, 16);
  const auto cost = make_cost_model("sim", task);
  const ShardResult r = plan_task("neuroshard:max_depth=1", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(r.plan.provenance.sharder,
            "neuroshard:beam_width=3,candidates=10,max_depth=1,scales=11,max_scale=1.5,objective=step,time_ms=0");
  EXPECT_EQ(r.plan.provenance.cost_model,
            "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4,exchanges=fused");
  EXPECT_TRUE(make_sharder("neuroshard")->uses_cost_model());
}

TEST(NeuroShard, BadParametersAreClearErrors) {
  EXPECT_NE(
      error_of([] { (void)make_sharder("neuroshard:beam_width=0"); }).find("'beam_width' = 0 is below its minimum"),
      std::string::npos);
  EXPECT_NE(error_of([] { (void)make_sharder("neuroshard:max_scale=0.9"); }).find("max_scale"), std::string::npos);
  EXPECT_NE(error_of([] { (void)make_sharder("neuroshard:scales=many"); }).find("expects an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)make_sharder("neuroshard:objective=balance"); }).find("max_sum"), std::string::npos);
  EXPECT_NE(error_of([] { (void)make_sharder("neuroshard:depth=3"); }).find("max_depth"), std::string::npos);
  const Task task = protocol_task(0, 4, 16);
  EXPECT_NE(error_of([&] { (void)plan_task("neuroshard", task, nullptr, quiet()); }).find("needs a cost model"),
            std::string::npos);
}

TEST(NeuroShard, APassedDeadlineIsATimeLimit) {
  const Task task = protocol_task(0);
  const auto cost = make_cost_model("sim", task);
  Context ctx = quiet();
  ctx.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const ShardResult r = plan_task("neuroshard", task, cost.get(), ctx);
  EXPECT_EQ(r.status, ShardStatus::kTimeLimit);
  EXPECT_NE(r.reason.find("deadline"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.plan.tables.empty());
  EXPECT_EQ(r.stats.nodes_visited, 0);
}

TEST(NeuroShard, MaxSumObjectiveAlsoGivesValidPlans) {
  const Task task = protocol_task(3, 4, 64);
  const auto cost = make_cost_model("sim", task);
  const ShardResult r = plan_task("neuroshard:objective=max_sum", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  const ShardResult unsplit = plan_task("neuroshard:objective=max_sum,max_depth=0", task, cost.get(), quiet());
  ASSERT_EQ(unsplit.status, ShardStatus::kOk) << unsplit.reason;
  EXPECT_LE(objective_value(cost->estimate(task, r.plan, quiet()), Objective::kMaxSum),
            objective_value(cost->estimate(task, unsplit.plan, quiet()), Objective::kMaxSum) + 1e-9);
}

}  // namespace
}  // namespace embshard
