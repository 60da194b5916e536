// The fast CPU implementation.
// Forward: the T·B bags are cut into work items of about equal cost (lookups + 1 per bag, read
// off the offsets prefix sums); OpenMP runs them dynamically. Each bag sums into a local
// accumulator (compile-time dim for common sizes, so the loops unroll and vectorise) and the
// rows 16 lookups ahead are prefetched.
// Backward: per table, (row, bag) pairs are radix-sorted by row (stable, so each row's bags
// stay in bag order) in parallel: a scatter by the row's top bits into buckets (per-chunk
// histograms, so the order never depends on the thread count), then each bucket (disjoint rows)
// is sorted and cut into segments by one thread. Blocks of unique rows run in parallel, each row
// gathers its gradient rows and is updated once by one thread: deterministic, no atomics.
#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#define EMBSHARD_OMP(directive) _Pragma(#directive)
#else
#define EMBSHARD_OMP(directive)
#endif

#include "kernels/embedding_bag_internal.h"

namespace embshard::kernels {

int set_cpu_kernel_threads(int threads) {
#ifdef _OPENMP
  if (threads >= 1) omp_set_num_threads(threads);
  return omp_get_max_threads();
#else
  (void)threads;
  return 1;
#endif
}

}  // namespace embshard::kernels

namespace embshard::kernels::detail {
namespace {

constexpr std::int64_t kPrefetchDistance = 16;  // lookups ahead (FBGEMM's choice)
constexpr std::int64_t kItemsPerThread = 8;
constexpr std::int64_t kRowsPerBlock = 64;  // unique rows per backward task

int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

struct WorkItem {
  std::int64_t bag_begin;  // global bag numbers k = t·B + b
  std::int64_t bag_end;
};

/** Cuts bags [0, n_bags) into ≤ pieces items of about equal (lookups + bags). */
std::vector<WorkItem> split_work(std::span<const std::int64_t> offsets, std::int64_t pieces) {
  const auto n_bags = static_cast<std::int64_t>(offsets.size()) - 1;
  const auto cost = [&](std::int64_t k) { return offsets[k] - offsets[0] + k; };
  const std::int64_t total = cost(n_bags);
  pieces = std::max<std::int64_t>(1, std::min(pieces, n_bags));
  std::vector<WorkItem> items;
  std::int64_t begin = 0;
  for (std::int64_t i = 1; i <= pieces && begin < n_bags; ++i) {
    const std::int64_t target = i == pieces ? total : total / pieces * i;
    std::int64_t lo = begin, hi = n_bags;  // first k ≥ begin with cost(k) ≥ target
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (cost(mid) < target)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo > begin) items.push_back({begin, lo});
    begin = lo;
  }
  return items;
}

inline void prefetch_bytes(const void* start, std::int64_t bytes) {
  const char* p = static_cast<const char*>(start);
  for (std::int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 3);
  __builtin_prefetch(p + bytes - 1, 0, 3);
}

/** Arguments of one (table, bag range) forward run. */
template <class W, class Index>
struct PoolArgs {
  const W* weights;
  std::int64_t rows;
  std::int64_t dim;
  const Index* indices;
  const std::int64_t* offsets;  // n_bags + 1 entries
  std::int64_t n_bags;
  float* out;               // first bag's output row, at the table's column
  std::int64_t out_stride;  // total_dim
};

/** Sums the bags; returns the first bad index position or -1. kDim = 0: runtime dim. */
template <int kDim, class W, class Index>
std::int64_t pool_bags(const PoolArgs<W, Index>& a) {
  const std::int64_t dim = kDim > 0 ? kDim : a.dim;
  const std::int64_t row_bytes = dim * static_cast<std::int64_t>(sizeof(W));
  const std::int64_t prefetch_end = a.offsets[a.n_bags];
  const auto rows = static_cast<std::uint64_t>(a.rows);
  const W* __restrict weights = a.weights;
  constexpr std::int64_t kAccSize = kDim > 0 ? kDim : 1;
  alignas(64) float local_acc[kAccSize];
  std::vector<float> runtime_acc(kDim > 0 ? 0 : static_cast<std::size_t>(dim));
  float* __restrict acc = kDim > 0 ? local_acc : runtime_acc.data();
  for (std::int64_t i = 0; i < a.n_bags; ++i) {
    for (std::int64_t d = 0; d < dim; ++d) acc[d] = 0.0f;
    for (std::int64_t p = a.offsets[i]; p < a.offsets[i + 1]; ++p) {
      if (p + kPrefetchDistance < prefetch_end) {
        const auto ahead = static_cast<std::uint64_t>(a.indices[p + kPrefetchDistance]);
        if (ahead < rows) prefetch_bytes(weights + ahead * dim, row_bytes);
      }
      const auto row_index = static_cast<std::uint64_t>(a.indices[p]);
      if (row_index >= rows) return p;
      const W* __restrict row = weights + row_index * dim;
      for (std::int64_t d = 0; d < dim; ++d) acc[d] += load_weight(row, d);
    }
    float* __restrict out_row = a.out + i * a.out_stride;
    for (std::int64_t d = 0; d < dim; ++d) out_row[d] = acc[d];
  }
  return -1;
}

template <class W, class Index>
std::int64_t pool_bags_any_dim(const PoolArgs<W, Index>& a) {
  switch (a.dim) {
    case 4: return pool_bags<4>(a);
    case 8: return pool_bags<8>(a);
    case 16: return pool_bags<16>(a);
    case 32: return pool_bags<32>(a);
    case 64: return pool_bags<64>(a);
    case 128: return pool_bags<128>(a);
    case 256: return pool_bags<256>(a);
    default: return pool_bags<0>(a);
  }
}

template <class Index>
std::int64_t pool_table_range(const TableView& table, const BagBatch& batch, std::int64_t k0, std::int64_t k1,
                              float* out, std::int64_t out_stride) {
  const auto* indices = static_cast<const Index*>(batch.indices);
  const std::int64_t* offsets = batch.offsets.data() + k0;
  if (table.dtype == WeightDtype::kF32) {
    const PoolArgs<float, Index> args{
        static_cast<const float*>(table.weights), table.rows, table.dim, indices, offsets, k1 - k0, out, out_stride};
    return pool_bags_any_dim(args);
  }
  const PoolArgs<std::uint16_t, Index> args{static_cast<const std::uint16_t*>(table.weights),
                                            table.rows,
                                            table.dim,
                                            indices,
                                            offsets,
                                            k1 - k0,
                                            out,
                                            out_stride};
  return pool_bags_any_dim(args);
}

/** Runs one work item (it may span several tables); first bad position or -1. */
template <class Index>
std::int64_t run_forward_item(std::span<const TableView> tables, const BagBatch& batch,
                              const std::vector<std::int64_t>& d_offsets, float* out, const WorkItem& item) {
  const std::int64_t batch_size = batch.batch_size;
  const std::int64_t total_dim = d_offsets.back();
  for (std::int64_t k = item.bag_begin; k < item.bag_end;) {
    const std::int64_t t = k / batch_size;
    const std::int64_t k_end = std::min(item.bag_end, (t + 1) * batch_size);
    float* out_first = out + (k - t * batch_size) * total_dim + d_offsets[t];
    const std::int64_t bad = pool_table_range<Index>(tables[t], batch, k, k_end, out_first, total_dim);
    if (bad >= 0) return bad;
    k = k_end;
  }
  return -1;
}

template <class Index>
KernelStatus forward_typed(std::span<const TableView> tables, const BagBatch& batch, std::span<float> out) {
  const std::vector<std::int64_t> d_offsets = dim_offsets(tables);
  const std::vector<WorkItem> items = split_work(batch.offsets, max_threads() * kItemsPerThread);
  const auto n_items = static_cast<std::int64_t>(items.size());
  std::vector<std::int64_t> bad(items.size(), -1);
  EMBSHARD_OMP(omp parallel for schedule(dynamic, 1))
  for (std::int64_t i = 0; i < n_items; ++i) {
    bad[i] = run_forward_item<Index>(tables, batch, d_offsets, out.data(), items[i]);
  }
  for (const std::int64_t position : bad) {  // items are in position order: the first is smallest
    if (position >= 0) return {KernelError::kBadIndex, position};
  }
  return {};
}

// ---- backward ---------------------------------------------------------------------------------

/** First bad index position over every bag, or -1 (parallel, deterministic). */
template <class Index>
std::int64_t find_first_bad_index(std::span<const TableView> tables, const BagBatch& batch) {
  const std::vector<WorkItem> items = split_work(batch.offsets, max_threads() * kItemsPerThread);
  const auto n_items = static_cast<std::int64_t>(items.size());
  const auto* indices = static_cast<const Index*>(batch.indices);
  std::vector<std::int64_t> bad(items.size(), -1);
  EMBSHARD_OMP(omp parallel for schedule(dynamic, 1))
  for (std::int64_t i = 0; i < n_items; ++i) {
    for (std::int64_t k = items[i].bag_begin; k < items[i].bag_end && bad[i] < 0; ++k) {
      const auto rows = static_cast<std::uint64_t>(tables[k / batch.batch_size].rows);
      for (std::int64_t p = batch.offsets[k]; p < batch.offsets[k + 1]; ++p) {
        if (static_cast<std::uint64_t>(indices[p]) >= rows) {
          bad[i] = p;
          break;
        }
      }
    }
  }
  for (const std::int64_t position : bad) {
    if (position >= 0) return position;
  }
  return -1;
}

/** One table's lookups as (row, bag) pairs sorted by row, bags ascending within a row. */
struct SortedLookups {
  std::vector<std::int64_t> rows;
  std::vector<std::int64_t> bags;
  std::vector<std::int64_t> segment_starts;      // unique rows: [starts[s], starts[s+1])
  std::vector<std::int64_t> rows_tmp, bags_tmp;  // radix sort buffers
};

/**
 * The calling thread's sort buffers, kept between calls (grow-only, 40 bytes per lookup of the
 * largest table seen): fresh multi-MB buffers each call would cost more in page faults than
 * the sort itself.
 */
SortedLookups& thread_sort_buffers() {
  thread_local SortedLookups buffers;
  return buffers;
}

constexpr int kDigitBits = 11;
constexpr std::size_t kDigitValues = std::size_t{1} << kDigitBits;
constexpr std::int64_t kInsertionSortMax = 32;  // buckets this small skip the counting sort

/** Stable sort of [begin, end) of (src_rows, src_bags) by row, small ranges only. */
void insertion_sort_pairs(std::int64_t* rows, std::int64_t* bags, std::int64_t begin, std::int64_t end) {
  for (std::int64_t i = begin + 1; i < end; ++i) {
    const std::int64_t row = rows[i], bag = bags[i];
    std::int64_t j = i;
    for (; j > begin && rows[j - 1] > row; --j) {
      rows[j] = rows[j - 1];
      bags[j] = bags[j - 1];
    }
    rows[j] = row;
    bags[j] = bag;
  }
}

/**
 * Sorts one bucket [begin, end), which the scatter left in rows_tmp/bags_tmp, by its low
 * `low_bits` row bits (stable LSD counting sort) into s.rows/s.bags. `counts`: kDigitValues.
 */
void sort_bucket(SortedLookups& s, std::int64_t begin, std::int64_t end, int low_bits,
                 std::vector<std::int64_t>& counts) {
  std::int64_t* src_rows = s.rows_tmp.data();
  std::int64_t* src_bags = s.bags_tmp.data();
  std::int64_t* dst_rows = s.rows.data();
  std::int64_t* dst_bags = s.bags.data();
  if (end - begin <= kInsertionSortMax) {
    insertion_sort_pairs(src_rows, src_bags, begin, end);
    low_bits = 0;
  }
  for (int shift = 0; shift < low_bits; shift += kDigitBits) {
    const int digit_bits = std::min(kDigitBits, low_bits - shift);
    const std::int64_t mask = (std::int64_t{1} << digit_bits) - 1;
    std::fill(counts.begin(), counts.begin() + (mask + 1), 0);
    for (std::int64_t i = begin; i < end; ++i) ++counts[(src_rows[i] >> shift) & mask];
    std::int64_t sum = begin;
    for (std::int64_t d = 0; d <= mask; ++d) sum += std::exchange(counts[d], sum);
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t dst = counts[(src_rows[i] >> shift) & mask]++;
      dst_rows[dst] = src_rows[i];
      dst_bags[dst] = src_bags[i];
    }
    std::swap(src_rows, dst_rows);
    std::swap(src_bags, dst_bags);
  }
  if (src_rows != s.rows.data()) {  // the sorted bucket sits in the tmp buffers
    std::copy(src_rows + begin, src_rows + end, s.rows.data() + begin);
    std::copy(src_bags + begin, src_bags + end, s.bags.data() + begin);
  }
}

/** Distinct rows in the sorted range [begin, end). */
std::int64_t count_segments(const std::vector<std::int64_t>& rows, std::int64_t begin, std::int64_t end) {
  std::int64_t segments = 0;
  for (std::int64_t i = begin; i < end; ++i) segments += i == begin || rows[i] != rows[i - 1];
  return segments;
}

/**
 * Pass 1 of the parallel sort: the top bits of the row pick a bucket. Each chunk of bags counts
 * its bucket sizes, then scatters its (row, bag) pairs to rows_tmp/bags_tmp at bucket-major,
 * chunk-minor positions: stable (position order kept within a bucket), so the result does not
 * depend on the number of threads. Returns the bucket starts (n_buckets + 1 entries).
 */
template <class Index>
std::vector<std::int64_t> scatter_to_buckets(SortedLookups& s, const BagBatch& batch, const std::int64_t* offsets,
                                             int bucket_shift, std::size_t n_buckets) {
  const std::int64_t batch_size = batch.batch_size;
  const auto* indices = static_cast<const Index*>(batch.indices);
  const std::vector<WorkItem> chunks = split_work({offsets, static_cast<std::size_t>(batch_size) + 1}, max_threads());
  const auto n_chunks = static_cast<std::int64_t>(chunks.size());
  std::vector<std::int64_t> counts(chunks.size() * n_buckets, 0);  // [chunk][bucket]
  const auto bucket_of = [&](std::int64_t p) {
    return static_cast<std::size_t>(static_cast<std::int64_t>(indices[p]) >> bucket_shift);
  };
  EMBSHARD_OMP(omp parallel for schedule(static, 1))
  for (std::int64_t c = 0; c < n_chunks; ++c) {
    std::int64_t* chunk_counts = counts.data() + c * static_cast<std::int64_t>(n_buckets);
    for (std::int64_t p = offsets[chunks[c].bag_begin]; p < offsets[chunks[c].bag_end]; ++p) {
      ++chunk_counts[bucket_of(p)];
    }
  }
  std::vector<std::int64_t> bucket_starts(n_buckets + 1);
  std::int64_t sum = 0;
  for (std::size_t bucket = 0; bucket < n_buckets; ++bucket) {
    bucket_starts[bucket] = sum;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      sum += std::exchange(counts[c * n_buckets + bucket], sum);
    }
  }
  bucket_starts[n_buckets] = sum;
  EMBSHARD_OMP(omp parallel for schedule(static, 1))
  for (std::int64_t c = 0; c < n_chunks; ++c) {
    std::int64_t* chunk_next = counts.data() + c * static_cast<std::int64_t>(n_buckets);
    for (std::int64_t b = chunks[c].bag_begin; b < chunks[c].bag_end; ++b) {
      for (std::int64_t p = offsets[b]; p < offsets[b + 1]; ++p) {
        const std::int64_t dst = chunk_next[bucket_of(p)]++;
        s.rows_tmp[dst] = static_cast<std::int64_t>(indices[p]);
        s.bags_tmp[dst] = b;
      }
    }
  }
  return bucket_starts;
}

/**
 * One table's lookups sorted by row (bags ascending within a row) with their segments, in
 * parallel: scatter by the row's top bits into buckets (disjoint rows), then each bucket is
 * sorted by the remaining bits and cut into segments by one thread. Deterministic.
 */
template <class Index>
const SortedLookups& sort_table_lookups(const TableView& table, const BagBatch& batch, std::int64_t t) {
  const std::int64_t batch_size = batch.batch_size;
  const std::int64_t* offsets = batch.offsets.data() + t * batch_size;
  const auto n = static_cast<std::size_t>(offsets[batch_size] - offsets[0]);
  SortedLookups& s = thread_sort_buffers();
  s.rows.resize(n);
  s.bags.resize(n);
  s.rows_tmp.resize(n);
  s.bags_tmp.resize(n);
  s.segment_starts.clear();
  if (n == 0) {
    s.segment_starts.push_back(0);
    return s;
  }
  // Offsets relative to this table's first lookup, so positions index the sort buffers.
  std::vector<std::int64_t> local_offsets(offsets, offsets + batch_size + 1);
  const std::int64_t base = offsets[0];
  for (std::int64_t& o : local_offsets) o -= base;
  BagBatch local = batch;
  local.indices = batch.index_type == IndexType::kI32
                      ? static_cast<const void*>(static_cast<const std::int32_t*>(batch.indices) + base)
                      : static_cast<const void*>(static_cast<const std::int64_t*>(batch.indices) + base);

  const int key_bits = std::bit_width(static_cast<std::uint64_t>(table.rows - 1));
  const int bucket_bits = std::min(key_bits, kDigitBits);
  const int low_bits = key_bits - bucket_bits;
  const std::size_t n_buckets = std::size_t{1} << bucket_bits;
  const std::vector<std::int64_t> bucket_starts =
      scatter_to_buckets<Index>(s, local, local_offsets.data(), low_bits, n_buckets);

  const auto n_bucket_count = static_cast<std::int64_t>(n_buckets);
  std::vector<std::int64_t> bucket_segments(n_buckets + 1, 0);
  EMBSHARD_OMP(omp parallel) {
    std::vector<std::int64_t> counts(kDigitValues);
    EMBSHARD_OMP(omp for schedule(dynamic, 16))
    for (std::int64_t bucket = 0; bucket < n_bucket_count; ++bucket) {
      const std::int64_t begin = bucket_starts[bucket], end = bucket_starts[bucket + 1];
      sort_bucket(s, begin, end, low_bits, counts);
      bucket_segments[bucket] = count_segments(s.rows, begin, end);
    }
  }
  std::int64_t total_segments = 0;  // exclusive prefix: each bucket's first segment number
  for (std::int64_t& c : bucket_segments) total_segments += std::exchange(c, total_segments);
  s.segment_starts.resize(static_cast<std::size_t>(bucket_segments[n_buckets]) + 1);
  EMBSHARD_OMP(omp parallel for schedule(dynamic, 16))
  for (std::int64_t bucket = 0; bucket < n_bucket_count; ++bucket) {
    std::int64_t next = bucket_segments[bucket];
    const std::int64_t begin = bucket_starts[bucket], end = bucket_starts[bucket + 1];
    for (std::int64_t i = begin; i < end; ++i) {
      if (i == begin || s.rows[i] != s.rows[i - 1]) s.segment_starts[next++] = i;
    }
  }
  s.segment_starts.back() = static_cast<std::int64_t>(n);
  return s;
}

template <class W>
void update_row(W* __restrict row, float* momentum, const float* __restrict g, std::int64_t dim,
                const OptimizerConfig& optimizer) {
  float scale = optimizer.learning_rate;
  if (optimizer.kind == OptimizerKind::kRowwiseAdagrad) {
    float sum_squares = 0.0f;
    for (std::int64_t d = 0; d < dim; ++d) sum_squares += g[d] * g[d];
    const float m = *momentum + sum_squares / static_cast<float>(dim);
    *momentum = m;
    scale = optimizer.learning_rate / (std::sqrt(m) + optimizer.eps);
  }
  for (std::int64_t d = 0; d < dim; ++d) {
    const float w = load_weight(row, d) - scale * g[d];
    if constexpr (std::is_same_v<W, float>) {
      row[d] = w;
    } else {
      row[d] = float_to_half(w);
    }
  }
}

/**
 * g = Σ of the gradient rows of one unique row's bags. Blocks of kSumBlock rows are summed in
 * float, the block sums in double: a row hit thousands of times keeps ~1e-7 relative accuracy.
 */
void gather_gradient(const SortedLookups& s, std::int64_t seg, const float* grad_out, std::int64_t total_dim,
                     std::int64_t dim, float* __restrict block, double* __restrict total, float* __restrict g) {
  constexpr std::int64_t kSumBlock = 16;
  const std::int64_t begin = s.segment_starts[seg], end = s.segment_starts[seg + 1];
  for (std::int64_t d = 0; d < dim; ++d) total[d] = 0.0;
  for (std::int64_t i0 = begin; i0 < end; i0 += kSumBlock) {
    for (std::int64_t d = 0; d < dim; ++d) block[d] = 0.0f;
    for (std::int64_t i = i0; i < std::min(end, i0 + kSumBlock); ++i) {
      const float* __restrict grad_row = grad_out + s.bags[i] * total_dim;
      for (std::int64_t d = 0; d < dim; ++d) block[d] += grad_row[d];
    }
    for (std::int64_t d = 0; d < dim; ++d) total[d] += block[d];
  }
  for (std::int64_t d = 0; d < dim; ++d) g[d] = static_cast<float>(total[d]);
}

/** Scratch of one thread for the backward: dim floats, dim doubles, dim floats. */
struct GradScratch {
  std::vector<float> block, g;
  std::vector<double> total;
  explicit GradScratch(std::int64_t dim) : block(static_cast<std::size_t>(dim)), g(block.size()), total(block.size()) {}
};

/** Gathers and applies the gradient of unique rows [s0, s1) of one table. */
template <class W>
void update_segments(const TableView& table, const SortedLookups& s, const float* grad_out, std::int64_t total_dim,
                     std::int64_t s0, std::int64_t s1, const OptimizerConfig& optimizer, GradScratch& scratch) {
  const std::int64_t dim = table.dim;
  W* weights = static_cast<W*>(table.weights);
  const auto n_segments = static_cast<std::int64_t>(s.segment_starts.size()) - 1;
  const std::int64_t n_lookups = s.segment_starts.back();
  const std::int64_t row_bytes = dim * static_cast<std::int64_t>(sizeof(W));
  for (std::int64_t seg = s0; seg < s1; ++seg) {
    // Prefetch the weight row (and momentum) and the first gradient rows of a later segment.
    if (const std::int64_t ahead = seg + kPrefetchDistance; ahead < n_segments) {
      const std::int64_t first = s.segment_starts[ahead];
      const std::int64_t ahead_row = s.rows[first];
      prefetch_bytes(weights + ahead_row * dim, row_bytes);
      if (table.momentum != nullptr) __builtin_prefetch(table.momentum + ahead_row, 1, 3);
      for (std::int64_t i = first; i < std::min(n_lookups, first + 2); ++i) {
        prefetch_bytes(grad_out + s.bags[i] * total_dim, dim * 4);
      }
    }
    gather_gradient(s, seg, grad_out, total_dim, dim, scratch.block.data(), scratch.total.data(), scratch.g.data());
    const std::int64_t row = s.rows[s.segment_starts[seg]];
    float* momentum = table.momentum != nullptr ? table.momentum + row : nullptr;
    update_row(weights + row * dim, momentum, scratch.g.data(), dim, optimizer);
  }
}

template <class Index>
void backward_table(const TableView& table, const BagBatch& batch, std::int64_t t, const float* grad_out,
                    std::int64_t total_dim, const OptimizerConfig& optimizer) {
  const SortedLookups& s = sort_table_lookups<Index>(table, batch, t);
  const auto n_segments = static_cast<std::int64_t>(s.segment_starts.size()) - 1;
  const std::int64_t n_blocks = (n_segments + kRowsPerBlock - 1) / kRowsPerBlock;
  EMBSHARD_OMP(omp parallel) {
    GradScratch scratch(table.dim);
    EMBSHARD_OMP(omp for schedule(dynamic, 4))
    for (std::int64_t block = 0; block < n_blocks; ++block) {
      const std::int64_t s0 = block * kRowsPerBlock;
      const std::int64_t s1 = std::min(n_segments, s0 + kRowsPerBlock);
      if (table.dtype == WeightDtype::kF32) {
        update_segments<float>(table, s, grad_out, total_dim, s0, s1, optimizer, scratch);
      } else {
        update_segments<std::uint16_t>(table, s, grad_out, total_dim, s0, s1, optimizer, scratch);
      }
    }
  }
}

template <class Index>
KernelStatus backward_typed(std::span<const TableView> tables, const BagBatch& batch, std::span<const float> grad_out,
                            const OptimizerConfig& optimizer) {
  if (const std::int64_t bad = find_first_bad_index<Index>(tables, batch); bad >= 0) {
    return {KernelError::kBadIndex, bad};
  }
  const std::vector<std::int64_t> d_offsets = dim_offsets(tables);
  for (std::size_t t = 0; t < tables.size(); ++t) {
    backward_table<Index>(tables[t], batch, static_cast<std::int64_t>(t), grad_out.data() + d_offsets[t],
                          d_offsets.back(), optimizer);
  }
  return {};
}

}  // namespace

KernelStatus forward_cpu(std::span<const TableView> tables, const BagBatch& batch, std::span<float> out) {
  if (batch.index_type == IndexType::kI32) return forward_typed<std::int32_t>(tables, batch, out);
  return forward_typed<std::int64_t>(tables, batch, out);
}

KernelStatus backward_cpu(std::span<const TableView> tables, const BagBatch& batch, std::span<const float> grad_out,
                          const OptimizerConfig& optimizer) {
  if (batch.index_type == IndexType::kI32) {
    return backward_typed<std::int32_t>(tables, batch, grad_out, optimizer);
  }
  return backward_typed<std::int64_t>(tables, batch, grad_out, optimizer);
}

}  // namespace embshard::kernels::detail
