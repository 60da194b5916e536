// compute_table_stats against a slow, obvious reference, plus edge cases and find_error_in_batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "embshard/core/error.h"
#include "embshard/data/index_batch.h"
#include "embshard/data/table.h"
#include "test_util.h"

namespace embshard {
namespace {

/** The statistics computed the obvious way: std::map counts, sorted counts, linear scans. */
TableStats reference_stats(const TableBatch& batch) {
  TableStats s;
  const std::int64_t B = batch.batch_size();
  s.batch_size = B;
  const auto n = static_cast<std::int64_t>(batch.indices.size());
  s.num_indices = n;
  std::int64_t non_empty = 0;
  for (std::int64_t b = 0; b < B; ++b) non_empty += batch.offsets[b + 1] > batch.offsets[b];
  s.pooling_factor = B > 0 ? static_cast<double>(n) / static_cast<double>(B) : 0.0;
  s.coverage = B > 0 ? static_cast<double>(non_empty) / static_cast<double>(B) : 0.0;
  std::map<std::int64_t, std::int64_t> counts;
  for (std::int64_t v : batch.indices) ++counts[v];
  s.num_rows = counts.empty() ? 100 : std::max<std::int64_t>(100, counts.rbegin()->first + 1);
  s.num_distinct = static_cast<std::int64_t>(counts.size());
  if (counts.empty()) return s;
  std::array<std::int64_t, kNumReuseBins> bins{};
  std::vector<std::int64_t> sorted;
  for (const auto& [row, c] : counts) {
    int j = 16;
    for (int k = 0; k < 16; ++k) {
      if (c <= (std::int64_t{1} << k)) {
        j = k;
        break;
      }
    }
    ++bins[j];
    sorted.push_back(c);
  }
  for (int j = 0; j < kNumReuseBins; ++j) s.bins[j] = static_cast<double>(bins[j]) / static_cast<double>(counts.size());
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  for (int k = 0; k < kNumIcdfSteps; ++k) {
    std::int64_t cum = 0;
    std::int64_t r = 0;
    while (100 * cum < (k + 1) * n) cum += sorted[static_cast<std::size_t>(r++)];
    s.icdf.push_back(static_cast<double>(r));
  }
  return s;
}

void expect_same(const TableStats& got, const TableStats& want, const std::string& what) {
  SCOPED_TRACE(what);
  test_util::expect_same_stats(got, want);
}

/** A batch of B bags with lengths in [0, max_len] and Zipf-like indices over `rows` rows. */
TableBatch random_batch(std::mt19937_64& rng, std::int64_t B, int max_len, std::int64_t rows, double skew) {
  TableBatch batch;
  batch.offsets.push_back(0);
  std::uniform_int_distribution<int> len(0, max_len);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::int64_t b = 0; b < B; ++b) {
    const int L = len(rng);
    for (int i = 0; i < L; ++i) {
      const double x = std::pow(u(rng), skew);  // skew > 1 concentrates on small ids
      batch.indices.push_back(std::min<std::int64_t>(rows - 1, static_cast<std::int64_t>(x * rows)));
    }
    batch.offsets.push_back(static_cast<std::int64_t>(batch.indices.size()));
  }
  return batch;
}

TEST(TableStats, MatchesReferenceOnRandomBatches) {
  std::mt19937_64 rng(12345);
  const struct {
    std::int64_t B;
    int max_len;
    std::int64_t rows;
    double skew;
  } cases[] = {{1, 1, 1, 1},      {7, 3, 5, 1},           {64, 10, 1000, 1},
               {300, 40, 50, 4},  {1000, 20, 1 << 20, 8}, {2000, 60, 3'000'000'000LL, 12},
               {4096, 30, 10, 1}, {500, 200, 1 << 16, 30}};
  for (const auto& c : cases) {
    for (int rep = 0; rep < 5; ++rep) {
      const TableBatch batch = random_batch(rng, c.B, c.max_len, c.rows, c.skew);
      ASSERT_EQ(find_error_in_batch(batch, 0, "random"), "");
      const TableStats got = compute_table_stats(batch);
      expect_same(got, reference_stats(batch), "B=" + std::to_string(c.B) + " rows=" + std::to_string(c.rows));
      if (got.num_indices > 0) {
        EXPECT_EQ(got.icdf.back(), static_cast<double>(got.num_distinct));
      }
      EXPECT_EQ(find_error_in_stats(got, "random"), "");
    }
  }
}

TEST(TableStats, EmptyTable) {
  TableBatch batch;
  batch.offsets.assign(11, 0);
  const TableStats s = compute_table_stats(batch);
  EXPECT_EQ(s.num_rows, 100);
  EXPECT_EQ(s.batch_size, 10);
  EXPECT_EQ(s.pooling_factor, 0.0);
  EXPECT_EQ(s.coverage, 0.0);
  EXPECT_EQ(s.num_indices, 0);
  EXPECT_EQ(s.num_distinct, 0);
  for (double b : s.bins) EXPECT_EQ(b, 0.0);
  EXPECT_TRUE(s.icdf.empty());
  EXPECT_EQ(find_error_in_stats(s, "empty"), "");
}

TEST(TableStats, ZeroBatchAndNoOffsets) {
  TableBatch batch;
  batch.offsets = {0};
  TableStats s = compute_table_stats(batch);
  EXPECT_EQ(s.batch_size, 0);
  EXPECT_EQ(s.num_rows, 100);
  EXPECT_EQ(s.pooling_factor, 0.0);
  s = compute_table_stats(TableBatch{});
  EXPECT_EQ(s.batch_size, 0);
}

TEST(TableStats, SingleHotRow) {
  TableBatch batch;
  batch.offsets = {0, 70000, 70000, 100000};
  batch.indices.assign(100000, 7);
  const TableStats s = compute_table_stats(batch);
  EXPECT_EQ(s.num_rows, 100);
  EXPECT_EQ(s.num_distinct, 1);
  EXPECT_EQ(s.bins[16], 1.0);
  EXPECT_DOUBLE_EQ(s.coverage, 2.0 / 3.0);
  EXPECT_EQ(s.icdf, std::vector<double>(100, 1.0));
}

TEST(TableStats, BinEdges) {
  // Rows 0..6 accessed 1, 2, 3, 4, 5, 32768 and 32769 times.
  const std::int64_t counts[] = {1, 2, 3, 4, 5, 32768, 32769};
  TableBatch batch;
  batch.offsets = {0};
  for (std::int64_t row = 0; row < 7; ++row)
    batch.indices.insert(batch.indices.end(), static_cast<std::size_t>(counts[row]), row * 1000);
  batch.offsets.push_back(static_cast<std::int64_t>(batch.indices.size()));
  const TableStats s = compute_table_stats(batch);
  EXPECT_EQ(s.num_rows, 6001);
  const double d = 1.0 / 7;
  const std::array<double, 17> want = {d, d, 2 * d, d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, d, d};
  for (int j = 0; j < 17; ++j) EXPECT_DOUBLE_EQ(s.bins[j], want[j]) << "bin " << j;
  expect_same(s, reference_stats(batch), "bin edges");
}

TEST(TableStats, IcdfKnownValues) {
  // Counts 50, 30, 20 over n = 100: 1 row serves up to 50%, 2 rows 80%, 3 rows 100%.
  TableBatch batch;
  batch.indices.assign(50, 3);
  batch.indices.insert(batch.indices.end(), 30, 1);
  batch.indices.insert(batch.indices.end(), 20, 2);
  batch.offsets = {0, 100};
  const TableStats s = compute_table_stats(batch);
  ASSERT_EQ(s.icdf.size(), 100u);
  for (int k = 0; k < 100; ++k) EXPECT_EQ(s.icdf[k], k < 50 ? 1 : (k < 80 ? 2 : 3)) << k;
}

TEST(TableStats, RawViewOverloadsAgree) {
  std::mt19937_64 rng(7);
  const TableBatch batch = random_batch(rng, 333, 25, 100000, 3);
  const TableStats want = compute_table_stats(batch);
  // Offsets with a non-zero base and indices preceded by unrelated data, as in a whole file.
  const std::int64_t base = 1000;
  std::vector<std::int64_t> off64;
  for (std::int64_t o : batch.offsets) off64.push_back(o + base);
  std::vector<std::int32_t> off32(off64.begin(), off64.end());
  std::vector<std::int64_t> idx64(batch.indices.begin(), batch.indices.end());
  std::vector<std::int32_t> idx32(idx64.begin(), idx64.end());
  const std::int64_t B = batch.batch_size();
  expect_same(compute_table_stats(idx32.data(), off64.data(), B), want, "i32/i64");
  expect_same(compute_table_stats(idx32.data(), off32.data(), B), want, "i32/i32");
  expect_same(compute_table_stats(idx64.data(), off64.data(), B), want, "i64/i64");
  expect_same(compute_table_stats(idx64.data(), off32.data(), B), want, "i64/i32");
}

TEST(TableStats, DecreasingOffsetsThrow) {
  TableBatch batch;
  batch.offsets = {0, 3, 2, 4};
  batch.indices = {0, 1, 2, 3};
  EXPECT_THROW((void)compute_table_stats(batch), Error);
}

TEST(TableStats, FindErrorInBatch) {
  TableBatch ok;
  ok.offsets = {0, 2, 2, 3};
  ok.indices = {5, 1, 9};
  EXPECT_EQ(find_error_in_batch(ok, 0, "t"), "");
  EXPECT_EQ(find_error_in_batch(ok, 10, "t"), "");
  EXPECT_NE(find_error_in_batch(ok, 9, "t").find("t: sample 2: index 9"), std::string::npos);

  TableBatch bad = ok;
  bad.offsets = {};
  EXPECT_NE(find_error_in_batch(bad, 0, "w").find("w: offsets is empty"), std::string::npos);
  bad.offsets = {1, 2, 2, 3};
  EXPECT_NE(find_error_in_batch(bad, 0, "w").find("offsets[0] = 1"), std::string::npos);
  bad.offsets = {0, 2, 1, 3};
  EXPECT_NE(find_error_in_batch(bad, 0, "w").find("sample 1: offsets decrease"), std::string::npos);
  bad.offsets = {0, 2, 2, 4};
  EXPECT_NE(find_error_in_batch(bad, 0, "w").find("offsets end at 4 but there are 3 indices"), std::string::npos);
  bad = ok;
  bad.indices[1] = -4;
  EXPECT_NE(find_error_in_batch(bad, 0, "w").find("sample 0: index -4 at position 1 is negative"), std::string::npos);
}

}  // namespace
}  // namespace embshard
