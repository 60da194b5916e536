#pragma once
// Expected occupancy statistics of i.i.d. Zipf lookups (the pool's analytic model; see pool.h).
#include <array>
#include <cstdint>
#include <vector>

#include "embshard/data/table.h"

namespace embshard::detail {

/** Expected counts for `num_lookups` i.i.d. draws over `num_rows` Zipf–Mandelbrot ranks. */
struct Occupancy {
  double num_lookups = 0.0;
  double num_distinct = 0.0;
  std::array<double, kNumReuseBins> distinct_bins{};  ///< expected rows per reuse bin
  std::array<double, kNumReuseBins> access_bins{};    ///< expected lookups per reuse bin
  std::vector<double> icdf;                           ///< kNumIcdfSteps values, or empty
};

/** P(rank k) ∝ (k + offset)^-alpha for k = 1..num_rows. */
[[nodiscard]] Occupancy expected_occupancy(std::int64_t num_rows, double alpha, std::int64_t offset,
                                           double num_lookups);

/** P(X <= k) for X ~ Poisson(mean), k >= 0. */
[[nodiscard]] double poisson_cdf(std::int64_t k, double mean);

}  // namespace embshard::detail
