// AutoShard's learner (autoshard_trainer.h): the run, V-trace updates of the policy and value
// heads, the cost head's updates from the ring of shard costs; and the public entry point.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "embshard/core/error.h"
#include "embshard/core/progress.h"
#include "learn/autoshard_trainer.h"
#include "learn/policy_common.h"
#include "learn/torch_nets.h"

namespace embshard {
namespace learn::autoshard {

Trainer::Trainer(const PolicyTrainSetup& setup, const AutoShardTrainOptions& options, const Context& ctx)
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

}  // namespace learn::autoshard

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
  learn::autoshard::Trainer trainer(setup, options, ctx);
  return trainer.run();
}

}  // namespace embshard
