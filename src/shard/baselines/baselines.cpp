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

enum class Balance { kSize, kDim, kLookup, kSizeLookup, kSizeAndLookup, kLookupPresent, kSizeAndLookupPresent };

Balance parse_balance(const std::string& name) {
  if (name == "size") return Balance::kSize;
  if (name == "dim") return Balance::kDim;
  if (name == "lookup") return Balance::kLookup;
  if (name == "size_lookup") return Balance::kSizeLookup;
  if (name == "lookup_present") return Balance::kLookupPresent;
  if (name == "size_and_lookup_present") return Balance::kSizeAndLookupPresent;
  return Balance::kSizeAndLookup;
}

/**
 * A table's greedy cost: size (GB), dim, lookup = dim × pooling, size_lookup = dim × pooling ×
 * size (the papers' text), size_and_lookup = dim × pooling × log10(rows) (RecShard's definition,
 * and what the authors' code computes for "size-lookup"). pooling is the statistics' mean over
 * the batch; lookup_present and size_and_lookup_present use instead the mean over the samples
 * that have the feature (pooling_factor / coverage): paper 004's "average pooling factor", which
 * its Lookup and Size-and-Lookup baselines use without the coverage (§4.1, §5). With
 * `integer_pooling` the pooling factor is truncated to an integer first, as DreamShard's and
 * AutoShard's code does (refs-zha.md §5.1: about 40% of DLRM tables then cost 0 by lookup).
 */
double table_cost(const TableSpec& t, Balance balance, bool integer_pooling) {
  const double size_gb = static_cast<double>(t.size_bytes()) / 1e9;
  const double pooling = integer_pooling ? std::floor(t.stats.pooling_factor) : t.stats.pooling_factor;
  const double lookup = t.dim * pooling;
  const double present = t.stats.coverage > 0 ? lookup / t.stats.coverage : lookup;
  switch (balance) {
    case Balance::kSize: return size_gb;
    case Balance::kDim: return t.dim;
    case Balance::kLookup: return lookup;
    case Balance::kSizeLookup: return lookup * size_gb;
    case Balance::kSizeAndLookup: return lookup * std::log10(static_cast<double>(t.num_rows()));
    case Balance::kLookupPresent: return present;
    case Balance::kSizeAndLookupPresent: return present * std::log10(static_cast<double>(t.num_rows()));
  }
  return 0.0;
}

/** What the greedy does with a table that no device's HBM still holds. */
enum class OnFull { kInfeasible, kLastDevice, kUvm };

/**
 * Largest cost first (ties: larger size, then larger index); each table onto the device, among
 * those whose HBM still fits it, with the smallest cost sum (ties: smaller size sum, then the
 * lower device). A table no device's HBM fits makes the plan infeasible — or, with
 * on_full=last_device (the reference code's behaviour, for parity), goes to the last device
 * regardless — or, with on_full=uvm (RecShard's baselines, paper 004 §5: "when GPU HBM has been
 * saturated, the heuristic then allocates the remaining EMBs in UVM"), goes wholly to host memory
 * (hbm_rows = 0) on the device chosen by the same rule among those whose UVM budget still holds
 * it (ties: smaller HBM + UVM sum); its cost counts in that device's sum like any other. Later,
 * smaller tables still go to HBM where it holds them. on_full=uvm needs a task that allows UVM.
 */
class GreedySharder final : public Sharder {
 public:
  GreedySharder(Balance balance, OnFull on_full, bool integer_pooling)
      : balance_(balance), on_full_(on_full), integer_pooling_(integer_pooling) {}

  [[nodiscard]] ShardResult shard(const Task& task, CostModel*, const Context&) const override {
    const auto& tables = task.workload.tables;
    const int n = task.topology.num_devices();
    std::vector<std::tuple<double, std::int64_t, std::size_t>> order;  // (cost, size, index)
    for (std::size_t t = 0; t < tables.size(); ++t) {
      order.emplace_back(table_cost(tables[t], balance_, integer_pooling_), tables[t].size_bytes(), t);
    }
    std::sort(order.begin(), order.end());
    std::vector<double> cost_sum(static_cast<std::size_t>(n), 0.0);
    std::vector<std::int64_t> size_sum(static_cast<std::size_t>(n), 0);
    std::vector<std::int64_t> uvm_sum(static_cast<std::size_t>(n), 0);
    std::vector<int> devices(tables.size(), -1);
    std::vector<bool> in_uvm(tables.size(), false);
    ShardResult result;
    if (on_full_ == OnFull::kUvm && !task.constraints.allow_uvm) {
      result.status = ShardStatus::kInfeasible;
      result.reason = "greedy on_full=uvm: the task does not allow UVM (constraints.allow_uvm)";
      return result;
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const auto& [cost, size, t] = *it;
      const std::int64_t bytes = size;  // lambdas cannot capture a structured binding (C++20, clang 14)
      // The device `fits` accepts with the smallest cost sum (ties: smaller `load`, then lower id).
      const auto pick = [&](const auto& fits, const auto& load) {
        int best = -1;
        for (int d = 0; d < n; ++d) {
          if (!fits(d)) continue;
          if (best < 0 || cost_sum[d] < cost_sum[best] || (cost_sum[d] == cost_sum[best] && load(d) < load(best))) {
            best = d;
          }
        }
        return best;
      };
      int best = pick([&](int d) { return size_sum[d] + bytes <= task.topology.devices[d].hbm_bytes; },
                      [&](int d) { return size_sum[d]; });
      if (best < 0 && on_full_ == OnFull::kUvm) {
        best = pick([&](int d) { return uvm_sum[d] + bytes <= task.topology.devices[d].uvm_bytes; },
                    [&](int d) { return size_sum[d] + uvm_sum[d]; });
        if (best >= 0) {
          devices[t] = best;
          in_uvm[t] = true;
          cost_sum[best] += cost;
          uvm_sum[best] += size;
          continue;
        }
      }
      if (best < 0 && on_full_ != OnFull::kLastDevice) {
        result.status = ShardStatus::kInfeasible;
        result.reason = concat("table '", tables[t].name, "' (", size, " bytes) fits on no device",
                               on_full_ == OnFull::kUvm ? "'s HBM or UVM" : "");
        return result;
      }
      if (best < 0) best = n - 1;
      devices[t] = best;
      cost_sum[best] += cost;
      size_sum[best] += size;
    }
    result.plan = table_wise_plan(task, devices);
    for (std::size_t t = 0; t < tables.size(); ++t) {
      if (in_uvm[t]) result.plan.tables[t].shards.at(0).hbm_rows = 0;
    }
    result.stats.plans_evaluated = 1;
    if (const std::string problem = find_error_in_plan(task, result.plan); !problem.empty()) {
      result.status = ShardStatus::kInfeasible;  // on_full=last_device overfilled it
      result.reason = problem;
    }
    return result;
  }

 private:
  Balance balance_;
  OnFull on_full_;
  bool integer_pooling_ = false;
};

}  // namespace

void register_baselines(Registry<Sharder>& registry) {
  registry.add(
      {"random",
       "a uniformly random device per table, memory ignored (the papers' baseline)",
       {{"attempts", ParamType::kInt, "1", 1, 1e6, {}, "draws until one fits memory; infeasible after that many"}}},
      [](const Params& p, const Context&) {
        return std::make_unique<RandomSharder>(static_cast<int>(p.get_int("attempts")));
      });
  registry.add(
      {"greedy",
       "the papers' greedy baselines: largest cost first onto the least-loaded device that fits",
       {{"balance",
         ParamType::kString,
         "lookup",
         {},
         {},
         {"size", "dim", "lookup", "size_lookup", "size_and_lookup", "lookup_present", "size_and_lookup_present"},
         "table cost: size GB | dim | dim×pooling | dim×pooling×size | dim×pooling×log10(rows) | "
         "the last two with pooling per sample that has the feature (paper 004's baselines)"},
        {"on_full",
         ParamType::kString,
         "infeasible",
         {},
         {},
         {"infeasible", "last_device", "uvm"},
         "a table no device's HBM fits: report infeasible, put it on the last device (reference-code "
         "parity), or put it wholly in UVM by the same rule (RecShard's baselines)"},
        {"pooling",
         ParamType::kString,
         "float",
         {},
         {},
         {"float", "int"},
         "the pooling factor as measured, or truncated to an integer as DreamShard's and AutoShard's code does"}}},
      [](const Params& p, const Context&) {
        const std::string on_full = p.get_string("on_full");
        return std::make_unique<GreedySharder>(parse_balance(p.get_string("balance")),
                                               on_full == "last_device" ? OnFull::kLastDevice
                                               : on_full == "uvm"       ? OnFull::kUvm
                                                                        : OnFull::kInfeasible,
                                               p.get_string("pooling") == "int");
      });
}

}  // namespace embshard::detail
