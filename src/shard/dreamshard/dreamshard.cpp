// The `dreamshard` sharder: DreamShard's trained policy, greedy (paper 002 §3.3; refs-zha.md §5.3).
#include <memory>

#include "embshard/core/error.h"
#include "embshard/policy/dreamshard_policy.h"
#include "shard/builtin_sharders.h"

namespace embshard::detail {
namespace {

/**
 * Tables in the cost network's order, each onto the legal device of the highest logit. No
 * hardware is needed: every cost is the policy file's networks' prediction. A table no device
 * holds any more makes the task infeasible (reason names it), never a loop.
 */
class DreamShardSharder final : public Sharder {
 public:
  DreamShardSharder(std::shared_ptr<const DreamShardPolicy> policy, std::string policy_path, bool match_hardware)
      : policy_(std::move(policy)), policy_path_(std::move(policy_path)), match_hardware_(match_hardware) {}

  [[nodiscard]] ShardResult shard(const Task& task, CostModel*, const Context&) const override {
    ShardResult result;
    if (match_hardware_) check_policy_hardware("dreamshard", policy_path_, policy_->training, task);
    DreamShardEpisode episode(policy_->net, task);
    if (!place_greedily(episode)) {
      result.status = ShardStatus::kInfeasible;
      result.reason = episode.state().no_room_reason();
      return result;
    }
    result.stats.nodes_visited = static_cast<std::int64_t>(task.workload.tables.size());
    result.plan = episode.state().plan();
    result.stats.plans_evaluated = 1;
    return result;
  }

 private:
  std::shared_ptr<const DreamShardPolicy> policy_;
  std::string policy_path_;  ///< the policy file, named in messages
  bool match_hardware_;      ///< refuse a task on hardware the policy was not trained for
};

}  // namespace

void register_dreamshard(Registry<Sharder>& registry) {
  registry.add(
      {"dreamshard",
       "DreamShard's trained placement policy (embshard train dreamshard), greedy over legal devices",
       {{"policy", ParamType::kString, "", {}, {}, {}, "the policy file written by `embshard train dreamshard`"},
        hardware_param("a policy")}},
      [](const Params& p, const Context&) {
        const std::string path = p.get_string("policy");
        EMBSHARD_CHECK(!path.empty(), "dreamshard: needs policy=FILE (train one with `embshard train dreamshard`)");
        return std::make_unique<DreamShardSharder>(
            std::make_shared<const DreamShardPolicy>(read_dreamshard_policy(path)), path,
            p.get_string("hardware") == "match");
      });
}

}  // namespace embshard::detail
