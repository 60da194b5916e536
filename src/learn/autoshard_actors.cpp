// AutoShard's actors (autoshard_trainer.h): the environment streams, each unroll made with the
// weights one update behind the learner, and the judge's verdict on every finished plan.
#include <algorithm>
#include <cmath>
#include <mutex>

#include "embshard/core/error.h"
#include "learn/autoshard_trainer.h"
#include "learn/policy_common.h"

namespace embshard::learn::autoshard {

std::mutex& measurement_mutex() {
  static std::mutex m;
  return m;
}

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

}  // namespace embshard::learn::autoshard
