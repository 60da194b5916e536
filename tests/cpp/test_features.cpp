#include <gtest/gtest.h>

#include <cmath>

#include "embshard/core/error.h"
#include "embshard/cost/neural_weights.h"
#include "embshard/data/features.h"

namespace embshard {
namespace {

TableSpec table(int dim, std::int64_t rows, double pooling, WeightType dtype = WeightType::kF32) {
  TableSpec t;
  t.name = "t";
  t.dim = dim;
  t.dtype = dtype;
  t.stats.num_rows = rows;
  t.stats.pooling_factor = pooling;
  t.stats.bins[0] = 0.75;
  t.stats.bins[3] = 0.25;
  return t;
}

TEST(Features, RawVectorLayout) {
  ASSERT_EQ(kNumTableFeatures, 21);
  EXPECT_EQ(feature_names()[3], "size_gib");
  EXPECT_EQ(feature_names()[20], "bin_16");
  const FeatureVector f = table_features(table(64, 1 << 20, 12.5, WeightType::kF16));
  EXPECT_EQ(f[0], 64);
  EXPECT_EQ(f[1], 1 << 20);
  EXPECT_EQ(f[2], 12.5);
  EXPECT_DOUBLE_EQ(f[3], 64.0 * (1 << 20) * 2 / (1 << 30));  // fp16: 2 bytes
  EXPECT_EQ(f[4], 0.75);
  EXPECT_EQ(f[7], 0.25);
}

TEST(Features, ShardsScaleRowsPoolingAndSizeAndTheCostModelsPickByName) {
  TableSpec t = table(64, 1000, 8.0);
  t.optimizer = OptimizerState::kAdam;  // memory, not a feature: the size stays the weights'
  const FeatureVector half = shard_features(t.stats, 16, 0.5, t.dtype);
  EXPECT_EQ(half[0], 16);
  EXPECT_EQ(half[1], 500);
  EXPECT_EQ(half[2], 4.0);
  EXPECT_DOUBLE_EQ(half[3], 500.0 * 16 * 4 / (1 << 30));
  EXPECT_EQ(table_features(t)[3], 1000.0 * 64 * 4 / (1 << 30));
  // NeuroShard's 20 are the same numbers, picked by name (cost/neural_weights.h).
  const TableFeatures cost = embshard::table_features(t.stats, 16, 0.5);
  for (std::size_t i = 0; i < cost.size(); ++i)
    EXPECT_EQ(cost[i], static_cast<float>(half[static_cast<std::size_t>(feature_index(table_feature_names()[i]))]))
        << table_feature_names()[i];
  EXPECT_THROW((void)feature_index("colour"), InternalError);
}

TEST(Features, ScalingModesMatchTheReferenceFormulas) {
  std::vector<FeatureVector> rows = {table_features(table(16, 100, 1)), table_features(table(32, 300, 3)),
                                     table_features(table(64, 500, 8))};
  const auto per_task = FeatureScaler::fit(rows, FeatureScaling::kPerTask);
  // rows column: mean 300, population std sqrt(80000/3)
  EXPECT_NEAR(per_task.apply(rows[2])[1], 200 / std::sqrt(80000.0 / 3), 1e-12);
  EXPECT_EQ(per_task.apply(rows[2])[0], 64);    // dim stays raw
  EXPECT_EQ(per_task.apply(rows[2])[4], 0.75);  // bins stay raw

  const auto all = FeatureScaler::fit(rows, FeatureScaling::kAllColumns);
  EXPECT_NEAR(all.apply(rows[2])[1], 200 / (std::sqrt(80000.0 / 2) + 1e-6), 1e-12);  // ddof 1
  EXPECT_NEAR(all.apply(rows[0])[4], 0.0, 1e-12);  // constant bin column: (x - mean) / 1e-6 = 0

  const auto train = FeatureScaler::fit(rows, FeatureScaling::kTrainingSet);
  EXPECT_NEAR(
      train.apply(rows[0])[0],
      (16 - 112.0 / 3) /
          std::sqrt((std::pow(16 - 112.0 / 3, 2) + std::pow(32 - 112.0 / 3, 2) + std::pow(64 - 112.0 / 3, 2)) / 3),
      1e-12);
  EXPECT_EQ(train.apply(rows[0])[3], rows[0][3]);  // size raw
}

TEST(Features, ConstantColumnLosesItsMeanNotANan) {
  std::vector<FeatureVector> rows = {table_features(table(16, 100, 1)), table_features(table(16, 100, 1))};
  const auto task = FeatureScaler::fit(rows, FeatureScaling::kPerTask);  // DreamShard: 0, not NaN
  EXPECT_EQ(task.apply(rows[0])[1], 0.0);
  EXPECT_EQ(task.apply(rows[0])[2], 0.0);
  const auto train = FeatureScaler::fit(rows, FeatureScaling::kTrainingSet);  // mean subtraction only
  EXPECT_EQ(train.apply(rows[0])[1], 0.0);
  EXPECT_THROW((void)FeatureScaler::fit({}, FeatureScaling::kNone), Error);
}

}  // namespace
}  // namespace embshard
