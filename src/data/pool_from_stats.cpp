// A generative lookup model fitted to a table's statistics (model_from_stats in pool.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "data/pool_model.h"
#include "embshard/data/pool.h"

namespace embshard {
namespace {

/** Expected distinct rows of `lookups` draws over `active` Zipf ranks with exponent `alpha`. */
double expected_distinct(std::int64_t active, double alpha, double lookups) {
  return detail::expected_occupancy(active, alpha, 0, lookups).num_distinct;
}

/** Active rows in [1, max_rows] whose expected distinct count is closest to `target`. */
std::int64_t solve_active_rows(double alpha, double lookups, double target, std::int64_t max_rows) {
  double lo = 0.0;  // log of the active row count
  double hi = std::log(static_cast<double>(max_rows));
  if (expected_distinct(max_rows, alpha, lookups) <= target) return max_rows;
  for (int step = 0; step < 40; ++step) {
    const double mid = 0.5 * (lo + hi);
    const auto active = static_cast<std::int64_t>(std::llround(std::exp(mid)));
    (expected_distinct(active, alpha, lookups) < target ? lo : hi) = mid;
  }
  return std::clamp<std::int64_t>(std::llround(std::exp(hi)), 1, max_rows);
}

double bins_distance(const TableStats& stats, const detail::Occupancy& occ) {
  double distance = 0.0;
  for (int j = 0; j < kNumReuseBins; ++j) {
    const double modelled = occ.num_distinct > 0 ? occ.distinct_bins[j] / occ.num_distinct : 0.0;
    distance += std::abs(modelled - stats.bins[j]);
  }
  return distance;
}

}  // namespace

PoolTable model_from_stats(const TableStats& stats, std::uint64_t seed) {
  PoolTable model;
  model.num_rows = stats.num_rows;
  model.pooling_factor = stats.pooling_factor;
  model.coverage = stats.coverage;
  model.active_rows = std::min<std::int64_t>(stats.num_rows, kMinTableRows);
  model.zipf_alpha = 1.0;
  model.seed = seed;
  if (stats.num_indices <= 0 || stats.num_distinct <= 0 || stats.batch_size <= 0) return model;
  const double lookups = static_cast<double>(stats.num_indices);
  const double target = static_cast<double>(stats.num_distinct);
  double best = std::numeric_limits<double>::infinity();
  for (int step = 0; step <= 10; ++step) {
    const double alpha = 0.5 + 0.1 * step;
    const std::int64_t active = solve_active_rows(alpha, lookups, target, stats.num_rows);
    const double distance = bins_distance(stats, detail::expected_occupancy(active, alpha, 0, lookups));
    if (distance < best) {
      best = distance;
      model.zipf_alpha = alpha;
      model.active_rows = active;
    }
  }
  return model;
}

}  // namespace embshard
