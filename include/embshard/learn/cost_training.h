#pragma once
/**
 * @file cost_training.h
 * @brief Training NeuroShard's cost models (cost/neural_weights.h) on measured cost samples
 *        (profile/cost_sample.h) with libtorch — the learn module. Only src/learn includes torch
 *        headers; this interface does not, so callers need not either.
 *
 * Recipe (paper 003 App. C; refs-zha.md §4.3–4.4): samples split 80/10/10 into train /
 * validation / test by a permutation drawn from `seed`; inputs z-scored (compute: over every
 * table of the pool at every dim seen in the samples — NeuroShard's augmented configurations;
 * comm: over the training inputs); raw-ms targets; MSE loss; Adam (lr 1e-3), mini-batches of
 * 512; after each epoch the validation MSE decides which weights are kept. Weights are
 * initialised from `seed` (torch::manual_seed) and training runs on one thread, so a run is
 * reproducible on one machine.
 *
 * Compute targets: fw and bw (outputs = 2) or their sum (outputs = 1). Comm targets: the
 * per-device fw / bw all-to-all times of the sample file (fw including the wait for late
 * devices, as measured; see cost/neural_cost.h for how the planner takes it back out).
 *
 * Accuracy on the test split is recorded in the weights' provenance: "model", and the baselines
 * "sum_of_singles" (the trained model on each table alone, summed — the additive estimator the
 * multi-table model is meant to beat) and "sim" (the analytic model of the samples' hardware at
 * their batch) for compute; "link" (the link model of a `cpu` topology of that many devices plus
 * the measured lateness) for comm.
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/cost/neural_weights.h"
#include "embshard/profile/cost_sample.h"

namespace embshard {

struct CostTrainOptions {
  int epochs = 1000;  ///< NeuroShard's --epochs
  int batch_size = 512;
  double learning_rate = 1e-3;
  double validation_share = 0.1;
  double test_share = 0.1;
  int compute_outputs = 2;  ///< 2: fw and bw (the default: the step objective needs both), 1: fw+bw (NeuroShard)
  std::uint64_t seed = 0;
};

/** "" if usable, else the problem (shares, epochs, outputs). */
[[nodiscard]] std::string find_error_in_train_options(const CostTrainOptions& options);

struct TrainedCompute {
  ComputeNet net;
  std::vector<HeldOutPoint> test_points;  ///< fw+bw per test sample
};

struct TrainedComm {
  CommNet forward;
  CommNet backward;
  std::vector<HeldOutPoint> forward_points;  ///< per device per test sample
  std::vector<HeldOutPoint> backward_points;
};

/**
 * Trains the compute model on `samples`, read from `path` (`read_cost_samples`; the path and the
 * file's SHA-256 go into the provenance). Error if they are not compute samples.
 */
[[nodiscard]] TrainedCompute train_compute_model(const std::string& path, const CostSampleFile& samples,
                                                 const CostTrainOptions& options, const Context& ctx);

/** Trains the fw / bw comm models on comm `samples` read from `path` (as above). */
[[nodiscard]] TrainedComm train_comm_models(const std::string& path, const CostSampleFile& samples,
                                            const CostTrainOptions& options, const Context& ctx);

/**
 * Throws Error naming `path` when `samples` cannot train a model with `options`: options out of
 * range, too few samples for the 80/10/10 split, comm samples of differing device counts,
 * compute tables outside the pool. The training functions call it first; `train cost` calls it
 * for every file before it trains any.
 */
void check_training_samples(const std::string& path, const CostSampleFile& samples, const CostTrainOptions& options);

/**
 * "" when the trained model `name` is worth writing, else why not: its held-out R² is below 0
 * (worse than predicting the mean of the held-out samples) or, for the compute model, its
 * held-out MSE is above the sum-of-singles baseline's.
 */
[[nodiscard]] std::string find_worse_than_baseline(const std::string& name, const TrainingProvenance& training);

}  // namespace embshard
