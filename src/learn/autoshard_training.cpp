// AutoShard's trainer: IMPALA with V-trace (policy_training.h; paper 001 §4.4–4.5, App. C;
// refs-zha.md §4.1, §5.2), and the libtorch network and V-trace of autoshard_net.h.
//
// How the run is organised (the paper's 8 GPU actors on one machine):
//
//   * `actors` threads, each owning one environment *stream* (an episode in progress, the
//     LSTM state, the table order). The paper runs one actor process per GPU, each benchmarking
//     its plans on its own GPU; here the actors share the machine's cores for their plain C++
//     inference and share the evaluation backend: `sim` evaluations run in parallel, measured
//     backends (cpu, reference, cuda) are serialised by one mutex so that a measurement never
//     shares the CPU with another measurement.
//   * Unroll k (T = `unroll` steps) is made by stream k mod `actors`, with the weights the
//     learner had before update max(0, ⌊k / B⌋ − 1) (B = `learner_batch`): the actors work on
//     the next batch while the learner trains on the current one, so every unroll after the first
//     batch is exactly one update behind the learner and V-trace corrects for that lag. Fixing the lag
//     (TorchBeast's actors see whatever weights are current) keeps a run reproducible: every draw
//     of unroll k comes from derive_seed(seed, k), the learner consumes unrolls in order k, and
//     the cost ring and its batches are filled and drawn in that order.
//   * The learner (the calling thread, torch with one thread) takes unrolls u·B … u·B + B − 1,
//     computes V-trace (ρ̄, c̄, γ from the options), the summed losses pg + baseline_weight · ½Σ(vs − V)²
//     + entropy_weight · Σ p log p, one Adam step (lr · (1 − min(u·T·B, env_steps)/env_steps), global
//     grad-norm clip), then appends the unrolls' shard cost samples to the ring and runs
//     `cost_updates` MSE steps of the cost head (batches of `cost_batch`, with replacement) with the
//     same optimiser and clip. U = ⌈env_steps / (T·B)⌉ updates in all.
//
// An episode: a training task drawn uniformly, its tables ordered by the cost head's single-table
// cost, one device per step sampled from softmax(logits) over ALL devices (no mask). Its final
// reward: −overflow (PlacementState::overflow, (M − S)/M of the worst device) when a device is
// over its HBM, else min_d / max_d of the measured per-device compute (fw + bw) of the plan on
// the backend (0 when the slowest is 0); only plans that fit are evaluated, and each gives one cost
// sample per non-empty device.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <thread>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/core/progress.h"
#include "embshard/learn/policy_training.h"
#include "embshard/policy/placement.h"
#include "learn/autoshard_net.h"
#include "learn/policy_common.h"
#include "learn/torch_nets.h"

namespace embshard {
namespace learn {
namespace {

constexpr int kF = kNumTableFeatures;
constexpr int kS = kAutoShardState;

void import_mlp(torch::nn::Sequential& seq, const Mlp& mlp) {
  torch::NoGradGuard no_grad;
  std::size_t i = 0;
  for (const auto& module : seq->children()) {
    auto* linear = module->as<torch::nn::LinearImpl>();
    if (linear == nullptr) continue;
    EMBSHARD_ASSERT(i < mlp.layers().size());
    const Linear& l = mlp.layers()[i++];
    EMBSHARD_ASSERT(linear->weight.size(0) == l.out && linear->weight.size(1) == l.in);
    linear->weight.copy_(torch::from_blob(const_cast<float*>(l.weight.data()), {l.out, l.in}, torch::kFloat));
    linear->bias.copy_(torch::from_blob(const_cast<float*>(l.bias.data()), {l.out}, torch::kFloat));
  }
  EMBSHARD_ASSERT(i == mlp.layers().size());
}

}  // namespace

AutoShardTorchImpl::AutoShardTorchImpl() {
  t_fc = register_module("t_fc", make_sequential({kF, kAutoShardTableHidden, kAutoShardEmbed}, true));
  state_other_fc = register_module("state_other_fc", make_sequential({1, kAutoShardEmbed}, true));
  lstm = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(kS, kS).num_layers(kAutoShardLstmLayers)));
  action_other_fc = register_module("action_other_fc", make_sequential({2, kAutoShardEmbed}, true));
  policy_fc = register_module("policy_fc", make_sequential({kAutoShardPolicyInput, 128, 128, 64, 1}, false));
  value_fc = register_module("value_fc", make_sequential({kS, 64, 1}, false));
  cost_fc = register_module("cost_fc", make_sequential({kAutoShardEmbed, 64, 1}, false));
}

AutoShardNet AutoShardTorchImpl::export_net() const {
  AutoShardNet net;
  net.t_fc = export_mlp("t_fc", t_fc, true);
  net.state_other_fc = export_mlp("state_other_fc", state_other_fc, true);
  net.action_other_fc = export_mlp("action_other_fc", action_other_fc, true);
  net.policy_fc = export_mlp("policy_fc", policy_fc, false);
  net.value_fc = export_mlp("value_fc", value_fc, false);
  net.cost_fc = export_mlp("cost_fc", cost_fc, false);
  const auto params = lstm->named_parameters(false);
  std::vector<LstmLayer> layers;
  for (int k = 0; k < kAutoShardLstmLayers; ++k) {
    const std::string s = std::to_string(k);
    LstmLayer l;
    l.in = kS;
    l.hidden = kS;
    l.weight_ih = tensor_values(params["weight_ih_l" + s]);
    l.weight_hh = tensor_values(params["weight_hh_l" + s]);
    l.bias_ih = tensor_values(params["bias_ih_l" + s]);
    l.bias_hh = tensor_values(params["bias_hh_l" + s]);
    layers.push_back(std::move(l));
  }
  net.lstm = Lstm("lstm", std::move(layers));
  return net;
}

void AutoShardTorchImpl::import_net(const AutoShardNet& net) {
  import_mlp(t_fc, net.t_fc);
  import_mlp(state_other_fc, net.state_other_fc);
  import_mlp(action_other_fc, net.action_other_fc);
  import_mlp(policy_fc, net.policy_fc);
  import_mlp(value_fc, net.value_fc);
  import_mlp(cost_fc, net.cost_fc);
  torch::NoGradGuard no_grad;
  auto params = lstm->named_parameters(false);
  for (int k = 0; k < kAutoShardLstmLayers; ++k) {
    const std::string s = std::to_string(k);
    const LstmLayer& l = net.lstm.layers()[static_cast<std::size_t>(k)];
    auto put = [&](const std::string& name, const std::vector<float>& v) {
      torch::Tensor& p = params[name];
      EMBSHARD_ASSERT(p.numel() == static_cast<std::int64_t>(v.size()));
      p.copy_(torch::from_blob(const_cast<float*>(v.data()), p.sizes(), torch::kFloat));
    };
    put("weight_ih_l" + s, l.weight_ih);
    put("weight_hh_l" + s, l.weight_hh);
    put("bias_ih_l" + s, l.bias_ih);
    put("bias_hh_l" + s, l.bias_hh);
  }
}

AutoShardOutput autoshard_forward(AutoShardTorch& net, const AutoShardBatch& batch, const torch::Tensor& task_inputs) {
  const std::int64_t steps = batch.next_x.size(0);
  const std::int64_t b = batch.next_x.size(1);
  const std::int64_t devices = batch.membership.size(2);
  const std::int64_t n = batch.membership.size(3);
  // Action representations: Σ t_fc over each device's tables, plus t_fc(0) (the zero row), and
  // action_other_fc of what the actor saw.
  const torch::Tensor encodings = net->t_fc->forward(task_inputs);                     // [K, N, 32]
  const torch::Tensor per_step = encodings.index_select(0, batch.task.reshape({-1}));  // [S·B, N, 32]
  const torch::Tensor zero_row = net->t_fc->forward(torch::zeros({1, kF}));
  const torch::Tensor tables = torch::bmm(batch.membership.reshape({steps * b, devices, n}), per_step) + zero_row;
  const torch::Tensor others = net->action_other_fc->forward(batch.action_other.reshape({steps * b, devices, 2}));
  const torch::Tensor a = torch::cat({tables, others}, -1).reshape({steps, b, devices, kS});
  // State: [t_fc(x_next), state_other_fc(progress)] through the LSTM, reset at episode starts.
  const torch::Tensor s =
      torch::cat({net->t_fc->forward(batch.next_x), net->state_other_fc->forward(batch.progress)}, -1);
  torch::Tensor h = batch.h0;
  torch::Tensor c = batch.c0;
  std::vector<torch::Tensor> outs;
  outs.reserve(static_cast<std::size_t>(steps));
  for (std::int64_t t = 0; t < steps; ++t) {
    const torch::Tensor keep = (1.0 - batch.reset[t]).view({1, b, 1});
    h = h * keep;
    c = c * keep;
    auto [out, state] = net->lstm->forward(s[t].unsqueeze(0), std::make_tuple(h, c));
    h = std::get<0>(state);
    c = std::get<1>(state);
    outs.push_back(out[0]);
  }
  const torch::Tensor hs = torch::stack(outs);  // [S, B, 64]
  const torch::Tensor hx = hs.unsqueeze(2).expand({steps, b, devices, kS});
  AutoShardOutput o;
  o.logits = net->policy_fc->forward(torch::cat({hx, a, hx * a}, -1)).squeeze(-1);  // [S, B, D]
  o.values = net->value_fc->forward(hs).squeeze(-1);                                // [S, B]
  return o;
}

VTraceReturns vtrace_from_logits(const torch::Tensor& behaviour_logits, const torch::Tensor& target_logits,
                                 const torch::Tensor& actions, const torch::Tensor& discounts,
                                 const torch::Tensor& rewards, const torch::Tensor& values,
                                 const torch::Tensor& bootstrap, double rho_bar, double c_bar) {
  torch::NoGradGuard no_grad;
  const torch::Tensor index = actions.unsqueeze(-1);
  const torch::Tensor target = torch::log_softmax(target_logits, -1).gather(-1, index).squeeze(-1);
  const torch::Tensor behaviour = torch::log_softmax(behaviour_logits, -1).gather(-1, index).squeeze(-1);
  const torch::Tensor rhos = torch::exp(target - behaviour);
  const torch::Tensor clipped_rhos = torch::clamp_max(rhos, rho_bar);
  const torch::Tensor cs = torch::clamp_max(rhos, c_bar);
  const torch::Tensor v_next = torch::cat({values.slice(0, 1), bootstrap.unsqueeze(0)}, 0);
  const torch::Tensor deltas = clipped_rhos * (rewards + discounts * v_next - values);
  const std::int64_t steps = values.size(0);
  std::vector<torch::Tensor> diffs(static_cast<std::size_t>(steps));
  torch::Tensor acc = torch::zeros_like(bootstrap);
  for (std::int64_t t = steps - 1; t >= 0; --t) {
    acc = deltas[t] + discounts[t] * cs[t] * acc;
    diffs[static_cast<std::size_t>(t)] = acc;
  }
  VTraceReturns r;
  r.vs = torch::stack(diffs) + values;
  const torch::Tensor vs_next = torch::cat({r.vs.slice(0, 1), bootstrap.unsqueeze(0)}, 0);
  r.pg_advantages = clipped_rhos * (rewards + discounts * vs_next - values);
  return r;
}

namespace {

using Json = nlohmann::json;
constexpr int kStateVersion = 1;
constexpr std::uint64_t kActorStream = 0x61637430;  // "act0"
constexpr std::uint64_t kCostStream = 0x636f7374;   // "cost"

/** The measured backends share this machine's CPU: one evaluation at a time. */
std::mutex& measurement_mutex() {
  static std::mutex m;
  return m;
}

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

Json stream_json(const StreamState& s) {
  return {{"next_unroll", s.next_unroll}, {"active", s.active}, {"task", s.task}, {"order", s.order},
          {"actions", s.actions},         {"h", s.lstm.h},      {"c", s.lstm.c}};
}

StreamState stream_from_json(const Json& j) {
  StreamState s;
  s.next_unroll = j.at("next_unroll").get<std::int64_t>();
  s.active = j.at("active").get<bool>();
  s.task = j.at("task").get<int>();
  s.order = j.at("order").get<std::vector<int>>();
  s.actions = j.at("actions").get<std::vector<int>>();
  s.lstm.h = j.at("h").get<std::vector<float>>();
  s.lstm.c = j.at("c").get<std::vector<float>>();
  return s;
}

class Trainer {
 public:
  Trainer(const PolicyTrainSetup& setup, const AutoShardTrainOptions& options, const Context& ctx)
      : setup_(setup), o_(options), ctx_(ctx) {
    const std::string problem = find_error_in_options(options);
    EMBSHARD_CHECK(problem.empty(), "train autoshard: ", problem);
    EMBSHARD_CHECK(!setup.tasks.empty(), "train autoshard: no training task (--tasks)");
    provenance_ = start_provenance(setup);
    provenance_.options = options_record(options);
    devices_ = setup.tasks.front().topology.num_devices();
    std::vector<FeatureVector> rows;
    for (std::size_t i = 0; i < setup.tasks.size(); ++i) {
      const Task& task = setup.tasks[i];
      const std::string where = i < setup.task_paths.size() ? setup.task_paths[i] : task.id;
      EMBSHARD_CHECK(task.topology.num_devices() == devices_, "train autoshard: task ", where, " has ",
                     task.topology.num_devices(), " devices but task ",
                     setup.task_paths.empty() ? setup.tasks.front().id : setup.task_paths.front(), " has ", devices_,
                     "; AutoShard's trainer needs one device count (train one policy per count)");
      EMBSHARD_CHECK(task.workload.tables.size() < 32768, "train autoshard: task ", where, " has too many tables");
      const std::string bad = why_no_plan_fits(task);
      EMBSHARD_CHECK(bad.empty(), "train autoshard: task ", where, ": ", bad);
      max_tables_ = std::max(max_tables_, static_cast<int>(task.workload.tables.size()));
      for (const TableSpec& t : task.workload.tables) rows.push_back(table_features(t));
    }
    EMBSHARD_CHECK(static_cast<bool>(setup.judge.judge), "train autoshard: no judge");
    scaler_ = FeatureScaler::fit(rows, FeatureScaling::kTrainingSet);
    for (const Task& task : setup.tasks) inputs_.push_back(autoshard_inputs(scaler_, task));
    const auto k = static_cast<std::int64_t>(setup.tasks.size());
    task_inputs_ = torch::zeros({k, max_tables_, kF});
    for (std::int64_t i = 0; i < k; ++i) {
      const std::vector<float>& in = inputs_[static_cast<std::size_t>(i)];
      const auto t = static_cast<std::int64_t>(in.size() / kF);
      task_inputs_[i].slice(0, 0, t).copy_(torch::from_blob(const_cast<float*>(in.data()), {t, kF}, torch::kFloat));
    }
    const std::int64_t per_update = std::int64_t{o_.unroll} * o_.learner_batch;
    total_updates_ = (o_.env_steps + per_update - 1) / per_update;
  }

  std::string run();

 private:
  // ---- actors ------------------------------------------------------------------------------
  std::shared_ptr<const AutoShardNet> weights_for(std::int64_t unroll);
  Unroll make_unroll(StreamState& stream, const AutoShardNet& net);
  double finish_episode(const PlacementState& state, int task, Unroll& u);
  void actor_loop(int stream);

  // ---- learner -----------------------------------------------------------------------------
  std::vector<Unroll> take_batch(std::int64_t update);
  AutoShardBatch make_batch(const std::vector<Unroll>& unrolls) const;
  void learn(const std::vector<Unroll>& unrolls, std::int64_t update);
  void cost_updates(std::int64_t update);
  void set_learning_rate(std::int64_t update);
  void publish(std::int64_t version, std::shared_ptr<const AutoShardNet> net);
  void write_policy();
  void save_checkpoint();
  bool load_checkpoint();
  void stop_actors();

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

std::shared_ptr<const AutoShardNet> Trainer::weights_for(std::int64_t unroll) {
  const std::int64_t version = std::max<std::int64_t>(0, unroll / o_.learner_batch - 1);
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return stop_ || versions_.count(version) > 0; });
  if (stop_) return nullptr;
  return versions_.at(version);
}

double Trainer::finish_episode(const PlacementState& state, int task_index, Unroll& u) {
  const double over = state.overflow();
  if (over > 0) return -over;
  const Task& task = setup_.tasks[static_cast<std::size_t>(task_index)];
  const Plan plan = state.plan();
  Context quiet = ctx_;
  quiet.verbosity = LogLevel::kWarning;
  CostBreakdown breakdown;
  if (!setup_.judge.measures) {
    quiet.num_threads = 1;
    breakdown = setup_.judge.judge(task, plan, 0, quiet);
  } else {
    const std::lock_guard lock(measurement_mutex());
    breakdown = setup_.judge.judge(task, plan, 0, quiet);
  }
  ++u.evaluations;
  double lo = INFINITY;
  double hi = 0.0;
  for (int d = 0; d < state.num_devices(); ++d) {
    const DeviceCost& c = breakdown.devices[static_cast<std::size_t>(d)];
    const double ms = c.fw_comp_ms + c.bw_comp_ms;
    lo = std::min(lo, ms);
    hi = std::max(hi, ms);
    const std::vector<int>& on = state.tables_on(d);
    if (on.empty()) continue;
    CostSample sample;
    sample.task = task_index;
    sample.tables.assign(on.begin(), on.end());
    sample.cost_ms = static_cast<float>(ms);
    u.costs.push_back(std::move(sample));
  }
  return hi > 0 ? lo / hi : 0.0;
}

Unroll Trainer::make_unroll(StreamState& stream, const AutoShardNet& net) {
  Rng rng(derive_seed(derive_seed(setup_.seed, kActorStream), static_cast<std::uint64_t>(stream.next_unroll)));
  const auto task_count = static_cast<std::uint64_t>(setup_.tasks.size());
  std::unique_ptr<AutoShardScorer> scorer;
  std::unique_ptr<PlacementState> state;
  auto start = [&](bool fresh) {
    if (fresh) {
      stream.task = static_cast<int>(rng.below(task_count));
      scorer = std::make_unique<AutoShardScorer>(net, inputs_[static_cast<std::size_t>(stream.task)]);
      stream.order = scorer->order();
      stream.actions.clear();
      stream.lstm = net.lstm.zero_state();
      stream.active = true;
    } else {
      scorer = std::make_unique<AutoShardScorer>(net, inputs_[static_cast<std::size_t>(stream.task)]);
    }
    state = std::make_unique<PlacementState>(setup_.tasks[static_cast<std::size_t>(stream.task)], stream.order);
    for (int d : stream.actions) state->place(d);
  };
  start(!stream.active);
  auto record = [&] {
    const AutoShardObservation obs = scorer->observe(*state);
    StepRecord r;
    r.task = stream.task;
    r.next_table = obs.next_table;
    r.progress = obs.progress;
    r.action_other = obs.action_other;
    r.device_of.assign(state->devices().begin(), state->devices().end());
    return std::make_pair(obs, r);
  };
  Unroll u;
  u.k = stream.next_unroll;
  u.init = stream.lstm;
  std::pair<AutoShardObservation, StepRecord> current = record();
  u.obs.push_back(current.second);
  std::vector<float> logits(static_cast<std::size_t>(devices_));
  for (int t = 0; t < o_.unroll; ++t) {
    scorer->step(current.first, *state, stream.lstm, logits, nullptr);
    const int a = sample_softmax(logits, {}, rng);
    u.actions.push_back(a);
    u.logits.insert(u.logits.end(), logits.begin(), logits.end());
    state->place(a);
    stream.actions.push_back(a);
    if (state->done()) {
      const double reward = finish_episode(*state, stream.task, u);
      u.rewards.push_back(static_cast<float>(reward));
      u.done.push_back(1);
      u.episode_rewards.push_back(reward);
      start(true);
    } else {
      u.rewards.push_back(0.0F);
      u.done.push_back(0);
    }
    current = record();
    u.obs.push_back(current.second);
  }
  return u;
}

void Trainer::actor_loop(int s) {
  try {
    StreamState stream = consumed_[static_cast<std::size_t>(s)];
    const std::int64_t end = total_updates_ * o_.learner_batch;
    while (stream.next_unroll < end) {
      const std::shared_ptr<const AutoShardNet> net = weights_for(stream.next_unroll);
      if (!net) return;
      Unroll u = make_unroll(stream, *net);
      stream.next_unroll += o_.actors;
      u.after = stream;
      {
        const std::lock_guard lock(mu_);
        if (stop_) return;
        ready_.emplace(u.k, std::move(u));
      }
      cv_.notify_all();
    }
  } catch (...) {
    {
      const std::lock_guard lock(mu_);
      if (!error_) error_ = std::current_exception();
      stop_ = true;
    }
    cv_.notify_all();
  }
}

void Trainer::stop_actors() {
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void Trainer::publish(std::int64_t version, std::shared_ptr<const AutoShardNet> net) {
  {
    const std::lock_guard lock(mu_);
    versions_[version] = std::move(net);
    // Batch `version` uses version − 1 and batch version + 1 uses `version`; older ones are done.
    while (!versions_.empty() && versions_.begin()->first < version - 1) versions_.erase(versions_.begin());
  }
  cv_.notify_all();
}

std::vector<Unroll> Trainer::take_batch(std::int64_t update) {
  std::vector<Unroll> batch;
  const std::int64_t first = update * o_.learner_batch;
  std::unique_lock lock(mu_);
  for (std::int64_t k = first; k < first + o_.learner_batch; ++k) {
    cv_.wait(lock, [&] { return error_ || stop_ || ready_.count(k) > 0; });
    if (error_) {
      const std::exception_ptr e = error_;
      lock.unlock();
      stop_actors();
      std::rethrow_exception(e);
    }
    EMBSHARD_ASSERT(ready_.count(k) > 0);
    batch.push_back(std::move(ready_.at(k)));
    ready_.erase(k);
  }
  return batch;
}

AutoShardBatch Trainer::make_batch(const std::vector<Unroll>& unrolls) const {
  const std::int64_t t1 = o_.unroll + 1;
  const auto b = static_cast<std::int64_t>(unrolls.size());
  const std::int64_t d = devices_;
  const std::int64_t n = max_tables_;
  AutoShardBatch x;
  x.next_x = torch::zeros({t1, b, kF});
  x.progress = torch::zeros({t1, b, 1});
  x.task = torch::zeros({t1, b}, torch::kLong);
  x.membership = torch::zeros({t1, b, d, n});
  x.action_other = torch::zeros({t1, b, d, 2});
  x.reset = torch::zeros({t1, b});
  x.h0 = torch::zeros({kAutoShardLstmLayers, b, kS});
  x.c0 = torch::zeros({kAutoShardLstmLayers, b, kS});
  x.actions = torch::zeros({t1 - 1, b}, torch::kLong);
  x.behaviour_logits = torch::zeros({t1 - 1, b, d});
  x.rewards = torch::zeros({t1 - 1, b});
  x.done = torch::zeros({t1 - 1, b});
  auto next_x = x.next_x.accessor<float, 3>();
  auto progress = x.progress.accessor<float, 3>();
  auto task = x.task.accessor<std::int64_t, 2>();
  auto membership = x.membership.accessor<float, 4>();
  auto action_other = x.action_other.accessor<float, 4>();
  auto reset = x.reset.accessor<float, 2>();
  auto h0 = x.h0.accessor<float, 3>();
  auto c0 = x.c0.accessor<float, 3>();
  auto actions = x.actions.accessor<std::int64_t, 2>();
  auto logits = x.behaviour_logits.accessor<float, 3>();
  auto rewards = x.rewards.accessor<float, 2>();
  auto done = x.done.accessor<float, 2>();
  for (std::int64_t j = 0; j < b; ++j) {
    const Unroll& u = unrolls[static_cast<std::size_t>(j)];
    for (std::int64_t l = 0; l < kAutoShardLstmLayers; ++l) {
      for (std::int64_t i = 0; i < kS; ++i) {
        h0[l][j][i] = u.init.h[static_cast<std::size_t>(l * kS + i)];
        c0[l][j][i] = u.init.c[static_cast<std::size_t>(l * kS + i)];
      }
    }
    for (std::int64_t t = 0; t < t1; ++t) {
      const StepRecord& r = u.obs[static_cast<std::size_t>(t)];
      const float* in = inputs_[static_cast<std::size_t>(r.task)].data() + static_cast<std::size_t>(r.next_table) * kF;
      for (int f = 0; f < kF; ++f) next_x[t][j][f] = in[f];
      progress[t][j][0] = r.progress;
      task[t][j] = r.task;
      for (std::size_t tab = 0; tab < r.device_of.size(); ++tab) {
        if (r.device_of[tab] >= 0) membership[t][j][r.device_of[tab]][static_cast<std::int64_t>(tab)] = 1.0F;
      }
      for (std::int64_t dev = 0; dev < d; ++dev) {
        action_other[t][j][dev][0] = r.action_other[static_cast<std::size_t>(2 * dev)];
        action_other[t][j][dev][1] = r.action_other[static_cast<std::size_t>(2 * dev + 1)];
      }
      if (t > 0) reset[t][j] = u.done[static_cast<std::size_t>(t - 1)];
      if (t + 1 < t1) {
        const auto ts = static_cast<std::size_t>(t);
        actions[t][j] = u.actions[ts];
        for (std::int64_t dev = 0; dev < d; ++dev)
          logits[t][j][dev] = u.logits[ts * static_cast<std::size_t>(d) + static_cast<std::size_t>(dev)];
        rewards[t][j] = u.rewards[ts];
        done[t][j] = u.done[ts];
      }
    }
  }
  return x;
}

void Trainer::set_learning_rate(std::int64_t update) {
  const double steps = static_cast<double>(update) * o_.unroll * o_.learner_batch;
  const double total = static_cast<double>(o_.env_steps);
  const double lr = o_.learning_rate * (1.0 - std::min(steps, total) / total);
  for (auto& group : optimizer_->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  metrics_["learning_rate"] = lr;
}

void Trainer::learn(const std::vector<Unroll>& unrolls, std::int64_t update) {
  const AutoShardBatch batch = make_batch(unrolls);
  const AutoShardOutput out = autoshard_forward(net_, batch, task_inputs_);
  const std::int64_t steps = o_.unroll;
  const torch::Tensor logits = out.logits.slice(0, 0, steps);
  const torch::Tensor values = out.values.slice(0, 0, steps);
  const torch::Tensor bootstrap = out.values[steps];
  const torch::Tensor discounts = (1.0 - batch.done) * o_.discount;
  const VTraceReturns vt = vtrace_from_logits(batch.behaviour_logits, logits.detach(), batch.actions, discounts,
                                              batch.rewards, values.detach(), bootstrap.detach(), o_.rho_bar, o_.c_bar);
  const torch::Tensor log_p = torch::log_softmax(logits, -1);
  const torch::Tensor pg_loss = -(log_p.gather(-1, batch.actions.unsqueeze(-1)).squeeze(-1) * vt.pg_advantages).sum();
  const torch::Tensor baseline_loss = o_.baseline_weight * 0.5 * (vt.vs - values).pow(2).sum();
  const torch::Tensor entropy_loss = o_.entropy_weight * (torch::softmax(logits, -1) * log_p).sum();
  const torch::Tensor loss = pg_loss + baseline_loss + entropy_loss;
  set_learning_rate(update);
  learn::clear_gradients(net_->parameters());
  loss.backward();
  torch::nn::utils::clip_grad_norm_(net_->parameters(), o_.grad_clip);
  optimizer_->step();
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor log_mu = torch::log_softmax(batch.behaviour_logits, -1);
    metrics_["max_log_rho"] = (log_p - log_mu).abs().max().item<double>();
    metrics_["entropy"] = -(torch::softmax(logits, -1) * log_p).sum(-1).mean().item<double>();
  }
  metrics_["pg_loss"] = pg_loss.item<double>();
  metrics_["baseline_loss"] = baseline_loss.item<double>();
  metrics_["entropy_loss"] = entropy_loss.item<double>();
  metrics_["total_loss"] = loss.item<double>();
}

void Trainer::cost_updates(std::int64_t update) {
  if (ring_.empty() || o_.cost_updates == 0) return;
  Rng rng(derive_seed(derive_seed(setup_.seed, kCostStream), static_cast<std::uint64_t>(update)));
  const std::int64_t b = o_.cost_batch;
  double last = 0.0;
  for (int step = 0; step < o_.cost_updates; ++step) {
    torch::Tensor tasks = torch::zeros({b}, torch::kLong);
    torch::Tensor member = torch::zeros({b, 1, max_tables_});
    torch::Tensor target = torch::zeros({b});
    auto ta = tasks.accessor<std::int64_t, 1>();
    auto me = member.accessor<float, 3>();
    auto tg = target.accessor<float, 1>();
    for (std::int64_t i = 0; i < b; ++i) {
      const CostSample& s = ring_[static_cast<std::size_t>(rng.below(ring_.size()))];
      ta[i] = s.task;
      for (std::int16_t t : s.tables) me[i][0][t] = 1.0F;
      tg[i] = s.cost_ms;
    }
    const torch::Tensor enc = net_->t_fc->forward(task_inputs_).index_select(0, tasks);  // [b, N, 32]
    const torch::Tensor pred = net_->cost_fc->forward(torch::bmm(member, enc).squeeze(1)).squeeze(-1);
    const torch::Tensor loss = torch::mse_loss(pred, target);
    learn::clear_gradients(net_->parameters());
    loss.backward();
    torch::nn::utils::clip_grad_norm_(net_->parameters(), o_.grad_clip);
    optimizer_->step();
    last = loss.item<double>();
  }
  metrics_["cost_mse"] = last;
}

void Trainer::write_policy() {
  AutoShardPolicy policy;
  policy.features = scaler_;
  policy.net = net_->export_net();
  policy.training = provenance_;
  policy.training.iterations = updates_;
  policy.training.real_evaluations = real_evaluations_;
  policy.training.env_steps = env_steps_;
  policy.training.wall_s =
      wall_before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  policy.training.metrics = metrics_;
  write_autoshard_policy(setup_.out, policy);
}

void Trainer::save_checkpoint() {
  namespace fs = std::filesystem;
  const std::string dir = checkpoint_dir(setup_.out);
  fs::create_directories(dir);
  torch::save(net_, dir + "/net.pt.tmp");
  torch::save(*optimizer_, dir + "/optimizer.pt.tmp");
  fs::rename(dir + "/net.pt.tmp", dir + "/net.pt");
  fs::rename(dir + "/optimizer.pt.tmp", dir + "/optimizer.pt");
  Json ring = Json::array();
  for (const CostSample& s : ring_) ring.push_back({s.task, s.tables, s.cost_ms});
  Json streams = Json::array();
  for (const StreamState& s : consumed_) streams.push_back(stream_json(s));
  AutoShardPolicy actor;
  actor.features = scaler_;
  actor.net = previous_weights_ ? *previous_weights_ : net_->export_net();
  actor.training = provenance_;
  const double wall = wall_before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const Json state = {{"version", kStateVersion},
                      {"tasks_sha256", provenance_.tasks_sha256},
                      {"seed", setup_.seed},
                      {"actors", o_.actors},
                      {"unroll", o_.unroll},
                      {"learner_batch", o_.learner_batch},
                      {"updates", updates_},
                      {"env_steps", env_steps_},
                      {"real_evaluations", real_evaluations_},
                      {"episodes", episodes_},
                      {"wall_s", wall},
                      {"recent_rewards", recent_rewards_},
                      {"ring", ring},
                      {"ring_next", ring_next_},
                      {"streams", streams},
                      {"metrics", metrics_},
                      {"actor_policy", Json::parse(autoshard_policy_json(actor))}};
  // state.json last: a checkpoint is complete once it names the update its networks hold.
  write_file_atomic(dir + "/state.json", state.dump());
}

bool Trainer::load_checkpoint() {
  const std::string dir = checkpoint_dir(setup_.out);
  const std::string path = dir + "/state.json";
  EMBSHARD_CHECK(std::filesystem::exists(path), "train autoshard: --resume but there is no checkpoint ", path);
  Json s;
  try {
    s = Json::parse(read_file(path));
    EMBSHARD_CHECK(s.at("version").get<int>() == kStateVersion, "train autoshard: checkpoint ", path,
                   " has another version");
    EMBSHARD_CHECK(s.at("tasks_sha256").get<std::string>() == provenance_.tasks_sha256, "train autoshard: checkpoint ",
                   path, " was made on other training tasks");
    EMBSHARD_CHECK(s.at("seed").get<std::uint64_t>() == setup_.seed, "train autoshard: checkpoint ", path,
                   " was made with --seed ", s.at("seed").get<std::uint64_t>());
    EMBSHARD_CHECK(s.at("actors").get<int>() == o_.actors && s.at("unroll").get<int>() == o_.unroll &&
                       s.at("learner_batch").get<int>() == o_.learner_batch,
                   "train autoshard: checkpoint ", path, " was made with --actors ", s.at("actors").get<int>(),
                   " --unroll ", s.at("unroll").get<int>(), " --learner-batch ", s.at("learner_batch").get<int>(),
                   "; resume with the same");
    updates_ = s.at("updates").get<std::int64_t>();
    env_steps_ = s.at("env_steps").get<std::int64_t>();
    real_evaluations_ = s.at("real_evaluations").get<std::int64_t>();
    episodes_ = s.at("episodes").get<std::int64_t>();
    wall_before_ = s.at("wall_s").get<double>();
    for (double r : s.at("recent_rewards")) recent_rewards_.push_back(r);
    for (const Json& e : s.at("ring")) {
      CostSample c;
      c.task = e.at(0).get<int>();
      c.tables = e.at(1).get<std::vector<std::int16_t>>();
      c.cost_ms = e.at(2).get<float>();
      EMBSHARD_CHECK(c.task >= 0 && c.task < static_cast<int>(setup_.tasks.size()), "bad ring entry");
      ring_.push_back(std::move(c));
    }
    ring_next_ = s.at("ring_next").get<std::int64_t>();
    consumed_.clear();
    for (const Json& e : s.at("streams")) consumed_.push_back(stream_from_json(e));
    EMBSHARD_CHECK(static_cast<int>(consumed_.size()) == o_.actors, "bad stream count");
    metrics_ = s.at("metrics").get<std::map<std::string, double>>();
    previous_weights_ = std::make_shared<const AutoShardNet>(
        parse_autoshard_policy(s.at("actor_policy").dump(), path + " (actor_policy)").net);
  } catch (const nlohmann::json::exception& e) {
    EMBSHARD_THROW("train autoshard: checkpoint ", path, " is unreadable: ", e.what());
  }
  torch::load(net_, dir + "/net.pt");
  torch::load(*optimizer_, dir + "/optimizer.pt");
  return true;
}

std::string Trainer::run() {
  torch::set_num_threads(1);
  torch::manual_seed(setup_.seed);
  net_ = AutoShardTorch();
  optimizer_ = std::make_unique<torch::optim::Adam>(net_->parameters(), torch::optim::AdamOptions(o_.learning_rate));
  consumed_.assign(static_cast<std::size_t>(o_.actors), StreamState{});
  for (int s = 0; s < o_.actors; ++s) consumed_[static_cast<std::size_t>(s)].next_unroll = s;
  if (setup_.resume) {
    load_checkpoint();
    ctx_.info(detail::concat("autoshard: resumed at update ", updates_, " (", env_steps_, " env steps, ",
                             real_evaluations_, " real evaluations)"));
  }
  const auto current = std::make_shared<const AutoShardNet>(net_->export_net());
  if (updates_ > 0 && previous_weights_) publish(updates_ - 1, previous_weights_);
  publish(updates_, current);
  ctx_.info(detail::concat("autoshard: ", total_updates_, " learner updates of ", o_.learner_batch, " unrolls × ",
                           o_.unroll, " steps on ", setup_.tasks.size(), " tasks (", devices_, " devices), ", o_.actors,
                           " actor threads, judge ", setup_.judge.backend));
  struct Joiner {
    Trainer* t;
    ~Joiner() { t->stop_actors(); }
  } joiner{this};
  for (int s = 0; s < o_.actors && updates_ < total_updates_; ++s) threads_.emplace_back([this, s] { actor_loop(s); });
  const std::int64_t log_every = std::max<std::int64_t>(1, total_updates_ / 50);
  Progress progress(ctx_, "autoshard: learner updates", total_updates_, updates_);
  for (std::int64_t u = updates_; u < total_updates_; ++u) {
    const std::vector<Unroll> unrolls = take_batch(u);
    learn(unrolls, u);
    double batch_reward = 0.0;
    std::int64_t batch_episodes = 0;
    for (const Unroll& un : unrolls) {
      for (const CostSample& c : un.costs) {
        if (static_cast<int>(ring_.size()) < o_.cost_buffer) {
          ring_.push_back(c);
        } else {
          ring_[static_cast<std::size_t>(ring_next_)] = c;
        }
        ring_next_ = (ring_next_ + 1) % o_.cost_buffer;
      }
      for (double r : un.episode_rewards) {
        batch_reward += r;
        ++batch_episodes;
        recent_rewards_.push_back(r);
        if (recent_rewards_.size() > 100) recent_rewards_.pop_front();
      }
      real_evaluations_ += un.evaluations;
      episodes_ += static_cast<std::int64_t>(un.episode_rewards.size());
      consumed_[static_cast<std::size_t>(un.k % o_.actors)] = un.after;
    }
    cost_updates(u);
    updates_ = u + 1;
    env_steps_ = updates_ * o_.unroll * o_.learner_batch;
    previous_weights_ = versions_.at(u);
    publish(updates_, std::make_shared<const AutoShardNet>(net_->export_net()));
    const double mean = recent_rewards_.empty() ? 0.0
                                                : std::accumulate(recent_rewards_.begin(), recent_rewards_.end(), 0.0) /
                                                      static_cast<double>(recent_rewards_.size());
    metrics_["mean_reward"] = mean;
    metrics_["episodes"] = static_cast<double>(episodes_);
    if (updates_ % log_every == 0 || updates_ == total_updates_) {
      const double wall =
          wall_before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      ctx_.debug(detail::concat("autoshard: update ", updates_, "/", total_updates_, "  env steps ", env_steps_,
                                "  real evaluations ", real_evaluations_, "  episodes ", episodes_,
                                "  mean reward (last ", recent_rewards_.size(), ") ", mean, "  batch reward ",
                                batch_episodes > 0 ? batch_reward / static_cast<double>(batch_episodes) : NAN,
                                "  cost mse ", metrics_["cost_mse"], "  entropy ", metrics_["entropy"],
                                "  max |log rho| ", metrics_["max_log_rho"], "  wall ", wall, " s"));
    }
    if (updates_ % o_.checkpoint_every == 0 || updates_ == total_updates_) {
      save_checkpoint();
      write_policy();
    }
    progress.advance();
  }
  stop_actors();
  progress.finish(detail::concat(env_steps_, " env steps, ", real_evaluations_, " real evaluations, mean reward ",
                                 metrics_["mean_reward"]));
  if (updates_ == 0 || !std::filesystem::exists(setup_.out)) {
    save_checkpoint();
    write_policy();
  }
  return setup_.out;
}

}  // namespace
}  // namespace learn

std::string find_error_in_options(const AutoShardTrainOptions& o) {
  auto finite_positive = [](double v) { return std::isfinite(v) && v > 0; };
  if (o.env_steps < 1) return "env_steps must be at least 1";
  if (o.actors < 1 || o.actors > 1024) return "actors must be in 1..1024";
  if (o.unroll < 1 || o.unroll > 100000) return "unroll must be in 1..100000";
  if (o.learner_batch < 1 || o.learner_batch > 100000) return "learner_batch must be in 1..100000";
  if (!finite_positive(o.learning_rate)) return "the learning rate must be positive";
  if (!(std::isfinite(o.entropy_weight) && o.entropy_weight >= 0)) return "entropy_weight must be >= 0";
  if (!(std::isfinite(o.baseline_weight) && o.baseline_weight >= 0)) return "baseline_weight must be >= 0";
  if (!(o.discount >= 0 && o.discount <= 1)) return "discount must be in [0, 1]";
  if (!finite_positive(o.rho_bar) || !finite_positive(o.c_bar)) return "rho_bar and c_bar must be positive";
  if (!finite_positive(o.grad_clip)) return "grad_clip must be positive";
  if (o.cost_updates < 0) return "cost_updates must be >= 0";
  if (o.cost_batch < 1) return "cost_batch must be at least 1";
  if (o.cost_buffer < 1) return "cost_buffer must be at least 1";
  if (o.checkpoint_every < 1) return "checkpoint_every must be at least 1";
  return "";
}

std::map<std::string, std::string> options_record(const AutoShardTrainOptions& o) {
  const auto text = [](auto v) { return detail::concat(v); };
  return {{"env-steps", text(o.env_steps)},
          {"actors", text(o.actors)},
          {"unroll", text(o.unroll)},
          {"learner-batch", text(o.learner_batch)},
          {"lr", text(o.learning_rate)},
          {"entropy", text(o.entropy_weight)},
          {"baseline-weight", text(o.baseline_weight)},
          {"discount", text(o.discount)},
          {"rho-bar", text(o.rho_bar)},
          {"c-bar", text(o.c_bar)},
          {"grad-clip", text(o.grad_clip)},
          {"cost-updates", text(o.cost_updates)},
          {"cost-batch", text(o.cost_batch)},
          {"cost-buffer", text(o.cost_buffer)},
          {"checkpoint-every", text(o.checkpoint_every)}};
}

std::string train_autoshard(const PolicyTrainSetup& setup, const AutoShardTrainOptions& options, const Context& ctx) {
  learn::Trainer trainer(setup, options, ctx);
  return trainer.run();
}

}  // namespace embshard
