#pragma once
/**
 * @file autoshard_trainer.h
 * @brief AutoShard's trainer, private to the learn module: IMPALA with V-trace
 *        (learn/policy_training.h; paper 001 §4.4–4.5, App. C; refs-zha.md §4.1, §5.2). One
 *        `Trainer` whose jobs live in one file each: the actors (autoshard_actors.cpp), the
 *        learner and the run (autoshard_learner.cpp), the policy file and checkpoints
 *        (autoshard_checkpoint.cpp); the libtorch network and V-trace are autoshard_net.h.
 *
 * How the run is organised (the paper's 8 GPU actors on one machine):
 *
 *   * `actors` threads, each owning one environment *stream* (an episode in progress, the
 *     LSTM state, the table order). The paper runs one actor process per GPU, each benchmarking
 *     its plans on its own GPU; here the actors share the machine's cores for their plain C++
 *     inference and share the evaluation backend: `sim` evaluations run in parallel, measured
 *     backends (cpu, reference, cuda) are serialised by one mutex so that a measurement never
 *     shares the CPU with another measurement.
 *   * Unroll k (T = `unroll` steps) is made by stream k mod `actors`, with the weights the
 *     learner had before update max(0, ⌊k / B⌋ − 1) (B = `learner_batch`): the actors work on
 *     the next batch while the learner trains on the current one, so every unroll after the first
 *     batch is exactly one update behind the learner and V-trace corrects for that lag. Fixing the lag
 *     (TorchBeast's actors see whatever weights are current) keeps a run reproducible: every draw
 *     of unroll k comes from derive_seed(seed, k), the learner consumes unrolls in order k, and
 *     the cost ring and its batches are filled and drawn in that order.
 *   * The learner (the calling thread, torch with one thread) takes unrolls u·B … u·B + B − 1,
 *     computes V-trace (ρ̄, c̄, γ from the options), the summed losses pg + baseline_weight · ½Σ(vs − V)²
 *     + entropy_weight · Σ p log p, one Adam step (lr · (1 − min(u·T·B, env_steps)/env_steps), global
 *     grad-norm clip), then appends the unrolls' shard cost samples to the ring and runs
 *     `cost_updates` MSE steps of the cost head (batches of `cost_batch`, with replacement) with the
 *     same optimiser and clip. U = ⌈env_steps / (T·B)⌉ updates in all.
 *
 * An episode: a training task drawn uniformly, its tables ordered by the cost head's single-table
 * cost, one device per step sampled from softmax(logits) over ALL devices (no mask). Its final
 * reward: −overflow (PlacementState::overflow, (M − S)/M of the worst device) when a device is
 * over its HBM, else min_d / max_d of the measured per-device compute (fw + bw) of the plan on
 * the backend (0 when the slowest is 0); only plans that fit are evaluated, and each gives one cost
 * sample per non-empty device.
 */
#include <torch/torch.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/learn/policy_training.h"
#include "embshard/policy/placement.h"
#include "learn/autoshard_net.h"

namespace embshard::learn::autoshard {

inline constexpr int kF = kNumTableFeatures;
inline constexpr int kS = kAutoShardState;

using Json = nlohmann::json;
inline constexpr std::uint64_t kActorStream = 0x61637430;  // "act0"
inline constexpr std::uint64_t kCostStream = 0x636f7374;   // "cost"

/** The measured backends share this machine's CPU: one evaluation at a time. */
std::mutex& measurement_mutex();

struct StepRecord {
  int task = 0;
  int next_table = 0;
  float progress = 0.0F;
  std::vector<float> action_other;      ///< [D][2]
  std::vector<std::int16_t> device_of;  ///< per task table, −1 not placed
};

struct CostSample {
  int task = 0;
  std::vector<std::int16_t> tables;
  float cost_ms = 0.0F;
};

/** An environment stream between unrolls. */
struct StreamState {
  std::int64_t next_unroll = 0;
  bool active = false;  ///< an episode is in progress
  int task = 0;
  std::vector<int> order;
  std::vector<int> actions;  ///< devices chosen so far, in order
  LstmState lstm;
};

struct Unroll {
  std::int64_t k = 0;
  LstmState init;
  std::vector<StepRecord> obs;  ///< T + 1
  std::vector<int> actions;
  std::vector<float> logits;  ///< T × D
  std::vector<float> rewards;
  std::vector<std::uint8_t> done;
  std::vector<CostSample> costs;
  std::vector<double> episode_rewards;
  std::int64_t evaluations = 0;
  StreamState after;
};

/** One training run (file comment); `run` trains and writes the policy file. */
class Trainer {
 public:
  Trainer(const PolicyTrainSetup& setup, const AutoShardTrainOptions& options, const Context& ctx);

  std::string run();

 private:
  // ---- the actors (autoshard_actors.cpp) -------------------------------------------------------
  std::shared_ptr<const AutoShardNet> weights_for(std::int64_t unroll);
  Unroll make_unroll(StreamState& stream, const AutoShardNet& net);
  double finish_episode(const PlacementState& state, int task, Unroll& u);
  void actor_loop(int stream);
  /** Makes the weights of `version` (after that many learner updates) available to the actors. */
  void publish(std::int64_t version, std::shared_ptr<const AutoShardNet> net);
  void stop_actors();

  // ---- the learner (autoshard_learner.cpp) -----------------------------------------------------
  std::vector<Unroll> take_batch(std::int64_t update);
  AutoShardBatch make_batch(const std::vector<Unroll>& unrolls) const;
  void learn(const std::vector<Unroll>& unrolls, std::int64_t update);
  void cost_updates(std::int64_t update);
  void set_learning_rate(std::int64_t update);

  // ---- the policy file and checkpoints (autoshard_checkpoint.cpp) ------------------------------
  void write_policy();
  void save_checkpoint();
  bool load_checkpoint();

  const PolicyTrainSetup& setup_;
  AutoShardTrainOptions o_;
  const Context& ctx_;
  PolicyTraining provenance_;
  FeatureScaler scaler_;
  int devices_ = 0;
  int max_tables_ = 0;
  std::vector<std::vector<float>> inputs_;
  torch::Tensor task_inputs_;
  std::int64_t total_updates_ = 0;

  AutoShardTorch net_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;

  // counters (checkpointed)
  std::int64_t updates_ = 0;
  std::int64_t env_steps_ = 0;
  std::int64_t real_evaluations_ = 0;
  std::int64_t episodes_ = 0;
  double wall_before_ = 0.0;
  std::deque<double> recent_rewards_;
  std::vector<CostSample> ring_;
  std::int64_t ring_next_ = 0;
  std::vector<StreamState> consumed_;  ///< per stream: its state after its last consumed unroll
  std::map<std::string, double> metrics_;
  std::shared_ptr<const AutoShardNet> previous_weights_;  ///< weights before the last update
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  // shared with the actors
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::int64_t, std::shared_ptr<const AutoShardNet>> versions_;
  std::map<std::int64_t, Unroll> ready_;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace embshard::learn::autoshard
