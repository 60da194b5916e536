#pragma once
/**
 * @file policy_common.h
 * @brief What the DreamShard and AutoShard trainers share (private to the learn module): the
 *        provenance of a run, sampling from logits, and the checkpoint directory.
 */
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "embshard/data/random.h"
#include "embshard/learn/policy_training.h"
#include "embshard/policy/policy_file.h"

namespace embshard::learn {

/** The provenance fields known before training (tasks, their hash and hardware, backend, seed). */
[[nodiscard]] PolicyTraining start_provenance(const PolicyTrainSetup& setup);

/**
 * Why no placement of `task` can fit, or "": it has no tables, a table is larger than every
 * device's HBM (every action would be illegal), or the tables exceed the devices' HBM together.
 * Training on such a task could never end an episode with a plan.
 */
[[nodiscard]] std::string why_no_plan_fits(const Task& task);

/** `<out>.ckpt`, the checkpoint directory of a policy file. */
[[nodiscard]] std::string checkpoint_dir(const std::string& out);

}  // namespace embshard::learn
