#include "embshard/data/pool.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "embshard/core/error.h"
#include "embshard/core/parallel.h"
#include "embshard/data/random.h"
#include "pool_model.h"

namespace embshard {
namespace {

/** Mean of 10^U for U uniform on [lo, hi] (log10 units). */
double log_uniform_mean(double lo, double hi) {
  if (hi - lo < 1e-12) return std::pow(10.0, lo);
  return (std::pow(10.0, hi) - std::pow(10.0, lo)) / ((hi - lo) * std::log(10.0));
}

/** Stratified uniforms (i + U_i) / n in a random order: exact marginals, no sampling noise. */
std::vector<double> stratified_uniforms(std::size_t n, Rng& rng) {
  std::vector<double> u(n);
  for (std::size_t i = 0; i < n; ++i) u[i] = (static_cast<double>(i) + rng.uniform()) / n;
  for (std::size_t i = n; i > 1; --i) std::swap(u[i - 1], u[rng.below(i)]);
  return u;
}

/** Mean of the Pareto density ∝ p^-(a+1) on [lo, hi]. */
double pareto_mean(double a, double lo, double hi) {
  const double z = (std::pow(lo, -a) - std::pow(hi, -a)) / a;
  if (std::abs(a - 1.0) < 1e-9) return std::log(hi / lo) / z;
  return (std::pow(lo, 1 - a) - std::pow(hi, 1 - a)) / (a - 1) / z;
}

double pareto_quantile(double u, double a, double lo, double hi) {
  const double la = std::pow(lo, -a), ha = std::pow(hi, -a);
  return std::pow(la - u * (la - ha), -1.0 / a);
}

/** Shape a with pareto_mean(a) == mean (the mean falls as a grows). */
double solve_pareto_shape(double mean, double lo, double hi) {
  double a_lo = 1e-3, a_hi = 5.0;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (a_lo + a_hi);
    (pareto_mean(mid, lo, hi) > mean ? a_lo : a_hi) = mid;
  }
  return 0.5 * (a_lo + a_hi);
}

std::vector<std::int64_t> draw_rows(std::size_t n, std::int64_t empties, const PoolParams& p, Rng& rng) {
  const PublishedDlrmStats& pub = kPublishedDlrm;
  const double high_max = std::log10(static_cast<double>(pub.max_rows));
  const double target =
      (pub.mean_rows * static_cast<double>(pub.num_tables) - static_cast<double>(empties)) / static_cast<double>(n);
  const double m_low = log_uniform_mean(p.rows_low_log10_min, 6.0);
  const double m_high = log_uniform_mean(p.rows_high_log10_min, high_max);
  const double w_low = std::clamp((m_high - target) / (m_high - m_low), 0.0, 1.0);
  std::vector<double> u = stratified_uniforms(n, rng);
  std::vector<std::int64_t> rows(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double log10_rows =
        u[i] < w_low ? p.rows_low_log10_min + (6.0 - p.rows_low_log10_min) * u[i] / w_low
                     : p.rows_high_log10_min + (high_max - p.rows_high_log10_min) * (u[i] - w_low) / (1 - w_low);
    rows[i] = std::max<std::int64_t>(kMinTableRows, std::llround(std::pow(10.0, log10_rows)));
  }
  const auto top = std::max_element(u.begin(), u.end()) - u.begin();
  rows[static_cast<std::size_t>(top)] = pub.max_rows;
  return rows;
}

std::vector<double> draw_pooling(std::size_t n, const PoolParams& p, Rng& rng) {
  const PublishedDlrmStats& pub = kPublishedDlrm;
  const double total = pub.mean_pooling * static_cast<double>(pub.num_tables);
  const double a = solve_pareto_shape(total / static_cast<double>(n), p.pooling_min, pub.max_pooling);
  std::vector<double> u = stratified_uniforms(n, rng);
  std::vector<double> pooling(n);
  for (std::size_t i = 0; i < n; ++i) pooling[i] = pareto_quantile(u[i], a, p.pooling_min, pub.max_pooling);
  // The largest table is the published maximum; the rest share the published total exactly.
  const auto top = static_cast<std::size_t>(std::max_element(u.begin(), u.end()) - u.begin());
  pooling[top] = pub.max_pooling;
  const double rest = std::accumulate(pooling.begin(), pooling.end(), 0.0) - pub.max_pooling;
  const double scale = (total - pub.max_pooling) / rest;
  for (std::size_t i = 0; i < n; ++i) {
    if (i != top) pooling[i] = std::min(pub.max_pooling, pooling[i] * scale);
  }
  return pooling;
}

double draw_coverage(double pooling, const PoolParams& p, Rng& rng) {
  constexpr double kMaxMeanLength = 400.0;  // a present feature has at most this many ids on average
  const double raw = rng.uniform() < p.coverage_full_share
                         ? 0.9 + 0.1 * rng.uniform()
                         : std::pow(10.0, p.coverage_log10_min * (1.0 - rng.uniform()));
  return std::clamp(raw, std::min(1.0, pooling / kMaxMeanLength), std::min(1.0, pooling));
}

}  // namespace

bool PoolCheckRow::ok() const { return std::abs(generated - published) <= tolerance; }

Pool Pool::generate(std::uint64_t seed, const PoolParams& params) {
  EMBSHARD_CHECK(params.alpha_min >= 0 && params.alpha_max >= params.alpha_min, "pool: alpha range [", params.alpha_min,
                 ", ", params.alpha_max, "] is invalid");
  EMBSHARD_CHECK(params.active_log10_max >= params.active_log10_min, "pool: active-row ratio range is invalid");
  EMBSHARD_CHECK(params.empty_share >= 0 && params.empty_share < 1, "pool: empty_share must lie in [0, 1)");
  Pool pool;
  pool.seed_ = seed;
  pool.params_ = params;
  const auto n = static_cast<std::size_t>(kPublishedDlrm.num_tables);
  Rng rng(derive_seed(seed, 0));
  const auto empties = static_cast<std::int64_t>(std::llround(params.empty_share * n));
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);

  const std::size_t used = n - static_cast<std::size_t>(empties);
  // Independent streams per property: rows and pooling stay uncorrelated.
  Rng rows_rng(derive_seed(seed, 1)), pooling_rng(derive_seed(seed, 2)), coverage_rng(derive_seed(seed, 3)),
      alpha_rng(derive_seed(seed, 4)), active_rng(derive_seed(seed, 5)), offset_rng(derive_seed(seed, 6));
  const auto rows = draw_rows(used, empties, params, rows_rng);
  const auto pooling = draw_pooling(used, params, pooling_rng);
  const auto alpha_u = stratified_uniforms(used, alpha_rng);
  const auto active_u = stratified_uniforms(used, active_rng);
  const auto offset_u = stratified_uniforms(used, offset_rng);

  pool.tables_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    PoolTable& t = pool.tables_[order[i]];
    t.id = static_cast<std::int64_t>(order[i]);
    t.seed = derive_seed(seed, 1000 + order[i]);
    t.length_shape = params.length_shape;
    if (i >= used) continue;  // an empty table: 100 rows, never looked up
    t.num_rows = rows[i];
    t.pooling_factor = pooling[i];
    t.coverage = draw_coverage(pooling[i], params, coverage_rng);
    t.zipf_alpha = params.alpha_min + (params.alpha_max - params.alpha_min) * alpha_u[i];
    const double ratio =
        std::pow(10.0, params.active_log10_min + (params.active_log10_max - params.active_log10_min) * active_u[i]);
    const double lookups = t.pooling_factor * static_cast<double>(kPublishedDlrm.batch_size);
    t.active_rows = std::clamp<std::int64_t>(std::llround(ratio * lookups), 1, t.num_rows);
    t.zipf_offset = std::llround(std::pow(10.0, params.offset_log10_max * offset_u[i])) - 1;
  }
  return pool;
}

const PoolTable& Pool::table(std::int64_t id) const {
  EMBSHARD_CHECK(id >= 0 && id < static_cast<std::int64_t>(tables_.size()), "pool: table id ", id, " out of range [0, ",
                 tables_.size(), ")");
  return tables_[static_cast<std::size_t>(id)];
}

TableStats expected_table_stats(const PoolTable& t, std::int64_t batch_size) {
  TableStats s;
  s.num_rows = t.num_rows;
  s.pooling_factor = t.pooling_factor;
  s.coverage = t.coverage;
  s.batch_size = batch_size;
  const double lookups = t.pooling_factor * static_cast<double>(batch_size);
  const detail::Occupancy occ = detail::expected_occupancy(t.active_rows, t.zipf_alpha, t.zipf_offset, lookups);
  s.num_indices = std::llround(lookups);
  s.num_distinct = std::min<std::int64_t>(s.num_indices, std::llround(occ.num_distinct));
  // Expected counts are rounded: under half a lookup is an empty table (no bins, no ICDF), and
  // a looked-up table has at least one distinct row.
  if (s.num_indices == 0) return s;
  s.num_distinct = std::max<std::int64_t>(s.num_distinct, 1);
  if (occ.num_distinct > 0) {
    for (int j = 0; j < kNumReuseBins; ++j) s.bins[j] = occ.distinct_bins[j] / occ.num_distinct;
  }
  s.icdf = occ.icdf;
  if (!s.icdf.empty()) {  // the definition's end point, and never past the table
    s.icdf.back() = static_cast<double>(s.num_distinct);
    for (auto& v : s.icdf) v = std::min(v, static_cast<double>(s.num_distinct));
  }
  return s;
}

TableStats Pool::expected_stats(std::int64_t id, std::int64_t batch_size) const {
  return expected_table_stats(table(id), batch_size);
}

std::vector<TableStats> Pool::all_expected_stats(std::int64_t batch_size, int threads) const {
  std::vector<TableStats> out(tables_.size());
  parallel_for(tables_.size(), threads, [&](std::size_t i) { out[i] = expected_table_stats(tables_[i], batch_size); });
  return out;
}

TableBatch Pool::materialise(std::int64_t id, std::int64_t batch_size, std::uint64_t batch) const {
  return materialise_table(table(id), batch_size, batch);
}

TableBatch materialise_table(const PoolTable& t, std::int64_t batch_size, std::uint64_t batch) {
  EMBSHARD_CHECK(batch_size > 0, "pool: batch size must be positive, got ", batch_size);
  Rng rng(derive_seed(t.seed, 1 + batch));
  TableBatch out;
  out.offsets.resize(static_cast<std::size_t>(batch_size) + 1, 0);
  const double present_mean = t.coverage > 0 ? t.pooling_factor / t.coverage : 0.0;
  for (std::int64_t b = 0; b < batch_size; ++b) {
    std::int64_t length = 0;
    if (t.pooling_factor > 0 && rng.uniform() < t.coverage) {
      const double extra = present_mean - 1.0;
      length = 1 + (extra > 0 ? rng.poisson(rng.gamma(t.length_shape, extra / t.length_shape)) : 0);
    }
    out.offsets[static_cast<std::size_t>(b) + 1] = out.offsets[static_cast<std::size_t>(b)] + length;
  }
  out.indices.resize(static_cast<std::size_t>(out.offsets.back()));
  const ZipfSampler zipf(t.active_rows, t.zipf_alpha, t.zipf_offset);
  const Permutation perm(t.num_rows, t.seed);
  const std::int64_t last_row = t.num_rows - 1;
  const std::int64_t displaced = perm(0);
  for (auto& index : out.indices) {
    const std::int64_t rank = zipf(rng) - 1;
    if (rank == 0) {
      index = last_row;  // the hottest row is the top of the range
    } else {
      const std::int64_t row = perm(rank);
      index = row == last_row ? displaced : row;
    }
  }
  return out;
}

}  // namespace embshard
