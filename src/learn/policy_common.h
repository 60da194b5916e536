#pragma once
/**
 * @file policy_common.h
 * @brief What the DreamShard and AutoShard trainers share (private to the learn module): the
 *        provenance of a run, sampling from logits, and checkpoints: where they live and the
 *        checks every --resume makes.
 */
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
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

/**
 * Writes `state`, with its trainer's `kind`, the training tasks' hash and the `options` a resumed
 * run must share, as the state.json of `out`'s checkpoint: atomically and last, so that a
 * checkpoint is complete once its state exists (the trainer writes its other files first).
 */
void write_checkpoint_state(const std::string& out, const std::string& kind, const std::string& tasks_sha256,
                            const std::map<std::string, std::string>& options, nlohmann::json state);

/**
 * The state.json of `out`'s checkpoint, with the checks every trainer's --resume makes: it
 * exists, it is `kind`'s, it was made on the training tasks of `tasks_sha256` and with `options`
 * (an option the checkpoint does not record is not compared). Each refusal is one line naming the
 * checkpoint; JSON that cannot be read is a corrupt checkpoint.
 */
[[nodiscard]] nlohmann::json read_checkpoint_state(const std::string& out, const std::string& kind,
                                                   const std::string& tasks_sha256,
                                                   const std::map<std::string, std::string>& options);

}  // namespace embshard::learn
