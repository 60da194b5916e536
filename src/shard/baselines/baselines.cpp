// The papers' baseline sharders: `random` and `greedy` (refs-zha.md §5.1; papers 000 §D, 001
// §5.1, 004 §5). Table-wise placement only.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "embshard/core/error.h"
#include "embshard/data/random.h"
#include "shard/builtin_sharders.h"

namespace embshard::detail {
namespace {

// ---- random ------------------------------------------------------------------------------------

/** A uniformly random device per table, memory ignored (the papers'); `attempts` redraws. */
class RandomSharder final : public Sharder {
 public:
  explicit RandomSharder(int attempts) : attempts_(attempts) {}

  [[nodiscard]] ShardResult shard(const Task& task, CostModel*, const Context& ctx) const override {
    Rng rng(derive_seed(ctx.seed, 0x7a4d0));
    const auto n = static_cast<std::uint64_t>(task.topology.num_devices());
    ShardResult result;
    for (int attempt = 0; attempt < attempts_; ++attempt) {
      std::vector<int> devices;
      for (std::size_t t = 0; t < task.workload.tables.size(); ++t) {
        devices.push_back(static_cast<int>(rng.below(n)));
      }
      result.plan = table_wise_plan(task, devices);
      ++result.stats.plans_evaluated;
      result.reason = find_error_in_plan(task, result.plan);
      if (result.reason.empty()) return result;
    }
    result.status = ShardStatus::kInfeasible;
    result.reason = concat("no random draw of ", attempts_, " fits: ", result.reason);
    return result;
  }

 private:
  int attempts_;
};

// ---- greedy --------------------------------------------------------------------------------------

enum class Balance { kSize, kDim, kLookup, kSizeLookup, kSizeAndLookup };

Balance parse_balance(const std::string& name) {
  if (name == "size") return Balance::kSize;
  if (name == "dim") return Balance::kDim;
  if (name == "lookup") return Balance::kLookup;
  if (name == "size_lookup") return Balance::kSizeLookup;
  return Balance::kSizeAndLookup;
}

/**
 * A table's greedy cost: size (GB), dim, lookup = dim × pooling, size_lookup = dim × pooling ×
 * size (the papers' text), size_and_lookup = dim × pooling × log10(rows) (RecShard's definition,
 * and what the authors' code computes for "size-lookup").
 */
double table_cost(const TableSpec& t, Balance balance) {
  const double size_gb = static_cast<double>(t.size_bytes()) / 1e9;
  const double lookup = t.dim * t.stats.pooling_factor;
  switch (balance) {
    case Balance::kSize: return size_gb;
    case Balance::kDim: return t.dim;
    case Balance::kLookup: return lookup;
    case Balance::kSizeLookup: return lookup * size_gb;
    case Balance::kSizeAndLookup: return lookup * std::log10(static_cast<double>(t.num_rows()));
  }
  return 0.0;
}

/**
 * Largest cost first (ties: larger size, then larger index); each table onto the device, among
 * those whose memory still fits it, with the smallest cost sum (ties: smaller size sum, then the
 * lower device). A table no device fits makes the plan infeasible — or, with on_full=last_device
 * (the reference code's behaviour, for parity), goes to the last device regardless.
 */
class GreedySharder final : public Sharder {
 public:
  GreedySharder(Balance balance, bool dump_on_last) : balance_(balance), dump_on_last_(dump_on_last) {}

  [[nodiscard]] ShardResult shard(const Task& task, CostModel*, const Context&) const override {
    const auto& tables = task.workload.tables;
    const int n = task.topology.num_devices();
    std::vector<std::tuple<double, std::int64_t, std::size_t>> order;  // (cost, size, index)
    for (std::size_t t = 0; t < tables.size(); ++t) {
      order.emplace_back(table_cost(tables[t], balance_), tables[t].size_bytes(), t);
    }
    std::sort(order.begin(), order.end());
    std::vector<double> cost_sum(static_cast<std::size_t>(n), 0.0);
    std::vector<std::int64_t> size_sum(static_cast<std::size_t>(n), 0);
    std::vector<int> devices(tables.size(), -1);
    ShardResult result;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const auto& [cost, size, t] = *it;
      int best = -1;
      for (int d = 0; d < n; ++d) {
        if (size_sum[d] + size > task.topology.devices[d].hbm_bytes) continue;
        if (best < 0 || cost_sum[d] < cost_sum[best] ||
            (cost_sum[d] == cost_sum[best] && size_sum[d] < size_sum[best])) {
          best = d;
        }
      }
      if (best < 0 && !dump_on_last_) {
        result.status = ShardStatus::kInfeasible;
        result.reason = concat("table '", tables[t].name, "' (", size, " bytes) fits on no device");
        return result;
      }
      if (best < 0) best = n - 1;
      devices[t] = best;
      cost_sum[best] += cost;
      size_sum[best] += size;
    }
    result.plan = table_wise_plan(task, devices);
    result.stats.plans_evaluated = 1;
    if (const std::string problem = find_error_in_plan(task, result.plan); !problem.empty()) {
      result.status = ShardStatus::kInfeasible;  // on_full=last_device overfilled it
      result.reason = problem;
    }
    return result;
  }

 private:
  Balance balance_;
  bool dump_on_last_;
};

}  // namespace

void register_baselines(Registry<Sharder>& registry) {
  registry.add({"random", "a uniformly random device per table, memory ignored (the papers' baseline)",
                {{"attempts", ParamType::kInt, "1", 1, 1e6, {},
                  "draws until one fits memory; infeasible after that many"}}},
               [](const Params& p, const Context&) {
                 return std::make_unique<RandomSharder>(static_cast<int>(p.get_int("attempts")));
               });
  registry.add({"greedy", "the papers' greedy baselines: largest cost first onto the least-loaded device that fits",
                {{"balance", ParamType::kString, "lookup", {}, {},
                  {"size", "dim", "lookup", "size_lookup", "size_and_lookup"},
                  "table cost: size GB | dim | dim×pooling | dim×pooling×size | dim×pooling×log10(rows)"},
                 {"on_full", ParamType::kString, "infeasible", {}, {}, {"infeasible", "last_device"},
                  "a table no device fits: report infeasible, or put it on the last device (reference-code parity)"}}},
               [](const Params& p, const Context&) {
                 return std::make_unique<GreedySharder>(parse_balance(p.get_string("balance")),
                                                        p.get_string("on_full") == "last_device");
               });
}

}  // namespace embshard::detail
