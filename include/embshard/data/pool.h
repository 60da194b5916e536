#pragma once
/**
 * @file pool.h
 * @brief The synthetic table pool: 856 tables shaped like Meta's DLRM dataset, generated from a seed.
 *
 * Each pool table is a small generative model of one embedding table's lookups:
 *
 *   bag length  L = 0 with probability 1 − coverage, else 1 + NegBin(shape r, mean m − 1),
 *               m = pooling_factor / coverage (so E[L] = pooling_factor)
 *   each lookup an i.i.d. Zipf–Mandelbrot rank k ∈ {1..a}, P(k) ∝ (k + q)^−alpha, over the table's
 *               a = active_rows ≤ num_rows rows that are ever used (hashing leaves the rest
 *               untouched: RecShard §3, DreamShard's "accessed indices ratio"), mapped to a row
 *               in [0, num_rows) by a seeded permutation that puts rank 1 on row num_rows − 1
 *               (so a batch's max index + 1 equals num_rows, as the dataset's definition implies)
 *
 * The same model gives (a) raw index batches at any batch size (`materialise`) for the kernels,
 * and (b) the *expected* reference statistics of such a batch (`expected_stats`), computed
 * analytically (Poisson occupancy over rank buckets) — so a pool table's statistics are what a
 * measurement of its own batches reproduces, at any batch size.
 *
 * How the table parameters are drawn, and how their distributions were fitted to the dataset's
 * published statistics, is in docs/pool.md; the published figures are `kPublishedDlrm`.
 */
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/data/index_batch.h"
#include "embshard/data/table.h"

namespace embshard {

/** Version of the pool generator; pools of different versions differ for the same seed. */
inline constexpr int kPoolVersion = 1;

/** The published statistics of `fbgemm_t856_bs65536.pt` (papers 000 §C, 001 Table 1; locality stats). */
struct PublishedDlrmStats {
  std::int64_t num_tables = 856;
  std::int64_t batch_size = 65536;
  std::int64_t max_rows = 12543670;
  double mean_rows = 4107458.0;  ///< raw hash sizes, an empty table counting 1
  double max_pooling = 193.0;
  double mean_pooling = 887017990.0 / 56098816.0;
  std::int64_t num_indices = 887017990;
  std::int64_t num_distinct = 128435723;
  /// share of distinct (table, row) pairs per reuse bin ("Histogram of col sizes")
  std::array<double, kNumReuseBins> distinct_hist{0.473, 0.152, 0.139, 0.112, 0.072, 0.032, 0.011, 0.005, 0.002,
                                                  0.001, 0,     0,     0,     0,     0,     0,     0};
  /// share of lookups per reuse bin ("Ratio of index distribution")
  std::array<double, kNumReuseBins> access_hist{0.069, 0.044, 0.068, 0.101, 0.121, 0.104, 0.073, 0.058, 0.052,
                                                0.050, 0.049, 0.048, 0.048, 0.043, 0.031, 0.023, 0.019};
};
inline const PublishedDlrmStats kPublishedDlrm{};

/** Generative parameters of one synthetic table. */
struct PoolTable {
  std::int64_t id = 0;
  std::int64_t num_rows = kMinTableRows;
  double pooling_factor = 0.0;
  double coverage = 0.0;
  std::int64_t active_rows = kMinTableRows;  ///< rows that are ever looked up (≤ num_rows)
  double zipf_alpha = 0.0;
  std::int64_t zipf_offset = 0;  ///< q, flattens the hottest ranks
  double length_shape = 2.0;     ///< negative-binomial shape r of the non-empty bag lengths
  std::uint64_t seed = 0;        ///< stream of this table's permutation and batches
};

/** The distributions table parameters are drawn from (fitted values are the defaults). */
struct PoolParams {
  double empty_share = 0.02;         ///< tables never looked up (pooling 0)
  double rows_low_log10_min = 2.0;   ///< small tables: log10(rows) uniform on [min, 6]
  double rows_high_log10_min = 6.0;  ///< large tables: log10(rows) uniform on [min, log10(max)]
  double pooling_min = 0.1;          ///< non-empty pooling: Pareto on [min, max_pooling]
  double coverage_full_share = 0.5;  ///< share of tables with coverage in [0.9, 1]
  double coverage_log10_min = -2.0;  ///< the rest: log10(coverage) uniform on [min, 0]
  double alpha_min = 0.699;          ///< Zipf exponent uniform on [alpha_min, alpha_max]
  double alpha_max = 1.026;
  /// active rows = min(num_rows, ratio × lookups at batch 65536), log10(ratio) uniform on [min, max]
  double active_log10_min = -1.821;
  double active_log10_max = 0.460;
  /// Zipf offset q = round(10^u) − 1 with u uniform on [0, offset_log10_max]
  double offset_log10_max = 1.994;
  double length_shape = 2.0;
};

/** Published and generated figure side by side, with the tolerance that decides `pool --check`. */
struct PoolCheckRow {
  std::string figure;
  double published = 0.0;
  double generated = 0.0;
  double tolerance = 0.0;  ///< allowed |generated − published|
  [[nodiscard]] bool ok() const;
};

class Pool {
 public:
  /** Draws the 856 tables of the pool for `seed`. Deterministic; ~0.1 s. */
  static Pool generate(std::uint64_t seed, const PoolParams& params = {});

  [[nodiscard]] std::uint64_t seed() const { return seed_; }
  [[nodiscard]] const PoolParams& params() const { return params_; }
  [[nodiscard]] const std::vector<PoolTable>& tables() const { return tables_; }
  [[nodiscard]] const PoolTable& table(std::int64_t id) const;

  /**
   * Expected reference statistics of a batch of `batch_size` samples of table `id`
   * (definitions in table.h). Rounded integers for num_indices / num_distinct.
   */
  [[nodiscard]] TableStats expected_stats(std::int64_t id, std::int64_t batch_size) const;
  /** expected_stats of every table, computed on `threads` threads. */
  [[nodiscard]] std::vector<TableStats> all_expected_stats(std::int64_t batch_size, int threads) const;

  /** A batch of `batch_size` samples of table `id`; `batch` selects an independent draw. */
  [[nodiscard]] TableBatch materialise(std::int64_t id, std::int64_t batch_size, std::uint64_t batch = 0) const;

 private:
  std::uint64_t seed_ = 0;
  PoolParams params_;
  std::vector<PoolTable> tables_;
};

/** A batch of `batch_size` samples drawn from `table`'s model; `batch` selects an independent draw. */
[[nodiscard]] TableBatch materialise_table(const PoolTable& table, std::int64_t batch_size, std::uint64_t batch = 0);

/**
 * A generative model whose expected statistics reproduce `stats` (measured from real data or
 * written by hand), so that tables known only by their statistics can be run on the kernels:
 * rows, pooling and coverage are copied; the Zipf exponent (grid 0.5..1.5) and the number of
 * active rows (bisection) are chosen so the expected distinct count at `stats.batch_size`
 * matches and the reuse bins are closest in L1. Offset 0, bag-length shape 2. `seed` seeds the
 * permutation and batches. Deterministic.
 */
[[nodiscard]] PoolTable model_from_stats(const TableStats& stats, std::uint64_t seed);

/** Expected statistics of a pool table (the model of the file comment) at `batch_size`. */
[[nodiscard]] TableStats expected_table_stats(const PoolTable& table, std::int64_t batch_size);

/**
 * Published vs generated figures for the whole pool at the dataset's batch (expected values),
 * plus, for `measured_tables` randomly chosen tables, measured-vs-expected rows from
 * materialised batches of `measured_batch` samples.
 */
[[nodiscard]] std::vector<PoolCheckRow> check_pool(const Pool& pool, int measured_tables, std::int64_t measured_batch,
                                                   const Context& ctx);

/**
 * Fits the skew parameters (alpha_min/max, active_log10_min/max, offset_log10_max) by
 * Nelder–Mead on the two published reuse histograms and the distinct count, starting from
 * `start`; returns the fitted parameters. Logs each iteration.
 */
[[nodiscard]] PoolParams fit_pool_params(std::uint64_t seed, const PoolParams& start, const Context& ctx);

}  // namespace embshard
