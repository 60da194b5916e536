#include "pool_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>

#include "embshard/core/error.h"

namespace embshard::detail {
namespace {

constexpr std::int64_t kExactRanks = 2000;  // ranks evaluated one by one
constexpr double kBucketRatio = 1.01;       // then geometric buckets of ranks
constexpr double kDenseMeanLimit = 60.0;    // below: Poisson pmf summed term by term

/** Upper edge of reuse bin j (bin 16 has none). */
double bin_upper(int j) { return std::ldexp(1.0, j); }

/** The reuse bin of a count c ≥ 1: the least j with c ≤ 2^j, at most the last bin. */
int bin_of_count(std::int64_t c) {
  return std::min(kNumReuseBins - 1, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(c - 1))));
}

/** ∫ x^-alpha dx up to a constant, stable at alpha = 1. */
double power_integral(double x, double alpha) {
  const double log_x = std::log(x);
  const double t = (1.0 - alpha) * log_x;
  const double factor = std::abs(t) > 1e-8 ? std::expm1(t) / t : 1.0 + t * (0.5 + t / 6.0);
  return factor * log_x;
}

/** Regularized lower incomplete gamma P(a, x). */
double gamma_p(double a, double x) {
  if (x <= 0) return 0.0;
  const double log_prefix = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1.0) {  // series
    double sum = 1.0 / a, term = sum;
    for (int n = 1; n < 100000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (term < sum * 1e-15) break;
    }
    return std::exp(log_prefix) * sum;
  }
  // continued fraction for Q (modified Lentz)
  double b = x + 1.0 - a, c = 1e300, d = 1.0 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::abs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::abs(c) < 1e-300) c = 1e-300;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1.0) < 1e-15) break;
  }
  return 1.0 - std::exp(log_prefix) * h;
}

/** A group of `rows` ranks that share one expected count `mean`. */
struct RankGroup {
  double mean;
  double rows;
};

class Accumulator {
 public:
  explicit Accumulator(Occupancy& out) : out_(out) {}

  void add(const RankGroup& g) {
    if (g.mean <= 0 || g.rows <= 0) return;
    out_.num_distinct += g.rows * -std::expm1(-g.mean);
    if (g.mean < kDenseMeanLimit) {
      add_dense(g);
    } else {
      add_by_cdf(g);
    }
  }

  /** Expected rows with count c, as (count, rows) pairs. */
  [[nodiscard]] std::vector<std::pair<double, double>> count_levels() const {
    std::vector<std::pair<double, double>> levels = point_masses_;
    for (std::size_t c = 1; c < dense_.size(); ++c) {
      if (dense_[c] > 0) levels.emplace_back(static_cast<double>(c), dense_[c]);
    }
    return levels;
  }

 private:
  void add_dense(const RankGroup& g) {
    const auto last = static_cast<std::int64_t>(g.mean + 12.0 * std::sqrt(g.mean) + 20.0);
    if (dense_.size() < static_cast<std::size_t>(last + 1)) dense_.resize(last + 1, 0.0);
    double pmf = std::exp(-g.mean);
    for (std::int64_t c = 1; c <= last; ++c) {
      pmf *= g.mean / static_cast<double>(c);
      const int j = bin_of_count(c);
      out_.distinct_bins[j] += g.rows * pmf;
      out_.access_bins[j] += g.rows * pmf * static_cast<double>(c);
      dense_[c] += g.rows * pmf;
    }
  }

  void add_by_cdf(const RankGroup& g) {
    const double spread = 12.0 * std::sqrt(g.mean) + 5.0;
    auto cdf = [&](double k) {  // P(X <= k)
      if (k < 0) return 0.0;
      if (k < g.mean - spread) return 0.0;
      if (k > g.mean + spread) return 1.0;
      return 1.0 - gamma_p(k + 1.0, g.mean);
    };
    // Bin j holds counts in (lo, hi] with lo = 2^(j−1) (0 for bin 0) and hi = 2^j (∞ for the last):
    // each edge's P(X ≤ hi) and P(X ≤ hi − 1) is the next bin's at lo, so each is computed once.
    double at_lo = cdf(0.0), below_lo = cdf(-1.0);
    for (int j = 0; j < kNumReuseBins; ++j) {
      const bool last = j == kNumReuseBins - 1;
      const double at_hi = last ? 1.0 : cdf(bin_upper(j));
      const double below_hi = last ? 1.0 : cdf(bin_upper(j) - 1);
      out_.distinct_bins[j] += g.rows * (at_hi - at_lo);
      out_.access_bins[j] += g.rows * g.mean * (below_hi - below_lo);
      at_lo = at_hi, below_lo = below_hi;
    }
    point_masses_.emplace_back(g.mean, g.rows);
  }

  Occupancy& out_;
  std::vector<double> dense_;
  std::vector<std::pair<double, double>> point_masses_;
};

std::vector<double> icdf_from_levels(std::vector<std::pair<double, double>> levels) {
  std::sort(levels.begin(), levels.end(), [](auto& a, auto& b) { return a.first > b.first; });
  double total = 0;
  for (auto& [c, r] : levels) total += c * r;
  std::vector<double> icdf(kNumIcdfSteps, 0.0);
  if (total <= 0) return {};
  double rows_before = 0, access_before = 0;
  std::size_t level = 0;
  for (int k = 0; k < kNumIcdfSteps; ++k) {
    const double target = total * (k + 1) / kNumIcdfSteps;
    while (level < levels.size() && access_before + levels[level].first * levels[level].second < target * (1 - 1e-12)) {
      access_before += levels[level].first * levels[level].second;
      rows_before += levels[level].second;
      ++level;
    }
    if (level == levels.size()) {
      icdf[k] = rows_before;
      continue;
    }
    const double needed = std::ceil(std::max(0.0, target - access_before) / levels[level].first);
    icdf[k] = rows_before + std::min(needed, std::ceil(levels[level].second));
  }
  for (int k = 1; k < kNumIcdfSteps; ++k) icdf[k] = std::max(icdf[k], icdf[k - 1]);
  return icdf;
}

}  // namespace

double poisson_cdf(std::int64_t k, double mean) {
  if (k < 0) return 0.0;
  if (mean <= 0) return 1.0;
  return 1.0 - gamma_p(static_cast<double>(k) + 1.0, mean);
}

Occupancy expected_occupancy(std::int64_t num_rows, double alpha, std::int64_t offset, double num_lookups) {
  EMBSHARD_ASSERT(num_rows >= 1 && alpha >= 0 && offset >= 0);
  Occupancy out;
  out.num_lookups = num_lookups;
  if (num_lookups <= 0) return out;
  const std::int64_t exact = std::min(num_rows, kExactRanks);
  const auto q = static_cast<double>(offset);
  auto weight = [&](std::int64_t k) { return std::pow(static_cast<double>(k) + q, -alpha); };
  double norm = 0;
  for (std::int64_t k = 1; k <= exact; ++k) norm += weight(k);
  const double tail_lo = static_cast<double>(exact) + 0.5 + q;
  const double tail_hi = static_cast<double>(num_rows) + 0.5 + q;
  if (num_rows > exact) norm += power_integral(tail_hi, alpha) - power_integral(tail_lo, alpha);

  Accumulator acc(out);
  for (std::int64_t k = 1; k <= exact; ++k) {
    acc.add({num_lookups * weight(k) / norm, 1.0});
  }
  for (std::int64_t a = exact + 1; a <= num_rows;) {
    const std::int64_t b =
        std::min(num_rows, std::max(a, static_cast<std::int64_t>(static_cast<double>(a) * kBucketRatio)));
    const double mass = power_integral(static_cast<double>(b) + 0.5 + q, alpha) -
                        power_integral(static_cast<double>(a) - 0.5 + q, alpha);
    const auto rows = static_cast<double>(b - a + 1);
    acc.add({num_lookups * mass / norm / rows, rows});
    a = b + 1;
  }
  out.icdf = icdf_from_levels(acc.count_levels());
  return out;
}

}  // namespace embshard::detail
