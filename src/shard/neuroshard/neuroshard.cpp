// `neuroshard`: NeuroShard's search — column-wise beam search around a greedy grid search over the
// per-device dim cap, on the cost model it is given (refs-zha.md §5.4; the algorithm and where
// each rule comes from are in neuroshard.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>

#include "embshard/core/error.h"
#include "shard/builtin_sharders.h"
#include "shard/neuroshard/neuroshard.h"

namespace embshard::detail {
namespace neuroshard {
namespace {

constexpr double kNoPlan = std::numeric_limits<double>::infinity();

/** A column-split plan: the split steps (piece indices, replayed in order) and its grid value. */
struct BeamEntry {
  std::vector<int> steps;
  double value = kNoPlan;
};

/** The best plan so far. */
struct BestPlan {
  double value = kNoPlan;
  std::vector<Piece> pieces;
  std::vector<int> devices;
};

/** The largest table a greedy could not place, and why. */
struct WorstFailure {
  int table = -1;
  Piece piece;
  std::string why;
};

/** The top `n` indices by `value` (ties: the lower index). */
template <typename T>
std::vector<int> top_indices(const std::vector<T>& value, int n) {
  std::vector<int> idx(value.size());
  std::iota(idx.begin(), idx.end(), 0);
  const auto middle = idx.begin() + std::min<std::ptrdiff_t>(n, std::ssize(idx));
  std::partial_sort(idx.begin(), middle, idx.end(), [&](int a, int b) {
    const T va = value[static_cast<std::size_t>(a)];
    const T vb = value[static_cast<std::size_t>(b)];
    return va > vb || (va == vb && a < b);
  });
  idx.erase(middle, idx.end());
  return idx;
}

/** Pieces tried for a split: all if `n` exceeds their number, else top-n by bytes ∪ by compute. */
std::vector<int> split_candidates(const SplitState& state, int n) {
  const int count = static_cast<int>(state.pieces.size());
  std::vector<int> out;
  if (n > count) {
    out.resize(static_cast<std::size_t>(count));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  out = top_indices(state.bytes, n);
  const std::vector<int> costly = top_indices(state.single_ms, n);
  out.insert(out.end(), costly.begin(), costly.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

class Search {
 public:
  Search(const Task& task, CostModel& cost, const SearchOptions& options, const Context& ctx)
      : task_(task), cost_(cost), options_(options), ctx_(ctx), cache_(cost.compute()),
        scales_(grid_scales(options.scales, options.max_scale)) {
    if (options.time_ms > 0) {
      own_deadline_ = std::chrono::steady_clock::now() +
                      std::chrono::microseconds(static_cast<std::int64_t>(options.time_ms * 1000.0));
    }
  }

  ShardResult run() {
    std::vector<BeamEntry> beam{{{}, grid_search({})}};
    const int rounds = task_.constraints.allow_column_split ? options_.max_depth : 0;
    for (int round = 0; round < rounds && !out_of_time_; ++round) {
      std::vector<BeamEntry> next = expand(beam);
      if (next.empty()) break;
      std::stable_sort(next.begin(), next.end(),
                       [](const BeamEntry& a, const BeamEntry& b) { return a.value < b.value; });
      if (std::ssize(next) > options_.beam_width) next.resize(static_cast<std::size_t>(options_.beam_width));
      beam = std::move(next);
    }
    return result();
  }

 private:
  /** One round: every beam entry with every candidate split that halves to a multiple of 4. */
  std::vector<BeamEntry> expand(const std::vector<BeamEntry>& beam) {
    std::vector<BeamEntry> next;
    for (const BeamEntry& entry : beam) {
      const SplitState state = state_after(entry.steps);
      for (const int t : split_candidates(state, options_.candidates)) {
        if (!splittable(state.pieces[static_cast<std::size_t>(t)])) continue;
        std::vector<int> steps = entry.steps;
        steps.push_back(t);
        const double value = grid_search(steps);
        next.push_back({std::move(steps), value});
        if (out_of_time_) return next;
      }
    }
    return next;
  }

  SplitState state_after(const std::vector<int>& steps) {
    std::vector<Piece> pieces = whole_tables(task_);
    for (const int t : steps) split_piece(pieces, t);
    return make_split_state(task_, std::move(pieces), cache_, ctx_);
  }

  /** The best greedy over the scales for the split set `steps`; updates the best plan. */
  double grid_search(const std::vector<int>& steps) {
    const SplitState state = state_after(steps);
    std::vector<std::pair<std::vector<int>, double>> scored;  // distinct placements of this grid
    double best_value = kNoPlan;
    std::vector<int> best_devices;
    for (const double scale : scales_) {
      if (out_of_time()) break;
      ++stats_.nodes_visited;
      Placement placement = greedy_place(task_, state, scale, cache_, ctx_);
      if (!placement.ok()) {
        note_failure(state, placement.failure);
        continue;
      }
      const double value = score_once(state, placement.devices, scored);
      if (value < best_value) {
        best_value = value;
        best_devices = std::move(placement.devices);
      }
    }
    if (best_value < best_.value) best_ = {best_value, state.pieces, std::move(best_devices)};
    return best_value;
  }

  /** The objective of a placement; scales that place alike are scored once. */
  double score_once(const SplitState& state, const std::vector<int>& devices,
                    std::vector<std::pair<std::vector<int>, double>>& scored) {
    for (const auto& [seen, value] : scored) {
      if (seen == devices) return value;
    }
    const Plan plan = plan_of_pieces(task_, state.pieces, devices, state.order);
    const CostBreakdown breakdown = assemble_breakdown(task_, plan, cache_, cost_.comm(), ctx_);
    ++stats_.plans_evaluated;
    scored.emplace_back(devices, objective_value(breakdown, options_.objective));
    return scored.back().second;
  }

  void note_failure(const SplitState& state, const PlacementFailure& failure) {
    const Piece& piece = state.pieces[static_cast<std::size_t>(failure.piece)];
    const auto size = [&](int t) { return task_.workload.tables[static_cast<std::size_t>(t)].size_bytes(); };
    if (worst_.table < 0 || size(piece.table) > size(worst_.table)) {
      worst_ = {piece.table, piece, failure.why};
    }
  }

  bool out_of_time() {
    if (!out_of_time_)
      out_of_time_ = ctx_.past_deadline() || (own_deadline_ && std::chrono::steady_clock::now() >= *own_deadline_);
    return out_of_time_;
  }

  ShardResult result() const {
    ShardResult r;
    r.stats = stats_;
    r.stats.cache_queries = cache_.queries();
    r.stats.cache_hits = cache_.hits();
    const bool found = std::isfinite(best_.value);
    if (found) r.plan = plan_of_pieces(task_, best_.pieces, best_.devices, task_order(best_.pieces));
    if (out_of_time_ && found && !ctx_.past_deadline()) {  // its own time_ms: the best plan so far
      r.stats.solver = concat("stopped at time_ms after ", stats_.nodes_visited, " greedy runs: the best plan so far");
    } else if (out_of_time_) {
      r.status = ShardStatus::kTimeLimit;
      r.reason = concat("deadline reached after ", stats_.nodes_visited, " greedy runs; ",
                        found ? "the plan is the best found so far" : "no plan found yet");
    } else if (!found) {
      r.status = ShardStatus::kInfeasible;
      r.reason = infeasible_reason();
    }
    return r;
  }

  std::string infeasible_reason() const {
    if (worst_.table < 0) return "no greedy run placed every table";
    const TableSpec& spec = task_.workload.tables[static_cast<std::size_t>(worst_.table)];
    return concat("every scale of every split set explored fails; the largest table not placed is '", spec.name, "' (",
                  spec.size_bytes(), " bytes, ", spec.dim, " columns; as columns [", worst_.piece.col_begin, ", ",
                  worst_.piece.col_end, "): ", worst_.why, ")");
  }

  const Task& task_;
  CostModel& cost_;
  SearchOptions options_;
  const Context& ctx_;
  ShardCostCache cache_;
  std::vector<double> scales_;
  BestPlan best_;
  WorstFailure worst_;
  ShardStats stats_;
  bool out_of_time_ = false;
  std::optional<std::chrono::steady_clock::time_point> own_deadline_;  ///< from time_ms
};

}  // namespace

ShardResult neuroshard_search(const Task& task, CostModel& cost, const SearchOptions& options, const Context& ctx) {
  return Search(task, cost, options, ctx).run();
}

}  // namespace neuroshard

namespace {

class NeuroShardSharder final : public Sharder {
 public:
  explicit NeuroShardSharder(neuroshard::SearchOptions options) : options_(options) {}
  [[nodiscard]] bool uses_cost_model() const override { return true; }

  [[nodiscard]] ShardResult shard(const Task& task, CostModel* cost, const Context& ctx) const override {
    EMBSHARD_CHECK(cost != nullptr, "neuroshard needs a cost model");
    return neuroshard::neuroshard_search(task, *cost, options_, ctx);
  }

 private:
  neuroshard::SearchOptions options_;
};

neuroshard::SearchOptions search_options(const Params& p) {
  neuroshard::SearchOptions o;
  o.beam_width = static_cast<int>(p.get_int("beam_width"));
  o.candidates = static_cast<int>(p.get_int("candidates"));
  o.max_depth = static_cast<int>(p.get_int("max_depth"));
  o.scales = static_cast<int>(p.get_int("scales"));
  o.max_scale = p.get_float("max_scale");
  o.objective = parse_objective(p.get_string("objective"));
  o.time_ms = static_cast<double>(p.get_int("time_ms"));
  return o;
}

}  // namespace

void register_neuroshard(Registry<Sharder>& registry) {
  registry.add(
      {"neuroshard",
       "NeuroShard's search: column splits by beam search around a greedy grid search over the "
       "per-device dim cap, under the cost model",
       {{"beam_width", ParamType::kInt, "3", 1, 100, {}, "column-split plans kept per round (K)"},
        {"candidates",
         ParamType::kInt,
         "10",
         1,
         10000,
         {},
         "tables tried for a split: top-N by size and top-N by predicted compute (N)"},
        {"max_depth", ParamType::kInt, "10", 0, 100, {}, "rounds of column splits (L); 0: table-wise only"},
        {"scales",
         ParamType::kInt,
         "11",
         1,
         1000,
         {},
         "grid points of the dim cap, from 1 to max_scale × the mean device dim (M)"},
        {"max_scale",
         ParamType::kFloat,
         "1.5",
         1.0,
         100.0,
         {},
         "largest dim cap, as a multiple of the mean device dim"},
        {"objective", ParamType::kString, "step", {}, {}, {"step", "max_sum"}, "what the grid search minimises"},
        {"time_ms",
         ParamType::kInt,
         "0",
         0,
         1e9,
         {},
         "stop after this many ms with the best plan so far (the context's deadline when sooner ends it as "
         "time_limit); 0: never"}}},
      [](const Params& p, const Context&) { return std::make_unique<NeuroShardSharder>(search_options(p)); });
}

}  // namespace embshard::detail
