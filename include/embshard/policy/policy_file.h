#pragma once
/**
 * @file policy_file.h
 * @brief What every RL policy file holds besides its networks: the table features it reads and
 *        where it came from.
 *
 * File: JSON `{"format": "embshard-policy", "version": 1, "kind": "dreamshard" | "autoshard",
 * "features": {...}, "parameters": {...}, "training": {...}}`.
 *
 *   features    `{"version", "names", "scaling", "mean", "scale"}`: the feature set of
 *               data/features.h (its kFeatureVersion and names must match this build's) and the
 *               normalisation the policy was trained with — `per_task` (DreamShard's
 *               recipe; mean and scale are refitted on every task, the stored ones are unused
 *               zeros/ones) or `training_set` (AutoShard, and DreamShard trained with
 *               `--features training_set`; fitted on the training tables and reused).
 *   parameters  PyTorch state-dict names → `{"shape", "data"}`; each kind's header lists them.
 *   training    `PolicyTraining` below.
 *
 * Readers check the format, version, kind, feature set and every parameter shape; a policy of
 * the other kind, another feature version or another architecture is an Error naming the file
 * and the field. Writes are atomic.
 */
#include <cstdint>
#include <map>
#include <string>

#include "embshard/data/features.h"
#include "embshard/data/task.h"

namespace embshard {

inline constexpr int kPolicyFileVersion = 1;

/** How and on what a policy was trained (enough to redo it). */
struct PolicyTraining {
  std::string tasks;         ///< the training tasks as given (directory or file list)
  std::string tasks_sha256;  ///< SHA-256 over the training task files' bytes, in order
  int num_tasks = 0;
  std::string protocol;         ///< of the first training task
  std::string device_kind;      ///< of the training tasks' topology ("cpu", "V100-SXM2-16GB", …)
  int devices = 0;              ///< devices of the training tasks (the largest)
  std::string backend;          ///< where plans were evaluated: sim | cpu | reference | cuda
  std::int64_t batch_size = 0;  ///< batch of those evaluations
  std::uint64_t seed = 0;
  std::int64_t iterations = 0;        ///< outer iterations (DreamShard) / learner updates (AutoShard) done
  std::int64_t real_evaluations = 0;  ///< plans evaluated on the backend
  std::int64_t env_steps = 0;         ///< placement steps acted (estimated MDP and real episodes)
  double wall_s = 0.0;                ///< training wall time, summed over resumed runs
  std::string created_utc;
  std::string embshard_version;
  std::map<std::string, double> metrics;  ///< last values of the training curves (e.g. "mean_latency_ms")
  std::map<std::string, std::string>
      options;  ///< the trainer's options as run (policy_training.h's options_record); empty in older files
};

/**
 * The sharders' `hardware=match` rule: throws Error (naming the `kind` of sharder, the policy
 * file and both kinds of device) unless `task`'s devices are of the kind the policy was trained on.
 */
void check_policy_hardware(const std::string& kind, const std::string& path, const PolicyTraining& training,
                           const Task& task);

}  // namespace embshard
