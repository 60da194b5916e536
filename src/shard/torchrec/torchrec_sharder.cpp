// The `torchrec` sharder: TorchRec's EmbeddingShardingPlanner (§1 of the digest
// /work/shared/docs/references/torchrec-planner.md) in C++. Formulas and constants follow
// pytorch/torchrec commit a48cef79 (2025-10-04, version 1.4.0a0). This file holds the proposers
// (§1.9), the best-plan choice (§1.10) and the registration; the estimators and partitioners live
// in torchrec_estimators.cpp and torchrec_partitioners.cpp (semantics in torchrec_planner.h).
#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_set>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "shard/builtin_sharders.h"
#include "shard/torchrec/torchrec_planner.h"

namespace embshard::detail {
namespace torchrec {
namespace {

/** Option indices per table (into the enumerated list). */
using Choice = std::vector<int>;

/**
 * A proposal's cache key: two independent 64-bit hashes of its option indices. TorchRec keys its
 * cache by the whole tuple; at 20,000 tables × 10^5 proposals that is gigabytes, while two
 * colliding 128-bit keys among 10^6 proposals have a chance below 10^-26.
 */
struct ChoiceKey {
  std::uint64_t a = 0, b = 0;
  friend bool operator==(const ChoiceKey&, const ChoiceKey&) = default;
};
struct ChoiceKeyHash {
  std::size_t operator()(const ChoiceKey& k) const {
    return static_cast<std::size_t>(k.a ^ (k.b * 0x9e3779b97f4a7c15ULL));
  }
};

/** splitmix64's finaliser: a bijective mix of 64 bits. */
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

ChoiceKey key_of(const Choice& choice) {
  ChoiceKey k{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};
  for (const int i : choice) {
    k.a = mix64(k.a ^ static_cast<std::uint32_t>(i));
    k.b = mix64(k.b + 0x632be59bd9b4e019ULL * (static_cast<std::uint64_t>(static_cast<std::uint32_t>(i)) + 1));
  }
  return k;
}
using OptionsByTable = std::vector<std::vector<ShardingOption>>;

/** Per table, option indices sorted by score: max shard perf (use_depth) or summed perf (§1.9). */
std::vector<std::vector<int>> options_by_score(const OptionsByTable& options, bool use_depth) {
  std::vector<std::vector<int>> sorted(options.size());
  for (std::size_t t = 0; t < options.size(); ++t) {
    sorted[t].resize(options[t].size());
    std::iota(sorted[t].begin(), sorted[t].end(), 0);
    const auto score = [&](int i) { return use_depth ? options[t][i].perf_max_ms() : options[t][i].perf_sum_ms(); };
    std::stable_sort(sorted[t].begin(), sorted[t].end(), [&](int a, int b) { return score(a) < score(b); });
  }
  return sorted;
}

/** GreedyProposer's storage tuple of an option: (max HBM, sum HBM, max DDR, sum DDR) (§1.9). */
using StorageKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;

StorageKey storage_key(const ShardingOption& o) {
  std::int64_t max_hbm = 0;
  std::int64_t max_ddr = 0;
  for (const auto& s : o.shards) {
    max_hbm = std::max(max_hbm, s.storage.hbm_bytes);
    max_ddr = std::max(max_ddr, s.storage.ddr_bytes);
  }
  return {max_hbm, o.hbm_sum_bytes(), max_ddr, o.ddr_sum_bytes()};
}

/** Runs proposals through the partitioner and keeps the lowest rating (§1.10). */
class PlanSearch {
 public:
  PlanSearch(const Task& task, const TorchrecTopology& topo, const OptionsByTable& options,
             const PlannerOptions& planner, std::optional<std::chrono::steady_clock::time_point> deadline)
      : task_(task), topo_(topo), options_(options), planner_(planner), deadline_(deadline) {}

  /** Partitions and rates `choice` unless seen before; returns the rating (or none). */
  std::optional<double> try_proposal(const Choice& choice) {
    if (!seen_.insert(key_of(choice)).second) return std::nullopt;
    ++proposals_;
    std::vector<const ShardingOption*> proposal;
    for (std::size_t t = 0; t < choice.size(); ++t) proposal.push_back(&options_[t][choice[t]]);
    PartitionOutcome outcome = planner_.partitioner == PartitionerKind::kGreedy
                                   ? greedy_partition(proposal, task_, topo_, false)
                                   : memory_balanced_partition(proposal, task_, topo_);
    if (!outcome.ok) {
      if (first_failure_.empty()) first_failure_ = outcome.failure;
      return std::nullopt;
    }
    ++plans_rated_;
    const double rating = rate_partition(outcome.partition);
    if (!best_rating_ || rating < *best_rating_) {
      best_rating_ = rating;
      best_plan_ = to_plan(task_, proposal, outcome.partition);
    }
    return rating;
  }

  /** Past the planner's `time_ms` or the context's deadline: no more proposals. */
  [[nodiscard]] bool out_of_time() const { return deadline_ && std::chrono::steady_clock::now() >= *deadline_; }
  [[nodiscard]] bool found() const { return best_rating_.has_value(); }
  [[nodiscard]] ShardResult result() const;
  /** Whether even each table's smallest-HBM option sums above all ranks' HBM (§1.10). */
  [[nodiscard]] bool storage_shortfall() const;

 private:
  const Task& task_;
  const TorchrecTopology& topo_;
  const OptionsByTable& options_;
  const PlannerOptions& planner_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  std::unordered_set<ChoiceKey, ChoiceKeyHash> seen_;
  std::optional<double> best_rating_;
  Plan best_plan_;
  std::string first_failure_;
  std::int64_t proposals_ = 0;
  std::int64_t plans_rated_ = 0;
};

bool PlanSearch::storage_shortfall() const {
  std::int64_t smallest_total = 0;
  for (const auto& table_options : options_) {
    std::int64_t smallest = -1;
    for (const ShardingOption& o : table_options) {
      if (smallest < 0 || o.hbm_sum_bytes() < smallest) smallest = o.hbm_sum_bytes();
    }
    smallest_total += std::max<std::int64_t>(smallest, 0);
  }
  std::int64_t capacity = 0;
  for (std::int64_t cap : topo_.hbm_cap_bytes) capacity += cap;
  return smallest_total > capacity;
}

ShardResult PlanSearch::result() const {
  ShardResult r;
  r.stats.plans_evaluated = plans_rated_;
  r.stats.nodes_visited = proposals_;
  if (best_rating_) {  // past the deadline: the best plan so far, as TorchRec's timeout returns it
    r.plan = best_plan_;
    if (out_of_time()) r.stats.solver = concat("stopped proposing at the deadline after ", proposals_, " proposals");
    return r;
  }
  r.status = out_of_time() ? ShardStatus::kTimeLimit : ShardStatus::kInfeasible;
  r.reason = concat("PlannerError (", storage_shortfall() ? "INSUFFICIENT_STORAGE" : "STRICT_CONSTRAINTS",
                    "): none of ", proposals_, " proposals partitions; the first failed at ", first_failure_);
  return r;
}

/** GridSearchProposer (§1.9): every combination when there are at most 10,000. */
void run_grid_search(const OptionsByTable& options, PlanSearch& search) {
  double combinations = 1.0;
  for (const auto& o : options) combinations *= static_cast<double>(o.size());
  if (combinations > static_cast<double>(kMaxGridProposals)) return;
  const auto sorted = options_by_score(options, true);
  Choice position(options.size(), 0);
  while (!search.out_of_time()) {
    Choice choice(options.size());
    for (std::size_t t = 0; t < options.size(); ++t) choice[t] = sorted[t][position[t]];
    (void)search.try_proposal(choice);
    std::size_t t = 0;
    for (; t < options.size() && ++position[t] == static_cast<int>(options[t].size()); ++t) {
      position[t] = 0;
    }
    if (t == options.size()) return;
  }
}

/**
 * GreedyProposer (§1.9): start from each table's best option; after every proposal advance the
 * table whose current option has the largest storage tuple (first table on ties) to its next
 * option; stop when none can advance or, with a threshold, after more than that many ratings in a
 * row that do not improve.
 */
void run_greedy_proposer(const OptionsByTable& options, bool use_depth, int threshold, PlanSearch& search) {
  const auto sorted = options_by_score(options, use_depth);
  std::vector<std::vector<StorageKey>> keys(options.size());
  for (std::size_t t = 0; t < options.size(); ++t) {
    for (const ShardingOption& o : options[t]) keys[t].push_back(storage_key(o));
  }
  std::vector<int> position(options.size(), 0);
  std::optional<double> best;
  int inferior = 0;
  while (!search.out_of_time()) {
    Choice choice(options.size());
    for (std::size_t t = 0; t < options.size(); ++t) choice[t] = sorted[t][position[t]];
    if (const auto rating = search.try_proposal(choice); threshold > 0 && rating) {
      ++inferior;
      if (!best || *rating < *best) best = rating, inferior = 0;
      if (inferior > threshold) return;
    }
    std::optional<std::size_t> largest;
    StorageKey largest_key{};
    for (std::size_t t = 0; t < options.size(); ++t) {
      if (position[t] + 1 >= static_cast<int>(options[t].size())) continue;
      const StorageKey& key = keys[t][choice[t]];
      if (!largest || key > largest_key) largest = t, largest_key = key;
    }
    if (!largest) return;
    ++position[*largest];
  }
}

/** UniformProposer (§1.9): per sharding type every table has, each table's best option of it. */
void run_uniform_proposer(const OptionsByTable& options, PlanSearch& search) {
  for (ShardingType type : {ShardingType::kDataParallel, ShardingType::kTableWise, ShardingType::kColumnWise,
                            ShardingType::kRowWise, ShardingType::kTableRowWise}) {
    Choice choice(options.size(), -1);
    for (std::size_t t = 0; t < options.size(); ++t) {
      for (int i = 0; i < static_cast<int>(options[t].size()); ++i) {
        if (options[t][i].type != type) continue;
        if (choice[t] < 0 || options[t][i].perf_sum_ms() < options[t][choice[t]].perf_sum_ms()) {
          choice[t] = i;
        }
      }
    }
    if (std::find(choice.begin(), choice.end(), -1) != choice.end() || search.out_of_time()) continue;
    (void)search.try_proposal(choice);
  }
}

/** "" or why TorchRec's reservation leaves a device no HBM (INSUFFICIENT_STORAGE, §1.7). */
std::string find_reservation_error(const TorchrecTopology& topo) {
  for (std::size_t r = 0; r < topo.hbm_cap_bytes.size(); ++r) {
    if (topo.hbm_cap_bytes[r] < 0) {
      return concat("PlannerError: the storage reservation (percentage and KJT estimate) exceeds ",
                    "the HBM of device ", r);
    }
  }
  return "";
}

/** Whether some option of a table has every shard within the largest rank's free HBM and DDR. */
bool has_placeable_option(const std::vector<ShardingOption>& table_options, std::int64_t hbm_bytes,
                          std::int64_t ddr_bytes) {
  return std::any_of(table_options.begin(), table_options.end(), [&](const ShardingOption& o) {
    const StorageKey key = storage_key(o);
    return std::get<0>(key) <= hbm_bytes && std::get<2>(key) <= ddr_bytes;
  });
}

/** "" or the first table none of whose options fits even an empty rank (names the table). */
std::string find_unplaceable_table(const Task& task, const OptionsByTable& options, const TorchrecTopology& topo) {
  const std::int64_t hbm = *std::max_element(topo.hbm_cap_bytes.begin(), topo.hbm_cap_bytes.end());
  const std::int64_t ddr = *std::max_element(topo.ddr_cap_bytes.begin(), topo.ddr_cap_bytes.end());
  for (std::size_t t = 0; t < options.size(); ++t) {
    if (has_placeable_option(options[t], hbm, ddr)) continue;
    if (options[t].empty())
      return concat("PlannerError: table '", task.workload.tables[t].name,
                    "' has no option: its constraints allow no sharding type the task allows");
    std::int64_t smallest_hbm = -1;
    for (const ShardingOption& o : options[t]) {
      const std::int64_t need = std::get<0>(storage_key(o));
      if (smallest_hbm < 0 || need < smallest_hbm) smallest_hbm = need;
    }
    return concat("PlannerError: table '", task.workload.tables[t].name,
                  "' fits no rank in any allowed option: its smallest option needs ", smallest_hbm,
                  " HBM bytes on one rank, a rank has at most ", hbm, " after the reservation");
  }
  return "";
}

/**
 * About how many bytes the enumerated options take: TorchRec makes a shard per rank for every
 * row-wise and data-parallel option and per local rank for table-row-wise ones, so at thousands
 * of ranks and tables they are gigabytes (checked before enumerating: an error with the estimate,
 * never an allocation failure).
 */
std::uint64_t options_bytes(const Task& task, const TorchrecTopology& topo, const PlannerOptions& options) {
  double shards = 0.0;
  for (const TableSpec& table : task.workload.tables) {
    const int min_partition =
        table.constraints.min_partition > 0 ? table.constraints.min_partition : options.min_partition;
    for (ShardingType type : allowed_sharding_types(task.constraints)) {
      if (!table.allows(type)) continue;
      const double per_option = type == ShardingType::kRowWise || type == ShardingType::kDataParallel ? topo.world_size
                                : type == ShardingType::kTableRowWise ? topo.local_world_size
                                : type == ShardingType::kColumnWise
                                    ? table.dim / column_block_width(table.dim, min_partition)
                                    : 1;
      shards += per_option * static_cast<double>(allowed_kernels(task.constraints, type).size());
    }
  }
  return static_cast<std::uint64_t>(shards * static_cast<double>(sizeof(OptionShard) + sizeof(void*)));
}

class TorchrecSharder final : public Sharder {
 public:
  explicit TorchrecSharder(PlannerOptions options) : options_(options) {}

  [[nodiscard]] ShardResult shard(const Task& task, CostModel*, const Context& ctx) const override {
    const TorchrecTopology topo = make_torchrec_topology(task, options_);
    ShardResult infeasible;
    infeasible.status = ShardStatus::kInfeasible;
    if (infeasible.reason = find_reservation_error(topo); !infeasible.reason.empty()) return infeasible;
    // Too big to plan in this machine's memory: a status naming the estimate (compare's row says so).
    infeasible.reason =
        find_memory_shortfall(options_bytes(task, topo, options_),
                              concat("torchrec: the sharding options of ", task.workload.tables.size(), " tables on ",
                                     topo.world_size, " ranks (TorchRec enumerates a shard per rank for row-wise)"));
    if (!infeasible.reason.empty()) return infeasible;
    // The planner's time_ms (TorchRec's timeout_seconds) or the context's deadline, if sooner.
    std::optional<std::chrono::steady_clock::time_point> deadline = ctx.deadline;
    if (options_.time_ms > 0) {
      const auto own = std::chrono::steady_clock::now() +
                       std::chrono::microseconds(static_cast<std::int64_t>(options_.time_ms * 1000.0));
      if (!deadline || own < *deadline) deadline = own;
    }
    const auto past = [&] { return deadline && std::chrono::steady_clock::now() >= *deadline; };
    const OptionsByTable options = enumerate_options(task, topo, options_, past);
    if (options.size() < task.workload.tables.size()) {
      ShardResult late;
      late.status = ShardStatus::kTimeLimit;
      late.reason = concat("the deadline passed while enumerating the sharding options (", options.size(), " of ",
                           task.workload.tables.size(), " tables; TorchRec enumerates a shard per rank, ",
                           topo.world_size, " here, for every row-wise option): no proposal was tried");
      return late;
    }
    if (infeasible.reason = find_unplaceable_table(task, options, topo); !infeasible.reason.empty()) {
      return infeasible;
    }
    PlanSearch search(task, topo, options, options_, deadline);
    if (options_.proposers == ProposerSet::kDefault) run_grid_search(options, search);
    run_greedy_proposer(options, /*use_depth=*/true, options_.greedy_threshold, search);
    run_greedy_proposer(options, /*use_depth=*/false, options_.greedy_threshold, search);
    if (options_.proposers == ProposerSet::kDefault) run_uniform_proposer(options, search);
    return search.result();
  }

 private:
  PlannerOptions options_;
};

PlannerOptions options_from(const Params& p) {
  PlannerOptions o;
  o.formulas = p.get_string("formulas") == "1.4.0a0" ? TorchrecFormulas::k1_4_0a0 : TorchrecFormulas::k1_9_2;
  o.bandwidths = p.get_string("bandwidths") == "torchrec" ? BandwidthSource::kTorchrec : BandwidthSource::kTask;
  o.partitioner =
      p.get_string("partitioner") == "memory_balanced" ? PartitionerKind::kMemoryBalanced : PartitionerKind::kGreedy;
  o.proposers = p.get_string("proposers") == "greedy" ? ProposerSet::kGreedy : ProposerSet::kDefault;
  o.storage_reservation = p.get_float("storage_reservation");
  o.reserve_kjt = p.get_string("reservation") == "heuristical";
  o.min_partition = static_cast<int>(p.get_int("min_partition"));
  o.greedy_threshold = static_cast<int>(p.get_int("threshold"));
  o.time_ms = static_cast<double>(p.get_int("time_ms"));
  return o;
}

}  // namespace
}  // namespace torchrec

void register_torchrec(Registry<Sharder>& registry) {
  registry.add(
      {"torchrec",
       "TorchRec's planner (torchrec 1.9.2's formulas; 1.4.0a0's as an option): enumerate "
       "TW/CW/RW/TWRW options, perf-model proposals, greedy perf partitioner, lowest max-rank perf wins",
       {{"formulas",
         ParamType::kString,
         "1.9.2",
         {},
         {},
         {"1.9.2", "1.4.0a0"},
         "1.9.2: pooled outputs min(1, pooling factor) × batch, as released | 1.4.0a0: batch (commit a48cef79)"},
        {"partitioner",
         ParamType::kString,
         "greedy",
         {},
         {},
         {"greedy", "memory_balanced"},
         "GreedyPerfPartitioner (sort by storage) | MemoryBalancedPartitioner (HBM cap search)"},
        {"proposers",
         ParamType::kString,
         "default",
         {},
         {},
         {"default", "greedy"},
         "default: grid search (≤10,000 combos), 2 greedy proposers, uniform | greedy: the 2 greedy only"},
        {"bandwidths",
         ParamType::kString,
         "task",
         {},
         {},
         {"task", "torchrec"},
         "task: hbm_gbps/uvm_gbps of device 0, intra/inter of the slowest device | torchrec: its constants "
         "(897/32/600/12.5 GiB/s)"},
        {"storage_reservation",
         ParamType::kFloat,
         "0.15",
         0.0,
         0.99,
         {},
         "share of each device's HBM held back (HeuristicalStorageReservation's percentage)"},
        {"reservation",
         ParamType::kString,
         "heuristical",
         {},
         {},
         {"heuristical", "fixed_percentage"},
         "heuristical also holds back the KJT estimate 20 × 8 bytes × ids per rank; fixed_percentage does not"},
        {"min_partition", ParamType::kInt, "128", 4, 65536, {}, "column-wise block lower bound (MIN_CW_DIM), columns"},
        {"threshold",
         ParamType::kInt,
         "0",
         0,
         1e9,
         {},
         "greedy proposers stop after more than this many non-improving plans; 0 = never"},
        {"time_ms",
         ParamType::kInt,
         "0",
         0,
         1e9,
         {},
         "stop proposing after this many ms and keep the best plan so far (TorchRec's timeout_seconds; the "
         "context's deadline when sooner); 0 = never, as TorchRec"}}},
      [](const Params& p, const Context&) {
        return std::make_unique<torchrec::TorchrecSharder>(torchrec::options_from(p));
      });
}

}  // namespace embshard::detail
