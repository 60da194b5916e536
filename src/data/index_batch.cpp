#include "embshard/data/index_batch.h"

#include <algorithm>
#include <array>
#include <bit>
#include <sstream>
#include <type_traits>

#include "embshard/core/error.h"

namespace embshard {
namespace {

/** Counts above this go to a sorted list instead of the dense count-of-counts table. */
constexpr std::int64_t kDenseCounts = 4096;
constexpr std::int64_t kSmallSort = 256;
constexpr std::int64_t kMaxLookups = std::int64_t{1} << 56;  // keeps 100 × n exact in int64

/** The sample (bag) that lookup `i` belongs to. */
std::int64_t sample_of(const std::vector<std::int64_t>& offsets, std::int64_t i) {
  const auto it = std::upper_bound(offsets.begin(), offsets.end(), i);
  return static_cast<std::int64_t>(it - offsets.begin()) - 1;
}

/**
 * Sorts `keys` (order-preserving unsigned images of the indices) with an LSD radix sort on
 * bytes, skipping the byte positions on which all keys agree.
 */
template <typename U>
void radix_sort(std::vector<U>& keys) {
  constexpr int kDigits = sizeof(U);
  const std::size_t n = keys.size();
  std::array<std::array<std::size_t, 256>, kDigits> counts{};
  for (U k : keys)
    for (int d = 0; d < kDigits; ++d) ++counts[d][(k >> (8 * d)) & 0xFF];
  std::vector<U> tmp(n);
  for (int d = 0; d < kDigits; ++d) {
    auto& c = counts[d];
    if (std::any_of(c.begin(), c.end(), [n](std::size_t x) { return x == n; })) continue;
    std::size_t sum = 0;
    for (auto& x : c) sum += std::exchange(x, sum);
    for (U k : keys) tmp[c[(k >> (8 * d)) & 0xFF]++] = k;
    keys.swap(tmp);
  }
}

/** Access counts of the distinct rows, grouped for the bins and the inverse CDF. */
struct CountSummary {
  std::int64_t num_distinct = 0;
  std::int64_t max_index = -1;
  std::array<std::int64_t, kNumReuseBins> bins{};
  std::vector<std::int64_t> rows_with_count;  ///< [c] = distinct rows accessed c times, c <= dense
  std::vector<std::int64_t> big_counts;       ///< counts above kDenseCounts

  void add(std::int64_t c) {
    ++num_distinct;
    bins[std::min<std::size_t>(std::bit_width(static_cast<std::uint64_t>(c - 1)), kNumReuseBins - 1)]++;
    if (c <= kDenseCounts) {
      if (static_cast<std::int64_t>(rows_with_count.size()) <= c) rows_with_count.resize(c + 1);
      ++rows_with_count[c];
    } else {
      big_counts.push_back(c);
    }
  }
};

template <typename IndexT>
CountSummary count_rows(const IndexT* indices, std::int64_t n) {
  using U = std::make_unsigned_t<IndexT>;
  constexpr U kSign = U{1} << (8 * sizeof(U) - 1);
  std::vector<U> keys(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) keys[i] = static_cast<U>(indices[i]) ^ kSign;
  if (n <= kSmallSort)
    std::sort(keys.begin(), keys.end());
  else
    radix_sort(keys);
  CountSummary s;
  for (std::size_t i = 0; i < keys.size();) {
    std::size_t j = i + 1;
    while (j < keys.size() && keys[j] == keys[i]) ++j;
    s.add(static_cast<std::int64_t>(j - i));
    i = j;
  }
  s.max_index = static_cast<std::int64_t>(static_cast<IndexT>(keys.back() ^ kSign));
  return s;
}

/**
 * icdf[k] = smallest r such that the r hottest rows serve at least (k+1)% of the n lookups,
 * i.e. 100 × cum(r) >= (k+1) × n, in exact integer arithmetic.
 */
std::vector<double> inverse_cdf(const CountSummary& s, std::int64_t n) {
  std::vector<double> icdf(kNumIcdfSteps);
  int k = 0;
  std::int64_t cum = 0;
  std::int64_t rows = 0;
  auto target = [n](int step) { return ((step + 1) * n + kNumIcdfSteps - 1) / kNumIcdfSteps; };
  auto take = [&](std::int64_t count, std::int64_t num_rows) {  // num_rows rows of `count`
    while (k < kNumIcdfSteps && cum + num_rows * count >= target(k)) {
      icdf[k] = static_cast<double>(rows + (target(k) - cum + count - 1) / count);
      ++k;
    }
    cum += num_rows * count;
    rows += num_rows;
  };
  std::vector<std::int64_t> big = s.big_counts;
  std::sort(big.begin(), big.end(), std::greater<>());
  for (std::int64_t c : big) take(c, 1);
  for (std::size_t c = s.rows_with_count.size(); c-- > 1;)
    if (s.rows_with_count[c] > 0) take(static_cast<std::int64_t>(c), s.rows_with_count[c]);
  EMBSHARD_ASSERT(k == kNumIcdfSteps && rows == s.num_distinct);
  return icdf;
}

}  // namespace

std::string find_error_in_batch(const TableBatch& batch, std::int64_t num_rows, const std::string& where) {
  const auto& off = batch.offsets;
  const auto n = static_cast<std::int64_t>(batch.indices.size());
  std::ostringstream err;
  err << where << ": ";
  if (off.empty()) return err.str() + "offsets is empty (needs batch_size + 1 entries)";
  if (off[0] != 0) {
    err << "offsets[0] = " << off[0] << "; must be 0";
    return err.str();
  }
  for (std::size_t b = 0; b + 1 < off.size(); ++b) {
    if (off[b + 1] < off[b]) {
      err << "sample " << b << ": offsets decrease (offsets[" << b + 1 << "] = " << off[b + 1] << " < offsets[" << b
          << "] = " << off[b] << ")";
      return err.str();
    }
  }
  if (off.back() != n) {
    err << "offsets end at " << off.back() << " but there are " << n << " indices";
    return err.str();
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t v = batch.indices[static_cast<std::size_t>(i)];
    if (v >= 0 && (num_rows <= 0 || v < num_rows)) continue;
    err << "sample " << sample_of(off, i) << ": index " << v << " at position " << i;
    if (v < 0)
      err << " is negative";
    else
      err << " is out of range (num_rows = " << num_rows << ")";
    return err.str();
  }
  return "";
}

TableStats compute_table_stats(const TableBatch& batch) {
  if (batch.offsets.empty()) return compute_table_stats<std::int64_t, std::int64_t>(nullptr, nullptr, 0);
  EMBSHARD_CHECK(batch.offsets.back() - batch.offsets.front() == static_cast<std::int64_t>(batch.indices.size()),
                 "compute_table_stats: offsets span ", batch.offsets.back() - batch.offsets.front(),
                 " lookups but the batch holds ", batch.indices.size(), " indices");
  return compute_table_stats(batch.indices.data(), batch.offsets.data(), batch.batch_size());
}

template <typename IndexT, typename OffsetT>
TableStats compute_table_stats(const IndexT* indices, const OffsetT* offsets, std::int64_t batch_size) {
  TableStats s;
  s.batch_size = batch_size;
  s.num_rows = kMinTableRows;
  if (batch_size <= 0) return s;
  std::int64_t non_empty = 0;
  for (std::int64_t b = 0; b < batch_size; ++b) {
    const std::int64_t len = static_cast<std::int64_t>(offsets[b + 1]) - offsets[b];
    EMBSHARD_CHECK(len >= 0, "compute_table_stats: offsets decrease at sample ", b);
    non_empty += len > 0;
  }
  const std::int64_t n = static_cast<std::int64_t>(offsets[batch_size]) - offsets[0];
  EMBSHARD_CHECK(n < kMaxLookups, "compute_table_stats: too many lookups (", n, ")");
  s.num_indices = n;
  s.pooling_factor = static_cast<double>(n) / static_cast<double>(batch_size);
  s.coverage = static_cast<double>(non_empty) / static_cast<double>(batch_size);
  if (n == 0) return s;

  const CountSummary counts = count_rows(indices, n);
  s.num_distinct = counts.num_distinct;
  s.num_rows = std::max(kMinTableRows, counts.max_index + 1);
  for (int j = 0; j < kNumReuseBins; ++j)
    s.bins[j] = static_cast<double>(counts.bins[j]) / static_cast<double>(counts.num_distinct);
  s.icdf = inverse_cdf(counts, n);
  return s;
}

template TableStats compute_table_stats<std::int32_t, std::int64_t>(const std::int32_t*, const std::int64_t*,
                                                                    std::int64_t);
template TableStats compute_table_stats<std::int32_t, std::int32_t>(const std::int32_t*, const std::int32_t*,
                                                                    std::int64_t);
template TableStats compute_table_stats<std::int64_t, std::int64_t>(const std::int64_t*, const std::int64_t*,
                                                                    std::int64_t);
template TableStats compute_table_stats<std::int64_t, std::int32_t>(const std::int64_t*, const std::int32_t*,
                                                                    std::int64_t);

}  // namespace embshard
