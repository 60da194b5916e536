// Tests of AutoShard's plain C++ part: the LSTM against hand-computed values, the policy file
// (round trip, rejections), the inference helpers and the `autoshard` sharder.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "embshard/core/file_io.h"
#include "embshard/eval/task_gen.h"
#include "embshard/nn/lstm.h"
#include "embshard/policy/autoshard_policy.h"
#include "embshard/shard/sharder.h"
#include "rl_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(AutoShardLstm, OneUnitMatchesHandComputedSteps) {
  // One layer, one input, one hidden unit; rows are the gates i, f, g, o.
  LstmLayer l;
  l.in = 1;
  l.hidden = 1;
  l.weight_ih = {0.5F, -0.3F, 0.8F, 0.1F};
  l.weight_hh = {0.2F, 0.4F, -0.6F, 0.7F};
  l.bias_ih = {0.1F, 0.2F, -0.1F, 0.05F};
  l.bias_hh = {-0.05F, 0.1F, 0.3F, -0.2F};
  const Lstm lstm("core", {l});
  EXPECT_EQ(lstm.parameter_name(0, "weight_ih"), "core.weight_ih_l0");
  LstmState state = lstm.zero_state();
  float out = 0.0F;
  // Step 1: x = 1, h = c = 0.
  const double i1 = sig(0.5 + 0.1 - 0.05), f1 = sig(-0.3 + 0.2 + 0.1), g1 = std::tanh(0.8 - 0.1 + 0.3),
               o1 = sig(0.1 + 0.05 - 0.2);
  (void)f1;
  const double c1 = i1 * g1;
  const double h1 = o1 * std::tanh(c1);
  const float x1 = 1.0F;
  lstm.step(std::span<const float>(&x1, 1), state, std::span<float>(&out, 1));
  EXPECT_NEAR(out, h1, 1e-6);
  EXPECT_NEAR(state.c[0], c1, 1e-6);
  // Step 2: x = −2 with the state of step 1.
  const double i2 = sig(0.5 * -2 + 0.2 * h1 + 0.05), f2 = sig(-0.3 * -2 + 0.4 * h1 + 0.3),
               g2 = std::tanh(0.8 * -2 - 0.6 * h1 + 0.2), o2 = sig(0.1 * -2 + 0.7 * h1 - 0.15);
  const double c2 = f2 * c1 + i2 * g2;
  const double h2 = o2 * std::tanh(c2);
  const float x2 = -2.0F;
  lstm.step(std::span<const float>(&x2, 1), state, std::span<float>(&out, 1));
  EXPECT_NEAR(out, h2, 1e-6);
  EXPECT_NEAR(state.h[0], h2, 1e-6);
  EXPECT_NEAR(state.c[0], c2, 1e-6);
}

TEST(AutoShardLstm, SecondLayerReadsTheFirstLayersNewH) {
  // Two layers of one unit; layer 1 has weights that pass only its input gate's pre-activation.
  LstmLayer a;
  a.in = 1;
  a.hidden = 1;
  a.weight_ih = {1.0F, 0.0F, 1.0F, 1.0F};
  a.weight_hh = {0.0F, 0.0F, 0.0F, 0.0F};
  a.bias_ih = a.bias_hh = {0.0F, 0.0F, 0.0F, 0.0F};
  LstmLayer b = a;
  b.weight_ih = {2.0F, 0.0F, -1.0F, 0.5F};
  const Lstm lstm("lstm", {a, b});
  LstmState state = lstm.zero_state();
  ASSERT_EQ(state.h.size(), 2U);
  const float x = 0.7F;
  float out = 0.0F;
  lstm.step(std::span<const float>(&x, 1), state, std::span<float>(&out, 1));
  const double c0 = sig(0.7) * std::tanh(0.7);
  const double h0 = sig(0.7) * std::tanh(c0);
  const double c1 = sig(2 * h0) * std::tanh(-h0);
  const double h1 = sig(0.5 * h0) * std::tanh(c1);
  EXPECT_NEAR(state.h[0], h0, 1e-6);
  EXPECT_NEAR(state.c[1], c1, 1e-6);
  EXPECT_NEAR(out, h1, 1e-6);
}

TEST(AutoShardLstm, RejectsLayersThatDoNotChain) {
  LstmLayer a;
  a.in = 3;
  a.hidden = 2;
  a.weight_ih.assign(24, 0.0F);
  a.weight_hh.assign(16, 0.0F);
  a.bias_ih.assign(8, 0.0F);
  a.bias_hh.assign(8, 0.0F);
  EXPECT_NO_THROW(Lstm("ok", {a}));
  EXPECT_NE(error_of([&] { Lstm("twice", {a, a}); }).find("reads 3 inputs"), std::string::npos);
  LstmLayer bad = a;
  bad.bias_hh.pop_back();
  EXPECT_NE(error_of([&] { Lstm("bad", {bad}); }).find("wrong size"), std::string::npos);
}

Task autoshard_task(int devices, int tables_per_device, std::uint64_t seed) {
  const auto gen =
      make_task_generator(detail::concat("autoshard:devices=", devices, ",tables_per_device=", tables_per_device));
  static const TableSource source = TableSource::from_pool(0, gen->batch_size());
  return gen->generate(source, seed, 0);
}

AutoShardPolicy test_policy(const Task& task, std::uint64_t seed) {
  return test_util::random_autoshard_policy(task, seed);
}

/** Logits of the first `steps` greedy steps of `policy` on `task`. */
std::vector<float> rollout_logits(const AutoShardPolicy& policy, const Task& task, int steps) {
  const AutoShardScorer scorer(policy.net, autoshard_inputs(policy.features, task));
  PlacementState state(task, scorer.order());
  LstmState lstm = policy.net.lstm.zero_state();
  std::vector<float> all;
  std::vector<float> logits(static_cast<std::size_t>(state.num_devices()));
  for (int s = 0; s < steps && !state.done(); ++s) {
    float value = 0.0F;
    scorer.step(scorer.observe(state), state, lstm, logits, &value);
    all.insert(all.end(), logits.begin(), logits.end());
    all.push_back(value);
    state.place(argmax_of(logits, state.legal_devices()));
  }
  return all;
}

TEST(AutoShardPolicyFile, RoundTripKeepsEveryWeightAndTheProvenance) {
  const Task task = autoshard_task(4, 3, 1);
  const AutoShardPolicy p = test_policy(task, 11);
  const std::string path = test_util::temp_file("autoshard", "policy.json");
  write_autoshard_policy(path, p);
  const AutoShardPolicy q = read_autoshard_policy(path);
  EXPECT_EQ(q.training.device_kind, p.training.device_kind);
  EXPECT_EQ(q.training.iterations, 7);
  EXPECT_EQ(q.training.metrics.at("mean_reward"), 0.5);
  EXPECT_EQ(q.features.mode, FeatureScaling::kTrainingSet);
  for (int i = 0; i < kNumTableFeatures; ++i) EXPECT_DOUBLE_EQ(q.features.mean[i], p.features.mean[i]);
  EXPECT_EQ(q.net.t_fc.layers()[1].weight, p.net.t_fc.layers()[1].weight);
  EXPECT_EQ(q.net.lstm.layers()[1].bias_hh, p.net.lstm.layers()[1].bias_hh);
  EXPECT_EQ(q.net.policy_fc.layers()[3].weight, p.net.policy_fc.layers()[3].weight);
  EXPECT_EQ(rollout_logits(q, task, 12), rollout_logits(p, task, 12));
  // The state-dict names of the architecture.
  const nlohmann::json j = nlohmann::json::parse(read_file(path));
  EXPECT_EQ(j.at("kind"), "autoshard");
  for (const char* name :
       {"t_fc.0.weight", "t_fc.2.bias", "state_other_fc.0.weight", "lstm.weight_ih_l0", "lstm.bias_hh_l1",
        "action_other_fc.0.bias", "policy_fc.6.weight", "value_fc.2.bias", "cost_fc.0.weight"}) {
    EXPECT_TRUE(j.at("parameters").contains(name)) << name;
  }
  EXPECT_EQ(j.at("parameters").at("lstm.weight_hh_l1").at("shape"), nlohmann::json({256, 64}));
  EXPECT_EQ(j.at("parameters").at("policy_fc.0.weight").at("shape"), nlohmann::json({128, 192}));
  std::filesystem::remove(path);
}

std::string parse_error_of(const nlohmann::json& j) {
  return error_of([&] { (void)parse_autoshard_policy(j.dump(), "p.json"); });
}

TEST(AutoShardPolicyFile, RejectsOtherKindsShapesAndFeatureSets) {
  const Task task = autoshard_task(4, 3, 1);
  const nlohmann::json good = nlohmann::json::parse(autoshard_policy_json(test_policy(task, 3)));
  EXPECT_NO_THROW((void)parse_autoshard_policy(good.dump(), "p.json"));

  nlohmann::json j = good;
  j["kind"] = "dreamshard";
  EXPECT_NE(parse_error_of(j).find("'dreamshard' policy"), std::string::npos) << parse_error_of(j);

  j = good;
  j["parameters"]["t_fc.0.weight"]["shape"] = {128, 20};
  const std::string shape = parse_error_of(j);
  EXPECT_NE(shape.find("t_fc.0.weight"), std::string::npos) << shape;

  j = good;
  j["parameters"]["lstm.weight_hh_l1"]["shape"] = {256, 32};
  EXPECT_NE(parse_error_of(j).find("lstm.weight_hh_l1"), std::string::npos) << parse_error_of(j);

  j = good;
  j["parameters"].erase("lstm.bias_ih_l0");
  EXPECT_NE(parse_error_of(j).find("lstm.bias_ih_l0"), std::string::npos) << parse_error_of(j);

  j = good;
  j["parameters"]["lstm.weight_ih_l2"] = j["parameters"]["lstm.weight_ih_l1"];
  EXPECT_NE(parse_error_of(j).find("lstm.weight_ih_l2"), std::string::npos) << parse_error_of(j);

  j = good;
  j["features"]["version"] = kFeatureVersion + 1;
  EXPECT_NE(parse_error_of(j).find("feature set version"), std::string::npos) << parse_error_of(j);

  j = good;
  j["features"]["scaling"] = "per_task";
  EXPECT_NE(parse_error_of(j).find("training_set"), std::string::npos) << parse_error_of(j);
}

TEST(AutoShardInference, ObservationFollowsTheAuthorsFeatures) {
  const Task task = autoshard_task(4, 3, 2);
  const AutoShardPolicy p = test_policy(task, 5);
  const AutoShardScorer scorer(p.net, autoshard_inputs(p.features, task));
  const std::vector<int> order = scorer.order();
  for (std::size_t i = 1; i < order.size(); ++i) {
    EXPECT_GE(scorer.table_cost(order[i - 1]), scorer.table_cost(order[i]));
  }
  PlacementState state(task, order);
  state.place(2);
  state.place(2);
  const AutoShardObservation obs = scorer.observe(state);
  EXPECT_EQ(obs.next_table, order[2]);
  EXPECT_FLOAT_EQ(obs.progress, 2.0F / static_cast<float>(task.workload.tables.size()));
  ASSERT_EQ(obs.action_other.size(), 8U);
  EXPECT_EQ(obs.action_other[0], 0.0F);  // empty device: cost 0, size 0
  EXPECT_EQ(obs.action_other[1], 0.0F);
  const std::vector<int> on2 = {order[0], order[1]};
  EXPECT_FLOAT_EQ(obs.action_other[4], scorer.shard_cost(on2));
  const double gib = static_cast<double>(task.workload.tables[static_cast<std::size_t>(order[0])].size_bytes() +
                                         task.workload.tables[static_cast<std::size_t>(order[1])].size_bytes()) /
                     static_cast<double>(std::int64_t{1} << 30);
  EXPECT_NEAR(obs.action_other[5], gib, 1e-6);
  EXPECT_EQ(scorer.shard_cost(std::vector<int>{}), 0.0F);
}

TEST(AutoShardSharder, PlansValidlyAndIsGreedyOnThePolicy) {
  const Task task = autoshard_task(4, 5, 3);
  const AutoShardPolicy p = test_policy(task, 21);
  const std::string path = test_util::temp_file("autoshard", "sharder.json");
  write_autoshard_policy(path, p);
  const ShardResult r = plan_task("autoshard:policy=" + path, task, nullptr, test_util::quiet_context());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(find_error_in_plan(task, r.plan), "");
  EXPECT_EQ(r.stats.nodes_visited, 20);
  // The same as stepping the policy by hand.
  const AutoShardScorer scorer(p.net, autoshard_inputs(p.features, task));
  PlacementState state(task, scorer.order());
  LstmState lstm = p.net.lstm.zero_state();
  std::vector<float> logits(4);
  while (!state.done()) {
    scorer.step(scorer.observe(state), state, lstm, logits, nullptr);
    state.place(argmax_of(logits, state.legal_devices()));
  }
  const Plan by_hand = state.plan();
  ASSERT_EQ(r.plan.tables.size(), by_hand.tables.size());
  for (std::size_t i = 0; i < by_hand.tables.size(); ++i) {
    EXPECT_EQ(r.plan.tables[i].table, by_hand.tables[i].table);
    EXPECT_EQ(r.plan.tables[i].shards.at(0).device, by_hand.tables[i].shards.at(0).device);
  }
  std::filesystem::remove(path);
}

TEST(AutoShardSharder, ReportsInfeasibleNamingTheTableInsteadOfLooping) {
  Task task = autoshard_task(4, 3, 4);
  const AutoShardPolicy p = test_policy(task, 2);
  const std::string path = test_util::temp_file("autoshard", "infeasible.json");
  write_autoshard_policy(path, p);
  TableSpec& big = task.workload.tables[5];
  big.stats.num_rows = task.topology.devices[0].hbm_bytes / (big.dim * bytes_per_element(big.dtype)) + 1;
  const ShardResult r = plan_task("autoshard:policy=" + path, task, nullptr, test_util::quiet_context());
  EXPECT_EQ(r.status, ShardStatus::kInfeasible);
  EXPECT_NE(r.reason.find("'" + big.name + "'"), std::string::npos) << r.reason;
  std::filesystem::remove(path);
}

TEST(AutoShardSharder, RejectsAMissingPolicyAndOtherHardware) {
  EXPECT_NE(error_of([] { (void)make_sharder("autoshard"); }).find("policy=FILE is required"), std::string::npos);
  EXPECT_NE(error_of([] { (void)make_sharder("autoshard:policy=/nonexistent/p.json"); }).find("/nonexistent/p.json"),
            std::string::npos);
  const Task task = autoshard_task(4, 3, 5);
  AutoShardPolicy p = test_policy(task, 9);
  p.training.device_kind = "some-other-gpu";
  const std::string path = test_util::temp_file("autoshard", "hardware.json");
  write_autoshard_policy(path, p);
  const std::string e =
      error_of([&] { (void)plan_task("autoshard:policy=" + path, task, nullptr, test_util::quiet_context()); });
  EXPECT_NE(e.find("some-other-gpu"), std::string::npos) << e;
  const ShardResult r =
      plan_task("autoshard:policy=" + path + ",hardware=any", task, nullptr, test_util::quiet_context());
  EXPECT_EQ(r.status, ShardStatus::kOk);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace embshard
