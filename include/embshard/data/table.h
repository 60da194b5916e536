#pragma once
/**
 * @file table.h
 * @brief `TableStats` (how a table is accessed) and `TableSpec` (a table in a task).
 *
 * Definitions follow the reference scripts of the DreamShard / NeuroShard / AutoShard authors
 * (docs: shared/docs/references/refs-zha.md §1.2) and RecShard (paper 004 §4.2):
 *
 *   num_rows       = max(100, max index + 1)            (an empty table counts as max index + 1 = 1)
 *   pooling_factor = mean over the batch of the bag lengths
 *   coverage       = share of samples whose bag is not empty
 *   num_indices    = lookups in the batch;  num_distinct = distinct rows among them
 *   bins[j]        = share of the distinct rows whose access count c lies in (2^(j-1), 2^j]
 *                    for j = 0..15 (bin 0 is c == 1), bins[16] counts c > 32768; all zero if empty
 *   icdf[k]        = fewest rows (hottest first) that serve at least (k+1)% of the lookups,
 *                    k = 0..99, so icdf[99] == num_distinct; empty when the table has no lookups
 *
 * Table size in bytes = weights + optimizer state, where weights = num_rows × dim ×
 * bytes_per_element(dtype) and the state is weights × m as TorchRec's storage estimator counts it
 * (torchrec-planner.md §1.6): m = 0 without state (SGD, or no optimizer attached), 1/dim for
 * row-wise Adagrad (one value per row), 1 for Adagrad, 2 for Adam (two moments). `shard_bytes`
 * is the one definition; plans, the validator and every sharder's memory check use it.
 */
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "embshard/data/sharding_type.h"

namespace embshard {

/** Number of reuse bins (edges 1, 2, 4, ..., 32768, +inf). */
inline constexpr int kNumReuseBins = 17;
/** Number of steps of RecShard's piece-wise inverse value-frequency CDF. */
inline constexpr int kNumIcdfSteps = 100;
/** Floor on the row count used by every reference script. */
inline constexpr std::int64_t kMinTableRows = 100;

// ---- limits checked at the door (find_error_in_stats, find_error_in_task, the readers) ---------
// Every quantity that comes from a file is bounded so that every derived int64 product is exact:
//   table bytes    = rows × dim × bytes/element ≤ 2^40 · 2^16 · 4 = 2^58, then capped at 2^46;
//   workload bytes = Σ table bytes ≤ kMaxTasksTables · 2^46 = 2^62 < 2^63;
//   lookups/batch  = pooling × batch ≤ 10^6 · 2^30 < 2^50 (= kMaxNumIndices), and
//                    lookups × dim × bytes/element < 2^50 · 2^18 is computed in double only;
//   device memory  ≤ 2^44 each, Σ over ≤ 2^18 devices ≤ 2^62 (topology.h).
// The limits are far beyond real models (the largest published DLRM tables have ~10^10 rows,
// dims ≤ 2048, pooling factors ≤ 10^3), so they only turn corrupt or hostile numbers into errors.

/** Largest embedding dim a task may name (FBGEMM allows 2048; this leaves room for what-ifs). */
inline constexpr int kMaxTableDim = 1 << 16;
/** Largest row count of a table: 2^40 ≈ 1.1e12. */
inline constexpr std::int64_t kMaxTableRows = std::int64_t{1} << 40;
/** Largest size of one table, rows × dim × bytes/element: 2^46 bytes = 64 TiB. */
inline constexpr std::int64_t kMaxTableBytes = std::int64_t{1} << 46;
/** Most tables in one task or statistics file (the dataset reader's limit too). */
inline constexpr std::int64_t kMaxTasksTables = std::int64_t{1} << 16;
/** Largest mean pooling factor (lookups per sample). */
inline constexpr double kMaxPoolingFactor = 1e6;
/** Largest batch (samples) statistics or a task may name: 2^30. */
inline constexpr std::int64_t kMaxStatsBatchSize = std::int64_t{1} << 30;
/** Largest lookup count of a batch: 2^50 > kMaxPoolingFactor × kMaxStatsBatchSize. */
inline constexpr std::int64_t kMaxNumIndices = std::int64_t{1} << 50;

/** Element type of the embedding weights. */
enum class WeightType { kF32, kF16 };

[[nodiscard]] int bytes_per_element(WeightType type);
[[nodiscard]] const char* to_string(WeightType type);
/** Parses "fp32" / "fp16" (also "float32" / "float16"); throws Error naming `where` otherwise. */
[[nodiscard]] WeightType parse_weight_type(const std::string& text, const std::string& where);

/** The optimizer state kept beside a table's weights (file comment). */
enum class OptimizerState { kNone, kRowWiseAdagrad, kAdagrad, kAdam };

[[nodiscard]] const char* to_string(OptimizerState state);
/** Parses "none" / "rowwise_adagrad" / "adagrad" / "adam"; throws Error naming `where` otherwise. */
[[nodiscard]] OptimizerState parse_optimizer_state(const std::string& text, const std::string& where);

/** Access statistics of one table, measured from index data or modelled by the pool. */
struct TableStats {
  std::int64_t num_rows = kMinTableRows;     ///< hash size, max(100, max index + 1)
  double pooling_factor = 0.0;               ///< mean lookups per sample
  double coverage = 0.0;                     ///< share of samples with at least one lookup, [0, 1]
  std::int64_t batch_size = 0;               ///< samples the statistics were taken over
  std::int64_t num_indices = 0;              ///< lookups in that batch
  std::int64_t num_distinct = 0;             ///< distinct rows among those lookups
  std::array<double, kNumReuseBins> bins{};  ///< reuse histogram over distinct rows, sums to 1
  std::vector<double> icdf;                  ///< kNumIcdfSteps row counts (see file comment) or empty
};

/**
 * Expected distinct rows among a `share` in (0, 1] of the batch's samples: each distinct row, hit
 * num_indices / num_distinct times in the whole batch, is missed by the share with probability
 * (1 − share)^(hits), spreading its hits evenly (the one definition; a data-parallel copy's rows,
 * cost/analytic.h, and a 2D plan's sharding group, plan/sharding_groups.h, use it).
 */
[[nodiscard]] double distinct_rows_in_share(const TableStats& stats, double share);

/**
 * The statistics of `share` of the batch's samples: samples and lookups scale by the share,
 * distinct rows by `distinct_rows_in_share`, the icdf's row counts by the same ratio; pooling
 * factor, coverage and the reuse bins (the shape of the access distribution) are kept.
 */
[[nodiscard]] TableStats stats_of_batch_share(TableStats stats, double share);

/**
 * What one table may use, on top of the task's `Constraints` (TorchRec's `ParameterConstraints`):
 * every sharder's plan is checked against them (`find_table_constraint_violation`, plan.h).
 */
struct TableConstraints {
  std::vector<ShardingType> sharding_types;  ///< the types allowed; empty = any
  bool allow_uvm = true;                     ///< false: every row in HBM (TorchRec's "fused" kernel only)
  int min_partition = 0;                     ///< column_wise shards at least this wide (0 = no limit)

  [[nodiscard]] bool allows(ShardingType type) const;
  [[nodiscard]] bool is_default() const { return sharding_types.empty() && allow_uvm && min_partition == 0; }
};

/** How `TableSpec::stats_origin` of derived statistics begins ("derived:zipf_alpha=…,…"). */
inline constexpr std::string_view kDerivedStatsOrigin = "derived:";

/** One embedding table of a task: its shape, precision and access statistics. */
struct TableSpec {
  std::string name;  ///< unique within a task
  int dim = 0;       ///< embedding dimension, a positive multiple of 4
  WeightType dtype = WeightType::kF32;
  std::int64_t source_id = -1;  ///< index in the pool / stats file it came from, -1 if inline
  TableStats stats;
  /** Where `stats` came from: "" when given in full (measured from indices, a stats file or the
   *  pool); kDerivedStatsOrigin + the model's parameters when derived from rows and pooling
   *  factor alone (derived_stats.h). */
  std::string stats_origin;
  OptimizerState optimizer = OptimizerState::kNone;
  TableConstraints constraints;
  /**
   * true: a sample's lookups are summed into one vector (TorchRec's EmbeddingBagCollection).
   * false: a sequence table (TorchRec's EmbeddingCollection): every lookup is an output row of
   * its own, so a shard's outputs and their exchanges scale with the lookups it serves, and a
   * row range sends its rows' lookups instead of partial sums (`output_width`).
   */
  bool pooled = true;

  [[nodiscard]] std::int64_t num_rows() const { return stats.num_rows; }
  /**
   * Whether a plan may shard this table `type`: its constraints allow it and, for a sequence
   * table, TorchRec's EmbeddingCollection runs it — table_wise, column_wise, row_wise or
   * data_parallel (its sharder offers no table_row_wise and no grid_shard). Every sharder and
   * `check` ask this, not the constraints alone.
   */
  [[nodiscard]] bool allows(ShardingType type) const;
  /** Whether `stats` were derived from the table's shape rather than given (stats_origin). */
  [[nodiscard]] bool has_derived_stats() const { return stats_origin.starts_with(kDerivedStatsOrigin); }
  /** Bytes of `rows` × `cols` of this table: weights plus optimizer state (file comment). */
  [[nodiscard]] std::int64_t shard_bytes(std::int64_t rows, std::int64_t cols) const;
  /** Bytes of the whole table's weights alone (no optimizer state): what a data-parallel copy's
   *  dense gradient all-reduces and its dense update moves. */
  [[nodiscard]] std::int64_t weight_bytes() const { return stats.num_rows * dim * bytes_per_element(dtype); }
  /** The share of the table's rows that `rows` of them are (0 rows of an empty table: 0). */
  [[nodiscard]] double row_share(std::int64_t rows) const {
    return static_cast<double>(rows) / static_cast<double>(std::max<std::int64_t>(num_rows(), 1));
  }
  /**
   * Output values per sample of `cols` columns of the share `row_share` of the table's rows:
   * `cols` when pooled; `cols` × pooling_factor × `row_share` for a sequence table (a row range
   * serves that share of the lookups, as the sim model assumes: cost/analytic.h).
   */
  [[nodiscard]] double output_width(int cols, double row_share = 1.0) const {
    return pooled ? cols : cols * stats.pooling_factor * row_share;
  }
  /** shard_bytes of the whole table; exact for any table `find_error_in_task` accepts (≤ 2^46). */
  [[nodiscard]] std::int64_t size_bytes() const { return shard_bytes(stats.num_rows, dim); }
};

/**
 * Returns "" if `stats` is internally consistent, else a message naming the first bad field
 * (prefixed by `where`, e.g. "tables.json: table 3"). Checks ranges and the limits above
 * (num_rows ≤ kMaxTableRows, pooling_factor ≤ kMaxPoolingFactor, batch_size ≤
 * kMaxStatsBatchSize, num_indices ≤ kMaxNumIndices), bins summing to 1 (or all 0 for an empty
 * table), and a non-decreasing ICDF of kNumIcdfSteps values in [0, num_rows].
 */
[[nodiscard]] std::string find_error_in_stats(const TableStats& stats, const std::string& where);

}  // namespace embshard
