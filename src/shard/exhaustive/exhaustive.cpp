// `exhaustive`: every table-wise plan of a tiny task, judged by the cost model — the exact
// reference the search sharders and tests are compared with.
#include <functional>
#include <limits>

#include "embshard/core/error.h"
#include "shard/builtin_sharders.h"

namespace embshard::detail {
namespace {

constexpr int kMaxTables = 10;
constexpr int kMaxDevices = 4;

/**
 * Depth-first over tables in task order, each onto every device whose memory still fits it;
 * with interchangeable devices a table may open at most one new device (so each partition is
 * visited once). Complete plans are scored by the cost model; the lowest objective wins (the
 * highest for `balance`), ties keep the first found.
 */
class ExhaustiveSharder final : public Sharder {
 public:
  explicit ExhaustiveSharder(Objective objective) : objective_(objective) {}
  [[nodiscard]] bool uses_cost_model() const override { return true; }

  [[nodiscard]] ShardResult shard(const Task& task, CostModel* cost, const Context& ctx) const override {
    const auto& tables = task.workload.tables;
    const int n = task.topology.num_devices();
    EMBSHARD_CHECK(static_cast<int>(tables.size()) <= kMaxTables && n <= kMaxDevices,
                   "exhaustive: only for tiny tasks (at most ", kMaxTables, " tables on ", kMaxDevices,
                   " devices), this one has ", tables.size(), " tables on ", n);
    const bool symmetric = task.topology.devices_interchangeable();
    const double sign = objective_ == Objective::kBalance ? -1.0 : 1.0;
    std::vector<int> devices(tables.size(), 0);
    std::vector<std::int64_t> used(static_cast<std::size_t>(n), 0);
    ShardResult result;
    result.status = ShardStatus::kInfeasible;
    result.reason = "no table-wise plan fits the devices' memory";
    double best = std::numeric_limits<double>::infinity();
    bool out_of_time = false;
    std::function<void(std::size_t, int)> visit = [&](std::size_t t, int opened) {
      ++result.stats.nodes_visited;
      if (out_of_time || (out_of_time = ctx.past_deadline())) return;
      if (t == tables.size()) {
        Plan plan = table_wise_plan(task, devices);
        const double value = sign * objective_value(cost->estimate(task, plan, ctx), objective_);
        ++result.stats.plans_evaluated;
        if (value < best) {
          best = value;
          result.plan = std::move(plan);
          result.status = ShardStatus::kOk;
          result.reason.clear();
        }
        return;
      }
      const int limit = symmetric ? std::min(n, opened + 1) : n;
      for (int d = 0; d < limit; ++d) {
        if (used[d] + tables[t].size_bytes() > task.topology.devices[d].hbm_bytes) continue;
        used[d] += tables[t].size_bytes();
        devices[t] = d;
        visit(t + 1, std::max(opened, d + 1));
        used[d] -= tables[t].size_bytes();
      }
    };
    visit(0, 0);
    if (out_of_time) {
      result.status = ShardStatus::kTimeLimit;
      result.reason = "deadline reached before every plan was scored";
    }
    return result;
  }

 private:
  Objective objective_;
};

}  // namespace

void register_exhaustive(Registry<Sharder>& registry) {
  registry.add({"exhaustive",
                "every table-wise plan of a tiny task (<= 10 tables, <= 4 devices) under the cost model",
                {{"objective",
                  ParamType::kString,
                  "step",
                  {},
                  {},
                  {"step", "max_sum", "balance"},
                  "what the best plan minimises (balance: maximises)"}}},
               [](const Params& p, const Context&) {
                 return std::make_unique<ExhaustiveSharder>(parse_objective(p.get_string("objective")));
               });
}

}  // namespace embshard::detail
