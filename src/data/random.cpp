#include "embshard/data/random.h"

#include <cmath>

#include "embshard/core/context.h"
#include "embshard/core/error.h"

namespace embshard {
namespace {

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/** log1p(x)/x, continuous at 0. */
double log1p_over_x(double x) { return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x / 3.0); }

/** (exp(x)-1)/x, continuous at 0. */
double expm1_over_x(double x) { return std::abs(x) > 1e-8 ? std::expm1(x) / x : 1.0 + x * (0.5 + x / 6.0); }

}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (int i = 0; i < 4; ++i) s_[i] = derive_seed(seed, static_cast<std::uint64_t>(i));
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

std::uint64_t Rng::below(std::uint64_t n) {
  EMBSHARD_ASSERT(n > 0);
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
  std::uint64_t x = next_u64();
  while (x >= limit) x = next_u64();
  return x % n;
}

double Rng::normal() {
  double u = uniform();
  while (u <= 0.0) u = uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * uniform());
}

double Rng::gamma(double shape, double scale) {
  EMBSHARD_ASSERT(shape > 0 && scale > 0);
  if (shape < 1.0) {
    double u = uniform();
    while (u <= 0.0) u = uniform();
    return gamma(shape + 1.0, scale) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal();
    const double v0 = 1.0 + c * x;
    if (v0 <= 0) continue;
    const double v = v0 * v0 * v0;
    const double u = uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (u > 0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

std::int64_t Rng::poisson(double mean) {
  if (mean <= 0) return 0;
  if (mean >= 30.0) {
    const double x = std::floor(mean + std::sqrt(mean) * normal() + 0.5);
    return x < 0 ? 0 : static_cast<std::int64_t>(x);
  }
  const double u = uniform();
  double p = std::exp(-mean);
  double cdf = p;
  std::int64_t k = 0;
  while (u > cdf && k < 1000) {
    ++k;
    p *= mean / static_cast<double>(k);
    cdf += p;
  }
  return k;
}

ZipfSampler::ZipfSampler(std::int64_t n, double alpha, std::int64_t offset) : n_(n), alpha_(alpha), offset_(offset) {
  EMBSHARD_ASSERT(n >= 1 && alpha >= 0 && offset >= 0);
  const auto first = static_cast<double>(offset + 1);
  h_integral_x1_ = h_integral(first + 0.5) - h(first);
  h_integral_n_ = h_integral(static_cast<double>(offset + n) + 0.5);
  // Squeeze for quick acceptance; valid only when the support starts at 1.
  s_ = offset == 0 ? 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0)) : -1.0;
}

double ZipfSampler::h(double x) const { return std::exp(-alpha_ * std::log(x)); }

double ZipfSampler::h_integral(double x) const {
  const double log_x = std::log(x);
  return expm1_over_x((1.0 - alpha_) * log_x) * log_x;
}

double ZipfSampler::h_integral_inverse(double x) const {
  double t = x * (1.0 - alpha_);
  if (t < -1.0) t = -1.0;  // guards rounding at the lower end
  return std::exp(log1p_over_x(t) * x);
}

std::int64_t ZipfSampler::operator()(Rng& rng) const {
  if (alpha_ == 0.0) return 1 + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(n_)));
  for (;;) {
    const double u = h_integral_n_ + rng.uniform() * (h_integral_x1_ - h_integral_n_);
    const double x = h_integral_inverse(u);
    auto k = static_cast<std::int64_t>(x + 0.5);
    if (k < offset_ + 1) k = offset_ + 1;
    if (k > offset_ + n_) k = offset_ + n_;
    const auto kd = static_cast<double>(k);
    if (kd - x <= s_ || u >= h_integral(kd + 0.5) - h(kd)) return k - offset_;
  }
}

Permutation::Permutation(std::int64_t n, std::uint64_t seed) : n_(n) {
  EMBSHARD_ASSERT(n >= 1);
  int bits = 2;
  while ((std::uint64_t{1} << bits) < static_cast<std::uint64_t>(n)) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
  for (int i = 0; i < 4; ++i) keys_[i] = derive_seed(seed, 100 + static_cast<std::uint64_t>(i));
}

std::uint64_t Permutation::encrypt(std::uint64_t x) const {
  std::uint64_t left = x >> half_bits_;
  std::uint64_t right = x & half_mask_;
  for (std::uint64_t key : keys_) {
    const std::uint64_t f = derive_seed(key, right) & half_mask_;
    const std::uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

std::int64_t Permutation::operator()(std::int64_t x) const {
  EMBSHARD_ASSERT(x >= 0 && x < n_);
  auto y = static_cast<std::uint64_t>(x);
  do {
    y = encrypt(y);
  } while (y >= static_cast<std::uint64_t>(n_));
  return static_cast<std::int64_t>(y);
}

}  // namespace embshard
