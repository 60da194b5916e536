// DreamShard's plain C++ side: the placement episode, the policy file, incremental inference
// against a from-scratch recomputation, and the `dreamshard` sharder.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "embshard/core/file_io.h"
#include "embshard/policy/dreamshard_policy.h"
#include "embshard/shard/sharder.h"
#include "rl_test_util.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

constexpr int kDims[] = {16};

Task cpu_task(int tables, int devices, std::uint64_t seed, double mem_gib = 4) {
  return test_util::pool_task(tables, "cpu:devices=" + std::to_string(devices) + ",mem_gib=" + std::to_string(mem_gib),
                              seed, kDims);
}

// ---- placement --------------------------------------------------------------------------------

TEST(Placement, LegalityFollowsMemoryAndThePlanIsTheActions) {
  Task task = cpu_task(4, 2, 1);
  for (TableSpec& t : task.workload.tables) t.stats.num_rows = 1000;  // 64,000 bytes each (fp32, dim 16)
  task.topology.devices[0].hbm_bytes = 100000;                        // one table
  task.topology.devices[1].hbm_bytes = 200000;                        // three tables
  PlacementState s(task, {3, 1, 0, 2});
  EXPECT_EQ(s.next_table(), 3);
  EXPECT_EQ(s.legal_devices(), (std::vector<int>{0, 1}));
  s.place(0);
  EXPECT_EQ(s.legal_devices(), (std::vector<int>{1}));
  s.place(1);
  s.place(1);
  s.place(1);
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.devices(), (std::vector<int>{1, 1, 1, 0}));
  EXPECT_EQ(s.tables_on(1), (std::vector<int>{1, 0, 2}));
  EXPECT_DOUBLE_EQ(s.overflow(), 0.0);
  EXPECT_EQ(find_error_in_plan(task, s.plan()), "");
  PlacementState over(task, {0, 1, 2, 3});
  for (int i = 0; i < 4; ++i) over.place(0);
  EXPECT_DOUBLE_EQ(over.overflow(), (4 * 64000.0 - 100000.0) / 100000.0);
}

TEST(Placement, OrderIsDescendingWithStableTies) {
  EXPECT_EQ(order_by_cost_descending({1.0, 3.0, 3.0, 2.0}), (std::vector<int>{1, 2, 3, 0}));
}

TEST(Placement, SamplingFollowsTheSoftmaxOfTheAllowedDevices) {
  const std::vector<float> logits{0.0f, 1.0f, 2.0f, 50.0f};
  const std::vector<int> allowed{0, 1, 2};  // device 3 would win every draw if it were allowed
  Rng rng(7);
  std::map<int, int> counts;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) ++counts[sample_softmax(logits, allowed, rng)];
  EXPECT_EQ(counts.count(3), 0u);
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  EXPECT_NEAR(counts[0] / double{draws}, 1 / z, 0.015);
  EXPECT_NEAR(counts[2] / double{draws}, std::exp(2.0) / z, 0.015);
  EXPECT_EQ(argmax_of(logits, allowed), 2);
  EXPECT_EQ(argmax_of(std::vector<float>{1.0f, 1.0f}, std::vector<int>{0, 1}), 0);
}

// ---- the policy file ----------------------------------------------------------------------------

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(DreamShardPolicy, FileRoundTripsExactly) {
  const DreamShardPolicy p = test_util::random_dreamshard_policy(3);
  const std::string path = test_util::temp_file("dreamshard", "policy.json");
  write_dreamshard_policy(path, p);
  const DreamShardPolicy q = read_dreamshard_policy(path);
  EXPECT_EQ(dreamshard_policy_json(q), dreamshard_policy_json(p));
  const Task task = cpu_task(10, 4, 5);
  EXPECT_EQ(DreamShardEpisode(q.net, task).logits(), DreamShardEpisode(p.net, task).logits());
  EXPECT_EQ(q.training.options, p.training.options);
  // a file written before the training options were recorded reads with none
  const std::string text = dreamshard_policy_json(p);
  const DreamShardPolicy old = parse_dreamshard_policy(
      replaced(text, ",\"options\":{\"lr\":\"0.0005\",\"reward\":\"kernels\"}", ""), "old.json");
  EXPECT_TRUE(old.training.options.empty());
  EXPECT_EQ(DreamShardEpisode(old.net, task).logits(), DreamShardEpisode(p.net, task).logits());
}

TEST(DreamShardPolicy, TrainingSetFeaturesAreStoredAndReadTheSameOnEveryTask) {
  DreamShardPolicy p = test_util::random_dreamshard_policy(5);
  const Task a = cpu_task(10, 4, 5), b = cpu_task(30, 4, 6);
  std::vector<FeatureVector> raw;
  for (const TableSpec& t : b.workload.tables) raw.push_back(table_features(t));
  p.net.features = FeatureScaler::fit(raw, FeatureScaling::kTrainingSet);
  const std::string path = test_util::temp_file("dreamshard", "pool-policy.json");
  write_dreamshard_policy(path, p);
  const DreamShardPolicy q = read_dreamshard_policy(path);
  EXPECT_EQ(q.net.features.mode, FeatureScaling::kTrainingSet);
  EXPECT_EQ(q.net.features.mean, p.net.features.mean);
  EXPECT_EQ(q.net.features.scale, p.net.features.scale);
  EXPECT_EQ(DreamShardEpisode(q.net, a).logits(), DreamShardEpisode(p.net, a).logits());
  // One table in two tasks: stored z-scores read it alike; per-task z-scores depend on its neighbours.
  Task c = a;
  c.workload.tables.push_back(b.workload.tables.front());
  const auto first_of = [](const Task& t, const FeatureScaler& s) { return dreamshard_features(t, s).front(); };
  EXPECT_EQ(first_of(a, q.net.features), first_of(c, q.net.features));
  EXPECT_NE(first_of(a, dreamshard_per_task_scaling()), first_of(c, dreamshard_per_task_scaling()));
}

TEST(DreamShardPolicy, RejectsOtherKindsFeatureSetsAndShapes) {
  const std::string text = dreamshard_policy_json(test_util::random_dreamshard_policy(4));
  const auto error = [](const std::string& t) {
    return test_util::error_of([&] { (void)parse_dreamshard_policy(t, "p.json"); });
  };
  EXPECT_NE(error(replaced(text, "\"kind\":\"dreamshard\"", "\"kind\":\"autoshard\""))
                .find("'autoshard' policy; expected a 'dreamshard'"),
            std::string::npos);
  EXPECT_NE(error(replaced(text, "\"scaling\":\"per_task\",\"version\":1", "\"scaling\":\"per_task\",\"version\":0"))
                .find("feature set version 0"),
            std::string::npos);
  EXPECT_NE(error(replaced(text, "\"bin_16\"", "\"bin_17\"")).find("features.names[20]"), std::string::npos);
  EXPECT_NE(error(replaced(text, "\"scaling\":\"per_task\"", "\"scaling\":\"all_columns\""))
                .find("expected 'per_task' or 'training_set'"),
            std::string::npos);
  EXPECT_NE(error(replaced(text, "\"shape\":[1,64]", "\"shape\":[2,64]")).find("shape"), std::string::npos);
  EXPECT_NE(error(replaced(text, "\"format\":\"embshard-policy\"", "\"format\":\"embshard-neural-cost\""))
                .find("not a policy file"),
            std::string::npos);
  EXPECT_NE(error("{").find("p.json"), std::string::npos);
}

// ---- inference --------------------------------------------------------------------------------

/** Every device's tables encoded and summed anew by `mlp` (an empty device: the zero row's encoding). */
std::vector<float> slow_encoding(const Mlp& mlp, const std::vector<FeatureVector>& z, const std::vector<int>& tables) {
  std::vector<float> sum(32, 0.0f), x(kNumTableFeatures), e(32);
  const std::vector<int> rows = tables.empty() ? std::vector<int>{-1} : tables;
  for (int t : rows) {
    for (int i = 0; i < kNumTableFeatures; ++i)
      x[static_cast<std::size_t>(i)] =
          t < 0 ? 0.0f : static_cast<float>(z[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)]);
    mlp.forward(x, e);
    for (int k = 0; k < 32; ++k) sum[static_cast<std::size_t>(k)] += e[static_cast<std::size_t>(k)];
  }
  return sum;
}

/** Device d's (fw, bw, comm) recomputed from scratch. */
std::vector<float> slow_kernel_costs(const DreamShardNet& net, const Task& task, const PlacementState& s, int d) {
  const std::vector<float> c = slow_encoding(net.cost_table, dreamshard_features(task, net.features), s.tables_on(d));
  std::vector<float> costs(3);
  net.cost_fw.forward(c, std::span<float>(&costs[0], 1));
  net.cost_bw.forward(c, std::span<float>(&costs[1], 1));
  net.cost_comm.forward(c, std::span<float>(&costs[2], 1));
  return costs;
}

/** Logits recomputed from scratch. */
std::vector<float> slow_logits(const DreamShardNet& net, const Task& task, const PlacementState& s) {
  const std::vector<FeatureVector> z = dreamshard_features(task, net.features);
  std::vector<float> logits;
  for (int d = 0; d < s.num_devices(); ++d) {
    const std::vector<float> costs = slow_kernel_costs(net, task, s, d);
    std::vector<float> x(64), y(1);
    const std::vector<float> e = slow_encoding(net.policy_table, z, s.tables_on(d));
    std::copy(e.begin(), e.end(), x.begin());
    net.policy_cost.forward(costs, std::span<float>(x.data() + 32, 32));
    net.policy_head.forward(x, y);
    logits.push_back(y[0]);
  }
  return logits;
}

/** The step the judge would compose from recomputed heads: max fw + max bw + 2 × max comm. */
float slow_kernel_step(const DreamShardNet& net, const Task& task, const PlacementState& s) {
  std::vector<float> top(3, -INFINITY);
  for (int d = 0; d < s.num_devices(); ++d) {
    const std::vector<float> c = slow_kernel_costs(net, task, s, d);
    for (std::size_t k = 0; k < 3; ++k) top[k] = std::max(top[k], c[k]);
  }
  return top[0] + top[1] + 2 * top[2];
}

TEST(DreamShardPolicy, IncrementalLogitsAndKernelStepMatchARecomputation) {
  const DreamShardPolicy p = test_util::random_dreamshard_policy(9);
  const Task task = cpu_task(12, 3, 2);
  DreamShardEpisode episode(p.net, task);
  // the order is by the kernel heads' single-table cost
  const std::vector<double> cost = dreamshard_table_costs(p.net, task);
  EXPECT_EQ(episode.state().order(), order_by_cost_descending(cost));
  Rng rng(1);
  while (!episode.state().done()) {
    const std::vector<float> fast = episode.logits();
    const std::vector<float> slow = slow_logits(p.net, task, episode.state());
    ASSERT_EQ(fast.size(), slow.size());
    for (std::size_t d = 0; d < fast.size(); ++d) EXPECT_NEAR(fast[d], slow[d], 1e-4 * (1 + std::abs(slow[d])));
    const float step = slow_kernel_step(p.net, task, episode.state());
    EXPECT_NEAR(episode.kernel_step_ms(), step, 1e-4 * (1 + std::abs(step)));
    episode.place(static_cast<int>(rng.below(3)));
  }
}

TEST(DreamShardSharder, PlansValidlyOnTasksOfOtherSizes) {
  const std::string path = test_util::temp_file("dreamshard", "sizes.json");
  write_dreamshard_policy(path, test_util::random_dreamshard_policy(11));
  for (auto [tables, devices] : {std::pair{10, 4}, std::pair{40, 8}, std::pair{3, 1}}) {
    const Task task = cpu_task(tables, devices, 7);
    const ShardResult r = plan_task("dreamshard:policy=" + path, task, nullptr, test_util::quiet_context());
    EXPECT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_EQ(r.plan.tables.size(), static_cast<std::size_t>(tables));
  }
}

TEST(DreamShardSharder, ReportsInfeasibleInsteadOfLooping) {
  const std::string path = test_util::temp_file("dreamshard", "full.json");
  write_dreamshard_policy(path, test_util::random_dreamshard_policy(12));
  Task task = cpu_task(6, 2, 3);
  std::int64_t largest = 0;
  for (const TableSpec& t : task.workload.tables) largest = std::max(largest, t.size_bytes());
  for (Device& d : task.topology.devices) d.hbm_bytes = largest;  // each table fits alone, not all six
  const ShardResult r = plan_task("dreamshard:policy=" + path, task, nullptr, test_util::quiet_context());
  EXPECT_EQ(r.status, ShardStatus::kInfeasible);
  EXPECT_NE(r.reason.find("fits on none of the 2 devices after"), std::string::npos) << r.reason;
}

TEST(DreamShardSharder, ChecksThePolicyAndItsHardware) {
  const Task task = cpu_task(5, 2, 4);
  const Context ctx = test_util::quiet_context();
  EXPECT_NE(test_util::error_of([&] { (void)plan_task("dreamshard", task, nullptr, ctx); }).find("needs policy=FILE"),
            std::string::npos);
  EXPECT_NE(test_util::error_of([&] {
              (void)plan_task("dreamshard:policy=/nonexistent.json", task, nullptr, ctx);
            }).find("/nonexistent.json"),
            std::string::npos);
  DreamShardPolicy p = test_util::random_dreamshard_policy(13);
  p.training.device_kind = "A100-SXM4-80GB";
  const std::string path = test_util::temp_file("dreamshard", "a100.json");
  write_dreamshard_policy(path, p);
  EXPECT_NE(test_util::error_of([&] {
              (void)plan_task("dreamshard:policy=" + path, task, nullptr, ctx);
            }).find("trained on 'A100-SXM4-80GB' devices"),
            std::string::npos);
  EXPECT_EQ(plan_task("dreamshard:policy=" + path + ",hardware=any", task, nullptr, ctx).status, ShardStatus::kOk);
}

}  // namespace
}  // namespace embshard
