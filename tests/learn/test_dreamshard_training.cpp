// DreamShard's Algorithm 1 end to end on the sim backend: a tiny run writes a policy the sharder
// plans with, a resumed run equals an uninterrupted one, and bad input is a clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "embshard/core/file_io.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/evaluator.h"
#include "embshard/eval/task_gen.h"
#include "embshard/learn/policy_training.h"
#include "embshard/policy/dreamshard_policy.h"
#include "embshard/shard/sharder.h"
#include "test_util.h"

namespace embshard {
namespace {

/** `count` DreamShard-protocol tasks of `tables` tables on 2 cpu devices, in a fresh directory. */
std::string write_training_tasks(const std::string& name, int count, int tables) {
  const std::string dir = test_util::temp_file("embshard-dreamshard", name);
  std::filesystem::remove_all(dir);
  const auto gen =
      make_task_generator("dreamshard:tables=" + std::to_string(tables) + ",devices=2,preset=cpu,mem_gib=1");
  (void)write_tasks(*gen, TableSource::from_pool(0, gen->batch_size()), 5, count, dir);
  return dir;
}

/** A policy path in the temporary directory, with no checkpoint left from an earlier run. */
std::string fresh_policy(const std::string& name) {
  const std::string out = test_util::temp_file("embshard-dreamshard", name);
  std::filesystem::remove_all(out + ".ckpt");
  return out;
}

PolicyTrainSetup setup_for(const std::string& dir, const std::string& out) {
  PolicyTrainSetup s;
  s.tasks_spec = dir;
  s.task_paths = find_task_files(dir);
  for (const std::string& p : s.task_paths) s.tasks.push_back(read_task_file(p));
  s.judge = plan_judge(kSimJudge, s.tasks.front());  // sim
  s.out = out;
  s.seed = 3;
  return s;
}

DreamShardTrainOptions tiny(int iterations) {
  DreamShardTrainOptions o;
  o.iterations = iterations;
  o.collect_episodes = 3;
  o.cost_steps = 15;
  o.batch = 8;
  o.rl_batches = 2;
  o.rl_episodes = 4;
  return o;
}

/** The policy's networks only (its provenance records times). */
std::string parameters_of(const std::string& path) {
  DreamShardPolicy p = read_dreamshard_policy(path);
  p.training = {};
  return dreamshard_policy_json(p);
}

TEST(DreamShardTraining, WritesAPolicyTheSharderPlansWithAndResumesExactly) {
  const std::string dir = write_training_tasks("train", 3, 8);
  const Context ctx = test_util::quiet_context();
  const std::string straight = test_util::temp_file("embshard-dreamshard", "straight.json");
  std::filesystem::remove_all(straight + ".ckpt");
  (void)train_dreamshard(setup_for(dir, straight), tiny(2), ctx);
  const DreamShardPolicy p = read_dreamshard_policy(straight);
  EXPECT_EQ(p.training.iterations, 2);
  EXPECT_EQ(p.training.real_evaluations, 6);
  EXPECT_EQ(p.training.backend,
            "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4,exchanges=fused");
  EXPECT_EQ(p.training.device_kind, "cpu");
  EXPECT_GT(p.training.metrics.at("mean_real_step_ms"), 0.0);

  // one iteration, then a resumed second one: the same networks as the straight run
  const std::string split = test_util::temp_file("embshard-dreamshard", "split.json");
  std::filesystem::remove_all(split + ".ckpt");
  (void)train_dreamshard(setup_for(dir, split), tiny(1), ctx);
  EXPECT_TRUE(parameters_of(split) != parameters_of(straight));
  PolicyTrainSetup again = setup_for(dir, split);
  again.resume = true;
  (void)train_dreamshard(again, tiny(2), ctx);
  EXPECT_TRUE(parameters_of(split) == parameters_of(straight)) << "the resumed run differs";
  EXPECT_EQ(read_dreamshard_policy(split).training.real_evaluations, 6);

  // the policy plans tasks with other numbers of tables and devices
  const auto gen = make_task_generator("dreamshard:tables=30,devices=4,preset=cpu,mem_gib=2,split=test");
  const Task test_task = gen->generate(TableSource::from_pool(0, gen->batch_size()), 9, 0);
  const ShardResult r = plan_task("dreamshard:policy=" + straight, test_task, nullptr, ctx);
  EXPECT_EQ(r.status, ShardStatus::kOk) << r.reason;
}

TEST(DreamShardTraining, TrainingSetFeaturesAreFittedOnEveryTrainingTableAndStored) {
  const std::string dir = write_training_tasks("pool", 3, 8);
  const Context ctx = test_util::quiet_context();
  const std::string out = fresh_policy("pool.json");
  DreamShardTrainOptions o = tiny(1);
  o.features = FeatureScaling::kTrainingSet;
  const PolicyTrainSetup setup = setup_for(dir, out);
  (void)train_dreamshard(setup, o, ctx);
  std::vector<FeatureVector> raw;
  for (const Task& t : setup.tasks) {
    for (const TableSpec& table : t.workload.tables) raw.push_back(table_features(table));
  }
  const FeatureScaler expected = FeatureScaler::fit(raw, FeatureScaling::kTrainingSet);
  const DreamShardPolicy p = read_dreamshard_policy(out);
  EXPECT_EQ(p.net.features.mode, FeatureScaling::kTrainingSet);
  EXPECT_EQ(p.net.features.mean, expected.mean);
  EXPECT_EQ(p.net.features.scale, expected.scale);
  // the authors' recipe stays the default
  EXPECT_EQ(DreamShardTrainOptions{}.features, FeatureScaling::kPerTask);
  o.features = FeatureScaling::kAllColumns;
  EXPECT_NE(test_util::error_of([&] { (void)train_dreamshard(setup, o, ctx); }).find("per_task or training_set"),
            std::string::npos);
}

TEST(DreamShardTraining, CostEarlyStoppingRunsUntilTheHeldOutLossStopsImproving) {
  const std::string dir = write_training_tasks("patience", 3, 8);
  const Context ctx = test_util::quiet_context();
  const std::string out = fresh_policy("patience.json");
  DreamShardTrainOptions o = tiny(2);
  o.collect_episodes = 6;  // 6 plans and 12 device samples: some of each held out
  o.cost_patience = 2;
  (void)train_dreamshard(setup_for(dir, out), o, ctx);
  const DreamShardPolicy p = read_dreamshard_policy(out);
  const double updates = p.training.metrics.at("cost_updates");
  // Checks every 25 updates, stopping after 2 without gain: a multiple of 25, at least 75 (the
  // first check sets the best, two more fail) unless all 10 × N_cost = 150 ran.
  EXPECT_TRUE((updates >= 75 && static_cast<int>(updates) % 25 == 0) || updates == 150) << updates;
  EXPECT_TRUE(std::isfinite(p.training.metrics.at("cost_loss")));
  // the authors' recipe: exactly N_cost updates
  const std::string fixed = fresh_policy("fixed.json");
  (void)train_dreamshard(setup_for(dir, fixed), tiny(1), ctx);
  EXPECT_EQ(read_dreamshard_policy(fixed).training.metrics.at("cost_updates"), 15);
  o.cost_patience = -1;
  EXPECT_NE(test_util::error_of([&] { (void)train_dreamshard(setup_for(dir, out), o, ctx); }).find("cost patience"),
            std::string::npos);
}

TEST(DreamShardTraining, TheKernelHeadsRewardTrainsAnotherPolicyAndIsRecorded) {
  const std::string dir = write_training_tasks("reward", 3, 8);
  const Context ctx = test_util::quiet_context();
  const std::string overall = fresh_policy("reward-overall.json"), kernels = fresh_policy("reward-kernels.json");
  DreamShardTrainOptions o = tiny(2);
  (void)train_dreamshard(setup_for(dir, overall), o, ctx);
  o.reward = DreamShardReward::kKernelHeads;
  (void)train_dreamshard(setup_for(dir, kernels), o, ctx);
  const DreamShardPolicy a = read_dreamshard_policy(overall), b = read_dreamshard_policy(kernels);
  EXPECT_EQ(a.training.options.at("reward"), "overall");  // the authors' recipe stays the default
  EXPECT_EQ(b.training.options.at("reward"), "kernels");
  EXPECT_EQ(b.training.options, options_record(o));
  // the same seed and data up to the first policy update; the reward changes the policy's weights
  EXPECT_NE(a.net.policy_head.layers().front().weight, b.net.policy_head.layers().front().weight);
  // resuming a checkpoint with another reward would mix two recipes in one policy
  PolicyTrainSetup resume = setup_for(dir, overall);
  resume.resume = true;
  DreamShardTrainOptions more = tiny(3);
  more.reward = DreamShardReward::kKernelHeads;
  EXPECT_NE(test_util::error_of([&] {
              (void)train_dreamshard(resume, more, ctx);
            }).find("the checkpoint was made with reward = overall, this run has kernels"),
            std::string::npos);
  EXPECT_EQ(read_dreamshard_policy(overall).training.iterations, 2);  // untouched
  EXPECT_EQ(parse_dreamshard_reward("kernels"), DreamShardReward::kKernelHeads);
  EXPECT_NE(test_util::error_of([] { (void)parse_dreamshard_reward("max"); }).find("expected overall or kernels"),
            std::string::npos);
}

TEST(DreamShardTraining, KeepBestWritesTheIterationWhoseArgMaxPlansJudgedBestAndResumesExactly) {
  const std::string dir = write_training_tasks("keep", 4, 8);
  const Context ctx = test_util::quiet_context();
  DreamShardTrainOptions o = tiny(4);
  o.keep = DreamShardKeep::kBest;
  const std::string straight = fresh_policy("keep-straight.json");
  PolicyTrainSetup setup = setup_for(dir, straight);
  // a seed whose best iteration is its first: "kept" and "last" differ, and a run resumed after
  // iteration 1 must carry the kept policy through its checkpoint
  DreamShardPolicy p;
  for (setup.seed = 0; setup.seed < 40; ++setup.seed) {
    std::filesystem::remove_all(straight + ".ckpt");
    (void)train_dreamshard(setup, o, ctx);
    p = read_dreamshard_policy(straight);
    if (p.training.metrics.at("kept_iteration") == 1) break;
  }
  ASSERT_LT(setup.seed, 40u) << "no seed's best iteration was its first";
  const double kept = p.training.metrics.at("kept_greedy_real_step_ms");
  EXPECT_LT(kept, p.training.metrics.at("greedy_real_step_ms"));  // better than the last iteration's
  // the written policy is the kept one: the sharder's plans of the first N_collect = 3 training tasks, judged, give its
  // step
  double total = 0.0;
  for (int k = 0; k < 3; ++k) {
    const Task& task = setup.tasks[static_cast<std::size_t>(k)];
    const ShardResult r = plan_task("dreamshard:policy=" + straight, task, nullptr, ctx);
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    total += objective_value(setup.judge.judge(task, r.plan, 0, ctx), Objective::kStep);
  }
  EXPECT_NEAR(total / 3, kept, 1e-9 * kept);
  // 4 iterations × (3 collected + 3 arg-max plans)
  EXPECT_EQ(p.training.real_evaluations, 24);
  EXPECT_EQ(p.training.options.at("keep"), "best");
  // one iteration (the kept one), then resumed to four (the learning rate decays over the run's
  // iterations, so only a first leg of one iteration follows the straight run's schedule): the
  // kept policy survives the checkpoint, and the run writes what the straight run wrote
  const std::string split = fresh_policy("keep-split.json");
  DreamShardTrainOptions one = o;
  one.iterations = 1;
  PolicyTrainSetup first = setup_for(dir, split);
  first.seed = setup.seed;
  (void)train_dreamshard(first, one, ctx);
  PolicyTrainSetup again = first;
  again.resume = true;
  (void)train_dreamshard(again, o, ctx);
  EXPECT_TRUE(parameters_of(split) == parameters_of(straight)) << "the resumed run keeps another policy";
  const DreamShardPolicy resumed = read_dreamshard_policy(split);
  EXPECT_EQ(resumed.training.metrics.at("kept_iteration"), p.training.metrics.at("kept_iteration"));
  EXPECT_EQ(resumed.training.metrics.at("kept_greedy_real_step_ms"), kept);
  EXPECT_NE(test_util::error_of([] { (void)parse_dreamshard_keep("first"); }).find("expected last or best"),
            std::string::npos);
}

TEST(DreamShardTraining, BadInputIsAClearError) {
  const Context ctx = test_util::quiet_context();
  const std::string empty = test_util::temp_file("embshard-dreamshard", "empty");
  std::filesystem::remove_all(empty);
  std::filesystem::create_directories(empty);
  EXPECT_NE(test_util::error_of([&] { (void)find_task_files(empty); }).find("holds no task file"), std::string::npos);
  EXPECT_NE(test_util::error_of([&] { (void)find_task_files(""); }).find("no training task"), std::string::npos);

  const std::string dir = write_training_tasks("huge", 1, 4);
  PolicyTrainSetup s = setup_for(dir, test_util::temp_file("embshard-dreamshard", "huge.json"));
  s.tasks[0].workload.tables[2].stats.num_rows = std::int64_t{1} << 40;  // larger than any device
  EXPECT_NE(test_util::error_of([&] { (void)train_dreamshard(s, tiny(1), ctx); }).find("larger than every device"),
            std::string::npos);

  DreamShardTrainOptions bad = tiny(1);
  bad.collect_episodes = 0;
  EXPECT_NE(test_util::error_of([&] {
              (void)train_dreamshard(setup_for(dir, "/tmp/x.json"), bad, ctx);
            }).find("collect episodes"),
            std::string::npos);
  PolicyTrainSetup resume = setup_for(dir, test_util::temp_file("embshard-dreamshard", "never.json"));
  std::filesystem::remove_all(resume.out + ".ckpt");
  resume.resume = true;
  EXPECT_NE(test_util::error_of([&] { (void)train_dreamshard(resume, tiny(1), ctx); }).find("no checkpoint"),
            std::string::npos);
}

}  // namespace
}  // namespace embshard
