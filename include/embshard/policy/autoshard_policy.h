#pragma once
/**
 * @file autoshard_policy.h
 * @brief AutoShard's policy-value network and cost head as data, its policy file, and the plain
 *        C++ inference (no libtorch) that both the `autoshard` sharder and the trainer's actors run.
 *
 * Paper 001 §4.2–4.4 and App. C.1; the authors' code as digested in refs-zha.md §4.1 and §5.2.
 *
 * Network (PyTorch state-dict prefixes; every `Mlp` is nn/mlp.h's, the LSTM is nn/lstm.h's):
 *
 *   t_fc             21 → 128 → 32, ReLU after both     table encoder, shared by all heads
 *   state_other_fc   1 → 32, ReLU                        the step feature
 *   lstm             nn.LSTM(64, 64, num_layers=2)        over s_t = [t_fc(x_next), state_other_fc(progress)]
 *   action_other_fc  2 → 32, ReLU                         per device: [predicted shard cost, size]
 *   policy_fc        192 → 128 → 128 → 64 → 1 (ReLU between)  per device on [h, a_d, h ⊙ a_d]
 *   value_fc         64 → 64 → 1                          V(h)
 *   cost_fc          32 → 64 → 1                          cost head: shard ms = cost_fc(Σ t_fc(x))
 *
 * Observation before placing the next table (refs-zha.md §5.2), given the task's tables in the
 * episode order (sorted once, at the start, by the cost head's single-table cost, descending):
 *
 *   x_next                  the next table's 21 features (data/features.h, kTrainingSet scaling)
 *   progress                tables placed so far / tables of the task
 *   a_d = [Σ_{t on d} t_fc(x_t) + t_fc(0),  action_other_fc(cost_d, gib_d)]   for every device d
 *     where the t_fc(0) term is the zero row the authors append to EVERY device's table list
 *     (the cost head does not see it), cost_d = cost_fc(Σ_{t on d} t_fc(x_t)) (0 for an empty
 *     device) and gib_d = bytes on d / 2^30 (raw, the task's precision).
 *
 * The LSTM state runs over the steps of one episode and starts at zero. logits_d = policy_fc(…),
 * probabilities = softmax over devices. AutoShard has NO legality mask: in training the policy
 * may pick a full device and the reward penalises the overfull plan. The `autoshard` sharder
 * (greedy, argmax) does mask devices the table does not fit, and reports `kInfeasible` naming the
 * table when none fits; that mask is embshard's addition, so inference never returns an invalid plan.
 *
 * Policy file: policy/policy_file.h's envelope with kind "autoshard" and scaling `training_set`
 * (the means and scales fitted on the training tables); parameters are the names above
 * (`t_fc.0.weight`, …, `lstm.weight_ih_l0`, …, `cost_fc.2.bias`), every shape checked, unknown
 * names rejected.
 */
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "embshard/data/features.h"
#include "embshard/data/task.h"
#include "embshard/nn/lstm.h"
#include "embshard/nn/mlp.h"
#include "embshard/policy/placement.h"
#include "embshard/policy/policy_file.h"

namespace embshard {

inline constexpr int kAutoShardTableHidden = 128;  ///< t_fc's hidden width
inline constexpr int kAutoShardEmbed = 32;         ///< table / step / cost representations
inline constexpr int kAutoShardState = 64;         ///< LSTM input and hidden size
inline constexpr int kAutoShardLstmLayers = 2;
inline constexpr int kAutoShardPolicyInput = 3 * kAutoShardState;  ///< [h, a, h ⊙ a]

struct AutoShardNet {
  Mlp t_fc;
  Mlp state_other_fc;
  Lstm lstm;
  Mlp action_other_fc;
  Mlp policy_fc;
  Mlp value_fc;
  Mlp cost_fc;
};

struct AutoShardPolicy {
  FeatureScaler features;  ///< kTrainingSet, fitted on the training tables
  AutoShardNet net;
  PolicyTraining training;
};

/** A network with PyTorch's default initialisation (U(±1/√fan_in)) drawn from `seed` (tests, examples). */
[[nodiscard]] AutoShardNet random_autoshard_net(std::uint64_t seed);

/** The policy file's text. */
[[nodiscard]] std::string autoshard_policy_json(const AutoShardPolicy& policy);
/** Writes the policy file atomically. */
void write_autoshard_policy(const std::string& path, const AutoShardPolicy& policy);
/** Parses a policy file (from `where`); Error naming `where` and the field (file comment). */
[[nodiscard]] AutoShardPolicy parse_autoshard_policy(const std::string& text, const std::string& where);
/** Reads and parses `path`. */
[[nodiscard]] AutoShardPolicy read_autoshard_policy(const std::string& path);

/** The scaled features of `task`'s tables, row-major [tables][kNumTableFeatures]. */
[[nodiscard]] std::vector<float> autoshard_inputs(const FeatureScaler& features, const Task& task);

/** What the actor records of one observation (besides the placement so far). */
struct AutoShardObservation {
  int next_table = 0;               ///< task index of the table to place
  float progress = 0.0F;            ///< placed / tables
  std::vector<float> action_other;  ///< [devices][2]: predicted shard cost ms (0 if empty), GiB
};

/**
 * One network's view of one task: the table encodings t_fc(x_t) and single-table costs,
 * computed once. Holds references to `net` and nothing of the task beyond `inputs`.
 */
class AutoShardScorer {
 public:
  /** `inputs` from autoshard_inputs (tables × 21). */
  AutoShardScorer(const AutoShardNet& net, std::span<const float> inputs);

  [[nodiscard]] int num_tables() const { return tables_; }
  /** cost_fc(t_fc(x_t)): the cost head's single-table cost (ms). */
  [[nodiscard]] float table_cost(int table) const { return table_cost_[static_cast<std::size_t>(table)]; }
  /** The episode order: tables by table_cost, descending (ties: lower index first). */
  [[nodiscard]] std::vector<int> order() const;
  /** cost_fc(Σ t_fc(x_t)) over `tables`; 0 when empty. */
  [[nodiscard]] float shard_cost(std::span<const int> tables) const;

  /** The observation of `state` (not done). */
  [[nodiscard]] AutoShardObservation observe(const PlacementState& state) const;
  /**
   * One policy step on `obs` (whose placement is `state`): advances `lstm` and writes one logit
   * per device to `logits` (num_devices) and V to `value` (if not null).
   */
  void step(const AutoShardObservation& obs, const PlacementState& state, LstmState& lstm, std::span<float> logits,
            float* value) const;

 private:
  const AutoShardNet* net_;
  int tables_ = 0;
  std::vector<float> inputs_;    ///< tables × 21
  std::vector<float> encoding_;  ///< tables × 32
  std::vector<float> zero_row_;  ///< t_fc(0)
  std::vector<float> table_cost_;
};

}  // namespace embshard
