#pragma once
/**
 * @file random.h
 * @brief Portable, seeded random streams and the samplers the synthetic pool needs.
 *
 * Everything here is implemented in embshard (no `std::*_distribution`, whose output differs
 * between standard libraries), so a seed gives the same tables and batches on every platform.
 */
#include <cstdint>

namespace embshard {

/** xoshiro256** seeded through SplitMix64. */
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next_u64();
  /** Uniform in [0, 1) with 53 random bits. */
  double uniform();
  /** Uniform integer in [0, n) (n > 0), without modulo bias. */
  std::uint64_t below(std::uint64_t n);
  /** Standard normal (Box–Muller). */
  double normal();
  /** Gamma(shape, scale) by Marsaglia–Tsang; shape > 0. */
  double gamma(double shape, double scale);
  /** Poisson(mean): inversion below mean 30, rounded normal approximation above. */
  std::int64_t poisson(double mean);

 private:
  std::uint64_t s_[4];
};

/**
 * Zipf–Mandelbrot ranks on {1, ..., n} with P(k) ∝ (k + offset)^-alpha (alpha >= 0; 0 is
 * uniform; offset >= 0 flattens the head), by Hörmann and Derflinger's rejection-inversion on
 * {offset+1, ..., offset+n}: O(1) per draw for any n and alpha, no tables.
 */
class ZipfSampler {
 public:
  ZipfSampler(std::int64_t n, double alpha, std::int64_t offset = 0);
  std::int64_t operator()(Rng& rng) const;

 private:
  [[nodiscard]] double h(double x) const;           ///< x^-alpha
  [[nodiscard]] double h_integral(double x) const;  ///< ∫ h, up to a constant
  [[nodiscard]] double h_integral_inverse(double x) const;
  std::int64_t n_;
  double alpha_;
  std::int64_t offset_;
  double h_integral_x1_;
  double h_integral_n_;
  double s_;
};

/**
 * A seeded bijection of {0, ..., n-1}: a 4-round Feistel network on the next even power of two,
 * cycle-walked into range. Used to scatter popularity ranks over a table's rows.
 */
class Permutation {
 public:
  Permutation(std::int64_t n, std::uint64_t seed);
  [[nodiscard]] std::int64_t operator()(std::int64_t x) const;

 private:
  [[nodiscard]] std::uint64_t encrypt(std::uint64_t x) const;
  std::int64_t n_;
  int half_bits_;
  std::uint64_t half_mask_;
  std::uint64_t keys_[4];
};

}  // namespace embshard
