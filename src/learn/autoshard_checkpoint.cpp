// AutoShard's policy file and checkpoints (autoshard_trainer.h): the networks, the optimiser,
// the counters, the cost ring and every stream's state, so that a resumed run equals an
// uninterrupted one.
#include <chrono>
#include <filesystem>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "learn/autoshard_trainer.h"
#include "learn/policy_common.h"

namespace embshard::learn::autoshard {
namespace {

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

/**
 * The options a resumed run must share with its checkpoint: all but `env-steps` (a resume may
 * extend the run) and `checkpoint-every`, and the seed (every unroll's draws derive from it).
 */
std::map<std::string, std::string> resumable_options(const AutoShardTrainOptions& o, std::uint64_t seed) {
  std::map<std::string, std::string> options = options_record(o);
  options.erase("env-steps");
  options.erase("checkpoint-every");
  options["seed"] = std::to_string(seed);
  return options;
}

}  // namespace

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
  Json state = {{"updates", updates_},
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
  write_checkpoint_state(setup_.out, "autoshard", provenance_.tasks_sha256, resumable_options(o_, setup_.seed),
                         std::move(state));
}

bool Trainer::load_checkpoint() {
  const std::string dir = checkpoint_dir(setup_.out);
  const std::string path = dir + "/state.json";
  const Json s =
      read_checkpoint_state(setup_.out, "autoshard", provenance_.tasks_sha256, resumable_options(o_, setup_.seed));
  try {
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
    EMBSHARD_THROW(path, ": corrupt checkpoint: ", e.what());
  }
  torch::load(net_, dir + "/net.pt");
  torch::load(*optimizer_, dir + "/optimizer.pt");
  return true;
}
}  // namespace embshard::learn::autoshard
