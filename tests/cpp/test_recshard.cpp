// RecShard (paper 004): the `recshard` sharder, the UVM-fallback greedy baselines, the RM1/RM2/RM3
// task protocol, tier accounting in the evaluator and the remapping layer.
#include <gtest/gtest.h>

#include <chrono>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>

#include "embshard/cost/analytic.h"
#include "embshard/data/pool.h"
#include "embshard/data/remap.h"
#include "embshard/eval/compare.h"
#include "embshard/eval/evaluator.h"
#include "embshard/eval/task_gen.h"
#include "embshard/kernels/cuda_embedding_bag.h"
#include "embshard/kernels/embedding_bag.h"
#include "embshard/milp/recshard_milp.h"
#include "embshard/profile/shard_timer.h"
#include "embshard/shard/sharder.h"
#include "eval/measured_model.h"
#include "shard/recshard/recshard.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::caught_error;
using test_util::quiet_context;

constexpr std::array<int, 2> kDims{32, 64};

/** `n` pool tables on `devices` a100s whose HBM holds `hbm_share` of the total bytes, UVM allowed. */
Task short_hbm_task(int n, int devices, double hbm_share, std::uint64_t seed) {
  Task task = test_util::pool_task(n, "a100:nodes=1,gpus_per_node=" + std::to_string(devices), seed, kDims);
  const auto total = static_cast<double>(task.workload.total_bytes());
  for (Device& d : task.topology.devices) {
    d.hbm_bytes = static_cast<std::int64_t>(hbm_share * total / devices);
    d.uvm_bytes = static_cast<std::int64_t>(total);
  }
  task.topology.name = "custom";
  task.constraints.allow_uvm = true;
  return task;
}

TEST(RecShardSharder, PlanIsValidAndIsTheMilpOptimum) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const Task task = short_hbm_task(7, 2, 0.5, seed);
    const ShardResult r = plan_task("recshard:time_limit_s=30", task, nullptr, quiet_context());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_EQ(find_error_in_plan(task, r.plan), "");
    EXPECT_NE(r.stats.solver.find("milp optimal"), std::string::npos) << r.stats.solver;
    EXPECT_GE(r.stats.solver_gap, 0.0);

    const RecShardInput input = detail::recshard_input_of(task);
    const RecShardResult direct = solve_recshard(input);
    ASSERT_TRUE(direct.solution.has_value());
    const auto choices = detail::recshard_choices_of(task, input, r.plan);
    const RecShardSolution mine = evaluate_recshard(input, choices);
    EXPECT_EQ(mine.capacity_error, "");
    EXPECT_NEAR(mine.max_cost_ms, direct.solution->max_cost_ms, 1e-4 * direct.solution->max_cost_ms);

    // Under the sim judge, each device's UVM lookups are its tables' (1 − pct_j) of their lookups.
    const EvalResult judged = evaluate_plan(task, r.plan, kSimJudge, quiet_context());
    std::vector<double> expected_uvm(2, 0.0);
    bool some_uvm = false;
    for (std::size_t j = 0; j < choices.size(); ++j) {
      const auto& spec = task.workload.tables[j];
      const double pct = static_cast<double>(choices[j].step) / kNumIcdfSteps;
      expected_uvm[static_cast<std::size_t>(choices[j].gpu)] += (1.0 - pct) * spec.stats.num_indices;
      some_uvm = some_uvm || r.plan.tables[j].shards[0].rows_in_hbm() < spec.num_rows();
    }
    EXPECT_TRUE(some_uvm) << "HBM holds half the bytes: some rows must be in UVM";
    for (int d = 0; d < 2; ++d) {
      EXPECT_NEAR(judged.lookups[static_cast<std::size_t>(d)].uvm, expected_uvm[static_cast<std::size_t>(d)],
                  1e-6 * task.workload.batch_size * 100 + 1e-3 * expected_uvm[static_cast<std::size_t>(d)])
          << "device " << d << " seed " << seed;
    }
  }
}

TEST(RecShardSharder, ADeadlineBeforeItsModelIsBuiltGivesItsWarmStartAndSaysWhy) {
  const Task task = short_hbm_task(7, 2, 0.5, 1);
  Context late = quiet_context();
  late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const ShardResult r = plan_task("recshard", task, nullptr, late);
  EXPECT_EQ(r.status, ShardStatus::kTimeLimit);
  EXPECT_NE(r.reason.find("was not built within the context's deadline; the plan is its greedy warm start"),
            std::string::npos)
      << r.reason;
  EXPECT_EQ(find_error_in_plan(task, r.plan), "");
  // The same greedy that warm-starts the solver.
  const RecShardInput input = detail::recshard_input_of(task);
  const auto greedy = recshard_greedy(input);
  ASSERT_TRUE(greedy.has_value());
  EXPECT_EQ(detail::recshard_choices_of(task, input, r.plan).size(), greedy->size());
  EXPECT_NEAR(evaluate_recshard(input, detail::recshard_choices_of(task, input, r.plan)).max_cost_ms,
              evaluate_recshard(input, *greedy).max_cost_ms, 1e-9);
}

TEST(RecShardSharder, BeatsTheUvmFallbackGreedyWhenHbmIsShort) {
  const Task task = short_hbm_task(24, 4, 0.35, 11);
  const ShardResult rec = plan_task("recshard:time_limit_s=20", task, nullptr, quiet_context());
  ASSERT_EQ(rec.status, ShardStatus::kOk) << rec.reason;
  const EvalResult rec_eval = evaluate_plan(task, rec.plan, kSimJudge, quiet_context());
  for (const char* balance : {"size", "lookup", "size_and_lookup"}) {
    const ShardResult g =
        plan_task(std::string("greedy:on_full=uvm,balance=") + balance, task, nullptr, quiet_context());
    ASSERT_EQ(g.status, ShardStatus::kOk) << balance << ": " << g.reason;
    const EvalResult g_eval = evaluate_plan(task, g.plan, kSimJudge, quiet_context());
    EXPECT_LT(rec_eval.step_ms, g_eval.step_ms) << balance;
    EXPECT_LT(uvm_lookup_share(rec_eval), uvm_lookup_share(g_eval)) << balance;
  }
}

TEST(RecShardSharder, TableThatFitsNowhereIsInfeasibleNamingIt) {
  Task task = short_hbm_task(4, 2, 0.5, 5);
  const std::int64_t biggest = task.workload.tables[2].size_bytes();
  for (Device& d : task.topology.devices) {
    d.hbm_bytes = biggest / 4;
    d.uvm_bytes = biggest / 4;
  }
  const ShardResult r = plan_task("recshard:time_limit_s=5", task, nullptr, quiet_context());
  EXPECT_EQ(r.status, ShardStatus::kInfeasible);
  EXPECT_NE(r.reason.find("fits on no device even using host memory"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("'t"), std::string::npos) << r.reason;

  // Without UVM, HBM alone must hold every table.
  Task no_uvm = short_hbm_task(4, 2, 0.5, 5);
  no_uvm.constraints.allow_uvm = false;
  const ShardResult r2 = plan_task("recshard:time_limit_s=5", no_uvm, nullptr, quiet_context());
  EXPECT_NE(r2.status, ShardStatus::kOk);
  EXPECT_FALSE(r2.reason.empty());
}

TEST(RecShardSharder, WithoutUvmEveryRowIsInHbm) {
  Task task = short_hbm_task(6, 2, 2.0, 13);  // HBM holds everything twice over
  task.constraints.allow_uvm = false;
  const ShardResult r = plan_task("recshard:time_limit_s=20", task, nullptr, quiet_context());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(find_error_in_plan(task, r.plan), "");
  for (const auto& tp : r.plan.tables) EXPECT_EQ(tp.shards[0].hbm_rows, -1) << tp.table;
}

TEST(RecShardSharder, TablesThatFitAloneButNotTogetherAreInfeasible) {
  // Each device holds the largest table, but the two devices together hold less than the total.
  Task task;
  std::int64_t largest = 0;
  for (std::uint64_t seed = 1; seed < 100; ++seed) {
    task = short_hbm_task(5, 2, 0.5, seed);
    largest = 0;
    for (const auto& t : task.workload.tables) largest = std::max(largest, t.size_bytes());
    if (task.workload.total_bytes() > 2 * largest) break;
  }
  ASSERT_GT(task.workload.total_bytes(), 2 * largest);
  for (Device& d : task.topology.devices) {
    d.hbm_bytes = largest;
    d.uvm_bytes = 0;
  }
  const ShardResult r = plan_task("recshard:time_limit_s=10", task, nullptr, quiet_context());
  EXPECT_EQ(r.status, ShardStatus::kInfeasible) << r.reason;
}

TEST(RecShardSharder, MissingIcdfIsAnErrorNamingTheTable) {
  Task task = short_hbm_task(3, 2, 0.5, 7);
  task.workload.tables[1].stats.icdf.clear();
  const auto error = caught_error([&] { (void)plan_task("recshard", task, nullptr, quiet_context()); });
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("'" + task.workload.tables[1].name + "'"), std::string::npos) << *error;
  EXPECT_NE(error->find("ICDF"), std::string::npos) << *error;
}

TEST(RecShardSharder, BadIcdfsAndZeroBandwidthsAreClearErrors) {
  Task task = short_hbm_task(3, 2, 0.5, 14);
  task.workload.tables[2].stats.icdf[40] = task.workload.tables[2].stats.icdf[39] - 1;
  const auto icdf_error = caught_error([&] { (void)plan_task("recshard", task, nullptr, quiet_context()); });
  ASSERT_TRUE(icdf_error.has_value());
  EXPECT_NE(icdf_error->find("icdf"), std::string::npos) << *icdf_error;
  EXPECT_NE(icdf_error->find("non-decreasing"), std::string::npos) << *icdf_error;
  Task zero = short_hbm_task(3, 2, 0.5, 14);
  zero.topology.devices[1].uvm_gbps = 0;
  const auto bw_error = caught_error([&] { (void)plan_task("recshard", zero, nullptr, quiet_context()); });
  ASSERT_TRUE(bw_error.has_value());
  EXPECT_NE(bw_error->find("uvm"), std::string::npos) << *bw_error;
}

TEST(RecShardSharder, ParametersRoundTripAndAreChecked) {
  const std::string canonical = canonical_sharder_spec("recshard");
  for (const char* part : {"time_limit_s=", "symmetry=ordered_loads", "warm_start=on", "gap="}) {
    EXPECT_NE(canonical.find(part), std::string::npos) << canonical;
  }
  EXPECT_EQ(canonical_sharder_spec(canonical), canonical);
  EXPECT_TRUE(caught_error([] { (void)make_sharder("recshard:symmetry=both"); }).has_value());
  EXPECT_TRUE(caught_error([] { (void)make_sharder("recshard:time_limit_s=0"); }).has_value());
  const Task task = short_hbm_task(5, 2, 0.5, 8);
  for (const char* spec :
       {"recshard:warm_start=off,symmetry=none,time_limit_s=20", "recshard:symmetry=table_index,time_limit_s=20"}) {
    const ShardResult r = plan_task(spec, task, nullptr, quiet_context());
    ASSERT_EQ(r.status, ShardStatus::kOk) << spec << ": " << r.reason;
    EXPECT_EQ(find_error_in_plan(task, r.plan), "");
  }
}

TEST(GreedyUvm, SpillsWholeTablesToUvmOnceHbmIsFull) {
  const Task task = short_hbm_task(12, 2, 0.5, 9);
  for (const char* balance : {"size", "lookup", "size_and_lookup"}) {
    const ShardResult r =
        plan_task(std::string("greedy:on_full=uvm,balance=") + balance, task, nullptr, quiet_context());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_EQ(find_error_in_plan(task, r.plan), "");
    int spilled = 0;
    for (const auto& tp : r.plan.tables) {
      const auto hbm = tp.shards[0].rows_in_hbm();
      EXPECT_TRUE(hbm == 0 || hbm == tp.shards[0].num_rows()) << tp.table << ": whole tables only";
      spilled += hbm == 0 ? 1 : 0;
    }
    EXPECT_GT(spilled, 0) << balance;
    // Without on_full=uvm the same task is infeasible; without allow_uvm on_full=uvm is too.
    EXPECT_EQ(plan_task(std::string("greedy:balance=") + balance, task, nullptr, quiet_context()).status,
              ShardStatus::kInfeasible);
  }
  Task no_uvm = task;
  no_uvm.constraints.allow_uvm = false;
  const ShardResult r = plan_task("greedy:on_full=uvm", no_uvm, nullptr, quiet_context());
  EXPECT_EQ(r.status, ShardStatus::kInfeasible);
  EXPECT_NE(r.reason.find("allow_uvm"), std::string::npos) << r.reason;
}

TEST(RecShardProtocol, GeneratesValidTasksWithThePapersTotals) {
  const TableSource source = TableSource::from_pool(0, 16384);
  const std::array<std::int64_t, 3> totals{1331656544, 2661369917, 5320796628};
  std::vector<std::vector<std::int64_t>> rows(3);
  for (int m = 0; m < 3; ++m) {
    const double scale = 0.001;
    const auto gen = make_task_generator("recshard:model=rm" + std::to_string(m + 1) + ",scale=0.001");
    const Task task = gen->generate(source, 4, 0);
    EXPECT_EQ(find_error_in_task(task, "rm"), "");
    ASSERT_EQ(task.workload.tables.size(), 397u);
    EXPECT_EQ(task.workload.batch_size, 16384);
    ASSERT_EQ(task.topology.num_devices(), 16);
    EXPECT_TRUE(task.constraints.allow_uvm);
    EXPECT_EQ(task.topology.devices[0].hbm_bytes, std::llround(24.0 * scale * (1 << 30)));
    EXPECT_EQ(task.topology.devices[0].uvm_bytes, std::llround(128.0 * scale * (1 << 30)));
    EXPECT_DOUBLE_EQ(task.topology.devices[0].uvm_gbps, 15.75);
    std::int64_t sum = 0;
    for (const auto& t : task.workload.tables) {
      EXPECT_EQ(t.dim, 64);
      EXPECT_EQ(t.stats.icdf.size(), static_cast<std::size_t>(kNumIcdfSteps));
      EXPECT_LE(t.stats.icdf.back(), static_cast<double>(t.num_rows()));
      sum += t.num_rows();
      rows[static_cast<std::size_t>(m)].push_back(t.num_rows());
    }
    EXPECT_EQ(sum, std::llround(static_cast<double>(totals[static_cast<std::size_t>(m)]) * scale));
    // Deterministic in (seed, index).
    EXPECT_EQ(gen->generate(source, 4, 0).workload.tables[5].stats.icdf, task.workload.tables[5].stats.icdf);
  }
  // The same features, hash sizes about doubled and quadrupled (except the 100-row floor and the
  // largest table, which absorbs the rounding).
  int big = 0, doubled = 0, quadrupled = 0;
  for (std::size_t j = 0; j < 397; ++j) {
    if (rows[0][j] < 2000) continue;
    ++big;
    const double r2 = static_cast<double>(rows[1][j]) / static_cast<double>(rows[0][j]);
    const double r3 = static_cast<double>(rows[2][j]) / static_cast<double>(rows[0][j]);
    doubled += std::abs(r2 - 2.0) < 0.01 ? 1 : 0;
    quadrupled += std::abs(r3 - 4.0) < 0.02 ? 1 : 0;
  }
  EXPECT_GT(big, 100);
  EXPECT_GE(doubled, big - 1);
  EXPECT_GE(quadrupled, big - 1);
  // Statistics spread like paper 004 §3: some one-hot, some long pools, coverage from <1% to ~1.
  const Task rm1 = make_task_generator("recshard:model=rm1,scale=0.001")->generate(source, 4, 0);
  double min_cov = 1, max_cov = 0, max_pool = 0;
  for (const auto& t : rm1.workload.tables) {
    min_cov = std::min(min_cov, t.stats.coverage);
    max_cov = std::max(max_cov, t.stats.coverage);
    max_pool = std::max(max_pool, t.stats.pooling_factor / t.stats.coverage);
  }
  EXPECT_LT(min_cov, 0.01);
  EXPECT_GT(max_cov, 0.95);
  EXPECT_GT(max_pool, 50.0);
  EXPECT_TRUE(caught_error([&] {
                (void)make_task_generator("recshard:model=rm1,scale=0.00001")->generate(source, 0, 0);
              }).has_value());
}

TEST(SimTiers, ColdRowsCostUvmBandwidthByTheirAccessShare) {
  Task task = short_hbm_task(2, 1, 0.5, 12);
  task.topology.devices[0].hbm_bytes = task.workload.total_bytes();
  Plan all_hbm = table_wise_plan(task, {0, 0});
  Plan cold = all_hbm;
  const TableStats& s0 = task.workload.tables[0].stats;
  cold.tables[0].shards[0].hbm_rows = static_cast<std::int64_t>(s0.icdf[49]);  // serves 50%
  const EvalResult a = evaluate_plan(task, all_hbm, kSimJudge, quiet_context());
  const EvalResult b = evaluate_plan(task, cold, kSimJudge, quiet_context());
  EXPECT_DOUBLE_EQ(a.lookups[0].uvm, 0.0);
  const double cold_share = 1.0 - sim_hbm_access_share(s0, s0.num_rows, cold.tables[0].shards[0].hbm_rows);
  EXPECT_NEAR(cold_share, 0.5, 0.011);
  EXPECT_NEAR(b.lookups[0].uvm, cold_share * s0.num_indices, 1e-6 * s0.num_indices);
  EXPECT_NEAR(b.lookups[0].hbm + b.lookups[0].uvm, a.lookups[0].hbm, 1e-6 * a.lookups[0].hbm);
  // The forward cost grows by about the UVM bytes at uvm_gbps (less the HBM bytes they no longer use).
  const double uvm_ms =
      cold_share * s0.num_indices * task.workload.tables[0].dim * 4 / (task.topology.devices[0].uvm_gbps * 1e6);
  const double delta = b.breakdown.devices[0].fw_comp_ms - a.breakdown.devices[0].fw_comp_ms;
  EXPECT_GT(delta, 0.9 * uvm_ms);
  EXPECT_LT(delta, uvm_ms);
  // Doubling the UVM bandwidth halves that part.
  Task faster = task;
  faster.topology.devices[0].uvm_gbps *= 2;
  const EvalResult c = evaluate_plan(faster, cold, kSimJudge, quiet_context());
  const EvalResult c0 = evaluate_plan(faster, all_hbm, kSimJudge, quiet_context());
  EXPECT_NEAR(c.breakdown.devices[0].fw_comp_ms - c0.breakdown.devices[0].fw_comp_ms, delta / 2, 0.05 * delta);
  const std::string json = eval_result_json(b, task, cold);
  EXPECT_NE(json.find("\"uvm_lookups\""), std::string::npos);
  EXPECT_NE(json.find("\"uvm_share\""), std::string::npos);
  EXPECT_NE(eval_result_table(b, task.topology).find("uvm_share"), std::string::npos);
}

TEST(Remap, HotRowsFirstServeTheShareTheIcdfPredicts) {
  const Pool pool = Pool::generate(0);
  // A busy, skewed table whose profile sees most of its used rows.
  std::int64_t id = -1;
  for (const PoolTable& t : pool.tables()) {
    if (t.pooling_factor > 5 && t.coverage > 0.5 && t.num_rows < 400000 && t.num_rows > 20000) {
      id = t.id;
      break;
    }
  }
  ASSERT_GE(id, 0);
  const PoolTable& table = pool.table(id);
  const std::int64_t batch = 8192;
  std::vector<TableBatch> profile;
  for (std::uint64_t b = 0; b < 8; ++b) profile.push_back(materialise_table(table, batch, b));
  const auto counts = count_row_accesses(profile, table.num_rows);
  const TableStats expected = expected_table_stats(table, 8 * batch);
  for (int step : {19, 49, 79}) {
    const auto k = static_cast<std::int64_t>(expected.icdf[static_cast<std::size_t>(step)]);
    const RowRemap remap = build_remap("t", counts, k);
    EXPECT_EQ(find_error_in_remap(remap), "");
    TableBatch fresh = materialise_table(table, batch, 100);  // not in the profile
    apply_remap(remap, fresh);
    std::int64_t hot = 0;
    for (std::int64_t row : fresh.indices) hot += row < k ? 1 : 0;
    const double share = static_cast<double>(hot) / static_cast<double>(fresh.indices.size());
    EXPECT_NEAR(share, sim_hbm_access_share(expected, expected.num_rows, k), 0.03) << "step " << step;
    EXPECT_NEAR(share, (step + 1) / 100.0, 0.04) << "step " << step;
    // Without the remap the first k rows are not the hot ones.
    TableBatch raw = materialise_table(table, batch, 100);
    std::int64_t raw_hot = 0;
    for (std::int64_t row : raw.indices) raw_hot += row < k ? 1 : 0;
    if (k < table.num_rows / 2) {
      EXPECT_LT(static_cast<double>(raw_hot) / static_cast<double>(raw.indices.size()), share - 0.1) << "step " << step;
    }
  }
}

TEST(Remap, FileRoundTripsAndRejectsCorruption) {
  const std::vector<std::int64_t> counts{5, 0, 9, 9, 1, 0, 3};
  const RowRemap r = build_remap("emb0", counts, 3);
  EXPECT_EQ(r.new_row(2), 0);  // ties: lower old row first
  EXPECT_EQ(r.new_row(3), 1);
  EXPECT_EQ(r.new_row(0), 2);
  EXPECT_FALSE(r.in_hbm(6));
  EXPECT_EQ(r.new_row(6), 3);
  EXPECT_EQ(r.entries[6], -1);
  const std::string path = test_util::temp_file("remap", "r.bin");
  const std::vector<RowRemap> both{r, build_remap("emb1", std::vector<std::int64_t>(10, 1), 0)};
  write_remap_file(path, both);
  const auto back = read_remap_file(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].entries, r.entries);
  EXPECT_EQ(back[0].table, "emb0");
  EXPECT_EQ(back[1].hbm_rows, 0);
  EXPECT_EQ(std::filesystem::file_size(path), 8u + 8 + 2 * (4 + 4 + 16) + 4 * 17);
  {  // two rows onto one slot
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8 + 8 + 4 + 4 + 16);
    const std::int32_t dup = 0;
    f.write(reinterpret_cast<const char*>(&dup), 4);
    f.write(reinterpret_cast<const char*>(&dup), 4);
  }
  const auto error = caught_error([&] { (void)read_remap_file(path); });
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("emb0"), std::string::npos) << *error;
  std::filesystem::remove(path);
}

TEST(Remap, ShardTimerAppliesIt) {
  // The remap's HBM part holds the most accessed rows, so a shard of the first k rows of the
  // remapped table sees more lookups than one of the first k raw rows.
  const Pool pool = Pool::generate(0);
  std::int64_t id = -1;
  for (const PoolTable& t : pool.tables()) {
    if (t.pooling_factor > 2 && t.num_rows < 200000 && t.num_rows > 10000) {
      id = t.id;
      break;
    }
  }
  ASSERT_GE(id, 0);
  const PoolTable& table = pool.table(id);
  const std::vector<TableBatch> profile{materialise_table(table, 4096, 7)};
  const std::int64_t k = table.num_rows / 10;
  auto remap = std::make_shared<const RowRemap>(build_remap("t", count_row_accesses(profile, table.num_rows), k));
  ShardTableSpec raw{table, 8, WeightType::kF32, 0, k, nullptr};
  ShardTableSpec mapped{table, 8, WeightType::kF32, 0, k, remap};
  const ShardTimer a({raw}, 1024, 1, kernels::EmbeddingBagImpl::kReference);
  const ShardTimer b({mapped}, 1024, 1, kernels::EmbeddingBagImpl::kReference);
  EXPECT_GT(b.num_lookups(), 2 * a.num_lookups());
}

// ---- the measured backends run a plan's tiers ------------------------------------------------------

double hbm_share(const std::vector<DeviceLookups>& lookups) {
  double hbm = 0.0, all = 0.0;
  for (const DeviceLookups& l : lookups) {
    hbm += l.hbm;
    all += l.hbm + l.uvm;
  }
  return all > 0 ? hbm / all : 1.0;
}

TEST(RecShardMeasured, ShardTimerSeesTheHottestRowsFirst) {
  // One table, half its lookups (by the ICDF) in HBM: the measured backends' lookups below
  // hbm_rows are the HBM share tier_lookups predicts, far above what the raw row order gives.
  Task task = short_hbm_task(1, 1, 1.0, 12);
  const TableStats& s0 = task.workload.tables[0].stats;
  Plan plan = table_wise_plan(task, {0});
  const std::int64_t hbm_rows = static_cast<std::int64_t>(s0.icdf[49]);
  ASSERT_GT(hbm_rows, 0);
  ASSERT_LT(hbm_rows, s0.num_rows);
  plan.tables[0].shards[0].hbm_rows = hbm_rows;
  const std::string options = "reference";  // at the task's batch, whose one-batch ICDF the stats hold
  const std::vector<DeviceLookups> measured = measured_tier_lookups(task, plan, options);
  const std::vector<DeviceLookups> expected = tier_lookups(task, plan, task.workload.batch_size);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_NEAR(hbm_share(expected), 0.5, 0.011);
  EXPECT_NEAR(hbm_share(measured), hbm_share(expected), 0.03);
  EXPECT_GT(measured[0].uvm, 0.0);
  // A remap ranked on held-out draws: rows the profile never saw rank last, so a little less.
  const std::string held_out = set_judge_value(options, "remap", "held_out");
  const double held_out_share = hbm_share(measured_tier_lookups(task, plan, held_out));
  EXPECT_LT(held_out_share, hbm_share(measured));
  EXPECT_GT(held_out_share, hbm_share(measured) - 0.15);
  // Without the remap the first hbm_rows rows serve far less.
  const Pool pool = Pool::generate(task.pool_seed);
  const ShardTimer raw({{pool.table(task.workload.tables[0].source_id), 8, WeightType::kF32}}, task.workload.batch_size,
                       0, kernels::EmbeddingBagImpl::kReference);
  const auto lookups = raw.table_lookups(0);
  const auto below = std::count_if(lookups.begin(), lookups.end(), [&](std::int32_t r) { return r < hbm_rows; });
  EXPECT_LT(static_cast<double>(below) / static_cast<double>(lookups.size()), hbm_share(measured) - 0.2);
}

TEST(RecShardMeasured, RecShardPlanRunsOnTheMeasuredBackendsWithItsTiers) {
  Task task = short_hbm_task(6, 2, 0.1, 2);
  double hot_bytes = 0.0;  // HBM for half the rows one batch looks up: some lookups must go to UVM
  for (const TableSpec& t : task.workload.tables) hot_bytes += 4.0 * t.dim * t.stats.num_distinct;
  for (Device& d : task.topology.devices) d.hbm_bytes = static_cast<std::int64_t>(0.5 * hot_bytes / 2);
  const ShardResult r = plan_task("recshard:time_limit_s=30", task, nullptr, quiet_context());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  bool tiered = false;
  for (const TablePlacement& tp : r.plan.tables) {
    for (const Shard& shard : tp.shards) tiered |= shard.hbm_rows >= 0 && shard.hbm_rows < shard.num_rows();
  }
  ASSERT_TRUE(tiered) << "the task should force some rows into UVM";
  // the task's batch: the lookups ShardTimer gets by tier
  const std::vector<DeviceLookups> measured = measured_tier_lookups(task, r.plan, "reference");
  const std::vector<DeviceLookups> expected = tier_lookups(task, r.plan, task.workload.batch_size);
  ASSERT_EQ(measured.size(), expected.size());
  EXPECT_LT(hbm_share(expected), 0.99);
  EXPECT_NEAR(hbm_share(measured), hbm_share(expected), 0.03);
  for (std::size_t d = 0; d < measured.size(); ++d) {
    const double m = measured[d].hbm + measured[d].uvm, e = expected[d].hbm + expected[d].uvm;
    if (e <= 0) continue;
    EXPECT_NEAR(m, e, 0.1 * e) << "device " << d;
    EXPECT_NEAR(measured[d].hbm / m, expected[d].hbm / e, 0.05) << "device " << d;
  }
  for (const kernels::EmbeddingBagImpl impl : kernels::embedding_bag_impls()) {  // cuda too where built
    const std::string backend(kernels::to_string(impl));
    if (impl == kernels::EmbeddingBagImpl::kCuda && !kernels::cuda_device_available()) continue;
    // timing: small and quick
    const std::string judge = "measured:impl=" + backend + ",batch=512,warmup=0,repeats=1,flush=false,trim=0";
    const EvalResult result = evaluate_plan(task, r.plan, judge, quiet_context());
    for (std::size_t d = 0; d < result.breakdown.devices.size(); ++d) {
      const DeviceCost& c = result.breakdown.devices[d];
      if (measured[d].hbm + measured[d].uvm > 0) {
        EXPECT_GT(c.fw_comp_ms + c.bw_comp_ms, 0.0) << backend;
      }
    }
    EXPECT_GT(uvm_lookup_share(result), 0.0);
    EXPECT_NE(eval_result_table(result, task.topology).find("per-device step"), std::string::npos);
  }
}

TEST(RecShardMeasured, RemapOfARowRangePermutesOnlyThatRange) {
  std::vector<std::int64_t> counts{9, 0, 5, 7, 1, 8, 3, 2};
  const auto remap = std::make_shared<const RowRemap>(build_remap("t", counts, 2, 2, 6));
  EXPECT_EQ(find_error_in_remap(*remap), "");
  // Rows 2..5 have counts 5, 7, 1, 8: ranked 5, 3, 2, 4 → new rows 2, 3, 4, 5.
  EXPECT_EQ(remap->new_row(0), 0);
  EXPECT_EQ(remap->new_row(1), 1);
  EXPECT_EQ(remap->new_row(5), 2);
  EXPECT_EQ(remap->new_row(3), 3);
  EXPECT_EQ(remap->new_row(2), 4);
  EXPECT_EQ(remap->new_row(4), 5);
  EXPECT_EQ(remap->new_row(6), 6);
  EXPECT_EQ(remap->new_row(7), 7);
  EXPECT_TRUE(remap->in_hbm(5));
  EXPECT_TRUE(remap->in_hbm(3));
  EXPECT_FALSE(remap->in_hbm(2));
}

TEST(RecShardMeasured, CudaBackendWithoutAGpuIsAClearError) {
  if (kernels::cuda_device_available()) GTEST_SKIP() << "a CUDA device is visible";
  Task task = short_hbm_task(1, 1, 1.0, 12);
  Plan plan = table_wise_plan(task, {0});
  plan.tables[0].shards[0].hbm_rows = task.workload.tables[0].num_rows() / 2;
  const std::string options = "measured:impl=cuda,batch=64";
  const auto message = caught_error([&] { (void)evaluate_plan(task, plan, options, quiet_context()); });
  ASSERT_TRUE(message.has_value());
  EXPECT_TRUE(message->find("built without CUDA") != std::string::npos ||
              message->find("no GPU is visible") != std::string::npos)
      << *message;
  // The device-resident API with row thresholds, too.
  std::vector<float> weights(4 * 8, 0.5f);
  const std::vector<kernels::TableView> views{{weights.data(), 4, 8, kernels::WeightDtype::kF32, nullptr}};
  const std::vector<std::int64_t> offsets{0, 1};
  const std::vector<std::int32_t> indices{3};
  const std::vector<std::int64_t> hbm{2};
  EXPECT_THROW(kernels::CudaEmbeddingBag(views, kernels::BagBatch::of(1, offsets, indices), hbm), Error);
}

TEST(RecShardMeasured, CompareSummaryShowsTheUvmShareOnlyWhenUsed) {
  std::vector<CompareRow> rows(2);
  rows[0].task_id = rows[1].task_id = "t";
  rows[0].setting = rows[1].setting = "s";
  rows[0].sharder = "recshard";
  rows[1].sharder = "greedy";
  rows[0].status = rows[1].status = "ok";
  rows[0].eval.lookups = {{75.0, 25.0}, {100.0, 0.0}};  // 12.5% from UVM
  rows[1].eval.lookups = {{100.0, 0.0}};
  const std::string with = compare_markdown(rows);
  EXPECT_NE(with.find("UVM lookups |"), std::string::npos) << with;
  EXPECT_NE(with.find("| 12.50% |"), std::string::npos) << with;
  EXPECT_NE(with.find("| 0.00% |"), std::string::npos) << with;
  rows[0].eval.lookups = {{100.0, 0.0}};
  EXPECT_EQ(compare_markdown(rows).find("UVM"), std::string::npos);
}

}  // namespace
}  // namespace embshard
