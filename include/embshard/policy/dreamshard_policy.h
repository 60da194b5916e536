#pragma once
/**
 * @file dreamshard_policy.h
 * @brief DreamShard's cost and policy networks as data, their policy file, and the plain C++
 *        inference both the `dreamshard` sharder and the trainer's actors run (no libtorch).
 *
 * Networks (paper 002 §3.2, paper 000 App. B; refs-zha.md §4.2, §5.3). Tables are described by
 * the 21 features of data/features.h, normalised as `DreamShardNet::features` says: z-scored over
 * the task's own tables (`kPerTask`, the authors' recipe) or with the z-scores of every training
 * table, fitted once and stored in the policy file (`kTrainingSet`; one task's tables then read the
 * same on any task, issue 19's audit: the pooling std varies 22–68 across tasks). A
 * device's representation is the sum of its tables' encodings; an empty device is one all-zero
 * (normalised) feature row, so its encoding is table_mlp(0), as in the authors' code.
 *
 *   cost network
 *     cost.table    Linear 21→128, ReLU, 128→32, ReLU            per table
 *     cost.fw       Linear 32→64, ReLU, 64→1   on a device's sum: its forward compute, ms
 *     cost.bw       the same                   its backward compute, ms
 *     cost.comm     the same                   its backward all-to-all, ms
 *     cost.overall  the same, on the element-wise MAX over devices of their sums: the plan's
 *                   step objective as the judge computes it (cost/breakdown.h). The authors'
 *                   target was the max over devices of fw_comp + fw_comm (with its wait) +
 *                   bw_comm + bw_comp; embshard learns the objective its plans are judged by
 *   policy network
 *     policy.table  Linear 21→128, ReLU, 128→32, ReLU            per table; e_d = sum over d
 *     policy.cost   Linear 3→64, ReLU, 64→32, ReLU  on d's (fw, bw, comm) cost-network predictions
 *     policy.head   Linear 64→1 on concat(e_d, c_d): device d's logit
 *
 * The estimated MDP (placement.h): tables sorted by predicted single-table cost (fw + bw + comm
 * of the table alone), largest first; legal devices are those whose HBM still holds the table.
 * Inference takes the arg-max legal device at every step; training samples from the softmax over
 * the legal devices. The policy is per device with shared weights, so one policy runs on tasks
 * with any number of tables and devices.
 *
 * Parameters in the file (policy_file.h): `<net>.<2i>.weight` / `.bias` of each Mlp above.
 */
#include <array>
#include <span>
#include <string>
#include <vector>

#include "embshard/data/task.h"
#include "embshard/nn/mlp.h"
#include "embshard/policy/placement.h"
#include "embshard/policy/policy_file.h"

namespace embshard {

inline constexpr int kDreamShardEncoding = 32;
inline constexpr int kDreamShardKernelCosts = 3;  ///< fw, bw, comm

/** The authors' normalisation: rows, pooling and size z-scored over each task's own tables. */
[[nodiscard]] FeatureScaler dreamshard_per_task_scaling();

struct DreamShardNet {
  Mlp cost_table, cost_fw, cost_bw, cost_comm, cost_overall;
  Mlp policy_table, policy_cost, policy_head;
  FeatureScaler features = dreamshard_per_task_scaling();  ///< how tables are normalised (file comment)
  [[nodiscard]] std::vector<const Mlp*> all() const;
};

struct DreamShardPolicy {
  DreamShardNet net;
  PolicyTraining training;
};

/** {in, hidden…, out} of each network in DreamShardNet, by its name ("cost.table", …). */
[[nodiscard]] std::vector<int> dreamshard_widths(const std::string& name);
/** Whether the named network has a ReLU after its last layer. */
[[nodiscard]] bool dreamshard_relu_last(const std::string& name);
/** The network names in DreamShardNet order. */
[[nodiscard]] const std::vector<std::string>& dreamshard_net_names();

[[nodiscard]] DreamShardPolicy read_dreamshard_policy(const std::string& path);
[[nodiscard]] DreamShardPolicy parse_dreamshard_policy(const std::string& text, const std::string& where);
[[nodiscard]] std::string dreamshard_policy_json(const DreamShardPolicy& policy);
void write_dreamshard_policy(const std::string& path, const DreamShardPolicy& policy);

/** The task's tables as the networks see them (T × 21): normalised by `scaling` — fitted on the
 * task's own tables when its mode is kPerTask, else applied as stored. */
[[nodiscard]] std::vector<FeatureVector> dreamshard_features(const Task& task, const FeatureScaler& scaling);

using Encoding = std::array<float, kDreamShardEncoding>;

/**
 * One placement episode under the networks: encodes the task once, orders its tables, keeps
 * every device's summed encodings as tables are placed, and scores devices in O(devices) per
 * step (O(tables × devices) per episode).
 */
class DreamShardEpisode {
 public:
  DreamShardEpisode(const DreamShardNet& net, const Task& task);

  [[nodiscard]] const PlacementState& state() const { return state_; }
  /** (fw, bw, comm) predicted for device d as it stands. */
  [[nodiscard]] std::array<float, kDreamShardKernelCosts> kernel_costs(int device) const;
  /** Every device's logit for the next table. */
  [[nodiscard]] std::vector<float> logits() const;
  /** Places the next table on `device`. */
  void place(int device);
  /** The overall head on the current placement: the predicted step, ms (the estimated MDP's final reward, negated). */
  [[nodiscard]] float predicted_step_ms() const;
  /**
   * The step composed from the kernel heads as the judge composes it (cost/breakdown.h), ms:
   * max_d fw + max_d bw + 2 × max_d comm (the forward all-to-all moves the same pooled vectors as
   * the backward one the comm head predicts; the input all-to-all is not modelled). Each head is
   * fitted on every device of every real plan, the overall head on one number per plan.
   */
  [[nodiscard]] float kernel_step_ms() const;

 private:
  DreamShardEpisode(const DreamShardNet& net, const Task& task, const std::vector<FeatureVector>& features);
  [[nodiscard]] Encoding device_sum(const std::vector<Encoding>& sums, const Encoding& zero, int device) const;

  const DreamShardNet* net_;
  std::vector<Encoding> cost_enc_, policy_enc_;  // per table
  Encoding cost_zero_{}, policy_zero_{};         // an empty device's
  std::vector<Encoding> cost_sum_, policy_sum_;  // per device, over its tables
  PlacementState state_;
};

/**
 * Inference (the `dreamshard` sharder): every remaining table onto the legal device of the highest
 * logit. False, leaving the episode where it stopped, when a table fits no device any more.
 */
[[nodiscard]] bool place_greedily(DreamShardEpisode& episode);

/** Predicted single-table cost (fw + bw + comm) of every table of `task`. */
[[nodiscard]] std::vector<double> dreamshard_table_costs(const DreamShardNet& net, const Task& task);

}  // namespace embshard
