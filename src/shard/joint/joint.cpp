// `joint`: layouts and placement chosen together by local search on the model's exact objective
// (the search space and the algorithm are documented in joint.h).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <tuple>

#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/markup.h"
#include "embshard/core/parallel.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/random.h"
#include "shard/builtin_sharders.h"
#include "shard/joint/joint.h"
#include "shard/joint/row_cuts.h"

namespace embshard::detail {
namespace joint {

std::vector<std::uint32_t> best_splits(const Repartition& r, std::size_t count) {
  EMBSHARD_ASSERT(r.tables.size() < 32 && count > 0);
  std::array<std::array<double, 4>, 2> v = r.base;
  for (const std::array<double, 4>& load : r.loads)
    for (int j = 0; j < 4; ++j) v[0][j] += load[j];
  double moved_ms = 0.0;
  for (const std::array<double, 2>& m : r.moved_ms) moved_ms += m[0];
  std::vector<std::pair<std::pair<double, double>, std::uint32_t>> best;
  std::uint32_t split = 0;
  const std::uint32_t all = std::uint32_t{1} << r.tables.size();
  for (std::uint32_t step = 0; step < all; ++step) {
    if (step > 0) {
      const auto i = static_cast<std::size_t>(std::countr_zero(step));
      split ^= std::uint32_t{1} << i;
      const auto to = static_cast<std::size_t>((split >> i) & 1U);
      for (int j = 0; j < 4; ++j) v[to][j] += r.loads[i][j], v[1 - to][j] -= r.loads[i][j];
      moved_ms += r.moved_ms[i][to] - r.moved_ms[i][1 - to];
    }
    if (split == r.now) continue;
    double top = moved_ms, squares = 0.0;
    for (int j = 0; j < 4; ++j) {
      top += std::max(v[0][j], v[1][j]);
      squares += v[0][j] * v[0][j] + v[1][j] * v[1][j];
    }
    const std::pair<double, double> key{top, squares};
    if (best.size() < count || key < best.back().first) {
      best.emplace_back(key, split);
      std::sort(best.begin(), best.end());
      if (best.size() > count) best.pop_back();
    }
  }
  std::vector<std::uint32_t> out;
  for (const auto& b : best) out.push_back(b.second);
  return out;
}

std::vector<SwapPair> best_swaps(const SwapDevice& critical, const std::array<bool, 4>& sets,
                                 const std::vector<SwapDevice>& partners, const std::array<double, 4>& most,
                                 std::size_t count, std::int64_t& estimates) {
  EMBSHARD_ASSERT(count > 0);
  const auto at = [](const std::array<double, 4>& load, double per_col, double per_input) {
    return std::array<double, 4>{load[0], load[1], load[2] * per_col, load[3] * per_input};
  };
  // Lower spread first; ties by partner and tables, so the order is the same with any library.
  const auto before = [](const SwapPair& x, const SwapPair& y) {
    return std::tie(x.spread, x.partner, x.table, x.other) < std::tie(y.spread, y.partner, y.table, y.other);
  };
  std::vector<SwapPair> best;  // at most `count`, unordered until the end
  for (std::size_t e = 0; e < partners.size(); ++e) {
    const SwapDevice& other = partners[e];
    const double per_col = std::max(critical.per_col, other.per_col);
    const double per_input = std::max(critical.per_input, other.per_input);
    for (std::size_t k = 0; k < other.tables.size(); ++k) {
      const std::array<double, 4> lu = at(other.loads[k], per_col, per_input);
      for (std::size_t i = 0; i < critical.tables.size(); ++i) {
        ++estimates;
        const std::array<double, 4> lt = at(critical.loads[i], per_col, per_input);
        double spread = 0.0;
        bool fits = true;
        for (std::size_t j = 0; j < 4 && fits; ++j) {
          const double on_a = critical.terms[j] - lt[j] + lu[j], on_e = other.terms[j] - lu[j] + lt[j];
          fits = on_a <= most[j] && on_e <= most[j] && (!sets[j] || on_a < critical.terms[j]);
          spread += on_a * on_a + on_e * on_e - critical.terms[j] * critical.terms[j] - other.terms[j] * other.terms[j];
        }
        if (!fits || spread >= 0.0) continue;
        const SwapPair pair{spread, critical.tables[i], other.tables[k], static_cast<int>(e)};
        if (best.size() < count) {
          best.push_back(pair);
        } else if (const auto last = std::max_element(best.begin(), best.end(), before); before(pair, *last)) {
          *last = pair;
        }
      }
    }
  }
  std::sort(best.begin(), best.end(), before);
  return best;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/** The default budgets in work units (`work=0`; joint.h): about 0.15 s on a protocol task (per
 *  `kWorkDevices` devices, from one host to the fast path), and on the fast path (fast_step.h)
 *  about 1.5 s at 5,000 tables × 1,024 devices on one core, growing beyond `kIncrementalWorkTables`
 *  tables with the square root of their number, up to `kMostIncrementalWorkTables` tables. */
constexpr std::int64_t kWork = 1500000;
constexpr int kWorkDevices = 8;
constexpr std::int64_t kIncrementalWork = 3000000;
constexpr double kIncrementalWorkTables = 5000.0;
constexpr double kMostIncrementalWorkTables = 50000.0;

/** Copies are tried below this many devices: a copy is a piece per device, and at the sizes of the
 *  fast path the deadline is better spent on the other moves (docs/benchmarks.md, "At scale"). */
constexpr int kCopiesBelowDevices = 64;
/** Layouts placed piece by piece after the unscored first pass of a re-layout (joint.h) beyond
 *  kAllCandidatesUpTo devices. */
constexpr std::size_t kRelayoutFinalists = 3;
/** The same up to kAllCandidatesUpTo devices on several hosts, besides each other kind's best
 *  (docs/benchmarks.md, "Re-layouts scored first"). */
constexpr std::size_t kRelayoutFinalistsUpTo32 = 6;
/** Tables a descent re-lays out before it ends (joint.h step 3): four, and eight up to
 *  kAllCandidatesUpTo devices on several hosts, where re-layouts are scored first and cost less. */
constexpr std::size_t kRelayoutTables = 4;
constexpr std::size_t kRelayoutTablesUpTo32 = 8;
/** On the fast path, candidates beyond the least loaded: the least loaded by each term (joint.h). */
constexpr int kTermCandidates = 1;
/** What placing a table unscored takes past the deadline (insert_quickly), in ms: 6–8 µs at 1,000
 *  to 20,000 tables on 128 to 4,096 devices on this project's VM, rounded up (docs/benchmarks.md,
 *  "Deadlines and reproducibility"). */
constexpr double kUnscoredMsPerTable = 0.01;
/** A re-partition of two devices (joint.h step 3) takes at most this many whole tables (every
 *  split of them is estimated: 65,536 at 16), and makes and scores the best few by the estimate
 *  (3 and 12 were no better on the tuning seeds: docs/benchmarks.md, "Two devices re-partitioned"). */
constexpr std::size_t kMostRepartitioned = 16;
constexpr std::size_t kRepartitionsScored = 6;
/** A wide swap (joint.h step 3) estimates the critical device's whole tables against those of
 *  this many least loaded devices by each term the device sets (docs/benchmarks.md, "Swaps with
 *  any device"). */
constexpr int kWideSwapPartners = 128;
/** The wide swaps of one critical device made and scored, best estimate first (as re-partitions). */
constexpr std::size_t kWideSwapsScored = 6;
/** Re-partitions run up to this many devices: beyond, the first descent is far from done when the
 *  budget is spent, and they cost it more than they gave (docs/benchmarks.md, same section). */
constexpr int kRepartitionsUpToDevices = 1024;
/** From this many hosts on, a table that starts in row pieces takes its host first (joint.h step
 *  2): the candidates of a piece cover only a few of the hosts (docs/benchmarks.md, "Heavy tables
 *  take their host first"). */
constexpr int kHostFirstFromHosts = 64;
/** The hosts a table that takes its host first is tried on, best first, before any device. */
constexpr std::size_t kHostFirstHosts = 4;
/** Below this many devices a greedy start that split heavy tables is made again with every table
 *  whole, and the better search kept (joint.h step 2; the fast path starts from 64). */
constexpr int kBothStartsBelowDevices = 64;
/**
 * The least share of the objective a row shift must save: kRowShiftGain on several hosts up to
 * kAllCandidatesUpTo devices, where the greedy start splits heavy tables into row pieces, a shift
 * goes to any other piece of its table, and a descent made of shifts saving less took whole
 * perturbation rounds' budgets (docs/benchmarks.md, "Row shifts that pay"); elsewhere
 * kRowShiftGainAtScale: beyond, a shift goes to a neighbour only, and on one host row layouts are
 * few and converged searches needed the small shifts.
 */
constexpr double kRowShiftGain = 1e-4;
constexpr double kRowShiftGainAtScale = 1e-6;
/** Most pieces per table unless `max_parts` says otherwise (more only multiplies the output). */
constexpr int kDefaultMaxParts = 64;
/**
 * Step 5 (joint.h, row_cuts.h): each round re-sets every row cut within this share of its piece's
 * rows; up to kRowCutRounds rounds up to kRowCutAllRoundsUpTo pieces, one beyond (up to the
 * `cut_rows` option's pieces).
 */
constexpr double kRowCutTrust = 0.05;
constexpr int kRowCutRounds = 3;
constexpr std::size_t kRowCutAllRoundsUpTo = 1000;

/**
 * When a search that began at `start` stops: start + time_ms, less what finishing a plan takes.
 * Restoring the best plan, writing it out and judging its gap take about 3 µs a table at 20,000
 * tables (docs/benchmarks.md): the search stops that much early, at most 10% of time_ms.
 */
std::chrono::steady_clock::time_point search_deadline(const Task& task, const Options& options,
                                                      std::chrono::steady_clock::time_point start) {
  const double finish_ms = std::min(0.1 * options.time_ms, 3e-3 * static_cast<double>(task.workload.tables.size()));
  return start + std::chrono::microseconds(static_cast<std::int64_t>((options.time_ms - finish_ms) * 1000.0));
}

/** An objective value and its tie-breaker. */
struct Score {
  double value = kInf;
  double spread = kInf;
};

/**
 * Whether `a` is better than `b`: a lower objective, or one no higher and a lower spread (never a
 * higher objective, so a chain of moves cannot cycle).
 */
bool better(const Score& a, const Score& b) {
  const double tol = 1e-9 * std::max(1.0, std::abs(b.value));
  if (a.value < b.value - tol) return true;
  return a.value <= b.value && a.spread < b.spread * (1.0 - 1e-9);
}

std::string gib(std::int64_t bytes) { return gib_text(static_cast<double>(bytes), 3); }

/** The best plan found so far and its score. */
struct Best {
  Score score;
  State::Snapshot plan;
};

/** How a chain of perturbation rounds went. */
struct Rounds {
  int rounds = 0;
  int best_round = 0;  ///< 0: the chain never improved on where it started
};

class Search {
 public:
  /**
   * A search of `task` under `cost` that began at `start` (its deadline: start + time_ms, less what
   * finishing a plan of this size takes); chains other than 0 draw their own perturbations (joint.h).
   */
  Search(const Task& task, CostModel& cost, const Options& options, const Context& ctx,
         std::chrono::steady_clock::time_point start, int chain = 0)
      : task_(task), cost_(cost), options_(options), ctx_(ctx), state_(task, cost, options.objective, ctx),
        n_(task.topology.num_devices()),
        max_parts_(options.max_parts > 0 ? std::min(options.max_parts, n_) : std::min(n_, kDefaultMaxParts)),
        rng_(chain == 0 ? derive_seed(ctx.seed, 0x6a6f696e74)
                        : derive_seed(derive_seed(ctx.seed, 0x6a6f696e74), static_cast<std::uint64_t>(chain))),
        copies_(options.data_parallel && !options.keep_layouts && cost.compute().costs_replicas() &&
                n_ < kCopiesBelowDevices),
        hosts_up_to_32_(n_ <= kAllCandidatesUpTo && task.topology.num_hosts() > 1),
        relayout_tables_(hosts_up_to_32_ ? kRelayoutTablesUpTo32 : kRelayoutTables) {
    state_.set_cold_rows_to_uvm(options.uvm);
    state_.set_replica_sync(options.sync);
    if (options.origin) state_.set_origin(origin_of(*options.origin->old));
    deadline_ = search_deadline(task, options, start);
    if (ctx.deadline && *ctx.deadline < deadline_) deadline_ = *ctx.deadline;
    order_ = tables_by_cost();
    for (int t = 0; t < state_.num_tables(); ++t) {
      mean_weight_ += weight(t) / n_;
      mean_lookups_ += static_cast<double>(spec(t).stats.num_indices) / n_;
    }
    rank_ = places_of(order_);
    move_rank_ = options.origin ? rank_by_load_per_byte() : rank_;
  }

  /** After `run`, the objective of the plan it returned where the search kept it exactly (the fast
   *  path, no price, no replica sync), else none: the caller judges the plan instead. */
  [[nodiscard]] std::optional<double> value() const { return value_; }

  ShardResult run() {
    ShardResult result;
    if (std::string why = find_memory_infeasibility(); !why.empty()) return infeasible(why);
    std::optional<Best> given;  // the start plan when a rebuild changed it: the search never ends worse
    std::size_t rebuilt = 0;    // tables the rebuild placed again
    if (options_.origin) {
      if (std::string why = load(*options_.origin->start); !why.empty()) return infeasible(why);
      if (const auto moved = static_cast<double>(state_.moved_bytes()); moved > options_.origin->max_moved_bytes)
        return infeasible(detail::concat("the start plan moves ", gib_text(moved, 4), ", more than the ",
                                         gib_text(options_.origin->max_moved_bytes, 4), " allowed"));
      if (rebuilds()) {
        given = Best{score(), state_.snapshot()};
        // No room, or (column pieces round their optimizer state each) past the cap: as given.
        const std::vector<int> tables = tables_to_rebuild();
        for (const int t : tables) state_.remove_table(t);
        if (greedy_start(tables) >= 0 || !std::isfinite(score().value))
          state_.restore(given->plan);
        else
          rebuilt = tables.size();
      }
    }
    const bool exact = !options_.origin && exact_start();  // bounded by exact_limit, outside the budget
    if (!exact && !options_.origin) {
      if (const int t = greedy_start(order_); t >= 0) {
        // Memory is tight: the largest tables first, while the devices are still empty.
        const std::string why = no_fit_reason(t);
        for (int u = 0; u < state_.num_tables(); ++u) state_.remove_table(u);
        if (greedy_start(tables_by_size()) >= 0) return infeasible(why);
      }
    }
    const std::int64_t start_work = work();
    const std::int64_t whole =
        options_.work > 0 ? options_.work : default_work(state_.num_tables(), n_, state_.incremental());
    const auto budget = static_cast<std::int64_t>(static_cast<double>(whole) * options_.work_share);
    limit_ = start_work + budget;
    // Spent by the start (it stays spent: time and work only grow), nothing below changes the
    // plan: each step moves nothing once spent, and the start's plan scored again is no better.
    // No copy of it is kept to go back to (at scale, a copy of every table).
    const bool spent_at_start = spent();
    Best best{score(), spent_at_start ? State::Snapshot{} : state_.snapshot()};
    settle(best, result.stats);
    if (!exact && !options_.origin) settle_whole_start(best, result.stats);
    if (copies_ && !spent_at_start) try_copy_groups(best, result.stats);
    const ChainsResult chains = perturb_in_chains(best, result.stats);
    const bool rows_cut = row_cut_best_ && better(row_cut_best_->score, best.score);
    if (rows_cut) best = *row_cut_best_;
    const bool given_best = given && better(given->score, best.score);
    if (given_best) best = std::move(*given);
    if (!spent_at_start || rows_cut || given_best) state_.restore(best.plan);
    result.plan = state_.plan();
    // The objective the fast path keeps is the model's own of this plan (joint.h "State"): the
    // plan's value without judging it again, where no price or replica sync is added to it.
    if (state_.incremental() && !options_.origin && !options_.sync.enabled()) value_ = best.score.value;
    result.stats.plans_evaluated += evaluations_;
    const char* stop = out_of_time()      ? "stopped at the deadline"
                       : work() >= limit_ ? "stopped when its work was spent"
                                          : "converged (no improvement in `patience` rounds)";
    result.stats.solver = detail::concat(
        "joint: ",
        options_.origin
            ? detail::concat("start from the given plan",
                             rebuilt > 0 ? detail::concat(" with ", rebuilt, " tables placed again") : "", ", ")
        : exact ? "exact table-wise start, "
                : "greedy start, ",
        chains.rounds, " rounds of perturbation in ", chains.chains, chains.chains == 1 ? " chain" : " chains",
        " (best ",
        given_best              ? "the given plan's"
        : chains.best_round > 0 ? detail::concat("at round ", chains.best_round, " of chain ", chains.best_chain)
                                : "the start's",
        ")",
        rows_cut ? detail::concat(", then every row cut set at once (", row_cut_rounds_,
                                  row_cut_rounds_ == 1 ? " round)" : " rounds)")
                 : "",
        ", ", work() + other_work_, " work units (", start_work, " in the start; ", evaluations_, " evaluations), ",
        stop);
    return result;
  }

 private:
  /** Work done so far: objective evaluations and pieces placed or taken off (joint.h). */
  [[nodiscard]] std::int64_t work() const { return evaluations_ + estimate_work_ + state_.changes() - uncounted_work_; }
  /** Whether the search must stop: its work is spent or the deadline has passed. */
  [[nodiscard]] bool spent() const { return work() >= limit_ || out_of_time(); }
  /** Whether the deadline has passed, or is less than `reserve_ms` away. */
  [[nodiscard]] bool out_of_time(double reserve_ms = 0.0) const {
    return std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(reserve_ms * 1e3)) >=
           deadline_;
  }

  /**
   * Local search from the current plan; where it ends better than `best`, polished (swaps too,
   * on up to kAllCandidatesUpTo devices: they cost more than every other move together) and kept.
   */
  void settle(Best& best, ShardStats& stats) {
    improve(stats, false);
    Score now = score();
    if (!better(now, best.score)) return;
    improve(stats, true);
    now = score();
    best = {now, state_.snapshot()};
    cut_rows_of(best);
  }

  /**
   * Below kBothStartsBelowDevices devices, where the greedy start split heavy tables (several
   * hosts): the start again with every table whole, searched the same way (`settle`), and kept in
   * `best` where it ends better (joint.h step 2). From pieces the search may not find what a start
   * of whole tables leads to (docs/benchmarks.md, "Both starts below 64 devices").
   */
  void settle_whole_start(Best& best, ShardStats& stats) {
    if (n_ >= kBothStartsBelowDevices || spent()) return;
    bool split = false;  // whether the greedy start split a table
    for (int t = 0; t < state_.num_tables() && !split; ++t) split = start_row_pieces(t) >= 2;
    if (!split) return;
    for (int t = 0; t < state_.num_tables(); ++t) state_.remove_table(t);
    whole_start_ = true;
    const bool placed = greedy_start(order_) < 0;
    whole_start_ = false;
    if (placed) {
      Best whole{score(), state_.snapshot()};
      settle(whole, stats);
      if (better(whole.score, best.score)) best = std::move(whole);
    }
    state_.restore(best.plan);
  }

  /**
   * Iterated local search from `best` (joint.h step 4): re-lay out a few tables, settle, keep
   * what is better, else go back; until `patience` rounds bring nothing or the budget is spent.
   */
  Rounds perturb_rounds(Best& best, ShardStats& stats) {
    Rounds r;
    int since_best = 0;
    while (since_best < options_.patience && !spent()) {
      ++r.rounds;
      perturb();
      if (!std::isfinite(score().value)) {  // over the movement cap (PlanOrigin): a lost round
        ++since_best;
        state_.restore(best.plan);
        continue;
      }
      const Score before = best.score;
      settle(best, stats);
      if (better(best.score, before)) {
        r.best_round = r.rounds, since_best = 0;
      } else {
        ++since_best;
        state_.restore(best.plan);
      }
    }
    return r;
  }

  struct ChainsResult {
    int chains = 1;
    int rounds = 0;
    int best_round = 0;
    int best_chain = 0;
  };

  /**
   * The perturbation rounds in `options_.chains` chains, each from `best` with its own seed and an
   * equal share of what is left of the budget; the best chain's plan wins (the lowest chain on a
   * tie). Chains run at once on the context's threads where the cost model can be copied, else
   * one after another: the result is the same either way.
   */
  ChainsResult perturb_in_chains(Best& best, ShardStats& stats) {
    ChainsResult out;
    out.chains = std::max(1, options_.chains);
    if (out.chains == 1 || spent()) {
      const Rounds r = perturb_rounds(best, stats);
      out.rounds = r.rounds, out.best_round = r.best_round;
      return out;
    }
    const std::int64_t share = (limit_ - work()) / out.chains;
    std::vector<std::unique_ptr<CostModel>> models;
    bool together = ctx_.num_threads >= 2;
    for (int c = 1; c < out.chains && together; ++c) {
      models.push_back(cost_.clone());
      together = models.back() != nullptr;
    }
    std::vector<std::unique_ptr<Search>> others;
    for (int c = 1; c < out.chains; ++c) {
      CostModel& model = together ? *models[static_cast<std::size_t>(c - 1)] : cost_;
      others.push_back(std::make_unique<Search>(task_, model, options_, ctx_, std::chrono::steady_clock::now(), c));
      others.back()->adopt(best, share, deadline_);
    }
    limit_ = work() + share;
    std::vector<Best> bests(static_cast<std::size_t>(out.chains), best);
    std::vector<Rounds> rounds(static_cast<std::size_t>(out.chains));
    std::vector<ShardStats> chain_stats(static_cast<std::size_t>(out.chains));
    const auto run_chain = [&](std::size_t c) {
      Search& chain = c == 0 ? *this : *others[c - 1];
      rounds[c] = chain.perturb_rounds(bests[c], chain_stats[c]);
    };
    if (together) {
      parallel_for(bests.size(), std::min(ctx_.num_threads, out.chains), run_chain);
    } else {
      for (std::size_t c = 0; c < bests.size(); ++c) run_chain(c);
    }
    for (std::size_t c = 0; c < bests.size(); ++c) {
      out.rounds += rounds[c].rounds;
      stats.nodes_visited += chain_stats[c].nodes_visited;
      if (c > 0) {
        Search& other = *others[c - 1];
        evaluations_ += other.evaluations_, other_work_ += other.work();
        if (other.row_cut_best_ && (!row_cut_best_ || better(other.row_cut_best_->score, row_cut_best_->score)))
          row_cut_best_ = other.row_cut_best_, row_cut_rounds_ = other.row_cut_rounds_;
      }
      if (better(bests[c].score, best.score)) {
        best = bests[c];
        out.best_round = rounds[c].best_round, out.best_chain = static_cast<int>(c);
      }
    }
    return out;
  }

  /** A chain other than the first: starts from `best` with `share` work and `deadline`. */
  void adopt(const Best& best, std::int64_t share, std::chrono::steady_clock::time_point deadline) {
    state_.restore(best.plan);
    limit_ = work() + share;
    deadline_ = deadline;
  }

  Score score() {
    ++evaluations_;
    double value = state_.objective();
    if (options_.origin) {
      const auto moved = static_cast<double>(state_.moved_bytes());
      value = moved > options_.origin->max_moved_bytes ? kInf : value + options_.origin->ms_per_moved_byte * moved;
    }
    return {value, state_.spread()};
  }

  /** The old plan's shards per table of the task, matched by name and shape (joint.h `Origin`). */
  Origin origin_of(const Plan& old) const {
    std::map<std::string, const TablePlacement*> by_name;
    for (const TablePlacement& p : old.tables) by_name[p.table] = &p;
    Origin o;
    for (const TableSpec& t : task_.workload.tables) {
      const auto it = by_name.find(t.name);
      std::vector<Shard> shards;
      bool copies = false;
      if (it != by_name.end()) {
        std::int64_t rows = 0;
        int cols = 0;
        for (const Shard& sh : it->second->shards) rows = std::max(rows, sh.row_end), cols = std::max(cols, sh.col_end);
        if (rows == t.num_rows() && cols == t.dim)
          shards = it->second->shards, copies = it->second->type == ShardingType::kDataParallel;
      }
      for (const Shard& sh : shards) o.old_devices = std::max(o.old_devices, sh.device + 1);
      o.shards.push_back(std::move(shards));
      o.copies.push_back(copies ? 1 : 0);
    }
    return o;
  }

  /** The layout a plan's placement has in the search's terms (joint.h "Search space"). */
  static Layout layout_of(const TablePlacement& p) {
    const int n = static_cast<int>(p.shards.size());
    switch (p.type) {
      case ShardingType::kTableWise: return {Layout::Kind::kWhole, 1};
      case ShardingType::kRowWise:
      case ShardingType::kTableRowWise: return {Layout::Kind::kRows, n};
      case ShardingType::kColumnWise: return {Layout::Kind::kColumns, n};
      case ShardingType::kDataParallel: return {Layout::Kind::kCopies, n, 0};
      case ShardingType::kGridShard: {
        std::set<int> columns;
        for (const Shard& sh : p.shards) columns.insert(sh.col_begin);
        const int c = static_cast<int>(columns.size());
        return {Layout::Kind::kGrid, c, -1, n / c};
      }
    }
    return {};
  }

  /**
   * Puts every piece of `start` in the state; "" or why it cannot (a piece that does not fit).
   * Tables all in HBM go first, so that those with UVM rows take what HBM is left, as in the plan
   * (make_piece splits each piece again); a table's pieces go in by columns, then rows, as
   * layout_shards makes them, whatever the plan's order.
   */
  std::string load(const Plan& start) {
    std::map<std::string, int> index;
    for (int t = 0; t < state_.num_tables(); ++t) index[spec(t).name] = t;
    for (const TablePlacement& p : start.tables) {
      const auto it = index.find(p.table);
      if (it == index.end())
        return "the start plan places table '" + one_line(p.table) + "', which the task does not have";
      state_.set_layout(it->second, layout_of(p));
    }
    const auto tiered = [](const TablePlacement& p) {
      return std::any_of(p.shards.begin(), p.shards.end(), [](const Shard& sh) { return sh.hbm_rows >= 0; });
    };
    for (const bool second : {false, true}) {
      for (const TablePlacement& p : start.tables) {
        if (tiered(p) != second) continue;
        // In layout_shards' order (columns, then rows): a row shift re-makes pieces by position.
        std::vector<Shard> shards = p.shards;
        std::stable_sort(shards.begin(), shards.end(), [](const Shard& a, const Shard& b) {
          return std::tie(a.col_begin, a.row_begin) < std::tie(b.col_begin, b.row_begin);
        });
        for (const Shard& sh : shards) {
          Piece piece;
          if (!state_.make_piece(index.at(p.table), sh, sh.device, second, piece))
            return "the start plan's table '" + one_line(p.table) + "' does not fit device " +
                   std::to_string(sh.device);
          state_.add(piece);
        }
      }
    }
    return "";
  }

  ShardResult infeasible(const std::string& why) const {
    ShardResult r;
    r.status = ShardStatus::kInfeasible;
    r.reason = why;
    return r;
  }

  [[nodiscard]] const TableSpec& spec(int t) const { return task_.workload.tables[static_cast<std::size_t>(t)]; }

  /** Lookups × dim: a table's first-order cost under every model. */
  [[nodiscard]] double weight(int t) const { return static_cast<double>(spec(t).stats.num_indices) * spec(t).dim; }

  /** Tables by decreasing compute of the whole table on an empty device (ties: task order). */
  std::vector<int> tables_by_cost() {
    std::vector<double> cost(task_.workload.tables.size(), 0.0);
    for (int t = 0; t < state_.num_tables(); ++t) {
      // Lookups × dim (bytes break ties).
      cost[static_cast<std::size_t>(t)] = weight(t) + 1e-3 * spec(t).size_bytes();
    }
    std::vector<int> order(cost.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cost[a] > cost[b]; });
    return order;
  }

  /**
   * Inserts the tables in `order` (greedy start, joint.h); from kHostFirstFromHosts hosts on, a
   * table that starts in row pieces on its host first (`insert_on_best_host`); once only the time
   * placing the rest unscored takes is left (kUnscoredMsPerTable each), the rest go in that way
   * (`insert_quickly`). Returns the first table that fits nowhere, or -1.
   */
  int greedy_start(const std::vector<int>& order) {
    std::optional<HostLoads> hosts;  // built where first needed, with the tables placed by then
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int t = order[i];
      const bool quick = out_of_time(static_cast<double>(order.size() - i) * kUnscoredMsPerTable);
      if (!quick && !hosts) hosts.emplace(*this, std::span<const int>(order.data(), i));
      if (!(quick                                     ? insert_quickly(t)
            : hosts->on() && start_row_pieces(t) >= 2 ? insert_on_best_host(t, *hosts)
                                                      : insert_best(t, start_layouts(t))))
        return t;
      if (hosts) hosts->add(t);
    }
    return -1;
  }

  /**
   * What the greedy start has put on each host (a rebuild's: and the tables left in place), per
   * term, for choosing a heavy table's host
   * (joint.h step 2): each table's compute whole on an empty device, its columns and its lookups,
   * shared out over the hosts of its pieces; each term in units of its average per host over the
   * whole task. Only from kHostFirstFromHosts hosts on (`on`). Built with the tables the start
   * has placed so far (`placed`, in the order it placed them: the sums come out as if it had been
   * built before them and each added as it was placed).
   */
  class HostLoads {
   public:
    HostLoads(Search& search, std::span<const int> placed) : search_(search) {
      const Topology& topology = search.task_.topology;
      if (topology.num_hosts() < kHostFirstFromHosts) return;
      hosts_ = topology.num_hosts();
      table_.resize(static_cast<std::size_t>(search.state_.num_tables()));
      std::array<double, 3> total{};
      for (int t = 0; t < search.state_.num_tables(); ++t) {
        const TableSpec& s = search.spec(t);
        const DeviceCompute c = search.state_.shard_compute({t, Shard{0, 0, s.num_rows(), 0, s.dim, -1}, 0});
        table_[static_cast<std::size_t>(t)] = {c.fw_ms + c.bw_ms, static_cast<double>(s.dim),
                                               static_cast<double>(s.stats.num_indices)};
        for (std::size_t k = 0; k < 3; ++k) total[k] += table_[static_cast<std::size_t>(t)][k];
      }
      for (auto& loads : table_)
        for (std::size_t k = 0; k < 3; ++k) loads[k] *= total[k] > 0 ? hosts_ / total[k] : 0.0;
      load_.assign(static_cast<std::size_t>(hosts_), {});
      std::vector<bool> by_start(table_.size(), false);
      for (const int t : placed) by_start[static_cast<std::size_t>(t)] = true;
      for (int t = 0; t < search.state_.num_tables(); ++t)  // a rebuild's: the tables left in place
        if (!by_start[static_cast<std::size_t>(t)] && !search.state_.pieces(t).empty()) add(t);
      for (const int t : placed) add(t);
    }
    [[nodiscard]] bool on() const { return hosts_ > 0; }

    /** Table `t`, as placed now, counted on the hosts of its pieces. */
    void add(int t) {
      if (!on()) return;
      const std::vector<Piece>& pieces = search_.state_.pieces(t);
      for (const Piece& p : pieces) {
        auto& host = load_[static_cast<std::size_t>(search_.task_.topology.host_of(p.placed.shard.device))];
        for (std::size_t k = 0; k < 3; ++k)
          host[k] += table_[static_cast<std::size_t>(t)][k] / static_cast<double>(pieces.size());
      }
    }

    /** The `count` hosts whose loads are least aligned with `t`'s (the smallest dot product: where
     *  adding it raises Σ over hosts and terms of the squared loads least), best first. */
    [[nodiscard]] std::vector<int> best_for(int t, std::size_t count) const {
      std::vector<std::pair<double, int>> keyed(static_cast<std::size_t>(hosts_));
      for (int h = 0; h < hosts_; ++h) {
        double dot = 0.0;
        for (std::size_t k = 0; k < 3; ++k)
          dot += load_[static_cast<std::size_t>(h)][k] * table_[static_cast<std::size_t>(t)][k];
        keyed[static_cast<std::size_t>(h)] = {dot, h};
      }
      count = std::min(count, keyed.size());
      std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(count), keyed.end());
      std::vector<int> out;
      for (std::size_t i = 0; i < count; ++i) out.push_back(keyed[i].second);
      return out;
    }

   private:
    Search& search_;
    int hosts_ = 0;
    std::vector<std::array<double, 3>> table_;  ///< per table: compute, columns, lookups
    std::vector<std::array<double, 3>> load_;   ///< per host
  };

  /** `t` in its start layout on the first of `hosts.best_for(t)` where it fits, its pieces placed
   *  as `insert_best` places them among that host's devices; else as `insert_best` alone. */
  bool insert_on_best_host(int t, const HostLoads& hosts) {
    for (const int h : hosts.best_for(t, kHostFirstHosts)) {
      only_host_ = h;
      const bool placed = insert_best(t, start_layouts(t));
      only_host_ = -1;
      if (placed) return true;
    }
    return insert_best(t, start_layouts(t));
  }

  /**
   * Near the deadline (greedy_start): `t` in its start layout (whole, or a heavy table's row
   * pieces), each piece on the least loaded device where it fits (HBM first, then with UVM), no
   * move scored; other layouts as `insert_best` would.
   */
  bool insert_quickly(int t) {
    const std::vector<Layout> layouts = start_layouts(t);
    if (layouts.size() != 1 || layouts.front().first_device >= 0 ||
        (layouts.front().kind != Layout::Kind::kWhole && layouts.front().kind != Layout::Kind::kRows))
      return insert_best(t, layouts);
    for (const bool uvm : {false, true}) {
      if (uvm && !allows_uvm(t)) break;
      if (insert_unscored(t, layouts.front(), uvm)) return true;
    }
    return insert_best(t, layouts);
  }

  /** Tables by decreasing bytes (ties: task order). */
  [[nodiscard]] std::vector<int> tables_by_size() const {
    std::vector<int> order(static_cast<std::size_t>(state_.num_tables()));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return spec(a).size_bytes() > spec(b).size_bytes(); });
    return order;
  }

  /** "" unless the tables cannot fit the devices' memory in any layout. */
  [[nodiscard]] std::string find_memory_infeasibility() const {
    const std::int64_t need = task_.workload.total_bytes();
    std::int64_t hbm = 0, uvm = 0;
    for (const Device& d : task_.topology.devices) hbm += d.hbm_bytes, uvm += d.uvm_bytes;
    const bool uvm_ok = options_.uvm && task_.constraints.allow_uvm;
    const std::int64_t room = hbm + (uvm_ok ? uvm : 0);
    if (need <= room) return "";
    return detail::concat("the tables need ", gib(need), " but the ", n_, " devices hold ", gib(room),
                          uvm_ok ? " (HBM and UVM)" : " of HBM", ": no plan fits");
  }

  [[nodiscard]] std::string no_fit_reason(int t) const {
    if (all_layouts(t).empty())
      return detail::concat("table '", spec(t).name,
                            "': its constraints allow only layouts joint does not make here "
                            "(data_parallel: with 2 to 63 devices, a copy fitting every device and a cost model that "
                            "can cost copies; grid_shard: where rows and columns may be split)");
    std::int64_t most_hbm = 0, most_uvm = 0;
    for (int d = 0; d < n_; ++d) {
      const Device& dev = task_.topology.devices[static_cast<std::size_t>(d)];
      most_hbm = std::max(most_hbm, dev.hbm_bytes - state_.load(d).hbm_bytes);
      most_uvm = std::max(most_uvm, dev.uvm_bytes - state_.load(d).uvm_bytes);
    }
    const bool uvm = allows_uvm(t);
    std::string group;  // a colocate group shares one device: what it needs there
    if (const std::vector<int>& members = state_.colocated_members(t); !members.empty()) {
      std::int64_t bytes = 0;
      for (const int u : members) bytes += spec(u).size_bytes();
      group = detail::concat("; it is in a colocate group of ", members.size(), " tables (", gib(bytes),
                             " together), which must share one device");
    }
    return detail::concat("table '", spec(t).name, "' (", gib(spec(t).size_bytes()),
                          ") fits no device in any layout joint tries: the most free HBM left on a device is ",
                          gib(most_hbm), " of its ", gib(task_.topology.devices.front().hbm_bytes), " budget",
                          uvm ? ", the most free UVM " + gib(most_uvm) : std::string(" (UVM not allowed)"), group);
  }

  /** Whether pieces of `t` may keep rows in UVM (the option, the task and the table allow it). */
  [[nodiscard]] bool allows_uvm(int t) const {
    return options_.uvm && task_.constraints.allow_uvm && spec(t).constraints.allow_uvm;
  }

  [[nodiscard]] bool allows_rows(int t) const {
    return options_.rows && task_.constraints.allow_row_split &&
           (spec(t).allows(ShardingType::kRowWise) ||
            (task_.topology.num_hosts() == 1 && spec(t).allows(ShardingType::kTableRowWise)));
  }
  [[nodiscard]] bool allows_columns(int t) const {
    return options_.columns && task_.constraints.allow_column_split && spec(t).allows(ShardingType::kColumnWise);
  }

  /** Split counts tried: every k up to 16, then powers of two, then the device count. */
  [[nodiscard]] std::vector<int> part_counts(int limit) const {
    std::vector<int> ks;
    for (int k = 2; k <= limit; k = k < 16 ? k + 1 : k * 2) ks.push_back(k);
    if (limit >= 2 && (ks.empty() || ks.back() != limit)) ks.push_back(limit);
    return ks;
  }

  /** Every layout the task and the table allow. */
  [[nodiscard]] std::vector<Layout> all_layouts(int t) const {
    if (state_.colocated(t)) return {{Layout::Kind::kWhole, 1}};  // data/task.h PlacementGroups
    std::vector<Layout> out;
    const TableSpec& s = spec(t);
    const int min_width = std::max(4, s.constraints.min_partition);
    if (s.allows(ShardingType::kTableWise)) out.push_back({Layout::Kind::kWhole, 1});
    if (allows_rows(t) && options_.torchrec) {
      if (spec(t).allows(ShardingType::kRowWise) && s.num_rows() >= n_) out.push_back({Layout::Kind::kRows, n_, 0});
      const int per_host = task_.topology.devices_per_host;
      if (task_.topology.num_hosts() > 1 && spec(t).allows(ShardingType::kTableRowWise) && s.num_rows() >= per_host) {
        for (int first = 0; first + per_host <= n_; first += per_host)
          out.push_back({Layout::Kind::kRows, per_host, first});
      }
    } else if (allows_rows(t)) {
      const int limit = static_cast<int>(std::min<std::int64_t>(max_parts_, s.num_rows()));
      for (int k : part_counts(limit)) out.push_back({Layout::Kind::kRows, k});
    }
    if (allows_columns(t)) {
      const int limit = std::min(max_parts_, s.dim / min_width);
      for (int k : part_counts(limit)) out.push_back({Layout::Kind::kColumns, k});
    }
    if (options_.grids && !options_.torchrec && allows_rows(t) && allows_columns(t) &&
        s.allows(ShardingType::kGridShard)) {
      for (int c = 2; c <= 4 && c <= s.dim / min_width; ++c)
        for (int r = 2; r <= 4 && r <= s.num_rows() && c * r <= max_parts_; ++r)
          out.push_back({Layout::Kind::kGrid, c, -1, r});
    }
    if (copies_ && may_replicate(task_, s) && !state_.in_placement_group(t))
      out.push_back({Layout::Kind::kCopies, n_, 0});
    return out;
  }

  /**
   * The greedy start's layouts: whole where the table allows it (other splits come from the
   * search), a heavy table's row pieces above one host (`start_row_pieces`).
   */
  [[nodiscard]] std::vector<Layout> start_layouts(int t) const {
    // all_layouts(t)'s first where it is whole (it is where the table may stay whole, or is
    // colocated), without building the others: this runs once a table at every size.
    if (state_.colocated(t)) return {{Layout::Kind::kWhole, 1}};
    if (!spec(t).allows(ShardingType::kTableWise)) return all_layouts(t);
    // Row layouts are among all_layouts(t) wherever start_row_pieces can exceed 1.
    if (const int k = allows_rows(t) ? start_row_pieces(t) : 1; k >= 2) return {{Layout::Kind::kRows, k}};
    return {{Layout::Kind::kWhole, 1}};
  }

  /**
   * Above one host, the row pieces a heavy table whose rows may be split (a colocated table's may
   * not) starts in (joint.h step 2): enough that none holds more than `split_start` of an average
   * device's lookups or lookups × dim; 1 for a lighter table, or under `torchrec` (its row layouts
   * are fixed).
   */
  [[nodiscard]] int start_row_pieces(int t) const {
    const double share = whole_start_ ? 0.0 : options_.split_start;
    if (share <= 0 || task_.topology.num_hosts() <= 1 || options_.torchrec) return 1;
    const double heaviness = std::max(weight(t) / std::max(mean_weight_, 1e-300),
                                      static_cast<double>(spec(t).stats.num_indices) / std::max(mean_lookups_, 1e-300));
    const double pieces = std::ceil(heaviness / share);
    return static_cast<int>(
        std::min({pieces, static_cast<double>(max_parts_), static_cast<double>(spec(t).num_rows())}));
  }

  /**
   * Devices a piece of `t` of `bytes` is tried on: all when few, else the least loaded of those
   * with room for it in HBM (or, if none has, in UVM) (joint.h).
   */
  std::vector<int> candidates(int t, std::int64_t bytes) {
    taken_.resize(static_cast<std::size_t>(n_), false);
    for (const Piece& p : state_.pieces(t)) taken_[static_cast<std::size_t>(p.placed.shard.device)] = true;
    std::vector<int> out;
    if (only_host_ >= 0) {
      const int size = task_.topology.host_size();
      for (int d = only_host_ * size; d < (only_host_ + 1) * size; ++d)
        if (!taken_[static_cast<std::size_t>(d)]) out.push_back(d);
    } else if (n_ <= kAllCandidatesUpTo) {
      for (int d = 0; d < n_; ++d)
        if (!taken_[static_cast<std::size_t>(d)]) out.push_back(d);
    } else {
      if (!same_host_devices(t, bytes, out)) {
        state_.least_loaded(options_.candidates, bytes, taken_, out);
        // On the fast path also the least loaded by each term, whose straggler a move may relieve.
        for (int term = 1; term < state_.load_terms(); ++term) {
          for (const int d : out) taken_[static_cast<std::size_t>(d)] = true;
          state_.least_loaded(kTermCandidates, bytes, taken_, out, static_cast<State::LoadTerm>(term));
        }
        for (const int d : out) taken_[static_cast<std::size_t>(d)] = false;  // only the table's own stay
      }
      // A re-plan: the devices that held the table before, where a piece moves nothing; a
      // colocated table: its group's device, the only one it may take.
      const auto also = [&](int d) {
        if (d >= 0 && d < n_ && !taken_[static_cast<std::size_t>(d)] &&
            std::find(out.begin(), out.end(), d) == out.end())
          out.push_back(d);
      };
      for (const Shard& old : state_.origin_shards(t)) also(old.device);
      also(state_.colocated_device(t));
    }
    for (const Piece& p : state_.pieces(t)) taken_[static_cast<std::size_t>(p.placed.shard.device)] = false;
    return out;
  }

  /**
   * A row piece of `t` on several hosts (beyond kAllCandidatesUpTo devices): the devices of the
   * hosts holding its other pieces that hold none and have `bytes` of HBM free, least loaded
   * first, into `out`; false if there are none (or `t` is not in rows). Its partial sums then
   * cross hosts once per host, reduced (cost/link_model.h): the table opens a new host only when
   * its hosts are full.
   */
  bool same_host_devices(int t, std::int64_t bytes, std::vector<int>& out) {
    if (state_.layout(t).kind != Layout::Kind::kRows || task_.topology.num_hosts() <= 1) return false;
    const int size = task_.topology.host_size();
    const std::size_t before = out.size();
    for (const Piece& p : state_.pieces(t)) {
      const int first = task_.topology.host_of(p.placed.shard.device) * size;
      for (int d = first; d < first + size; ++d) {
        const auto i = static_cast<std::size_t>(d);
        const std::int64_t free = task_.topology.devices[i].hbm_bytes - state_.load(d).hbm_bytes;
        if (taken_[i] || free < bytes ||
            std::find(out.begin() + static_cast<std::ptrdiff_t>(before), out.end(), d) != out.end())
          continue;
        out.push_back(d);
      }
    }
    sort_by_load(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
    return out.size() > before;
  }

  /** Orders the devices in [first, last) least loaded first (State::device_load_ms), stably. */
  void sort_by_load(std::vector<int>::iterator first, std::vector<int>::iterator last) {
    std::vector<std::pair<double, int>> keyed;  // (load, device): as many as sorted, not one a device
    keyed.reserve(static_cast<std::size_t>(last - first));
    for (auto d = first; d != last; ++d) keyed.emplace_back(state_.device_load_ms(*d), *d);
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [load, d] : keyed) *first++ = d;
  }

  /**
   * Beyond kAllCandidatesUpTo devices, for the first piece of a table free to go anywhere: the
   * least loaded device with `bytes` of HBM free (any, if none has), as `candidates` ranks its first
   * (insert_unscored, which tries `least_loaded_first` only where this one does not take the piece).
   * Else -1.
   */
  int least_loaded_device(int t, std::int64_t bytes) {
    if (n_ <= kAllCandidatesUpTo || only_host_ >= 0 || !state_.pieces(t).empty() || state_.colocated(t) ||
        !state_.origin_shards(t).empty())
      return -1;
    taken_.resize(static_cast<std::size_t>(n_), false);  // all false between calls (candidates)
    std::vector<int> out;
    state_.least_loaded(1, bytes, taken_, out);
    return out.empty() ? -1 : out.front();
  }

  /** `candidates`, least loaded first (beyond kAllCandidatesUpTo devices they already are). */
  std::vector<int> least_loaded_first(int t, std::int64_t bytes) {
    std::vector<int> devices = candidates(t, bytes);
    if (n_ <= kAllCandidatesUpTo) sort_by_load(devices.begin(), devices.end());
    return devices;
  }

  /**
   * Lays `t` out as `layout`, each piece on the device that scores best (on its fixed device where
   * the layout fixes them); false if one fits nowhere.
   */
  bool insert(int t, Layout layout, bool uvm) {
    state_.set_layout(t, layout);
    const TableSpec& s = spec(t);
    for (const Shard& shard : layout_shards(layout, s.num_rows(), s.dim)) {
      if (layout.first_device >= 0) {
        Piece p;
        if (!state_.make_piece(t, shard, layout.first_device + static_cast<int>(state_.pieces(t).size()), uvm, p)) {
          state_.remove_table(t);
          return false;
        }
        state_.add(p);
        continue;
      }
      Score best;
      int best_device = -1;
      const std::int64_t bytes = s.shard_bytes(shard.num_rows(), shard.num_cols());
      for (int d : candidates(t, bytes)) {
        Piece p;
        if (!state_.make_piece(t, shard, d, uvm, p)) continue;
        state_.add(p);
        const Score now = score();
        state_.pop_piece(t);
        if (best_device < 0 || better(now, best)) best = now, best_device = d;
      }
      if (best_device < 0) {
        state_.remove_table(t);
        return false;
      }
      Piece p;
      EMBSHARD_ASSERT(state_.make_piece(t, shard, best_device, uvm, p));
      state_.add(p);
    }
    return true;
  }

  /** Inserts `t` in whichever of `layouts` scores best (HBM only first, then with UVM). */
  bool insert_best(int t, const std::vector<Layout>& layouts) {
    for (const bool uvm : {false, true}) {
      if (uvm && !allows_uvm(t)) break;
      Score best;
      const Layout* chosen = nullptr;
      for (const Layout& layout : layouts) {
        if (!insert(t, layout, uvm)) continue;
        const Score now = score();
        state_.remove_table(t);
        if (chosen == nullptr || better(now, best)) best = now, chosen = &layout;
      }
      if (chosen != nullptr) {
        EMBSHARD_ASSERT(insert(t, *chosen, uvm));
        return true;
      }
    }
    // Construction layouts may all be too coarse: any layout at all.
    if (layouts.size() < all_layouts(t).size()) return insert_best(t, all_layouts(t));
    return false;
  }

  /**
   * Tiny tasks: scores every table-wise plan (identical devices on one host are interchangeable:
   * a table opens at most one new device) and keeps the best; false when there are too many.
   */
  bool exact_start() {
    const auto& tables = task_.workload.tables;
    for (const TableSpec& t : tables)
      if (!t.allows(ShardingType::kTableWise)) return false;
    const bool sym = task_.topology.devices_interchangeable();
    double plans = 1.0;
    for (std::size_t t = 0; t < tables.size(); ++t) plans *= n_;
    if (plans > static_cast<double>(options_.exact_limit) * (sym ? 24.0 : 1.0)) return false;
    const auto whole = [&](int t) { return layout_shards({}, spec(t).num_rows(), spec(t).dim).front(); };
    Score best;
    std::vector<int> devices(tables.size()), best_devices;
    std::int64_t leaves = 0;
    const std::function<void(int, int)> visit = [&](int t, int opened) {
      if (leaves > options_.exact_limit) return;
      if (t == state_.num_tables()) {
        ++leaves;
        const Score now = score();
        if (best_devices.empty() || better(now, best)) best = now, best_devices = devices;
        return;
      }
      const int limit = sym ? std::min(n_, opened + 1) : n_;
      for (int d = 0; d < limit; ++d) {
        Piece p;
        if (!state_.make_piece(t, whole(t), d, false, p)) continue;
        state_.set_layout(t, {});
        state_.add(p);
        devices[static_cast<std::size_t>(t)] = d;
        visit(t + 1, std::max(opened, d + 1));
        state_.pop_piece(t);
      }
    };
    visit(0, 0);
    if (leaves > options_.exact_limit || best_devices.empty()) return false;
    for (int t = 0; t < state_.num_tables(); ++t) {
      Piece p;
      EMBSHARD_ASSERT(state_.make_piece(t, whole(t), best_devices[static_cast<std::size_t>(t)], false, p));
      state_.set_layout(t, {});
      state_.add(p);
    }
    return true;
  }

  /** Tables with a piece on one of `devices`, heaviest first (the order of `order_`), or in the
   *  order of `rank` (a table's place). */
  std::vector<int> tables_on(const std::vector<int>& devices) const { return tables_on(devices, rank_); }
  std::vector<int> tables_on(const std::vector<int>& devices, const std::vector<int>& rank) const {
    std::vector<int> out;
    for (const int d : devices) {
      const std::vector<int>& held = state_.tables_on(d);
      out.insert(out.end(), held.begin(), held.end());
    }
    std::sort(out.begin(), out.end(),
              [&](int a, int b) { return rank[static_cast<std::size_t>(a)] < rank[static_cast<std::size_t>(b)]; });
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  /**
   * Each table's place when re-planning (joint.h): by the load it carries per byte moved,
   * lookups × dim per weight byte (a whole table's lookups per row over its element size), most
   * first (ties heaviest first), so that moves that relieve
   * a device for few bytes are tried first.
   */
  [[nodiscard]] std::vector<int> rank_by_load_per_byte() const {
    std::vector<int> tables(order_);
    const auto density = [&](int t) {
      const TableSpec& s = spec(t);
      return (static_cast<double>(s.stats.num_indices) + 1.0) * s.dim / (static_cast<double>(s.weight_bytes()) + 1.0);
    };
    std::stable_sort(tables.begin(), tables.end(), [&](int a, int b) { return density(a) > density(b); });
    return places_of(tables);
  }

  /** Whether the start is rebuilt first (PlanOrigin::rebuild_bytes; never under `keep_layouts`,
   *  where a table's layout may not change). */
  [[nodiscard]] bool rebuilds() const {
    return options_.origin->rebuild_bytes > 0 && options_.origin->max_moved_bytes > 0 && !options_.keep_layouts;
  }

  /**
   * Re-planning (PlanOrigin::rebuild_bytes; joint.h "Re-planning"): the devices above the mean
   * `State::device_load_ms` give up their whole tables (and, with `rebuild_split_tables`, tables
   * in pieces whose every piece is on such a device, each piece counted on its device; never a
   * colocated table), those first in `move_rank_` (the most load per byte) first, while each
   * device stays within its share of the rebuild budget (at most what the cap leaves after the
   * start's own moves): its excess over the mean in proportion to all devices' excess. Returns
   * those tables heaviest first, for `run` to take out and place again as the greedy start places
   * them (its host loads count the tables left in place).
   */
  [[nodiscard]] std::vector<int> tables_to_rebuild() {
    const double budget = std::min(options_.origin->rebuild_bytes,
                                   options_.origin->max_moved_bytes - static_cast<double>(state_.moved_bytes()));
    std::vector<double> excess(static_cast<std::size_t>(n_));
    double mean = 0.0, total = 0.0;
    for (int d = 0; d < n_; ++d) mean += (excess[static_cast<std::size_t>(d)] = state_.device_load_ms(d)) / n_;
    for (double& e : excess) total += (e = std::max(0.0, e - mean));
    if (!(total > 0)) return {};
    const std::vector<int> by_density = places_of(move_rank_);  // the tables in move_rank_'s order
    std::vector<double> given(static_cast<std::size_t>(n_), 0.0);
    std::vector<int> out;
    const auto piece_bytes = [](const Piece& p) { return static_cast<double>(p.hbm_bytes + p.uvm_bytes); };
    for (const int t : by_density) {
      const std::vector<Piece>& pieces = state_.pieces(t);
      if ((pieces.size() > 1 && !options_.origin->rebuild_split_tables) || state_.colocated(t)) continue;
      const bool room = std::all_of(pieces.begin(), pieces.end(), [&](const Piece& p) {
        const auto d = static_cast<std::size_t>(p.placed.shard.device);
        return given[d] + piece_bytes(p) <= budget * excess[d] / total;
      });
      if (!room) continue;
      for (const Piece& p : pieces) given[static_cast<std::size_t>(p.placed.shard.device)] += piece_bytes(p);
      out.push_back(t);
    }
    std::sort(out.begin(), out.end(),
              [&](int a, int b) { return rank_[static_cast<std::size_t>(a)] < rank_[static_cast<std::size_t>(b)]; });
    return out;
  }

  /** Each table's place in `order` (a permutation of the tables). */
  [[nodiscard]] static std::vector<int> places_of(const std::vector<int>& order) {
    std::vector<int> place(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) place[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    return place;
  }

  /** Each device of `from` (critical ones) re-partitioned with the least loaded device by each term
   *  (try_repartition); `critical` are never partners. */
  bool try_repartitions(const std::vector<int>& critical, const std::vector<int>& from, const Score& current) {
    std::vector<bool> skip(static_cast<std::size_t>(n_), false);
    for (const int a : critical) skip[static_cast<std::size_t>(a)] = true;
    for (const int a : from) {
      std::vector<int> partners;
      for (int term = 0; term < state_.load_terms(); ++term)
        state_.least_loaded(1, 0, skip, partners, static_cast<State::LoadTerm>(term));
      std::sort(partners.begin(), partners.end());
      partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
      for (const int b : partners)
        if (!spent() && try_repartition(a, b, current)) return true;
    }
    return false;
  }

  /**
   * The whole tables of devices `a` and `b` shared out between them again (joint.h step 3): every
   * split of them ranked by an estimate of the two devices' terms (best_splits), the best few made
   * and scored; the first that helps is kept.
   */
  bool try_repartition(int a, int b, const Score& current) {
    const std::optional<Repartition> r = repartition_of(a, b);
    if (!r || r->tables.size() < 3) return false;
    estimate_work_ += (std::int64_t{1} << r->tables.size()) / 16;  // one unit per 16 splits (joint.h Budget)
    for (const std::uint32_t split : best_splits(*r, kRepartitionsScored)) {
      if (spent()) break;
      if (try_split(*r, split, current)) return true;
    }
    return false;
  }

  /** Devices `a` and `b` with their whole tables taken out (each term's estimate, best_splits);
   *  none when they hold more than kMostRepartitioned. */
  [[nodiscard]] std::optional<Repartition> repartition_of(int a, int b) const {
    Repartition r;
    r.devices = {a, b};
    const std::array<SwapDevice, 2> side{swap_device(a), swap_device(b)};
    const double col_ms = std::max(side[0].per_col, side[1].per_col);
    const double input_ms = std::max(side[0].per_input, side[1].per_input);
    for (std::size_t k = 0; k < 2; ++k) {
      r.base[k] = side[k].terms;
      for (std::size_t i = 0; i < side[k].tables.size(); ++i) {
        const int t = side[k].tables[i];
        const std::array<double, 4>& raw = side[k].loads[i];
        if (r.tables.size() == kMostRepartitioned) return std::nullopt;  // too many to split
        const std::array<double, 4> load{raw[0], raw[1], raw[2] * col_ms, raw[3] * input_ms};
        for (std::size_t j = 0; j < 4; ++j) r.base[k][j] -= load[j];
        if (k == 1) r.now |= std::uint32_t{1} << r.tables.size();
        r.tables.push_back(t);
        r.loads.push_back(load);
        std::array<double, 2> moved_ms{};
        for (std::size_t to = 0; to < 2 && options_.origin; ++to) {
          Shard on = state_.pieces(t).front().placed.shard;
          on.device = r.devices[to];
          moved_ms[to] = options_.origin->ms_per_moved_byte * static_cast<double>(state_.moved_bytes_of(t, on));
        }
        r.moved_ms.push_back(moved_ms);
      }
    }
    return r;
  }

  /** Device `d` as a wide swap sees it (SwapDevice): its whole tables that may change device alone. */
  [[nodiscard]] SwapDevice swap_device(int d) const {
    SwapDevice out;
    const std::array<std::int64_t, 4>& us = state_.spread_terms_us(d);
    for (std::size_t j = 0; j < 4; ++j) out.terms[j] = static_cast<double>(us[j]) / 1e3;
    const DeviceLoad& l = state_.load(d);
    out.per_col = l.dims > 0 ? out.terms[2] / static_cast<double>(l.dims) : 0.0;
    out.per_input = l.input_bytes > 0 ? out.terms[3] / static_cast<double>(l.input_bytes) : 0.0;
    for (const int t : state_.tables_on(d)) {
      if (!whole_and_free(t)) continue;
      const Piece& p = state_.pieces(t).front();
      out.tables.push_back(t);
      out.loads.push_back({static_cast<double>(p.fw_units) * 1e-9, static_cast<double>(p.bw_units) * 1e-9,
                           static_cast<double>(p.placed.shard.num_cols()), static_cast<double>(p.input_bytes)});
    }
    return out;
  }
  /** Whether `t` is one whole piece in HBM that may change device alone (re-partitions, wide swaps). */
  [[nodiscard]] bool whole_and_free(int t) const {
    const Layout& layout = state_.layout(t);
    return layout.kind == Layout::Kind::kWhole && layout.first_device < 0 && movable(t) && !state_.colocated(t) &&
           state_.pieces(t).front().uvm_bytes == 0;
  }

  /**
   * Each device of `from` (critical ones) swaps a whole table with a whole table of one of the
   * kWideSwapPartners least loaded devices by each term it sets (joint.h step 3): the pairs ranked
   * by best_swaps, the best few made and scored (try_swap), the first that helps kept.
   */
  bool try_wide_swaps(const std::vector<int>& critical, const std::vector<int>& from, const Score& current) {
    std::array<double, 4> most{};
    for (int d = 0; d < n_; ++d)
      for (std::size_t j = 0; j < 4; ++j)
        most[j] = std::max(most[j], static_cast<double>(state_.spread_terms_us(d)[j]) / 1e3);
    for (const int a : from) {
      const SwapDevice on_a = swap_device(a);
      if (on_a.tables.empty()) continue;
      std::array<bool, 4> sets{};
      const std::vector<int> partners = wide_swap_partners(on_a, critical, most, sets);
      std::vector<SwapDevice> others;
      for (const int e : partners) others.push_back(swap_device(e));
      std::int64_t estimates = 0;
      const std::vector<SwapPair> pairs = best_swaps(on_a, sets, others, most, kWideSwapsScored, estimates);
      estimate_work_ += estimates / 16;  // as a re-partition's splits (joint.h Budget)
      for (const SwapPair& pair : pairs)
        if (!spent() && try_swap(pair.table, 0, pair.other, 0, current, false, critical)) return true;
      if (spent()) break;
    }
    return false;
  }

  /** A critical device's partners: the least loaded by each term it sets (marked in `sets`), none
   *  of them critical (try_swap would refuse it). */
  std::vector<int> wide_swap_partners(const SwapDevice& on_a, const std::vector<int>& critical,
                                      const std::array<double, 4>& most, std::array<bool, 4>& sets) {
    std::vector<int> partners;
    std::vector<bool> skip(static_cast<std::size_t>(n_), false);
    for (const int d : critical) skip[static_cast<std::size_t>(d)] = true;
    for (std::size_t j = 0; j < 4; ++j) {
      sets[j] = most[j] > 0.0 && on_a.terms[j] >= most[j];
      // Spread terms forward, backward, output, input; both compute terms rank by compute.
      const State::LoadTerm term = j < 2    ? State::LoadTerm::kCompute
                                   : j == 2 ? State::LoadTerm::kOutput
                                            : State::LoadTerm::kInput;
      if (!sets[j] || static_cast<int>(term) >= state_.load_terms() || (j == 1 && sets[0])) continue;
      state_.least_loaded(kWideSwapPartners, 0, skip, partners, term);
      for (const int d : partners) skip[static_cast<std::size_t>(d)] = true;
    }
    return partners;
  }

  /** Moves `r`'s tables to the sides `split` gives them; keeps it if it scores better than
   *  `current`, else puts every piece back. */
  bool try_split(const Repartition& r, std::uint32_t split, const Score& current) {
    std::vector<std::pair<int, Piece>> lifted;  // the pieces that change device
    for (std::size_t i = 0; i < r.tables.size(); ++i)
      if (((split ^ r.now) >> i) & 1U) lifted.emplace_back(r.tables[i], state_.lift(r.tables[i], 0));
    std::size_t placed = 0;
    bool fits = true;
    for (; placed < lifted.size() && fits; ++placed) {
      const auto& [t, old] = lifted[placed];
      const int to = old.placed.shard.device == r.devices[0] ? r.devices[1] : r.devices[0];
      Piece p;
      fits = state_.make_piece(t, old.placed.shard, to, false, p) && p.uvm_bytes == 0 && keeps_tier(p, old);
      state_.place(0, fits ? p : old);
    }
    if (fits && better(score(), current)) return true;
    for (std::size_t i = 0; i < placed; ++i) {
      state_.lift(lifted[i].first, 0);
      state_.place(0, lifted[i].second);
    }
    for (std::size_t i = placed; i < lifted.size(); ++i) state_.place(0, lifted[i].second);
    return false;
  }

  /** Moves piece `i` of `t` to the best other device if that helps. */
  bool try_moves(int t, std::size_t i, const Score& current, bool uvm) {
    if (state_.layout(t).first_device >= 0 || !movable(t)) return false;
    if (state_.colocated(t)) return try_group_moves(t, current, uvm);
    const Piece old = state_.lift(t, i);
    Score best = current;
    Piece chosen;
    bool found = false;
    for (int d : candidates(t, old.hbm_bytes + old.uvm_bytes)) {
      Piece p;
      if (!state_.make_piece(t, old.placed.shard, d, uvm, p) || !keeps_tier(p, old)) continue;
      state_.place(i, p);
      const Score now = score();
      state_.lift(t, i);
      if (better(now, best)) best = now, chosen = p, found = true;
    }
    state_.place(i, found ? chosen : old);
    return found;
  }

  /** Moves `t`'s colocate group, every member whole, to the device that scores best if that helps. */
  bool try_group_moves(int t, const Score& current, bool uvm) {
    const std::vector<int>& members = state_.colocated_members(t);
    std::vector<std::vector<Piece>> old;
    std::int64_t bytes = 0;
    for (int u : members) {
      old.push_back(state_.remove_table(u));
      for (const Piece& p : old.back()) bytes += p.hbm_bytes + p.uvm_bytes;
    }
    const auto put = [&](int d) {  // every member whole on d; false (nothing left placed) if one does not fit
      for (std::size_t m = 0; m < members.size(); ++m) {
        Piece p;
        if (old[m].size() != 1 || !state_.make_piece(members[m], old[m].front().placed.shard, d, uvm, p) ||
            !keeps_tier(p, old[m].front())) {
          for (std::size_t k = 0; k < m; ++k) state_.remove_table(members[k]);
          return false;
        }
        state_.add(p);
      }
      return true;
    };
    Score best = current;
    int chosen = -1;
    for (int d : candidates(t, bytes)) {
      if (!put(d)) continue;
      const Score now = score();
      for (int u : members) state_.remove_table(u);
      if (better(now, best)) best = now, chosen = d;
    }
    if (chosen >= 0 && put(chosen)) return true;
    for (std::size_t m = 0; m < members.size(); ++m)
      for (const Piece& p : old[m]) state_.add(p);
    return false;
  }

  /**
   * Swaps piece `i` of `t` with a piece of another table on another device if that helps: any
   * other piece on up to kAllCandidatesUpTo devices, else those on the `candidates` devices.
   */
  bool try_swaps(int t, std::size_t i, const Score& current, bool uvm, const std::vector<int>& critical) {
    if (state_.layout(t).first_device >= 0 || !movable(t)) return false;
    if (n_ <= kAllCandidatesUpTo) {
      for (int u = 0; u < state_.num_tables(); ++u)
        for (std::size_t j = 0; j < state_.pieces(u).size(); ++j)
          if (try_swap(t, i, u, j, current, uvm, critical)) return true;
      return false;
    }
    const Piece& piece = state_.pieces(t)[i];
    for (const int d : candidates(t, piece.hbm_bytes + piece.uvm_bytes)) {
      const std::vector<int> held = state_.tables_on(d);  // a copy: a swap changes it
      for (const int u : held)
        for (std::size_t j = 0; j < state_.pieces(u).size() && !spent(); ++j)
          if (state_.pieces(u)[j].placed.shard.device == d && try_swap(t, i, u, j, current, uvm, critical)) return true;
    }
    return false;
  }

  /** Swaps piece `i` of `t` with piece `j` of `u` if that helps; restores both otherwise. */
  bool try_swap(int t, std::size_t i, int u, std::size_t j, const Score& current, bool uvm,
                const std::vector<int>& critical) {
    const int from = state_.pieces(t)[i].placed.shard.device;
    const int to = state_.pieces(u)[j].placed.shard.device;
    if (u == t || to == from || state_.layout(u).first_device >= 0 || !movable(u) ||
        std::find(critical.begin(), critical.end(), to) != critical.end() ||
        !lighter(state_.pieces(u)[j], state_.pieces(t)[i]) || holds(t, to) || holds(u, from))
      return false;
    const Piece a = state_.lift(t, i);
    const Piece b = state_.lift(u, j);
    Piece a2, b2;
    if (state_.make_piece(t, a.placed.shard, to, uvm, a2) && keeps_tier(a2, a)) {
      state_.place(i, a2);
      if (state_.make_piece(u, b.placed.shard, from, uvm, b2) && keeps_tier(b2, b)) {
        state_.place(j, b2);
        if (better(score(), current)) return true;
        state_.lift(u, j);
      }
      state_.lift(t, i);
    }
    state_.place(i, a);
    state_.place(j, b);
    return false;
  }

  /** Whether `b` puts less of something on a device than `a` (else swapping them cannot help `a`'s device). */
  [[nodiscard]] static bool lighter(const Piece& b, const Piece& a) {
    return b.fw_units < a.fw_units || b.bw_units < a.bw_units || b.input_bytes < a.input_bytes ||
           b.placed.shard.num_cols() < a.placed.shard.num_cols() ||
           (a.fw_units == 0 && a.bw_units == 0);  // a model that is not additive: unknown
  }

  /**
   * Whether `t`'s pieces may change device: always, but under `keep_layouts` only a whole table or
   * column pieces (TorchRec's reshard moves table-wise and column-wise shards only; row blocks
   * stay in rank order, copies on every device).
   */
  [[nodiscard]] bool movable(int t) const {
    const Layout::Kind kind = state_.layout(t).kind;
    return !options_.keep_layouts || kind == Layout::Kind::kWhole || kind == Layout::Kind::kColumns;
  }

  /** Whether a piece moved keeps its rows in HBM, where `keep_layouts` asks it to (else always). */
  [[nodiscard]] bool keeps_tier(const Piece& moved, const Piece& was) const {
    return !options_.keep_layouts || moved.placed.shard.hbm_rows == was.placed.shard.hbm_rows;
  }

  [[nodiscard]] bool holds(int t, int device) const {
    for (const Piece& p : state_.pieces(t))
      if (p.placed.shard.device == device) return true;
    return false;
  }

  /**
   * Gives `sizes[i][k]` rows to the k-th row piece of `tables[i]` (in row order, each on its
   * device), making pieces `first` … `last` of each again (all by default; the others must keep
   * their ranges). Every such piece is taken off before any is placed, so that one table's growth
   * may wait for another's shrinking on the same device: false, with nothing changed, when a piece
   * no longer fits its device.
   */
  bool set_row_sizes(std::span<const int> tables, std::span<const std::vector<std::int64_t>> sizes, bool uvm,
                     std::size_t first = 0, std::size_t last = std::numeric_limits<std::size_t>::max()) {
    std::vector<std::vector<Piece>> old(tables.size());
    for (std::size_t i = 0; i < tables.size(); ++i) {
      old[i].resize(std::min(last, sizes[i].size() - 1) + 1);
      for (std::size_t k = first; k < old[i].size(); ++k) old[i][k] = state_.lift(tables[i], k);
    }
    std::vector<std::pair<std::size_t, std::size_t>> placed;
    bool fits = true;
    for (std::size_t i = 0; i < tables.size() && fits; ++i) {
      std::int64_t begin =
          std::accumulate(sizes[i].begin(), sizes[i].begin() + static_cast<std::ptrdiff_t>(first), std::int64_t{0});
      for (std::size_t k = first; k < old[i].size() && fits; ++k) {
        Shard s = old[i][k].placed.shard;
        s.row_begin = begin, s.row_end = begin + sizes[i][k], s.hbm_rows = -1;
        begin = s.row_end;
        Piece made;
        fits = state_.make_piece(tables[i], s, s.device, uvm, made);
        if (fits) state_.place(k, made), placed.emplace_back(i, k);
      }
    }
    if (fits) return true;
    for (const auto& [i, k] : placed) state_.lift(tables[i], k);
    for (std::size_t i = 0; i < tables.size(); ++i)
      for (std::size_t k = first; k < old[i].size(); ++k) state_.place(k, old[i][k]);
    return false;
  }
  /** The same for one table. */
  bool set_row_sizes(int t, const std::vector<std::int64_t>& sizes, bool uvm, std::size_t first = 0,
                     std::size_t last = std::numeric_limits<std::size_t>::max()) {
    return set_row_sizes(std::span(&t, 1), std::span(&sizes, 1), uvm, first, last);
  }

  /**
   * Uneven row ranges: moves a share (1/2 … 1/32) of a row piece on a critical device to another
   * piece of the same table, where that helps.
   */
  bool try_row_shift(int t, const Score& current, bool uvm, const std::vector<int>& critical) {
    if (state_.layout(t).kind != Layout::Kind::kRows || state_.layout(t).first_device >= 0 ||
        state_.pieces(t).size() < 2)
      return false;
    std::vector<std::int64_t> sizes;
    for (const Piece& p : state_.pieces(t)) sizes.push_back(p.placed.shard.num_rows());
    const bool scale = n_ > kAllCandidatesUpTo;
    const double min_gain = hosts_up_to_32_ ? kRowShiftGain : kRowShiftGainAtScale;  // no plateau moves: endless
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const int from = state_.pieces(t)[i].placed.shard.device;
      if (std::find(critical.begin(), critical.end(), from) == critical.end()) continue;
      for (std::size_t j = 0; j < sizes.size() && !spent(); ++j) {
        // At scale only to a neighbour (a chain of such shifts reaches any other: docs/benchmarks.md
        // "The search at scale"). Only the pieces from i to j change rows: those alone are re-made.
        if (j == i || (scale && j + 1 != i && i + 1 != j)) continue;
        const std::size_t first = std::min(i, j), last = std::max(i, j);
        for (const std::int64_t part : {2, 4, 8, 16, 32}) {
          const std::int64_t delta = sizes[i] / part;
          if (delta == 0 || delta >= sizes[i]) continue;
          std::vector<std::int64_t> shifted = sizes;
          shifted[i] -= delta, shifted[j] += delta;
          if (!set_row_sizes(t, shifted, uvm, first, last)) continue;
          if (score().value < current.value - min_gain * std::abs(current.value)) return true;
          EMBSHARD_ASSERT(set_row_sizes(t, sizes, uvm, first, last));
        }
      }
    }
    return false;
  }

  /**
   * Step 5 (joint.h): `best`, a local optimum the search just kept, with every row cut set at once
   * by a linear program (row_cuts.h), round after round while it scores better; kept in
   * `row_cut_best_` when it beats every plan kept there. The search goes on from `best` itself
   * (the state is `best` again) and the work done here is not counted: the trajectory is the one
   * `cut_rows=0` takes, and the plan is the better of its best and this, so a larger budget
   * still never gives a worse plan and the step never makes one worse.
   */
  void cut_rows_of(const Best& best) {
    if (options_.cut_rows <= 0 || options_.torchrec || options_.keep_layouts || !options_.rows ||
        options_.objective != Objective::kStep || !state_.additive() || spent() ||
        (options_.origin && !std::isfinite(options_.origin->max_moved_bytes)))
      return;
    const std::int64_t work_before = work(), evaluations_before = evaluations_;
    std::vector<std::vector<int>> order = state_.table_order();  // what the search meets next
    Best cut = best;                                             // the state
    int kept = 0;
    while (kept < kRowCutRounds && !out_of_time()) {
      std::vector<int> tables;
      std::size_t count = 0;
      for (int t = 0; t < state_.num_tables(); ++t)
        if (row_cuttable(t)) tables.push_back(t), count += state_.pieces(t).size();
      if (count == 0 || count > static_cast<std::size_t>(options_.cut_rows) ||
          (kept > 0 && count > kRowCutAllRoundsUpTo))
        break;
      const auto rows = rows_cut_at_once(tables);
      if (!rows || !set_row_sizes(tables, *rows, false)) break;
      const Score now = score();
      if (!better(now, cut.score)) break;
      cut = {now, state_.snapshot()};
      ++kept;
    }
    if (kept > 0 && (!row_cut_best_ || better(cut.score, row_cut_best_->score)))
      row_cut_best_ = std::move(cut), row_cut_rounds_ = kept;
    state_.restore(best.plan);
    state_.set_table_order(std::move(order));
    static_cast<void>(state_.objective());  // what the search reads next (critical devices) is best's again
    evaluations_ = evaluations_before;
    uncounted_work_ += work() - work_before;
  }

  /** The program's row counts for `tables` (row_cuts.h), or none: no better cuts, a figure that is
   *  not finite, or no time left before the deadline. */
  std::optional<std::vector<std::vector<std::int64_t>>> rows_cut_at_once(const std::vector<int>& tables) {
    const InputCommOptions& input = cost_.comm().input_options();
    RowCutDevices devices = row_cut_devices();
    std::vector<std::vector<RowCutPiece>> pieces;
    for (const int t : tables) {
      pieces.push_back(row_cut_pieces(t, input));
      for (const RowCutPiece& p : pieces.back()) {  // a row of room for each piece's rounding
        double& free = devices.hbm_free_bytes[static_cast<std::size_t>(p.device)];
        free = std::max(free - p.hbm_bytes_per_row, 0.0);
      }
    }
    const double seconds_left = std::chrono::duration<double>(deadline_ - std::chrono::steady_clock::now()).count();
    if (seconds_left <= 0.0) return std::nullopt;
    std::optional<RowCutMoves> moves;
    if (options_.origin)
      moves = RowCutMoves{options_.origin->ms_per_moved_byte,
                          options_.origin->max_moved_bytes - static_cast<double>(state_.moved_bytes())};
    return cut_rows(task_.topology, pieces, devices, input.mode == InputCommMode::kExposed, kRowCutTrust, seconds_left,
                    moves);
  }

  /** Whether step 5 may re-cut `t`: in row pieces the search may make uneven, all in HBM, pooled,
   *  each long enough for the trust region to hold a row either way. */
  [[nodiscard]] bool row_cuttable(int t) const {
    const Layout& layout = state_.layout(t);
    const std::vector<Piece>& pieces = state_.pieces(t);
    return layout.kind == Layout::Kind::kRows && layout.first_device < 0 && pieces.size() >= 2 && spec(t).pooled &&
           std::all_of(pieces.begin(), pieces.end(), [](const Piece& p) {
             return p.uvm_bytes == 0 && static_cast<double>(p.placed.shard.num_rows()) * kRowCutTrust >= 1.0;
           });
  }

  /** `t`'s pieces in row order as step 5's program sees them: their cost per row over the trust
   *  region (a rate that is not finite makes `cut_rows` decline). */
  std::vector<RowCutPiece> row_cut_pieces(int t, const InputCommOptions& input) {
    std::vector<RowCutPiece> out;
    for (const Piece& p : state_.pieces(t)) {
      const Shard& shard = p.placed.shard;
      const std::int64_t rows = shard.num_rows();
      const std::int64_t delta =
          std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(rows) * kRowCutTrust));
      PlacedShard up = p.placed, down = p.placed;
      up.shard.row_end += delta;
      down.shard.row_end -= std::min(delta, rows - 1);
      const auto per_row = [](double more, double less, std::int64_t n) {
        return (more - less) / static_cast<double>(n);
      };
      const DeviceCompute now = state_.shard_compute(p.placed), grown = state_.shard_compute(up),
                          shrunk = state_.shard_compute(down);
      const std::int64_t cut = shard.num_rows() - down.shard.num_rows();
      RowCutPiece piece{shard.device,
                        rows,
                        {per_row(grown.fw_ms, now.fw_ms, delta), per_row(grown.bw_ms, now.bw_ms, delta)},
                        {per_row(now.fw_ms, shrunk.fw_ms, cut), per_row(now.bw_ms, shrunk.bw_ms, cut)},
                        per_row(shard_input_bytes(task_, up, input), shard_input_bytes(task_, p.placed, input), delta),
                        per_row(static_cast<double>(spec(t).shard_bytes(rows + delta, shard.num_cols())),
                                static_cast<double>(spec(t).shard_bytes(rows, shard.num_cols())), delta)};
      if (options_.origin) {  // re-planning: what the rows it would gain held before (row_cuts.h)
        PlacedShard before = p.placed;
        before.shard.row_begin = std::max<std::int64_t>(0, shard.row_begin - delta);
        const auto moved = [&](const PlacedShard& longer) {
          const std::int64_t gained = longer.shard.num_rows() - rows;
          // At least 0: shard_bytes rounds each shard up, so a chord may dip a few bytes below.
          return gained > 0 ? std::max(0.0, per_row(static_cast<double>(state_.moved_bytes_of(t, longer.shard)),
                                                    static_cast<double>(p.moved_bytes), gained))
                            : 0.0;
        };
        piece.moved_per_row_at_end = moved(up);
        piece.moved_per_row_at_start = moved(before);
      }
      // Where the cost is not convex over the region, growth takes the larger rate (row_cuts.h).
      if (piece.shrink.fw_ms > piece.grow.fw_ms) std::swap(piece.shrink.fw_ms, piece.grow.fw_ms);
      if (piece.shrink.bw_ms > piece.grow.bw_ms) std::swap(piece.shrink.bw_ms, piece.grow.bw_ms);
      out.push_back(piece);
    }
    return out;
  }

  /** Every device as step 5's program sees it. */
  RowCutDevices row_cut_devices() {
    RowCutDevices devices;
    for (int d = 0; d < n_; ++d) {
      const DeviceLoad& load = state_.load(d);
      devices.compute.push_back(state_.device_compute(d));
      devices.input_bytes.push_back(static_cast<double>(load.input_bytes));
      devices.hbm_free_bytes.push_back(
          static_cast<double>(task_.topology.devices[static_cast<std::size_t>(d)].hbm_bytes - load.hbm_bytes));
    }
    return devices;
  }

  /** Re-lays `t` out in whichever layout scores best (`insert_relayout`); restores it when none helps. */
  bool try_relayout(int t, const Score& current) {
    const Layout old_layout = state_.layout(t);
    const std::vector<Piece> old = state_.remove_table(t);
    if (insert_relayout(t) && better(score(), current)) return true;
    state_.remove_table(t);
    state_.set_layout(t, old_layout);
    for (const Piece& p : old) state_.add(p);
    return false;
  }

  /**
   * `t` in its best layout (try_relayout); false if none fits.
   * - Up to kAllCandidatesUpTo devices, on one host or where the table has at most
   *   kRelayoutFinalistsUpTo32 layouts, every layout is placed piece by piece as `insert` does
   *   (scored first on one host, 8-GPU plans came out up to 6% slower on some tasks).
   * - Otherwise each layout is first scored with its pieces on the least loaded devices, unscored
   *   (one evaluation a layout, not one per piece and candidate), and only the best are placed
   *   piece by piece:
   *   - beyond kAllCandidatesUpTo devices, of the layouts of at most twice the table's weight in
   *     average device loads pieces, the best kRelayoutFinalists (docs/benchmarks.md "Scale": at
   *     5,000 × 1,024, 31.7 ms against 33.7 with one finalist and 37.9 placing every layout piece
   *     by piece, at the same budget);
   *   - up to it on several hosts the best kRelayoutFinalistsUpTo32 and the best of each other
   *     kind (whole, rows, columns, grid, copies): a kind can rank low unscored and still be the
   *     one that helps (docs/benchmarks.md "Re-layouts scored first": placing every layout piece
   *     by piece spent 70% of a mixed-hardware search's budget on the re-layouts that end each
   *     descent).
   */
  bool insert_relayout(int t) {
    std::vector<Layout> layouts = all_layouts(t);
    const bool at_scale = n_ > kAllCandidatesUpTo;
    if (at_scale) {
      // No more pieces than twice the table's weight in average devices' loads (at least 2).
      const double cap = std::max(2.0, 2.0 * std::ceil(weight(t) / std::max(mean_weight_, 1e-300)));
      std::erase_if(layouts, [&](const Layout& l) {
        return l.kind != Layout::Kind::kCopies && static_cast<double>(l.parts) * l.row_parts > cap;
      });
    }
    const std::size_t finalists_kept = at_scale ? kRelayoutFinalists : kRelayoutFinalistsUpTo32;
    if (!at_scale && (!hosts_up_to_32_ || layouts.size() <= finalists_kept)) return insert_best(t, layouts);
    for (const bool uvm : {false, true}) {
      if (uvm && !allows_uvm(t)) break;
      std::vector<std::pair<Score, std::size_t>> scored;
      for (std::size_t i = 0; i < layouts.size(); ++i) {
        if (!insert_unscored(t, layouts[i], uvm)) continue;
        scored.emplace_back(score(), i);
        state_.remove_table(t);
      }
      if (scored.empty()) continue;
      std::stable_sort(scored.begin(), scored.end(),
                       [](const auto& a, const auto& b) { return better(a.first, b.first); });
      std::vector<Layout> finalists;
      for (std::size_t i = 0; i < scored.size() && (!at_scale || i < finalists_kept); ++i) {
        const Layout& l = layouts[scored[i].second];
        const bool kind_new =
            std::none_of(finalists.begin(), finalists.end(), [&](const Layout& f) { return f.kind == l.kind; });
        if (i < finalists_kept || (!at_scale && kind_new)) finalists.push_back(l);
      }
      if (insert_best(t, finalists)) return true;
    }
    return false;
  }

  /** `t` as `layout`, each piece on the least loaded device it fits (no move scored); false if one fits nowhere. */
  bool insert_unscored(int t, Layout layout, bool uvm) {
    state_.set_layout(t, layout);
    const TableSpec& s = spec(t);
    for (const Shard& shard : layout_shards(layout, s.num_rows(), s.dim)) {
      Piece p;
      bool placed = false;
      if (layout.first_device >= 0) {
        placed = state_.make_piece(t, shard, layout.first_device + static_cast<int>(state_.pieces(t).size()), uvm, p);
      } else {
        const std::int64_t bytes = s.shard_bytes(shard.num_rows(), shard.num_cols());
        const int least = least_loaded_device(t, bytes);
        placed = least >= 0 && state_.make_piece(t, shard, least, uvm, p);
        if (!placed)
          for (const int d : least_loaded_first(t, bytes))
            if (d != least && (placed = state_.make_piece(t, shard, d, uvm, p))) break;
      }
      if (!placed) {
        state_.remove_table(t);
        return false;
      }
      state_.add(p);
    }
    return true;
  }

  /**
   * Don't-look marks for the local search at scale (joint.h step 3): per kind of move, the devices
   * on which a whole pass of it found nothing, with their loads then. A device is skipped by that
   * kind until its load changes (a move elsewhere that would now help it is found once it changes,
   * or by the next phase). Only on the fast path: elsewhere every device is always looked at.
   */
  class DontLook {
   public:
    enum class Kind { kMove, kRowShift, kRepartition, kWideSwap };
    explicit DontLook(const Search& search) : search_(search) {}
    [[nodiscard]] bool skips(Kind kind, int d) const {
      const auto& seen = seen_[static_cast<std::size_t>(kind)];
      return !seen.empty() && seen[static_cast<std::size_t>(d)] == fingerprint(d);
    }
    [[nodiscard]] std::vector<int> unmarked(Kind kind, const std::vector<int>& devices) const {
      std::vector<int> out;
      for (const int d : devices)
        if (!skips(kind, d)) out.push_back(d);
      return out;
    }
    void mark(Kind kind, const std::vector<int>& devices) {
      for (const int d : devices) mark(kind, d);
    }

   private:
    using Fingerprint = std::array<std::int64_t, 7>;
    [[nodiscard]] Fingerprint fingerprint(int d) const {
      const DeviceLoad& l = search_.state_.load(d);
      return {l.fw_units, l.bw_units, l.dims, l.partial_dims, l.input_bytes, l.hbm_bytes, l.pieces};
    }
    void mark(Kind kind, int d) {
      if (!search_.state_.incremental()) return;
      auto& seen = seen_[static_cast<std::size_t>(kind)];
      if (seen.empty()) seen.assign(static_cast<std::size_t>(search_.n_), Fingerprint{-1, -1, -1, -1, -1, -1, -1});
      seen[static_cast<std::size_t>(d)] = fingerprint(d);
    }
    const Search& search_;
    std::array<std::vector<Fingerprint>, 4> seen_;
  };

  /**
   * Local search around the critical devices until no move helps: cheap moves first (a piece to
   * another device), then row shifts, re-partitions and wide swaps (fast path), swaps, then new
   * layouts for the first tables there (joint.h step 3). On the fast path the first four kinds
   * leave out the devices their last whole pass found nothing on, until those change (DontLook).
   */
  void improve(ShardStats& stats, bool swaps) {
    DontLook dont_look(*this);
    while (!spent()) {
      const Score current = score();
      ++stats.nodes_visited;
      const std::vector<int> critical = state_.critical_devices();
      const std::vector<int> tables = tables_on(critical, move_rank_);
      const auto on_critical = [&](int t, std::size_t i) {
        const int d = state_.pieces(t)[i].placed.shard.device;
        return std::find(critical.begin(), critical.end(), d) != critical.end();
      };
      // The budget is checked before every move tried (a re-layout alone can take milliseconds).
      const auto each_critical_piece = [&](auto&& move) {
        for (int t : tables) {
          for (std::size_t i = 0; i < state_.pieces(t).size() && !spent(); ++i)
            if (on_critical(t, i) && move(t, i, allows_uvm(t))) return true;
        }
        return false;
      };
      using Kind = DontLook::Kind;
      if (each_critical_piece([&](int t, std::size_t i, bool u) {
            return !dont_look.skips(Kind::kMove, state_.pieces(t)[i].placed.shard.device) &&
                   try_moves(t, i, current, u);
          }))
        continue;
      dont_look.mark(Kind::kMove, critical);
      bool shifted = false;
      const std::vector<int> shift_from = dont_look.unmarked(Kind::kRowShift, critical);
      for (std::size_t k = 0; k < tables.size() && !shifted && !options_.keep_layouts && !spent(); ++k)
        shifted = try_row_shift(tables[k], current, allows_uvm(tables[k]), shift_from);
      if (shifted) continue;
      dont_look.mark(Kind::kRowShift, critical);
      if (state_.incremental() && n_ <= kRepartitionsUpToDevices &&
          try_repartitions(critical, dont_look.unmarked(Kind::kRepartition, critical), current))
        continue;
      dont_look.mark(Kind::kRepartition, critical);
      if (state_.incremental() && try_wide_swaps(critical, dont_look.unmarked(Kind::kWideSwap, critical), current))
        continue;
      dont_look.mark(Kind::kWideSwap, critical);
      if (swaps &&
          each_critical_piece([&](int t, std::size_t i, bool u) { return try_swaps(t, i, current, u, critical); }))
        continue;
      bool relaid = false;
      for (std::size_t k = 0;
           k < tables.size() && k < relayout_tables_ && !relaid && !options_.keep_layouts && !spent(); ++k)
        relaid = try_relayout(tables[k], current);
      if (!relaid) break;
    }
  }

  /**
   * Tables worth trying as data-parallel copies, most promising first: those whose own exchange
   * (its outputs both ways and its indices, sent by one device: the link model) costs more than
   * what copying adds to a device — its copy's compute (less its share of the whole table's when
   * spread over the devices) and its gradient's all-reduce bytes. Models that do not add up:
   * every table that may be copied, by exchange bytes per gradient byte. Returns (table, gain).
   */
  std::vector<std::pair<int, double>> copy_candidates() {
    std::vector<std::pair<double, int>> ranked;
    std::vector<double> bytes(static_cast<std::size_t>(n_), 0.0);
    const double latency = task_.topology.a2a_latency_us / 1000.0;
    for (int t = 0; t < state_.num_tables(); ++t) {
      const TableSpec& s = spec(t);
      if (!may_replicate(task_, s) || state_.in_placement_group(t)) continue;  // a copy is on every device
      const auto gradient = static_cast<double>(s.weight_bytes());
      bytes[0] = static_cast<double>(task_.workload.batch_size) * 4.0 * s.output_width(s.dim);
      // The slowest device's time: device 0's where the links are alike, a slower receiver's on a mix.
      const auto slowest = [&] {
        const std::vector<double> ms = exchange_ms(task_.topology, bytes);
        return *std::max_element(ms.begin(), ms.end()) - latency;
      };
      const double out_ms = slowest();
      bytes[0] = static_cast<double>(s.stats.num_indices) * 8.0;
      const double in_ms = slowest();
      bytes[0] = 0.0;
      double gain = 2 * out_ms + in_ms - gradient * all_reduce_ms_per_byte(task_.topology);
      if (state_.additive()) {
        const Shard whole{0, 0, s.num_rows(), 0, s.dim, -1};
        const DeviceCompute copy = state_.shard_compute({t, whole, n_});
        const DeviceCompute one = state_.shard_compute({t, whole, 0});
        gain -= copy.fw_ms + copy.bw_ms - (one.fw_ms + one.bw_ms) / n_;
      } else {
        gain = 2 * out_ms / std::max(gradient, 1.0);
      }
      if (gain > 0) ranked.emplace_back(-gain, t);
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<std::pair<int, double>> out;
    for (const auto& [gain, t] : ranked) out.emplace_back(t, -gain);
    return out;
  }

  /**
   * Data-parallel copies pay the all-reduce's latency and their device's second call once, however
   * many tables share them, so one table alone rarely pays, and the plan around them must change
   * too: for k = 1, 2, 4, …, the k most promising candidates become copies and the rest of the
   * plan is built again (greedy start, `settle`); the best plan is kept in `best`.
   * A k whose candidates' estimated gains do not exceed that fixed cost is skipped.
   */
  void try_copy_groups(Best& best, ShardStats& stats) {
    const std::vector<std::pair<int, double>> ranked = copy_candidates();
    // What copies cost however many there are: the all-reduce's latency and a second call.
    double fixed = task_.topology.a2a_latency_us / 1000.0;
    if (state_.additive()) fixed += state_.overhead().fw_ms + state_.overhead().bw_ms;
    std::vector<double> gain_of_first(ranked.size() + 1, 0.0);
    for (std::size_t i = 0; i < ranked.size(); ++i) gain_of_first[i + 1] = gain_of_first[i] + ranked[i].second;
    for (std::size_t k = 1; k <= ranked.size() && !spent();
         k = k < ranked.size() && 2 * k > ranked.size() ? ranked.size() : 2 * k) {
      // These copies cannot pay for themselves (gains are ms only where the model adds up).
      if (state_.additive() && gain_of_first[k] <= fixed) continue;
      for (int t = 0; t < state_.num_tables(); ++t) state_.remove_table(t);
      std::vector<bool> copied(static_cast<std::size_t>(state_.num_tables()), false);
      bool placed = true;
      for (std::size_t i = 0; i < k && placed; ++i) {
        copied[static_cast<std::size_t>(ranked[i].first)] = true;
        placed = insert(ranked[i].first, {Layout::Kind::kCopies, n_, 0}, false);
      }
      for (std::size_t i = 0; i < order_.size() && placed; ++i)
        if (!copied[static_cast<std::size_t>(order_[i])]) placed = insert_best(order_[i], start_layouts(order_[i]));
      if (placed) settle(best, stats);
    }
    state_.restore(best.plan);
  }

  /** The perturbation under `keep_layouts`: every piece of the `chosen` tables to a random device
   *  where it fits as it is (its rows, columns and tier kept), else where it was. */
  void move_pieces_randomly(const std::vector<int>& chosen) {
    for (int t : chosen) {
      if (state_.layout(t).first_device >= 0 || !movable(t) || state_.colocated(t)) continue;
      for (std::size_t i = 0; i < state_.pieces(t).size() && !spent(); ++i) {
        const Piece old = state_.lift(t, i);
        const int d = static_cast<int>(rng_.below(static_cast<std::uint64_t>(n_)));
        Piece p;
        const bool moved =
            !holds(t, d) && state_.make_piece(t, old.placed.shard, d, allows_uvm(t), p) && keeps_tier(p, old);
        state_.place(i, moved ? p : old);
      }
    }
  }

  /** Re-lays out one to three random tables in random layouts (seeded). */
  void perturb() {
    const int count = 1 + static_cast<int>(rng_.below(3));
    std::vector<int> chosen;
    const std::vector<int> critical = tables_on(state_.critical_devices());
    for (int k = 0; k < count; ++k) {
      const bool from_critical = !critical.empty() && rng_.below(2) == 0;
      chosen.push_back(from_critical ? critical[rng_.below(critical.size())]
                                     : static_cast<int>(rng_.below(state_.num_tables())));
    }
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    if (options_.keep_layouts) return move_pieces_randomly(chosen);
    // Only the chosen tables are saved (a snapshot of every table costs as much as the round at
    // scale); past the budget or where a table fits nowhere they go back as they were.
    std::vector<std::pair<Layout, std::vector<Piece>>> saved;
    for (int t : chosen) saved.emplace_back(state_.layout(t), state_.remove_table(t));
    for (int t : chosen) {
      const std::vector<Layout> layouts = all_layouts(t);
      const Layout layout = layouts[rng_.below(layouts.size())];
      if (spent() || (!insert(t, layout, allows_uvm(t)) && !insert_best(t, layouts))) {
        for (std::size_t i = 0; i < chosen.size(); ++i) {
          state_.remove_table(chosen[i]);
          state_.set_layout(chosen[i], saved[i].first);
          for (const Piece& p : saved[i].second) state_.add(p);
        }
        return;
      }
    }
  }

  const Task& task_;
  CostModel& cost_;
  Options options_;
  const Context& ctx_;
  State state_;
  int n_;
  int max_parts_;
  Rng rng_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<int> order_;
  std::vector<int> rank_;        ///< each table's place in order_
  std::vector<int> move_rank_;   ///< the order the local search tries tables in (rank_, or rank_by_load_per_byte)
  double mean_weight_ = 0.0;     ///< an average device's share of the tables' weights
  double mean_lookups_ = 0.0;    ///< an average device's share of the tables' lookups
  bool copies_;                  ///< data-parallel copies tried (the option, and the model can cost them)
  std::vector<bool> taken_;      ///< candidates' scratch: the devices holding a piece of the table
  std::optional<double> value_;  ///< value()
  int only_host_ = -1;           ///< ≥ 0: candidates are this host's devices (insert_on_best_host)
  bool whole_start_ = false;     ///< the greedy start splits no table (settle_whole_start)
  /// several hosts, at most kAllCandidatesUpTo devices: row shifts must pay (kRowShiftGain),
  /// re-layouts are scored first and more of them end a descent (kRelayoutTablesUpTo32)
  const bool hosts_up_to_32_;
  const std::size_t relayout_tables_;  ///< tables a descent re-lays out before it ends
  std::int64_t evaluations_ = 0;
  std::int64_t estimate_work_ = 0;    ///< re-partitions' estimated splits / 16 (work units, joint.h Budget)
  std::int64_t other_work_ = 0;       ///< the other chains' work (reported)
  std::int64_t uncounted_work_ = 0;   ///< step 5's, left out of work() (cut_rows_of)
  std::optional<Best> row_cut_best_;  ///< step 5's best plan: a kept best with its row cuts set at once
  int row_cut_rounds_ = 0;            ///< the program's rounds that made row_cut_best_ (reported)
  std::int64_t limit_ = std::numeric_limits<std::int64_t>::max();  ///< work at which the search stops
};

/** 2D layouts searched after the 1D plan under `groups=auto`, each with kLayoutShare of the
 *  budget on top of the 1D search's (joint.h, "2D"). */
constexpr std::size_t kLayoutsSearched = 3;
/** A layout is searched only if predicted within this share above the 1D plan's objective: the
 *  prediction misses what a group's search gains in balance, never by this much (joint.h). */
constexpr double kPredictionMargin = 0.1;
constexpr double kLayoutShare = 1.0 / 6.0;

/**
 * How long an evenly spread all-to-all of `share` of the batch's outputs takes among `topology`'s
 * devices, up to a common factor (cost/link_model.h): each device sends 1/N² of the outputs to
 * each peer, L − 1 of them on its host's links and N − L over its NIC, running concurrently.
 */
double even_exchange_time(const Topology& topology, double share) {
  const double n = topology.num_devices();
  const double l = topology.host_size();
  if (n <= 1) return 0.0;
  return share * std::max((l - 1) / topology.slowest_intra_gbps(), (n - l) / topology.slowest_inter_gbps()) / (n * n);
}

/** The layouts `groups` names for `task` (Options::groups); throws Error for a G it cannot take. */
std::vector<ShardingGroups> layouts_named(const Task& task, int groups) {
  if (groups == 0) return {};
  if (groups == kAutoGroups) return sharding_group_layouts(task);
  std::vector<ShardingGroups> layouts;
  std::string why;
  for (GroupRanks ranks : {GroupRanks::kStrided, GroupRanks::kContiguous}) {
    const ShardingGroups g{groups, ranks, task.topology.num_devices()};
    const std::string problem = find_error_in_groups(task, g);
    (problem.empty() ? layouts.push_back(g) : void(why = problem));
  }
  EMBSHARD_CHECK(!layouts.empty(), "joint: groups=", groups, ": ", why);
  return layouts;
}

class JointSharder final : public Sharder {
 public:
  explicit JointSharder(Options options) : options_(options) {}
  [[nodiscard]] bool uses_cost_model() const override { return true; }
  [[nodiscard]] ShardResult shard_from(const Task& task, CostModel* cost, const PlanOrigin& origin,
                                       const Context& ctx) const override {
    Options o = options_;
    o.origin = &origin;
    o.groups = 0;  // a re-plan searches 1D (a 2D one, its group's task: eval/replan.h)
    if (origin.replica_sync.enabled()) o.sync = origin.replica_sync, o.data_parallel = false;
    return Search(task, *cost, o, ctx, std::chrono::steady_clock::now()).run();
  }
  [[nodiscard]] ShardResult shard(const Task& task, CostModel* cost, const Context& ctx) const override {
    // time_ms covers the bound, the search and the plan's gap; the bound and placing every table
    // once are not cut short (joint.h, and `overrun`).
    const auto start = std::chrono::steady_clock::now();
    std::optional<double> bound;
    double bound_ms = 0.0;
    std::optional<double> value;  // the plan's objective, where the search kept it or the choice judged it
    ShardResult result;
    // The bound does not steer the search: given a second thread it is computed beside the search
    // (joint.h, "Budget"); on one, first. Either way the same plan and the same bound.
    parallel_for(2, std::min(ctx.num_threads, 2), [&](std::size_t i) {
      if (i == 0) {
        bound = cost->lower_bound(task, options_.objective);
        bound_ms = ms_since(start);
      } else {
        result = plan_layouts(task, *cost, ctx, start, value);
      }
    });
    if (result.status != ShardStatus::kOk) return result;
    result.lower_bound = bound;
    result.bound_objective = options_.objective;
    if (bound && *bound > 0 && options_.objective != Objective::kBalance) {
      if (!value) value = plan_value(task, *cost, result.plan, ctx);
      result.stats.solver_gap = gap_to_bound(*value, *bound);
    }
    result.stats.solver += overrun(ctx, start, bound_ms, ctx.num_threads >= 2);
    return result;
  }

 private:
  [[nodiscard]] static double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }

  /**
   * "" unless the run ended more than 10% past its deadline (time_ms, or the context's when
   * sooner); then how long it took, and what is not cut short: the bound (timed; `beside`: it ran
   * on a thread of its own), placing every table once (the greedy start's unscored rest) and
   * judging the plan — at scale these set the floor of a deadline (joint.h).
   */
  [[nodiscard]] std::string overrun(const Context& ctx, std::chrono::steady_clock::time_point start, double bound_ms,
                                    bool beside) const {
    double limit_ms = options_.time_ms;
    if (ctx.deadline)
      limit_ms = std::min(limit_ms, std::chrono::duration<double, std::milli>(*ctx.deadline - start).count());
    limit_ms = std::max(limit_ms, 0.0);
    const double took_ms = ms_since(start);
    if (took_ms <= 1.1 * limit_ms) return "";
    const std::string bound = readable_ms(bound_ms);
    const std::string floor =
        beside ? detail::concat("placing each table once, judging the plan and the bound (", bound,
                                ", on a thread of its own)")
               : detail::concat("the bound (", bound, "), placing each table once and judging the plan");
    return detail::concat("; took ", readable_ms(took_ms), " against a deadline of ", readable_ms(limit_ms), ": ",
                          floor, " are not cut short");
  }

  /** The objective of `plan` on `task`, a 2D plan by a model built for its group's task. */
  double plan_value(const Task& task, CostModel& cost, const Plan& plan, const Context& ctx) const {
    if (!plan.groups.enabled()) return objective_value(cost.estimate(task, plan, ctx), options_.objective);
    const auto group_cost = cost.for_task(sharding_group_task(task, plan.groups));
    return objective_value(group_cost->estimate(task, plan, ctx), options_.objective);
  }

  /** The best plan among 1D and the 2D layouts the options name (joint.h, "2D"); `chosen_value`:
   *  its objective where the choice judged it, else where the 1D search kept it (Search::value). */
  ShardResult plan_layouts(const Task& task, CostModel& cost, const Context& ctx,
                           std::chrono::steady_clock::time_point start, std::optional<double>& chosen_value) const {
    std::vector<ShardingGroups> layouts = layouts_named(task, options_.groups);
    const bool only_2d = options_.groups > 0;
    EMBSHARD_CHECK(!only_2d || options_.objective != Objective::kBalance, "joint: groups=", options_.groups,
                   " with objective=balance: 2D layouts are chosen on step or max_sum");
    const auto search_1d = [&] {
      Search search(task, cost, options_, ctx, start);
      ShardResult result = search.run();
      chosen_value = search.value();
      return result;
    };
    if (layouts.empty() || options_.objective == Objective::kBalance) return search_1d();
    EMBSHARD_CHECK(!only_2d || cost.for_task(task), "joint: groups=", options_.groups, ": the cost model ", cost.spec(),
                   " cannot cost a 2D plan's sharding group (use sim)");
    if (!cost.for_task(task)) {
      ShardResult result = search_1d();
      result.stats.solver += "; 2D layouts not tried: the cost model cannot be built for a sharding group";
      return result;
    }
    ShardResult best;
    double best_value = kInf;
    std::int64_t evaluated = 0;
    std::string tried;
    // A layout's search first places every table; once the 1D search's own deadline has passed
    // there is no time left for that (it would run past time_ms, unscored), nor for judging.
    const auto deadline = search_deadline(task, options_, start);
    if (!only_2d) {
      best = search_1d();
      if (best.status != ShardStatus::kOk) return best;  // 2D needs more memory per device, not less
      if (std::chrono::steady_clock::now() >= deadline) {
        best.stats.solver += "; 2D layouts not searched: the 1D search reached the deadline";
        return best;
      }
      evaluated = best.stats.plans_evaluated;
      const CostBreakdown b = cost.estimate(task, best.plan, ctx);
      best_value = objective_value(b, options_.objective);
      layouts = most_promising(task, b, best_value, layouts);
    }
    const double share = only_2d ? 1.0 / static_cast<double>(layouts.size()) : kLayoutShare;
    for (const ShardingGroups& groups : layouts) {
      if (!only_2d && std::chrono::steady_clock::now() >= deadline) break;
      const Task group_task = sharding_group_task(task, groups);
      const auto group_cost = cost.for_task(group_task);
      Options o = options_;
      o.work_share = share;
      o.sync = replica_sync_cost(task.topology, groups, task.workload.replica_sync_every);
      o.data_parallel = false;  // a 2D plan has no data-parallel table (plan/sharding_groups.h)
      ShardResult r = Search(group_task, *group_cost, o, ctx, start).run();
      tried += detail::concat(tried.empty() ? "" : ", ", groups.size, " ", to_string(groups.ranks));
      if (r.status != ShardStatus::kOk) {
        tried += " (no plan)";
        if (only_2d && best_value == kInf) best = std::move(r);
        continue;
      }
      r.plan.groups = groups;
      const double value = objective_value(group_cost->estimate(task, r.plan, ctx), options_.objective);
      tried += detail::concat(" ", value);
      evaluated += r.stats.plans_evaluated;
      if (value < best_value) {
        best_value = value;
        best = std::move(r);
      }
    }
    best.stats.plans_evaluated = evaluated;
    if (best.status == ShardStatus::kOk && best_value < kInf) chosen_value = best_value;
    if (!tried.empty())
      best.stats.solver += detail::concat("; 2D layouts searched (ranks per group, ranks, objective): ", tried,
                                          "; chose ", describe_groups(best.plan.groups, task.topology.num_devices()));
    return best;
  }

  /** The 2D layouts worth a search after the 1D plan of breakdown `b` (joint.h, "2D"), best first. */
  std::vector<ShardingGroups> most_promising(const Task& task, const CostBreakdown& b, double value,
                                             const std::vector<ShardingGroups>& layouts) const {
    const auto most = [&b](auto field) {
      double m = 0.0;
      for (const DeviceCost& c : b.devices) m = std::max(m, c.*field);
      return m;
    };
    const double comm = most(&DeviceCost::in_comm_ms) + most(&DeviceCost::fw_comm_ms) + most(&DeviceCost::bw_comm_ms);
    const double whole = even_exchange_time(task.topology, 1.0);
    const auto bytes = static_cast<double>(task.workload.total_bytes());
    std::vector<std::pair<double, ShardingGroups>> predicted;
    for (const ShardingGroups& g : layouts) {
      const double sync = replica_sync_floor_ms(task, g, bytes);
      if (sync >= value) continue;
      const Topology group = sharding_group_topology(task.topology, g);
      double room = 0.0;  // a group holds every table: no layout whose ranks cannot
      for (const Device& d : group.devices)
        room +=
            static_cast<double>(d.hbm_bytes) + (task.constraints.allow_uvm ? static_cast<double>(d.uvm_bytes) : 0.0);
      if (room < bytes) continue;
      const double share = static_cast<double>(g.size) / task.topology.num_devices();  // of the batch
      const double ratio = whole > 0 ? even_exchange_time(group, share) / whole : 1.0;
      const double prediction = value - comm + comm * ratio + sync;
      if (prediction <= value * (1.0 + kPredictionMargin)) predicted.emplace_back(prediction, g);
    }
    std::stable_sort(predicted.begin(), predicted.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<ShardingGroups> out;
    for (std::size_t i = 0; i < predicted.size() && i < kLayoutsSearched; ++i) out.push_back(predicted[i].second);
    return out;
  }

  Options options_;
};

}  // namespace

std::int64_t default_work(int tables, int devices, bool incremental) {
  if (incremental) {
    const double scale =
        std::sqrt(std::clamp(static_cast<double>(tables), kIncrementalWorkTables, kMostIncrementalWorkTables) /
                  kIncrementalWorkTables);
    return static_cast<std::int64_t>(static_cast<double>(kIncrementalWork) * scale);
  }
  return devices <= kWorkDevices ? kWork : kWork * devices / kWorkDevices;
}

}  // namespace joint

namespace {

/** The `groups` parameter: auto, none or a positive group size (joint.h). */
int parse_groups(const std::string& text) {
  if (text == "auto") return joint::kAutoGroups;
  if (text == "none") return 0;
  std::size_t used = 0;
  int g = 0;
  try {
    g = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  EMBSHARD_CHECK(used == text.size() && g > 0, "joint: groups='", one_line(text),
                 "' must be auto, none or a positive number of ranks per sharding group");
  return g;
}

/** The text of a default in the spec's canonical form. */
std::string text_of(bool b) { return b ? "true" : "false"; }
template <typename Int>
requires std::is_integral_v<Int> std::string text_of(Int n) { return std::to_string(n); }
std::string groups_text(int groups) {
  return groups == joint::kAutoGroups ? "auto" : groups == 0 ? "none" : std::to_string(groups);
}

}  // namespace

void register_joint(Registry<Sharder>& registry) {
  const joint::Options d;  // the defaults, written once (joint.h)
  registry.add(
      {"joint",
       "embshard's planner: every table's layout (whole, rows, columns, grids, copies, HBM/UVM split) chosen with "
       "the device of every piece by local search on the cost model's objective (src/shard/joint/joint.h)",
       {{"objective",
         ParamType::kString,
         to_string(d.objective),
         {},
         {},
         {"step", "max_sum", "balance"},
         "what the plan minimises (balance: maximises)"},
        {"time_ms",
         ParamType::kInt,
         text_of(static_cast<std::int64_t>(d.time_ms)),
         0,
         1e9,
         {},
         "wall-clock safety stop in ms (the context's deadline when sooner), kept within 10% at every size: the "
         "best plan so far is returned, and past it the greedy start places the remaining tables unscored"},
        {"patience",
         ParamType::kInt,
         text_of(d.patience),
         0,
         1000000,
         {},
         "rounds of perturbation without improvement before the search stops"},
        {"work",
         ParamType::kInt,
         text_of(d.work),
         0,
         1e15,
         {},
         "the search's budget in work units (objective evaluations and pieces placed or taken off) after its "
         "start, shared by the chains; a run is the same for its seed and budget however loaded the machine "
         "(unless time_ms cuts it) and a larger budget never gives a worse plan; 0: 1,500,000 per 8 devices (at "
         "least 1,500,000), or where the objective is kept per change (64 devices or more) 3,000,000, times "
         "sqrt(tables / 5,000) from 5,000 to 50,000 tables (at most 9,486,832)"},
        {"chains",
         ParamType::kInt,
         text_of(d.chains),
         1,
         64,
         {},
         "chains of perturbation rounds, each with its own seed and share of the budget, run at once on the "
         "context's threads (the plan does not depend on how many there are)"},
        {"max_parts",
         ParamType::kInt,
         text_of(d.max_parts),
         0,
         1 << 18,
         {},
         "most pieces a table is split into (0: the device count, at most 64)"},
        {"rows", ParamType::kBool, text_of(d.rows), {}, {}, {}, "try row-wise layouts"},
        {"columns", ParamType::kBool, text_of(d.columns), {}, {}, {}, "try column-wise layouts"},
        {"uvm",
         ParamType::kBool,
         text_of(d.uvm),
         {},
         {},
         {},
         "keep rows that do not fit HBM in UVM where the task allows"},
        {"grids",
         ParamType::kBool,
         text_of(d.grids),
         {},
         {},
         {},
         "try column × row grids (2–4 column pieces, each in 2–4 row blocks)"},
        {"data_parallel",
         ParamType::kBool,
         text_of(d.data_parallel),
         {},
         {},
         {},
         "try a copy of a table on every device (data_parallel) where it fits and the cost model can cost copies "
         "(below 64 devices)"},
        {"torchrec",
         ParamType::kBool,
         text_of(d.torchrec),
         {},
         {},
         {},
         "only row layouts TorchRec's training path runs: even blocks over all devices or one whole host, in rank "
         "order"},
        {"keep_layouts",
         ParamType::kBool,
         text_of(d.keep_layouts),
         {},
         {},
         {},
         "only pieces move, every table keeping its layout and shards from where the search starts (a re-plan "
         "TorchRec's reshard can run: replan --reshard)"},
        {"cut_rows",
         ParamType::kInt,
         text_of(d.cut_rows),
         0,
         1 << 20,
         {},
         "each local optimum the search keeps is also tried with every row cut set at once by a linear program, "
         "the placement kept, where it has at most this many row pieces (0: never; step objective, additive cost "
         "models); the better plan is returned"},
        {"exact_limit",
         ParamType::kInt,
         text_of(d.exact_limit),
         0,
         1 << 30,
         {},
         "score every table-wise plan when there are at most this many (tiny tasks)"},
        {"candidates",
         ParamType::kInt,
         text_of(d.candidates),
         1,
         1 << 18,
         {},
         "devices a piece is tried on when there are more than 32 (the least loaded)"},
        {"split_start",
         ParamType::kFloat,
         format_float(d.split_start),
         0.0,
         1e6,
         {},
         "above one host, a table holding more than this share of an average device's lookups or lookups x dim "
         "starts in row pieces of at most this share each (0: every table starts whole)"},
        {"groups",
         ParamType::kString,
         groups_text(d.groups),
         {},
         {},
         {},
         "2D parallelism (TorchRec's DMPCollection, plan/sharding_groups.h): auto chooses among 1D and the 2D "
         "layouts the task allows, none keeps to 1D, a number G plans sharding groups of G ranks"}}},
      [](const Params& p, const Context&) {
        joint::Options o;
        o.objective = parse_objective(p.get_string("objective"));
        o.time_ms = static_cast<double>(p.get_int("time_ms"));
        o.patience = static_cast<int>(p.get_int("patience"));
        o.max_parts = static_cast<int>(p.get_int("max_parts"));
        o.work = p.get_int("work");
        o.chains = static_cast<int>(p.get_int("chains"));
        o.rows = p.get_bool("rows");
        o.columns = p.get_bool("columns");
        o.uvm = p.get_bool("uvm");
        o.data_parallel = p.get_bool("data_parallel");
        o.grids = p.get_bool("grids");
        o.torchrec = p.get_bool("torchrec");
        o.keep_layouts = p.get_bool("keep_layouts");
        o.cut_rows = static_cast<int>(p.get_int("cut_rows"));
        o.exact_limit = p.get_int("exact_limit");
        o.candidates = static_cast<int>(p.get_int("candidates"));
        o.split_start = p.get_float("split_start");
        o.groups = parse_groups(p.get_string("groups"));
        return std::make_unique<joint::JointSharder>(o);
      });
}

}  // namespace embshard::detail
