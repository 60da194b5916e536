#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "data/pool_model.h"
#include "embshard/data/index_batch.h"
#include "embshard/data/pool.h"
#include "embshard/data/random.h"

namespace embshard {
namespace {

TEST(Random, ZipfSamplerMatchesItsDistribution) {
  for (std::int64_t offset : {0, 3}) {
    for (double alpha : {0.0, 0.6, 1.0, 1.3}) {
      const std::int64_t n = 20;
      ZipfSampler zipf(n, alpha, offset);
      Rng rng(42);
      std::vector<double> counts(n + 1, 0.0);
      const int draws = 200000;
      for (int i = 0; i < draws; ++i) {
        const auto k = zipf(rng);
        ASSERT_GE(k, 1);
        ASSERT_LE(k, n);
        counts[static_cast<std::size_t>(k)] += 1;
      }
      double norm = 0;
      for (std::int64_t k = 1; k <= n; ++k) norm += std::pow(static_cast<double>(k + offset), -alpha);
      for (std::int64_t k = 1; k <= n; ++k) {
        const double p = std::pow(static_cast<double>(k + offset), -alpha) / norm;
        const double sd = std::sqrt(draws * p * (1 - p));
        EXPECT_NEAR(counts[static_cast<std::size_t>(k)], draws * p, 5 * sd + 1)
            << "alpha " << alpha << " offset " << offset << " rank " << k;
      }
    }
  }
}

TEST(Random, PermutationIsABijection) {
  for (std::int64_t n : {1, 2, 3, 100, 1000, 4097}) {
    Permutation perm(n, 7);
    std::set<std::int64_t> seen;
    for (std::int64_t x = 0; x < n; ++x) {
      const auto y = perm(x);
      ASSERT_GE(y, 0);
      ASSERT_LT(y, n);
      seen.insert(y);
    }
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n);
  }
}

TEST(Random, SameSeedSameStream) {
  Rng a(5), b(5), c(6);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const auto x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs = differs || x != c.next_u64();
  }
  EXPECT_TRUE(differs);
}

/** Slow reference: per-rank Poisson occupancy summed term by term, no buckets. */
detail::Occupancy brute_force_occupancy(std::int64_t n, double alpha, std::int64_t q, double lookups) {
  detail::Occupancy out;
  double norm = 0;
  for (std::int64_t k = 1; k <= n; ++k) norm += std::pow(static_cast<double>(k + q), -alpha);
  for (std::int64_t k = 1; k <= n; ++k) {
    const double mean = lookups * std::pow(static_cast<double>(k + q), -alpha) / norm;
    out.num_distinct += 1 - std::exp(-mean);
    const auto last = static_cast<std::int64_t>(mean + 40 * std::sqrt(mean) + 60);
    for (std::int64_t c = 1; c <= last; ++c) {
      const auto cd = static_cast<double>(c);
      const double pmf = std::exp(cd * std::log(mean) - mean - std::lgamma(cd + 1));
      int j = 0;
      while (j < kNumReuseBins - 1 && static_cast<double>(c) > std::ldexp(1.0, j)) ++j;
      out.distinct_bins[j] += pmf;
      out.access_bins[j] += pmf * static_cast<double>(c);
    }
  }
  return out;
}

TEST(PoolModel, BucketedOccupancyMatchesTermByTermReference) {
  struct Case {
    std::int64_t n;
    double alpha;
    std::int64_t q;
    double lookups;
  };
  for (const Case& c : {Case{500, 0.8, 0, 2000}, Case{30000, 1.0, 4, 200000}, Case{60000, 0.6, 0, 50000},
                        Case{20000, 1.2, 30, 300000}}) {
    const auto fast = detail::expected_occupancy(c.n, c.alpha, c.q, c.lookups);
    const auto slow = brute_force_occupancy(c.n, c.alpha, c.q, c.lookups);
    EXPECT_NEAR(fast.num_distinct, slow.num_distinct, 1e-3 * slow.num_distinct) << c.n;
    for (int j = 0; j < kNumReuseBins; ++j) {
      EXPECT_NEAR(fast.distinct_bins[j] / fast.num_distinct, slow.distinct_bins[j] / slow.num_distinct, 2e-3)
          << "n " << c.n << " bin " << j;
      EXPECT_NEAR(fast.access_bins[j] / c.lookups, slow.access_bins[j] / c.lookups, 2e-3)
          << "n " << c.n << " bin " << j;
    }
  }
}

TEST(PoolModel, PoissonCdf) {
  EXPECT_NEAR(detail::poisson_cdf(0, 2.0), std::exp(-2.0), 1e-12);
  EXPECT_NEAR(detail::poisson_cdf(2, 2.0), std::exp(-2.0) * (1 + 2 + 2), 1e-12);
  EXPECT_NEAR(detail::poisson_cdf(1000, 1000.0), 0.5084093, 1e-6);
}

TEST(Pool, IsDeterministicInItsSeed) {
  const Pool a = Pool::generate(3), b = Pool::generate(3), c = Pool::generate(4);
  ASSERT_EQ(a.tables().size(), 856u);
  bool differs = false;
  for (std::size_t i = 0; i < a.tables().size(); ++i) {
    EXPECT_EQ(a.tables()[i].num_rows, b.tables()[i].num_rows);
    EXPECT_EQ(a.tables()[i].zipf_alpha, b.tables()[i].zipf_alpha);
    differs = differs || a.tables()[i].num_rows != c.tables()[i].num_rows;
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(a.materialise(5, 100).indices, b.materialise(5, 100).indices);
}

TEST(Pool, MatchesThePublishedMarginals) {
  const Pool pool = Pool::generate(0);
  double rows = 0, pooling = 0, max_pooling = 0;
  std::int64_t max_rows = 0, empty = 0, under_five = 0;
  for (const auto& t : pool.tables()) {
    rows += t.pooling_factor > 0 ? static_cast<double>(t.num_rows) : 1.0;
    pooling += t.pooling_factor;
    max_rows = std::max(max_rows, t.num_rows);
    max_pooling = std::max(max_pooling, t.pooling_factor);
    empty += t.pooling_factor == 0 ? 1 : 0;
    under_five += t.pooling_factor < 5 ? 1 : 0;
    EXPECT_LE(t.active_rows, t.num_rows);
    EXPECT_LE(t.coverage, std::min(1.0, t.pooling_factor) + 1e-12);
  }
  EXPECT_EQ(max_rows, kPublishedDlrm.max_rows);
  EXPECT_DOUBLE_EQ(max_pooling, kPublishedDlrm.max_pooling);
  EXPECT_NEAR(rows / 856, kPublishedDlrm.mean_rows, 0.03 * kPublishedDlrm.mean_rows);
  EXPECT_NEAR(pooling / 856, kPublishedDlrm.mean_pooling, 1e-9);
  EXPECT_GT(empty, 0);
  EXPECT_GT(under_five, 856 / 2);  // "most tables have a pooling factor below 5"
}

TEST(Pool, MaterialisedBatchesReproduceExpectedStatistics) {
  const Pool pool = Pool::generate(0);
  // A spread of tables: the largest pooling, a mid one, a low-coverage one.
  std::vector<std::int64_t> ids;
  std::int64_t top = 0, low_cov = -1;
  for (const auto& t : pool.tables()) {
    if (t.pooling_factor > pool.table(top).pooling_factor) top = t.id;
    if (low_cov < 0 && t.coverage > 0 && t.coverage < 0.3) low_cov = t.id;
  }
  ids = {top, 17, 300, low_cov};
  for (std::int64_t batch : {4096, 65536}) {
    for (auto id : ids) {
      const TableStats want = pool.expected_stats(id, batch);
      const TableBatch b = pool.materialise(id, batch, 1);
      ASSERT_EQ(find_error_in_batch(b, pool.table(id).num_rows, "pool"), "");
      const TableStats got = compute_table_stats(b);
      const std::string what = "table " + std::to_string(id) + " batch " + std::to_string(batch);
      const double sd = std::sqrt(want.pooling_factor * (1 + want.pooling_factor) * 2 / batch);
      EXPECT_NEAR(got.pooling_factor, want.pooling_factor, 5 * sd + 1e-9) << what;
      EXPECT_NEAR(got.coverage, want.coverage, 5 * std::sqrt(0.25 / batch)) << what;
      if (want.num_indices == 0) continue;
      EXPECT_NEAR(static_cast<double>(got.num_distinct), static_cast<double>(want.num_distinct),
                  0.05 * static_cast<double>(want.num_distinct) + 20)
          << what;
      double l1 = 0;
      for (int j = 0; j < kNumReuseBins; ++j) l1 += std::abs(got.bins[j] - want.bins[j]);
      EXPECT_LT(l1, 0.03 + 3.0 / std::sqrt(static_cast<double>(want.num_distinct))) << what;
      if (want.pooling_factor >= 1) {
        EXPECT_EQ(got.num_rows, want.num_rows) << what;
      }
      ASSERT_EQ(got.icdf.size(), want.icdf.size());
      for (int k : {49, 89}) {
        EXPECT_NEAR(got.icdf[k], want.icdf[k], 0.1 * want.icdf[k] + 10) << what << " icdf " << k;
      }
    }
  }
}

TEST(Pool, CheckPassesForSeveralSeeds) {
  Context ctx;
  ctx.num_threads = 2;
  for (std::uint64_t seed : {0, 1}) {
    for (const auto& row : check_pool(Pool::generate(seed), 3, 8192, ctx)) {
      EXPECT_TRUE(row.ok()) << "seed " << seed << ": " << row.figure << " published " << row.published << " generated "
                            << row.generated << " tolerance " << row.tolerance;
    }
  }
}

}  // namespace
}  // namespace embshard
