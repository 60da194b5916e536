// DreamShard's Algorithm 1 with libtorch (policy_training.h; paper 002 §3.3, refs-zha.md §4.2,
// §5.3): collect real plans, fit the cost network, improve the policy on the estimated MDP.
#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/core/progress.h"
#include "embshard/data/random.h"
#include "embshard/learn/policy_training.h"
#include "embshard/policy/dreamshard_policy.h"
#include "learn/policy_common.h"
#include "learn/torch_nets.h"

namespace embshard {
namespace {

using Json = nlohmann::json;
using detail::concat;

// ---- the networks in torch, named as in dreamshard_policy.h --------------------------------

enum Net { kCostTable, kCostFw, kCostBw, kCostComm, kCostOverall, kPolicyTable, kPolicyCost, kPolicyHead, kNumNets };

struct TorchNets {
  std::vector<torch::nn::Sequential> nets;
  /** Initial weights drawn from `seed` (libtorch's default initialisation). */
  explicit TorchNets(std::uint64_t seed) {
    torch::manual_seed(seed);
    for (const std::string& name : dreamshard_net_names()) {
      nets.push_back(learn::make_sequential(dreamshard_widths(name), dreamshard_relu_last(name)));
    }
  }
  torch::nn::Sequential& operator[](Net n) { return nets[static_cast<std::size_t>(n)]; }
  [[nodiscard]] std::vector<torch::Tensor> parameters() const {
    std::vector<torch::Tensor> all;
    for (const auto& net : nets) {
      for (const torch::Tensor& p : net->parameters()) all.push_back(p);
    }
    return all;
  }
  [[nodiscard]] DreamShardNet export_net() const {
    std::vector<Mlp> m;
    for (std::size_t i = 0; i < nets.size(); ++i) {
      const std::string& name = dreamshard_net_names()[i];
      m.push_back(learn::export_mlp(name, nets[i], dreamshard_relu_last(name)));
    }
    return {m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]};
  }
};

// ---- tasks and replay buffers -------------------------------------------------------------

/** The normalisation `mode` asks for: the authors' per-task one, or z-scores of every training table. */
FeatureScaler training_scaling(const std::vector<Task>& tasks, FeatureScaling mode) {
  if (mode == FeatureScaling::kPerTask) return dreamshard_per_task_scaling();
  std::vector<FeatureVector> raw;
  for (const Task& task : tasks) {
    for (const TableSpec& t : task.workload.tables) raw.push_back(table_features(t));
  }
  return FeatureScaler::fit(raw, mode);
}

/** Every training task's normalised features in one matrix, a zero row at the end. */
struct FeatureBank {
  torch::Tensor rows;                ///< [Σ tables + 1, 21]
  std::vector<std::int64_t> offset;  ///< first row of each task
  std::int64_t zero_row = 0;

  FeatureBank(const std::vector<Task>& tasks, const FeatureScaler& scaling) {
    std::vector<float> flat;
    for (const Task& task : tasks) {
      offset.push_back(static_cast<std::int64_t>(flat.size() / kNumTableFeatures));
      for (const FeatureVector& f : dreamshard_features(task, scaling)) flat.insert(flat.end(), f.begin(), f.end());
    }
    zero_row = static_cast<std::int64_t>(flat.size() / kNumTableFeatures);
    flat.resize(flat.size() + kNumTableFeatures, 0.0f);
    rows = torch::from_blob(flat.data(), {zero_row + 1, kNumTableFeatures}, torch::kFloat).clone();
  }
  /** Bank rows of one device's tables (the zero row if none). */
  void device_rows(int task, const std::vector<int>& tables, std::int64_t segment, std::vector<std::int64_t>& rows_out,
                   std::vector<std::int64_t>& segment_out) const {
    if (tables.empty()) {
      rows_out.push_back(zero_row);
      segment_out.push_back(segment);
    }
    for (int t : tables) {
      rows_out.push_back(offset[static_cast<std::size_t>(task)] + t);
      segment_out.push_back(segment);
    }
  }
};

struct DeviceSample {
  int task = 0;
  std::vector<int> tables;
  float fw = 0, bw = 0, comm = 0;  // measured fw compute, bw compute, bw all-to-all (ms)
};

struct PlanSample {
  int task = 0;
  std::vector<std::vector<int>> devices;
  float step = 0;  // the plan's step objective (cost/breakdown.h), as judged
};

Json buffers_json(const std::vector<DeviceSample>& d, const std::vector<PlanSample>& p) {
  Json devices = Json::array(), plans = Json::array();
  for (const DeviceSample& s : d)
    devices.push_back({{"task", s.task}, {"tables", s.tables}, {"fw", s.fw}, {"bw", s.bw}, {"comm", s.comm}});
  for (const PlanSample& s : p) plans.push_back({{"task", s.task}, {"devices", s.devices}, {"step", s.step}});
  return {{"devices", devices}, {"plans", plans}};
}

void read_buffers(const Json& j, std::vector<DeviceSample>& d, std::vector<PlanSample>& p) {
  for (const Json& s : j.at("devices")) {
    d.push_back({s.at("task").get<int>(), s.at("tables").get<std::vector<int>>(), s.at("fw").get<float>(),
                 s.at("bw").get<float>(), s.at("comm").get<float>()});
  }
  for (const Json& s : j.at("plans")) {
    p.push_back(
        {s.at("task").get<int>(), s.at("devices").get<std::vector<std::vector<int>>>(), s.at("step").get<float>()});
  }
}

/** Sum of `enc` rows per segment: [segments, 32]. */
torch::Tensor segment_sums(const torch::Tensor& enc, const std::vector<std::int64_t>& rows,
                           const std::vector<std::int64_t>& segment, std::int64_t segments) {
  const torch::Tensor r = torch::tensor(rows, torch::kLong);
  const torch::Tensor s = torch::tensor(segment, torch::kLong);
  return torch::zeros({segments, enc.size(1)}).index_add(0, s, enc.index_select(0, r));
}

// ---- the trainer ------------------------------------------------------------------------------

class DreamShardTrainer {
 public:
  DreamShardTrainer(const PolicyTrainSetup& setup, const DreamShardTrainOptions& o, const Context& ctx)
      : setup_(setup), o_(o), ctx_(ctx), scaling_(training_scaling(setup.tasks, o.features)),
        bank_(setup.tasks, scaling_), nets_(setup.seed), parameters_(nets_.parameters()),
        optimizer_(parameters_, torch::optim::AdamOptions(o.learning_rate)) {
    provenance_ = learn::start_provenance(setup);
    provenance_.options = options_record(o);
  }

  std::string run() {
    if (setup_.resume) resume();
    const double start = now_ms();
    const double wall_before = provenance_.wall_s;
    Progress progress(ctx_, "dreamshard: iterations", o_.iterations, iteration_);
    for (int it = iteration_; it < o_.iterations; ++it) {
      set_learning_rate(o_.learning_rate * (1.0 - static_cast<double>(it) / o_.iterations));
      net_ = export_net();
      const double real_step = collect(it);
      const double cost_loss = train_cost(it);
      const double predicted = train_rl(it);
      iteration_ = it + 1;
      provenance_.iterations = iteration_;
      provenance_.wall_s = wall_before + (now_ms() - start) / 1000.0;
      provenance_.metrics = {{"mean_real_step_ms", real_step},
                             {"cost_loss", cost_loss},
                             {"rl_predicted_step_ms", predicted},
                             {"cost_updates", cost_updates_}};
      if (o_.keep == DreamShardKeep::kBest) consider_for_keeping(it);
      ctx_.debug(concat("dreamshard: iteration ", iteration_, "/", o_.iterations, ": mean real step ", real_step,
                        " ms over ", o_.collect_episodes, " plans, cost loss ", cost_loss, ", RL predicted step ",
                        predicted, " ms, ", provenance_.real_evaluations, " real evaluations, ", provenance_.wall_s,
                        " s"));
      save();
      progress.advance();
    }
    progress.finish(concat(provenance_.real_evaluations, " real evaluations, mean real step ",
                           provenance_.metrics["mean_real_step_ms"], " ms in the last iteration"));
    if (iteration_ == 0 || o_.iterations == 0) save();
    return setup_.out;
  }

 private:
  void set_learning_rate(double lr) {
    for (auto& group : optimizer_.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }

  [[nodiscard]] int random_task(Rng& rng) const { return static_cast<int>(rng.below(setup_.tasks.size())); }

  /** One episode sampled from the current policy over legal devices, with what it saw. */
  struct SampledEpisode {
    int task = 0;
    DreamShardEpisode episode;
    std::vector<int> actions;                              // device per step
    std::vector<std::vector<std::array<float, 3>>> costs;  // per step, per device: the policy's cost inputs
    bool complete = false;                                 // false: a table found no legal device
  };

  SampledEpisode sample_episode(int task_index, Rng& rng) {
    const Task& task = setup_.tasks[static_cast<std::size_t>(task_index)];
    SampledEpisode s{task_index, DreamShardEpisode(net_, task), {}, {}, false};
    provenance_.env_steps += static_cast<std::int64_t>(task.workload.tables.size());
    while (!s.episode.state().done()) {
      const std::vector<int> legal = s.episode.state().legal_devices();
      if (legal.empty()) return s;
      std::vector<std::array<float, 3>> step_costs;
      for (int d = 0; d < s.episode.state().num_devices(); ++d) step_costs.push_back(s.episode.kernel_costs(d));
      const int device = sample_softmax(s.episode.logits(), legal, rng);
      s.actions.push_back(device);
      s.costs.push_back(std::move(step_costs));
      s.episode.place(device);
    }
    s.complete = true;
    return s;
  }

  /** N_collect sampled plans evaluated on the backend into the buffers; their mean step. */
  double collect(int it) {
    Rng rng(derive_seed(setup_.seed, 0xc011ec7000ULL + static_cast<std::uint64_t>(it)));
    double total = 0.0;
    int evaluated = 0;
    for (int e = 0; e < o_.collect_episodes; ++e) {
      const SampledEpisode s = sample_episode(random_task(rng), rng);
      const Task& task = setup_.tasks[static_cast<std::size_t>(s.task)];
      if (!s.complete) {
        ctx_.warn(concat("dreamshard: a sampled plan of task '", task.id, "' ran out of memory; dropped"));
        continue;
      }
      const CostBreakdown breakdown =
          setup_.judge.judge(task, s.episode.state().plan(),
                             static_cast<std::uint64_t>(provenance_.real_evaluations - greedy_evaluations_), ctx_);
      ++provenance_.real_evaluations;
      PlanSample plan{s.task, {}, static_cast<float>(objective_value(breakdown, Objective::kStep))};
      for (int d = 0; d < s.episode.state().num_devices(); ++d) {
        const DeviceCost& c = breakdown.devices[static_cast<std::size_t>(d)];
        const std::vector<int>& tables = s.episode.state().tables_on(d);
        devices_.push_back({s.task, tables, static_cast<float>(c.fw_comp_ms), static_cast<float>(c.bw_comp_ms),
                            static_cast<float>(c.bw_comm_ms)});
        plan.devices.push_back(tables);
      }
      total += plan.step;
      ++evaluated;
      plans_.push_back(std::move(plan));
    }
    return evaluated > 0 ? total / evaluated : 0.0;
  }

  /** The kernel heads' loss on the device samples `picked`. */
  torch::Tensor kernel_loss(const torch::Tensor& enc, const std::vector<std::size_t>& picked) {
    std::vector<std::int64_t> rows, segment;
    std::vector<float> fw, bw, comm;
    for (std::size_t b = 0; b < picked.size(); ++b) {
      const DeviceSample& s = devices_[picked[b]];
      bank_.device_rows(s.task, s.tables, static_cast<std::int64_t>(b), rows, segment);
      fw.push_back(s.fw);
      bw.push_back(s.bw);
      comm.push_back(s.comm);
    }
    const torch::Tensor sums = segment_sums(enc, rows, segment, static_cast<std::int64_t>(picked.size()));
    return torch::mse_loss(nets_[kCostFw]->forward(sums).squeeze(1), torch::tensor(fw)) +
           torch::mse_loss(nets_[kCostBw]->forward(sums).squeeze(1), torch::tensor(bw)) +
           torch::mse_loss(nets_[kCostComm]->forward(sums).squeeze(1), torch::tensor(comm));
  }

  /** The overall head's loss on the plan samples `picked`: element-wise max over devices, then the head. */
  torch::Tensor overall_loss(const torch::Tensor& enc, const std::vector<std::size_t>& picked) {
    std::vector<std::int64_t> rows, segment, first;
    std::vector<float> step_ms;
    std::int64_t segments = 0;
    for (const std::size_t i : picked) {
      const PlanSample& p = plans_[i];
      first.push_back(segments);
      for (const std::vector<int>& tables : p.devices) bank_.device_rows(p.task, tables, segments++, rows, segment);
      step_ms.push_back(p.step);
    }
    first.push_back(segments);
    const torch::Tensor device_sums = segment_sums(enc, rows, segment, segments);
    std::vector<torch::Tensor> maxima;
    for (std::size_t b = 0; b < picked.size(); ++b) {
      maxima.push_back(std::get<0>(device_sums.narrow(0, first[b], first[b + 1] - first[b]).max(0)));
    }
    return torch::mse_loss(nets_[kCostOverall]->forward(torch::stack(maxima)).squeeze(1), torch::tensor(step_ms));
  }

  /** Sample i is held out for early stopping when i % kHoldOutEvery == 0 (and more than one sample exists). */
  static constexpr std::size_t kHoldOutEvery = 5;
  static bool held_out(std::size_t i, std::size_t n) { return n > 1 && i % kHoldOutEvery == 0; }

  /** `batch` samples of `n` drawn with replacement, from the training part when `split`. */
  std::vector<std::size_t> draw(std::size_t n, bool split, Rng& rng) const {
    std::vector<std::size_t> picked;
    while (static_cast<int>(picked.size()) < o_.batch) {
      const std::size_t i = rng.below(n);
      if (!split || !held_out(i, n)) picked.push_back(i);
    }
    return picked;
  }

  static std::vector<std::size_t> held_out_part(std::size_t n) {
    std::vector<std::size_t> picked;
    for (std::size_t i = 0; i < n; ++i)
      if (held_out(i, n)) picked.push_back(i);
    return picked;
  }

  void update(const torch::Tensor& loss) {
    learn::clear_gradients(parameters_);
    loss.backward();
    optimizer_.step();
  }

  /**
   * The cost network's updates of one iteration; returns the last training loss (the authors'
   * recipe: N_cost updates on every sample) or, with cost_patience, the best held-out loss: up to
   * 10 × N_cost updates on the training part, the held-out part checked every kCheckEvery updates,
   * stopping after cost_patience checks without improvement, the best networks kept.
   */
  double train_cost(int it) {
    if (devices_.empty()) return 0.0;
    Rng rng(derive_seed(setup_.seed, 0xc057000ULL + static_cast<std::uint64_t>(it)));
    const bool split = o_.cost_patience > 0;
    const int max_steps = split ? 10 * o_.cost_steps : o_.cost_steps;
    constexpr int kCheckEvery = 25;
    double last = 0.0, best = std::numeric_limits<double>::infinity();
    std::vector<torch::Tensor> best_parameters;
    int checks_without_gain = 0, step = 0;
    for (; step < max_steps && (!split || checks_without_gain < o_.cost_patience); ++step) {
      const std::vector<std::size_t> device_batch = draw(devices_.size(), split, rng);
      const std::vector<std::size_t> plan_batch = draw(plans_.size(), split, rng);
      const torch::Tensor enc = nets_[kCostTable]->forward(bank_.rows);
      const torch::Tensor loss = kernel_loss(enc, device_batch) + overall_loss(enc, plan_batch);
      update(loss);
      last = loss.item<double>();
      if (split && (step + 1) % kCheckEvery == 0) {
        const double held = held_out_loss();
        if (held < best) {
          best = held;
          best_parameters = learn::snapshot(parameters_);
          checks_without_gain = 0;
        } else {
          ++checks_without_gain;
        }
      }
    }
    cost_updates_ = step;
    if (!best_parameters.empty()) learn::restore(parameters_, best_parameters);
    net_ = export_net();
    return split && std::isfinite(best) ? best : last;
  }

  /** Both losses on every held-out sample, without gradients. */
  double held_out_loss() {
    const torch::NoGradGuard no_grad;
    const std::vector<std::size_t> devices = held_out_part(devices_.size()), plans = held_out_part(plans_.size());
    if (devices.empty() || plans.empty()) return std::numeric_limits<double>::infinity();
    const torch::Tensor enc = nets_[kCostTable]->forward(bank_.rows);
    return (kernel_loss(enc, devices) + overall_loss(enc, plans)).item<double>();
  }

  /**
   * REINFORCE on one batch of complete episodes of one task: every step's log-probability (over
   * all devices, as the authors' loss) weighted by its episode's whitened reward, plus the
   * entropy bonus. The logits are recomputed in torch from what each step saw.
   */
  void policy_update(const std::vector<SampledEpisode>& batch, const std::vector<float>& episode_reward) {
    const Task& task = setup_.tasks[static_cast<std::size_t>(batch.front().task)];
    const auto tables = static_cast<std::int64_t>(task.workload.tables.size());
    const auto devices = static_cast<std::int64_t>(task.topology.num_devices());
    std::vector<float> membership, empty, costs, rewards;  // [S, D, T], [S, D], [S, D, 3], [S]
    std::vector<std::int64_t> actions;
    for (std::size_t e = 0; e < batch.size(); ++e) {
      const SampledEpisode& s = batch[e];
      std::vector<int> device_of(static_cast<std::size_t>(tables), -1);
      for (std::size_t step = 0; step < s.actions.size(); ++step) {
        for (std::int64_t d = 0; d < devices; ++d) {
          bool any = false;
          for (std::int64_t t = 0; t < tables; ++t) {
            const bool on = device_of[static_cast<std::size_t>(t)] == d;
            membership.push_back(on ? 1.0f : 0.0f);
            any = any || on;
          }
          empty.push_back(any ? 0.0f : 1.0f);
          const auto& c = s.costs[step][static_cast<std::size_t>(d)];
          costs.insert(costs.end(), c.begin(), c.end());
        }
        actions.push_back(s.actions[step]);
        rewards.push_back(episode_reward[e]);
        device_of[static_cast<std::size_t>(s.episode.state().order()[step])] = s.actions[step];
      }
    }
    const auto steps = static_cast<std::int64_t>(actions.size());
    const torch::Tensor x = bank_.rows.narrow(0, bank_.offset[static_cast<std::size_t>(batch.front().task)], tables);
    const torch::Tensor enc = nets_[kPolicyTable]->forward(x);                                      // [T, 32]
    const torch::Tensor zero = nets_[kPolicyTable]->forward(torch::zeros({1, kNumTableFeatures}));  // [1, 32]
    const torch::Tensor m = torch::from_blob(membership.data(), {steps, devices, tables}, torch::kFloat);
    const torch::Tensor em = torch::from_blob(empty.data(), {steps, devices, 1}, torch::kFloat);
    const torch::Tensor e = torch::matmul(m, enc) + em * zero;  // [S, D, 32]
    const torch::Tensor c =
        nets_[kPolicyCost]->forward(torch::from_blob(costs.data(), {steps, devices, 3}, torch::kFloat));
    const torch::Tensor logits = nets_[kPolicyHead]->forward(torch::cat({e, c}, 2)).squeeze(2);  // [S, D]
    const torch::Tensor logp = torch::log_softmax(logits, 1);
    torch::Tensor r = torch::tensor(rewards);
    r = (r - r.mean()) / (r.std(/*unbiased=*/false) + 1e-8);
    const torch::Tensor chosen = logp.gather(1, torch::tensor(actions, torch::kLong).unsqueeze(1)).squeeze(1);
    update(-(chosen * r).mean() + o_.entropy_weight * (logp.exp() * logp).sum(1).mean());
    net_ = export_net();
  }

  /** N_RL policy updates, each on N_episode estimated-MDP episodes of one task; mean predicted step. */
  double train_rl(int it) {
    Rng rng(derive_seed(setup_.seed, 0x4e1f000ULL + static_cast<std::uint64_t>(it)));
    double predicted_total = 0.0;
    int predicted_count = 0;
    for (int b = 0; b < o_.rl_batches; ++b) {
      const int task_index = random_task(rng);
      std::vector<SampledEpisode> batch;
      std::vector<float> reward;  // minus the predicted step, per episode
      for (int e = 0; e < o_.rl_episodes; ++e) {
        SampledEpisode s = sample_episode(task_index, rng);
        if (!s.complete) continue;
        reward.push_back(o_.reward == DreamShardReward::kKernelHeads ? -s.episode.kernel_step_ms()
                                                                     : -s.episode.predicted_step_ms());
        predicted_total -= reward.back();
        ++predicted_count;
        batch.push_back(std::move(s));
      }
      if (batch.empty()) {
        ctx_.warn(concat("dreamshard: every episode of task '", setup_.tasks[static_cast<std::size_t>(task_index)].id,
                         "' ran out of memory; no update"));
        continue;
      }
      policy_update(batch, reward);
    }
    return predicted_count > 0 ? predicted_total / predicted_count : 0.0;
  }

  /**
   * The policy as the sharder runs it (arg-max) on the first min(N_collect, tasks) training tasks,
   * judged: the mean step, ms, or nothing when a task finds no room. Task k is judged on draw k
   * of a measured backend every iteration (iterations compare on the same lookups), and these
   * evaluations do not move the draws collect() uses, so `keep` changes which policy is written,
   * not the training.
   */
  std::optional<double> greedy_real_step(int it) {
    const std::size_t n = std::min(setup_.tasks.size(), static_cast<std::size_t>(o_.collect_episodes));
    double total = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
      DreamShardEpisode episode(net_, setup_.tasks[k]);
      if (!place_greedily(episode)) {
        ctx_.debug(concat("dreamshard: iteration ", it + 1, ": the arg-max plan of task '", setup_.tasks[k].id,
                          "' finds no room; not kept"));
        return std::nullopt;
      }
      const CostBreakdown breakdown = setup_.judge.judge(setup_.tasks[k], episode.state().plan(), k, ctx_);
      ++provenance_.real_evaluations;
      ++greedy_evaluations_;
      total += objective_value(breakdown, Objective::kStep);
    }
    ctx_.debug(concat("dreamshard: iteration ", it + 1, ": arg-max plans' mean step ", total / n, " ms"));
    return total / static_cast<double>(n);
  }

  /** After iteration `it`: judges the policy's arg-max plans and keeps it if they are the best so far. */
  void consider_for_keeping(int it) {
    const std::optional<double> step = greedy_real_step(it);
    if (step)
      provenance_.metrics["greedy_real_step_ms"] = *step;
    else
      provenance_.metrics.erase("greedy_real_step_ms");
    if (step && (!kept_ || *step < best_greedy_step_)) {
      best_greedy_step_ = *step;
      kept_iteration_ = it + 1;
      kept_ = export_net();
    }
    if (kept_) {
      provenance_.metrics["kept_iteration"] = kept_iteration_;
      provenance_.metrics["kept_greedy_real_step_ms"] = best_greedy_step_;
    }
  }

  /** The plain C++ networks, reading tables as this run normalises them. */
  DreamShardNet export_net() const {
    DreamShardNet net = nets_.export_net();
    net.features = scaling_;
    return net;
  }

  // ---- checkpoints ---------------------------------------------------------------------------

  void save() {
    DreamShardPolicy policy{kept_ ? *kept_ : export_net(), provenance_};
    const std::string dir = learn::checkpoint_dir(setup_.out);
    std::filesystem::create_directories(dir);
    torch::save(parameters_, dir + "/nets.pt.tmp");
    torch::save(optimizer_, dir + "/optimizer.pt.tmp");
    Json state = {{"iteration", iteration_},
                  {"real_evaluations", provenance_.real_evaluations},
                  {"env_steps", provenance_.env_steps},
                  {"wall_s", provenance_.wall_s},
                  {"buffers", buffers_json(devices_, plans_)}};
    state["greedy_evaluations"] = greedy_evaluations_;
    if (kept_) {
      state["kept"] = {{"iteration", kept_iteration_},
                       {"greedy_real_step_ms", best_greedy_step_},
                       {"policy", Json::parse(dreamshard_policy_json(policy))}};
    }
    std::filesystem::rename(dir + "/nets.pt.tmp", dir + "/nets.pt");
    std::filesystem::rename(dir + "/optimizer.pt.tmp", dir + "/optimizer.pt");
    learn::write_checkpoint_state(setup_.out, "dreamshard", provenance_.tasks_sha256, resumable_options(),
                                  std::move(state));
    write_dreamshard_policy(setup_.out, policy);
  }

  void resume() {
    const std::string dir = learn::checkpoint_dir(setup_.out);
    const Json state =
        learn::read_checkpoint_state(setup_.out, "dreamshard", provenance_.tasks_sha256, resumable_options());
    try {
      iteration_ = state.at("iteration").get<int>();
      provenance_.real_evaluations = state.at("real_evaluations").get<std::int64_t>();
      provenance_.env_steps = state.at("env_steps").get<std::int64_t>();
      provenance_.wall_s = state.at("wall_s").get<double>();
      read_buffers(state.at("buffers"), devices_, plans_);
      greedy_evaluations_ = state.value("greedy_evaluations", std::int64_t{0});
      if (state.contains("kept")) {
        kept_iteration_ = state.at("kept").at("iteration").get<int>();
        best_greedy_step_ = state.at("kept").at("greedy_real_step_ms").get<double>();
        kept_ = parse_dreamshard_policy(state.at("kept").at("policy").dump(), dir + "/state.json").net;
      }
    } catch (const Json::exception& e) {
      throw Error(concat(dir, "/state.json: corrupt checkpoint: ", e.what()));
    }
    std::vector<torch::Tensor> saved;
    torch::load(saved, dir + "/nets.pt");
    EMBSHARD_CHECK(saved.size() == parameters_.size(), dir, "/nets.pt: ", saved.size(), " tensors, expected ",
                   parameters_.size());
    learn::restore(parameters_, saved);
    torch::load(optimizer_, dir + "/optimizer.pt");
    provenance_.iterations = iteration_;
    ctx_.info(concat("dreamshard: resuming after iteration ", iteration_, " (", provenance_.real_evaluations,
                     " real evaluations so far)"));
  }

  /** The options a resumed run must share with its checkpoint: all but `iterations`, which a resume may extend. */
  [[nodiscard]] std::map<std::string, std::string> resumable_options() const {
    std::map<std::string, std::string> options = options_record(o_);
    options.erase("iterations");
    return options;
  }

  const PolicyTrainSetup& setup_;
  DreamShardTrainOptions o_;
  const Context& ctx_;
  FeatureScaler scaling_;  // how tables are normalised (also written to the policy)
  FeatureBank bank_;
  TorchNets nets_;
  std::vector<torch::Tensor> parameters_;  // of nets_, in one order (optimiser, checkpoints)
  torch::optim::Adam optimizer_;
  PolicyTraining provenance_;
  DreamShardNet net_;  // plain C++ copy of nets_, refreshed after each update
  std::vector<DeviceSample> devices_;
  std::vector<PlanSample> plans_;
  int iteration_ = 0;
  int cost_updates_ = 0;  // of the last iteration (train_cost)
  // keep = best: the policy written, the iteration it is from and its arg-max plans' mean step
  std::optional<DreamShardNet> kept_;
  int kept_iteration_ = 0;
  double best_greedy_step_ = 0.0;
  std::int64_t greedy_evaluations_ = 0;  // of real_evaluations, those of the arg-max plans
};

}  // namespace

const char* to_string(DreamShardKeep keep) { return keep == DreamShardKeep::kBest ? "best" : "last"; }

DreamShardKeep parse_dreamshard_keep(const std::string& name) {
  for (const DreamShardKeep k : {DreamShardKeep::kLast, DreamShardKeep::kBest}) {
    if (name == to_string(k)) return k;
  }
  throw Error(concat("unknown DreamShard keep '", name, "' (expected last or best)"));
}

const char* to_string(DreamShardReward reward) {
  return reward == DreamShardReward::kKernelHeads ? "kernels" : "overall";
}

DreamShardReward parse_dreamshard_reward(const std::string& name) {
  for (const DreamShardReward r : {DreamShardReward::kOverallHead, DreamShardReward::kKernelHeads}) {
    if (name == to_string(r)) return r;
  }
  throw Error(concat("unknown DreamShard reward '", name, "' (expected overall or kernels)"));
}

std::map<std::string, std::string> options_record(const DreamShardTrainOptions& o) {
  return {{"iterations", std::to_string(o.iterations)},
          {"collect", std::to_string(o.collect_episodes)},
          {"cost-steps", std::to_string(o.cost_steps)},
          {"cost-batch", std::to_string(o.batch)},
          {"rl-batches", std::to_string(o.rl_batches)},
          {"episodes", std::to_string(o.rl_episodes)},
          {"lr", concat(o.learning_rate)},
          {"entropy", concat(o.entropy_weight)},
          {"features", to_string(o.features)},
          {"cost-patience", std::to_string(o.cost_patience)},
          {"reward", to_string(o.reward)},
          {"keep", to_string(o.keep)}};
}

std::string find_error_in_options(const DreamShardTrainOptions& o) {
  if (o.iterations < 0) return "iterations must be ≥ 0";
  if (o.collect_episodes < 1) return "collect episodes must be ≥ 1 (the cost network needs real plans)";
  if (o.cost_steps < 0 || o.rl_batches < 0) return "cost steps and RL batches must be ≥ 0";
  if (o.batch < 1 || o.rl_episodes < 1) return "batch and episodes must be ≥ 1";
  if (!(o.learning_rate > 0) || !(o.entropy_weight >= 0)) return "learning rate must be > 0 and entropy weight ≥ 0";
  if (o.cost_patience < 0) return "cost patience must be ≥ 0 (0: the authors' fixed number of updates)";
  if (o.features != FeatureScaling::kPerTask && o.features != FeatureScaling::kTrainingSet) {
    return "features must be per_task or training_set";
  }
  if (o.reward != DreamShardReward::kOverallHead && o.reward != DreamShardReward::kKernelHeads) {
    return "reward must be overall or kernels";
  }
  if (o.keep != DreamShardKeep::kLast && o.keep != DreamShardKeep::kBest) return "keep must be last or best";
  return "";
}

std::string train_dreamshard(const PolicyTrainSetup& setup, const DreamShardTrainOptions& options, const Context& ctx) {
  if (const std::string problem = find_error_in_options(options); !problem.empty()) {
    throw Error("train dreamshard: " + problem);
  }
  EMBSHARD_CHECK(!setup.tasks.empty() && setup.tasks.size() == setup.task_paths.size(),
                 "train dreamshard: no training task");
  for (std::size_t i = 0; i < setup.tasks.size(); ++i) {
    const std::string problem = learn::why_no_plan_fits(setup.tasks[i]);
    EMBSHARD_CHECK(problem.empty(), "train dreamshard: ", setup.task_paths[i], ": ", problem);
  }
  EMBSHARD_CHECK(static_cast<bool>(setup.judge.judge), "train dreamshard: no judge");
  torch::set_num_threads(1);
  DreamShardTrainer trainer(setup, options, ctx);
  return trainer.run();
}

}  // namespace embshard
