// The `autoshard` sharder: AutoShard's trained LSTM policy run greedily (policy/autoshard_policy.h).
//
// Parameters: `policy=FILE` (required) and `hardware=match|any`. The policy is read once, when
// the sharder is built, and cached with it. Each table, in the order the policy's cost head
// gives (single-table cost, descending), goes to the device with the highest logit among those
// whose HBM still holds it. AutoShard's own policy has no such mask (its training penalises an
// overfull plan instead); embshard adds it so that a plan is always valid, and answers
// kInfeasible naming the table when no device holds it.
#include <memory>

#include "embshard/core/error.h"
#include "embshard/policy/autoshard_policy.h"
#include "shard/builtin_sharders.h"

namespace embshard::detail {
namespace {

class AutoShardSharder final : public Sharder {
 public:
  AutoShardSharder(std::shared_ptr<const AutoShardPolicy> policy, std::string policy_path, bool match_hardware)
      : policy_(std::move(policy)), policy_path_(std::move(policy_path)), match_hardware_(match_hardware) {}

  [[nodiscard]] ShardResult shard(const Task& task, CostModel* /*cost*/, const Context& /*ctx*/) const override {
    const AutoShardPolicy& policy = *policy_;
    if (match_hardware_) check_policy_hardware("autoshard", policy_path_, policy.training, task);
    const AutoShardScorer scorer(policy.net, autoshard_inputs(policy.features, task));
    PlacementState state(task, scorer.order());
    LstmState lstm = policy.net.lstm.zero_state();
    std::vector<float> logits(static_cast<std::size_t>(state.num_devices()));
    ShardResult result;
    while (!state.done()) {
      const std::vector<int> legal = state.legal_devices();
      if (legal.empty()) {
        result.status = ShardStatus::kInfeasible;
        result.reason = state.no_room_reason();
        return result;
      }
      scorer.step(scorer.observe(state), state, lstm, logits, nullptr);
      state.place(argmax_of(logits, legal));
      ++result.stats.nodes_visited;
    }
    result.plan = state.plan();
    return result;
  }

 private:
  std::shared_ptr<const AutoShardPolicy> policy_;
  std::string policy_path_;  ///< the policy file, named in messages
  bool match_hardware_;      ///< refuse a task on hardware the policy was not trained for
};

}  // namespace

void register_autoshard(Registry<Sharder>& registry) {
  registry.add(
      {"autoshard",
       "AutoShard's LSTM policy (IMPALA-trained with `embshard train autoshard`), greedy: each table in "
       "the cost head's order goes to the highest-scoring device that holds it",
       {{"policy", ParamType::kString, "", {}, {}, {}, "policy file from `embshard train autoshard` (required)"},
        hardware_param("a policy")}},
      [](const Params& p, const Context&) {
        const std::string path = p.get_string("policy");
        EMBSHARD_CHECK(!path.empty(),
                       "autoshard: the parameter policy=FILE is required (a policy from "
                       "`embshard train autoshard`)");
        return std::make_unique<AutoShardSharder>(std::make_shared<const AutoShardPolicy>(read_autoshard_policy(path)),
                                                  path, p.get_string("hardware") == "match");
      });
}

}  // namespace embshard::detail
