#pragma once
/**
 * @file features.h
 * @brief The per-table feature vector every learned model reads, and its normalisation.
 *
 * One place defines what a model sees of a table (papers 000 §A.2, 001 App. B.2, 003 App. C;
 * refs-zha.md §1.3). Version kFeatureVersion; bump it when anything below changes, because
 * weight files record the version they were trained with and refuse another.
 *
 *   index  name             value
 *   0      dim              embedding dimension
 *   1      rows             num_rows (max(100, max index + 1))
 *   2      pooling_factor   mean lookups per sample (a float; DreamShard/AutoShard truncate it)
 *   3      size_gib         rows × dim × bytes_per_element / 2^30 (precision-aware)
 *   4..20  bin_0..bin_16    the reuse histogram (shares of distinct rows, table.h)
 *
 * Normalisation (`FeatureScaler`) is fitted on a set of vectors and applied as (x − mean) / scale:
 *
 *   kNone           identity
 *   kPerTask        DreamShard: rows, pooling and size z-scored over the task's own tables
 *                   (population std, ddof 0); dim and bins raw
 *   kTrainingSet    AutoShard: dim, rows and pooling z-scored over all training tables (ddof 0;
 *                   a zero std only subtracts the mean); size and bins raw
 *   kAllColumns     NeuroShard: every column z-scored over the pre-training set with the sample
 *                   std (ddof 1) plus 1e-6
 *
 * A constant column (zero spread) in kPerTask or kTrainingSet only loses its mean (scale 1):
 * DreamShard's code would divide by zero there; embshard gives 0, never NaN.
 */
#include <array>
#include <string>
#include <vector>

#include "embshard/data/table.h"

namespace embshard {

inline constexpr int kFeatureVersion = 1;
inline constexpr int kNumTableFeatures = 4 + kNumReuseBins;

using FeatureVector = std::array<double, kNumTableFeatures>;

/** Names of the features, in order ("dim", "rows", ..., "bin_16"). */
[[nodiscard]] const std::array<std::string, kNumTableFeatures>& feature_names();

/**
 * The raw (unnormalised) features of a shard of a table: `cols` of its columns and `row_share`
 * of its rows, which scales rows and pooling_factor (a row shard serves that share of the
 * lookups) and the size. Every model reads this vector, or a subset of it chosen by name
 * (`feature_index`): NeuroShard's cost models take 20 of the 21 (cost/neural_weights.h).
 */
[[nodiscard]] FeatureVector shard_features(const TableStats& stats, int cols, double row_share, WeightType dtype);

/** The raw (unnormalised) features of one table: shard_features of the whole table. */
[[nodiscard]] FeatureVector table_features(const TableSpec& table);

/** The index of the feature called `name` in feature_names(); InternalError if there is none. */
[[nodiscard]] int feature_index(const std::string& name);

enum class FeatureScaling { kNone, kPerTask, kTrainingSet, kAllColumns };
[[nodiscard]] const char* to_string(FeatureScaling scaling);
[[nodiscard]] FeatureScaling parse_feature_scaling(const std::string& text);

/** Fitted normalisation: scaled[i] = (raw[i] − mean[i]) / scale[i]. */
struct FeatureScaler {
  FeatureScaling mode = FeatureScaling::kNone;
  FeatureVector mean{};
  FeatureVector scale{};

  /** Fits `mode` on `rows` (at least one row; two for kAllColumns). Throws Error otherwise. */
  [[nodiscard]] static FeatureScaler fit(const std::vector<FeatureVector>& rows, FeatureScaling mode);
  [[nodiscard]] FeatureVector apply(const FeatureVector& raw) const;
};

}  // namespace embshard
