#include "embshard/data/features.h"

#include <cmath>

#include "embshard/core/error.h"

namespace embshard {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kAllColumnsEpsilon = 1e-6;

/** Which columns a mode normalises (the rest keep mean 0, scale 1). */
bool normalises(FeatureScaling mode, int column) {
  switch (mode) {
    case FeatureScaling::kNone: return false;
    case FeatureScaling::kPerTask: return column == 1 || column == 2 || column == 3;
    case FeatureScaling::kTrainingSet: return column <= 2;
    case FeatureScaling::kAllColumns: return true;
  }
  return false;
}

}  // namespace

const std::array<std::string, kNumTableFeatures>& feature_names() {
  static const auto names = [] {
    std::array<std::string, kNumTableFeatures> n{"dim", "rows", "pooling_factor", "size_gib"};
    for (int j = 0; j < kNumReuseBins; ++j) n[4 + j] = "bin_" + std::to_string(j);
    return n;
  }();
  return names;
}

FeatureVector shard_features(const TableStats& stats, int cols, double row_share, WeightType dtype) {
  FeatureVector f{};
  const double rows = static_cast<double>(stats.num_rows) * row_share;
  f[0] = cols;
  f[1] = rows;
  f[2] = stats.pooling_factor * row_share;
  // The weights' size, as the policies were trained on it (optimizer state is memory, not a
  // feature: placement legality counts it through TableSpec::size_bytes).
  f[3] = rows * cols * bytes_per_element(dtype) / kGiB;
  for (int j = 0; j < kNumReuseBins; ++j) f[4 + j] = stats.bins[j];
  return f;
}

FeatureVector table_features(const TableSpec& t) { return shard_features(t.stats, t.dim, 1.0, t.dtype); }

int feature_index(const std::string& name) {
  const auto& names = feature_names();
  for (int i = 0; i < kNumTableFeatures; ++i)
    if (names[static_cast<std::size_t>(i)] == name) return i;
  throw InternalError("features: no feature named '" + name + "'");
}

const char* to_string(FeatureScaling s) {
  switch (s) {
    case FeatureScaling::kNone: return "none";
    case FeatureScaling::kPerTask: return "per_task";
    case FeatureScaling::kTrainingSet: return "training_set";
    case FeatureScaling::kAllColumns: return "all_columns";
  }
  return "?";
}

FeatureScaling parse_feature_scaling(const std::string& text) {
  for (auto s :
       {FeatureScaling::kNone, FeatureScaling::kPerTask, FeatureScaling::kTrainingSet, FeatureScaling::kAllColumns}) {
    if (text == to_string(s)) return s;
  }
  EMBSHARD_THROW("unknown feature scaling '", text, "' (none, per_task, training_set, all_columns)");
}

FeatureScaler FeatureScaler::fit(const std::vector<FeatureVector>& rows, FeatureScaling mode) {
  const bool sample_std = mode == FeatureScaling::kAllColumns;
  EMBSHARD_CHECK(rows.size() >= (sample_std ? 2u : 1u), "feature scaling '", to_string(mode), "' needs at least ",
                 sample_std ? 2 : 1, " tables, got ", rows.size());
  FeatureScaler s;
  s.mode = mode;
  s.scale.fill(1.0);
  const auto n = static_cast<double>(rows.size());
  for (int c = 0; c < kNumTableFeatures; ++c) {
    if (!normalises(mode, c)) continue;
    double mean = 0;
    for (const auto& r : rows) mean += r[c] / n;
    double ss = 0;
    for (const auto& r : rows) ss += (r[c] - mean) * (r[c] - mean);
    const double sd = std::sqrt(ss / (sample_std ? n - 1 : n));
    s.mean[c] = mean;
    if (mode == FeatureScaling::kAllColumns) {
      s.scale[c] = sd + kAllColumnsEpsilon;
    } else if (sd > 0) {
      s.scale[c] = sd;
    }
    // A constant column only loses its mean (AutoShard's rule). DreamShard's code would divide
    // by zero there (a one-table task, or tables of equal size); embshard gives 0 instead of NaN.
  }
  return s;
}

FeatureVector FeatureScaler::apply(const FeatureVector& raw) const {
  FeatureVector out{};
  for (int c = 0; c < kNumTableFeatures; ++c) out[c] = (raw[c] - mean[c]) / scale[c];
  return out;
}

}  // namespace embshard
