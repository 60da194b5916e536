#pragma once
/**
 * @file autoshard_net.h
 * @brief AutoShard's network in libtorch and IMPALA's V-trace, private to the learn module
 *        (src/learn/autoshard_trainer.h; the learn tests check them against the plain C++
 *        network of policy/autoshard_policy.h and against a slow V-trace reference).
 */
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/rnn.h>

#include "embshard/policy/autoshard_policy.h"

namespace embshard::learn {

/** The same layers and state-dict names as AutoShardNet (policy/autoshard_policy.h). */
struct AutoShardTorchImpl : torch::nn::Module {
  AutoShardTorchImpl();
  torch::nn::Sequential t_fc{nullptr}, state_other_fc{nullptr}, action_other_fc{nullptr};
  torch::nn::Sequential policy_fc{nullptr}, value_fc{nullptr}, cost_fc{nullptr};
  torch::nn::LSTM lstm{nullptr};

  /** The weights as plain C++ layers. */
  [[nodiscard]] AutoShardNet export_net() const;
  /** Copies the plain network's weights in (tests; resuming from a policy file). */
  void import_net(const AutoShardNet& net);
};
TORCH_MODULE(AutoShardTorch);

/**
 * A learner batch of B unrolls of T steps, time-major, with the T+1-th observation of each
 * unroll (its bootstrap). D devices, N = the most tables of any training task.
 */
struct AutoShardBatch {
  torch::Tensor next_x;            ///< [T+1, B, 21] the next table's scaled features
  torch::Tensor progress;          ///< [T+1, B, 1]
  torch::Tensor task;              ///< [T+1, B] int64: training-task index
  torch::Tensor membership;        ///< [T+1, B, D, N] 1 where table n of the task is on device d
  torch::Tensor action_other;      ///< [T+1, B, D, 2] as the actor saw it
  torch::Tensor reset;             ///< [T+1, B] 1: the LSTM state is zeroed before this step
  torch::Tensor h0, c0;            ///< [layers, B, 64] the actor's LSTM state before step 0
  torch::Tensor actions;           ///< [T, B] int64
  torch::Tensor behaviour_logits;  ///< [T, B, D]
  torch::Tensor rewards;           ///< [T, B]
  torch::Tensor done;              ///< [T, B] 1: the episode ended with this action
};

struct AutoShardOutput {
  torch::Tensor logits;  ///< [T+1, B, D]
  torch::Tensor values;  ///< [T+1, B]
};

/** The network over a batch; `task_inputs` [K, N, 21] (zero rows pad short tasks). */
[[nodiscard]] AutoShardOutput autoshard_forward(AutoShardTorch& net, const AutoShardBatch& batch,
                                                const torch::Tensor& task_inputs);

struct VTraceReturns {
  torch::Tensor vs;             ///< [T, B] V-trace value targets
  torch::Tensor pg_advantages;  ///< [T, B] ρ_t (r_t + γ_t v_{t+1} − V(x_t)), ρ_t = min(ρ̄, π/μ)
};

/**
 * V-trace (IMPALA, Espeholt et al. 2018, eq. 1, computed backwards as in TorchBeast's
 * vtrace.from_logits), without gradients: log ρ_t = log π(a_t) − log μ(a_t) from the logits,
 * δ_t = min(ρ̄, ρ_t)(r_t + γ_t V(x_{t+1}) − V(x_t)), v_s − V(x_s) = δ_s + γ_s min(c̄, ρ_s)(v_{s+1} − V(x_{s+1})),
 * with V(x_T) = `bootstrap` [B]. `discounts` [T, B] are γ·(1 − done).
 */
[[nodiscard]] VTraceReturns vtrace_from_logits(const torch::Tensor& behaviour_logits,
                                               const torch::Tensor& target_logits, const torch::Tensor& actions,
                                               const torch::Tensor& discounts, const torch::Tensor& rewards,
                                               const torch::Tensor& values, const torch::Tensor& bootstrap,
                                               double rho_bar, double c_bar);

}  // namespace embshard::learn
