#pragma once
/**
 * NeuroShard's search (paper 003 §3.3, Algorithms 1–2; the authors' `neurosharder.py` as digested
 * in refs-zha.md §5.4, §5.5 and §7 items 9–11), on any `CostModel`: it only asks the model's
 * `compute()` for one device's shard list and scores whole plans with `assemble_breakdown`.
 *
 * Pieces. The search works on a list of pieces, each a column range of a task table spanning all
 * its rows (NeuroShard's "augmented table list"). At first piece i is table i. A split of piece t
 * halves its columns in place (t keeps the left half) and appends the right half as a NEW LAST
 * piece (§5.4 step 4). Only pieces whose half is a multiple of 4 split, i.e. widths divisible by
 * 8 (§7 item 10); a half may be split again. In the plan a split table is a column-wise table.
 *
 * Greedy table-wise placement for a scale s (§5.4 `_greedy`):
 *   - cap = s × (Σ piece widths / devices); a split does not change it;
 *   - pieces ordered by predicted single-piece compute (fw+bw), largest first, ties: the higher
 *     piece index first (NumPy's stable ascending sort taken from the end);
 *   - device d is feasible when its HBM still holds the piece (rows × cols × bytes per element)
 *     and its width sum + the piece's width ≤ cap;
 *   - the piece goes to the feasible device with the smallest CURRENT predicted whole-shard
 *     compute (fw+bw of the model on the device's whole shard list), ties: smaller byte sum, then
 *     the lower id; that device's whole shard is then re-predicted (not a running sum, §7 item 9);
 *   - no feasible device: this scale fails.
 *
 * Greedy grid search (§5.4 `_table_wise_shard`): scales s_i = 1 + i·(max_scale − 1)/(scales − 1),
 * i = 0..scales−1 (1.00, 1.05, .., 1.50 by default; just 1 when scales = 1). Each successful
 * greedy is scored by the objective of the full cost model's breakdown (step by default; max_sum
 * is NeuroShard's own sum, §5.5); the strictly lowest wins, so the earliest scale wins ties.
 *
 * Column-wise beam search (§5.4 `shard`, Algorithm 1): start from the grid search of the unsplit
 * pieces; up to max_depth rounds, for each of the ≤ beam_width beam entries (a list of split
 * steps, replayed from the unsplit pieces) try splitting each candidate piece — every piece when
 * candidates > number of pieces, else the union of the top-`candidates` by bytes and by predicted
 * single-piece compute (ties: the lower index), in ascending index order — and grid-search the
 * result. A strictly lower objective than the best so far becomes the best. The next beam is the
 * beam_width lowest of the round (stable; kept even when worse than the best, failures included);
 * a round that tries nothing ends the search. No splits when the task forbids column splits.
 *
 * Cost cache (§5.4, paper §3.3 "Implementation with caching"): one per `shard` call, keyed by a
 * device's shard list in insertion order (table index and column range per shard; permutations
 * are distinct keys), as a trie so that appending one piece is one hash look-up. It also wraps
 * the compute model when whole plans are scored.
 */
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "embshard/cost/cost_model.h"
#include "embshard/shard/sharder.h"

namespace embshard::detail::neuroshard {

/** A column range of a task table, all rows. */
struct Piece {
  int table = 0;
  int col_begin = 0;
  int col_end = 0;

  [[nodiscard]] int cols() const { return col_end - col_begin; }
};

/** One piece per task table, in task order. */
[[nodiscard]] std::vector<Piece> whole_tables(const Task& task);
/** Bytes of a piece: rows × cols × bytes per element. */
[[nodiscard]] std::int64_t piece_bytes(const Task& task, const Piece& piece);
/** The piece as a shard of its table (all rows, all in HBM) on `device`. */
[[nodiscard]] PlacedShard placed_shard(const Task& task, const Piece& piece, int device);
/** Whether halving the piece leaves a multiple of 4 (its width divisible by 8). */
[[nodiscard]] bool splittable(const Piece& piece);
/** Halves piece `index` in place and appends the right half as the last piece. */
void split_piece(std::vector<Piece>& pieces, int index);

/**
 * Whole-shard compute keyed by the shard list in insertion order (file comment). A node stands
 * for one list; `child` extends it by one shard. As a `ComputeModel` it serves any list of
 * full-row, all-HBM shards (what this search builds) from the cache.
 */
class ShardCostCache final : public ComputeModel {
 public:
  static constexpr int kEmptyList = 0;

  explicit ShardCostCache(ComputeModel& model);

  /** The node of `node`'s list with `shard` appended (created on first use). */
  [[nodiscard]] int child(int node, const PlacedShard& shard);
  /** fw+bw of `node`, whose list is `shards`; computed by the model on a miss. */
  [[nodiscard]] double total_ms(const Task& task, int node, std::span<const PlacedShard> shards, const Context& ctx);

  [[nodiscard]] std::int64_t queries() const { return queries_; }
  [[nodiscard]] std::int64_t hits() const { return hits_; }

  [[nodiscard]] std::string spec() const override { return model_.spec(); }
  [[nodiscard]] CostSource source() const override { return model_.source(); }
  [[nodiscard]] std::string detail() const override { return model_.detail(); }
  [[nodiscard]] DeviceCompute device_compute(const Task& task, std::span<const PlacedShard> shards,
                                             const Context& ctx) override;

 private:
  struct Edge {
    int parent;
    int table;
    int col_begin;
    int col_end;
    bool operator==(const Edge&) const = default;
  };
  struct EdgeHash {
    std::size_t operator()(const Edge& e) const;
  };
  struct Node {
    bool known = false;
    DeviceCompute value;
  };

  [[nodiscard]] const DeviceCompute& lookup(const Task& task, int node, std::span<const PlacedShard> shards,
                                            const Context& ctx);

  ComputeModel& model_;
  std::vector<Node> nodes_;
  std::unordered_map<Edge, int, EdgeHash> edges_;
  std::int64_t queries_ = 0;
  std::int64_t hits_ = 0;
};

/** A list of pieces with what the greedy needs of each, computed once per split set. */
struct SplitState {
  std::vector<Piece> pieces;
  std::vector<double> single_ms;  ///< predicted single-piece compute, fw+bw
  std::vector<std::int64_t> bytes;
  std::vector<int> order;  ///< placement order: largest single_ms first, ties higher index
};

[[nodiscard]] SplitState make_split_state(const Task& task, std::vector<Piece> pieces, ShardCostCache& cache,
                                          const Context& ctx);

/** Why a greedy failed: the piece no device took, and the reason in words. */
struct PlacementFailure {
  int piece = -1;
  std::string why;
};

/** A greedy's outcome: a device per piece, or the failure. */
struct Placement {
  std::vector<int> devices;
  PlacementFailure failure;

  [[nodiscard]] bool ok() const { return failure.piece < 0; }
};

/** The greedy placement of `state` for `scale` (file comment). */
[[nodiscard]] Placement greedy_place(const Task& task, const SplitState& state, double scale, ShardCostCache& cache,
                                     const Context& ctx);

/** The grid's scales: 1 + i·(max_scale − 1)/(scales − 1), or {1} for one point. */
[[nodiscard]] std::vector<double> grid_scales(int scales, double max_scale);

/**
 * The plan of pieces on devices: one placement per table (column-wise when split), tables in the
 * order of their first piece in `piece_order` and shards in that order. With the placement order
 * a device's shard list comes out as the greedy inserted it (unless one device holds two pieces
 * of a table with another table's pieces placed in between), so scoring hits the cost cache.
 */
[[nodiscard]] Plan plan_of_pieces(const Task& task, std::span<const Piece> pieces, std::span<const int> devices,
                                  std::span<const int> piece_order);

/** Piece indices by table, then first column: the plan order of the task. */
[[nodiscard]] std::vector<int> task_order(std::span<const Piece> pieces);

struct SearchOptions {
  int beam_width = 3;
  int candidates = 10;
  int max_depth = 10;
  int scales = 11;
  double max_scale = 1.5;
  Objective objective = Objective::kStep;
  double time_ms = 0.0;  ///< stop after this long with the best plan so far (ok); 0: never
};

/** The whole search (file comment); the status is ok, infeasible or time_limit. */
[[nodiscard]] ShardResult neuroshard_search(const Task& task, CostModel& cost, const SearchOptions& options,
                                            const Context& ctx);

}  // namespace embshard::detail::neuroshard
