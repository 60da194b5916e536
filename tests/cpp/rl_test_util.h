#pragma once
// Random DreamShard policies for tests: every network of policy/dreamshard_policy.h with weights
// drawn from a seed, trained (so the provenance says) on `cpu` devices.
#include <string>

#include "embshard/data/features.h"
#include "embshard/policy/autoshard_policy.h"
#include "embshard/policy/dreamshard_policy.h"
#include "neural_test_util.h"

namespace embshard::test_util {

inline PolicyTraining test_policy_training(const std::string& device_kind = "cpu") {
  PolicyTraining t;
  t.tasks = "synthetic";
  t.tasks_sha256 = std::string(64, '0');
  t.num_tasks = 1;
  t.protocol = "test";
  t.device_kind = device_kind;
  t.devices = 4;
  t.backend = "sim";
  t.created_utc = "2026-11-21T00:00:00Z";
  t.embshard_version = embshard_version();
  t.metrics["mean_real_step_ms"] = 1.5;
  t.options = {{"reward", "kernels"}, {"lr", "0.0005"}};
  return t;
}

inline DreamShardPolicy random_dreamshard_policy(std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Mlp> m;
  for (const std::string& name : dreamshard_net_names()) {
    m.push_back(random_mlp(name, dreamshard_widths(name), dreamshard_relu_last(name), rng));
  }
  return {{m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]}, test_policy_training()};
}

/** A random AutoShard policy whose feature scaling is fitted to `task`'s tables. */
inline AutoShardPolicy random_autoshard_policy(const Task& task, std::uint64_t seed) {
  std::vector<FeatureVector> rows;
  for (const TableSpec& t : task.workload.tables) rows.push_back(table_features(t));
  AutoShardPolicy p;
  p.features = FeatureScaler::fit(rows, FeatureScaling::kTrainingSet);
  p.net = random_autoshard_net(seed);
  p.training.tasks = "synthetic";
  p.training.tasks_sha256 = std::string(64, '0');
  p.training.num_tasks = 1;
  p.training.protocol = task.protocol;
  p.training.device_kind = task.topology.device_kind;
  p.training.devices = task.topology.num_devices();
  p.training.backend = "sim";
  p.training.iterations = 7;
  p.training.created_utc = "2026-11-21T00:00:00Z";
  p.training.embshard_version = "test";
  p.training.metrics["mean_reward"] = 0.5;
  return p;
}

}  // namespace embshard::test_util
