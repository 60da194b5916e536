#pragma once
/**
 * @file derived_stats.h
 * @brief Statistics for a table known only by its shape: rows, dim, dtype and pooling factor.
 *
 * What TorchRec users have for a table is its `EmbeddingBagConfig` (rows, dim, dtype) and perhaps
 * `ParameterConstraints.pooling_factors`; the cost models also want coverage, the distinct count,
 * the 17 reuse bins and the 100-step ICDF (table.h). They are derived here from the synthetic
 * pool's generative model (pool.h), with each skew parameter at the median of the distribution
 * the pool fitted to the DLRM dataset's published statistics (docs/pool.md):
 *
 *   coverage     = min(1, pooling_factor) unless given (bags hold at least one lookup when not
 *                  empty, so coverage ≤ pooling_factor; TorchRec counts pooled outputs the same way)
 *   lookups      i.i.d. Zipf–Mandelbrot ranks, P(k) ∝ (k + offset)^−alpha over the active rows
 *   active rows  = min(num_rows, active_ratio × pooling_factor × 65,536)
 *   statistics   the model's expected values at the task's batch (expected_table_stats)
 *
 * with alpha = 0.8625, active_ratio = 10^−0.6805 ≈ 0.209 and offset = 9 by default
 * (`pool_median_model`). Every parameter can be set; the model's spec is recorded in the table's
 * `stats_origin` ("derived:zipf_alpha=…,active_ratio=…,zipf_offset=…") so a plan says which
 * tables were planned on derived rather than measured statistics.
 */
#include <cstdint>
#include <string>

#include "embshard/data/table.h"

namespace embshard {

/** The access model behind derived statistics (file comment). */
struct DerivedStatsModel {
  double zipf_alpha = 0.0;       ///< Zipf exponent of the row popularity, in [0, 4]
  double active_ratio = 0.0;     ///< rows ever used ÷ lookups at batch 65,536, in (0, 1e3]
  std::int64_t zipf_offset = 0;  ///< flattens the hottest ranks, in [0, 1e6]

  /** "derived:zipf_alpha=A,active_ratio=R,zipf_offset=Q" (round-trips through parse). */
  [[nodiscard]] std::string origin() const;
};

/** The default: each parameter at the median of the pool's fitted distribution (PoolParams{}). */
[[nodiscard]] DerivedStatsModel pool_median_model();

/** "" if the model's parameters lie in their ranges, else a message naming the field. */
[[nodiscard]] std::string find_error_in_model(const DerivedStatsModel& model, const std::string& where);

/**
 * The expected statistics of a batch of `batch_size` samples of a table with `num_rows` rows and
 * mean `pooling_factor` lookups per sample under `model`; `coverage` < 0 means min(1, pooling).
 * Throws Error naming `where` for rows, pooling, coverage or batch out of range (table.h limits)
 * or coverage above the pooling factor.
 */
[[nodiscard]] TableStats derive_table_stats(std::int64_t num_rows, double pooling_factor, double coverage,
                                            std::int64_t batch_size, const DerivedStatsModel& model,
                                            const std::string& where);

}  // namespace embshard
