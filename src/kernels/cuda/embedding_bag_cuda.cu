// The CUDA implementation of the embedding-bag operator (semantics: embedding_bag.h; the class:
// cuda_embedding_bag.h).
// Every warp-level kernel gives each lane 4 columns of a 128-column chunk of a row: columns
// 4·lane .. 4·lane+3 (one float4 / 4×half load) when the row allows vector access, else columns
// lane, lane+32, lane+64, lane+96 (scalar loads). Out-of-range columns read as 0, are not written.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <vector>

#include "embshard/kernels/cuda_embedding_bag.h"
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/embedding_bag_internal.h"

namespace embshard::kernels {
namespace {

using cuda::check_cuda;
using cuda::DeviceBuffer;
using cuda::MappedHostBuffer;

constexpr int kWarpSize = 32;
constexpr int kThreadsPerBlock = 256;
constexpr int kColumnsPerChunk = 4 * kWarpSize;
constexpr int kGradientBlock = 16;  // gradient rows summed in fp32 before the fp64 total
// A distinct row with more lookups than this (a hot row of a skewed table) has its gradient summed
// in pieces of at most this many lookups, one warp each, before its own warp adds the pieces up in
// order: one warp looping over a hot row's hundreds of thousands of lookups held the whole
// backward (84 ms of an 85 ms step on an H200, docs/benchmarks.md "The GPU").
constexpr int kLongSegment = 128;
constexpr unsigned kFullMask = 0xffffffffu;

/** One table as the kernels see it. */
struct DeviceTable {
  void* weights;       // float or __half, rows [0, hbm_rows) × dim, device memory
  void* cold_weights;  // rows [hbm_rows, rows) × dim, mapped host memory (device pointer) or null
  float* momentum;     // rows floats or null (always device memory)
  long long rows;
  long long hbm_rows;  // rows below it are read from `weights`, the others from `cold_weights`
  long long d_offset;  // first output column
  int dim;
  bool is_f16;
  // One lane layout for weights and output / grad_out alike: vector when dim, D_offsets[t] and
  // total_dim are all multiples of 4 (every row start then 16-byte aligned for fp32, 8 for fp16).
  bool vector_access;
};

struct Quad {
  float v[4];
};

__device__ inline int lane_column(int col0, int lane, int j, bool vector_access) {
  return vector_access ? col0 + 4 * lane + j : col0 + lane + kWarpSize * j;
}

__device__ inline Quad load_quad(const float* row, int col0, int lane, int dim, bool vector_access) {
  Quad q{{0.0f, 0.0f, 0.0f, 0.0f}};
  if (vector_access) {
    const int c = col0 + 4 * lane;
    if (c < dim) {
      const float4 x = *reinterpret_cast<const float4*>(row + c);
      q = Quad{{x.x, x.y, x.z, x.w}};
    }
    return q;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int c = lane_column(col0, lane, j, false);
    if (c < dim) q.v[j] = row[c];
  }
  return q;
}

__device__ inline Quad load_quad(const __half* row, int col0, int lane, int dim, bool vector_access) {
  Quad q{{0.0f, 0.0f, 0.0f, 0.0f}};
  if (vector_access) {
    const int c = col0 + 4 * lane;
    if (c < dim) {
      const uint2 raw = *reinterpret_cast<const uint2*>(row + c);
      __half2 lo, hi;
      std::memcpy(&lo, &raw.x, sizeof lo);
      std::memcpy(&hi, &raw.y, sizeof hi);
      const float2 a = __half22float2(lo), b = __half22float2(hi);
      q = Quad{{a.x, a.y, b.x, b.y}};
    }
    return q;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int c = lane_column(col0, lane, j, false);
    if (c < dim) q.v[j] = __half2float(row[c]);
  }
  return q;
}

__device__ inline void store_quad(float* row, int col0, int lane, int dim, bool vector_access, const Quad& q) {
  if (vector_access) {
    const int c = col0 + 4 * lane;
    if (c < dim) *reinterpret_cast<float4*>(row + c) = make_float4(q.v[0], q.v[1], q.v[2], q.v[3]);
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int c = lane_column(col0, lane, j, false);
    if (c < dim) row[c] = q.v[j];
  }
}

/** Rounds to nearest-even binary16 (the header's float_to_half). */
__device__ inline void store_quad(__half* row, int col0, int lane, int dim, bool vector_access, const Quad& q) {
  if (vector_access) {
    const int c = col0 + 4 * lane;
    if (c < dim) {
      const __half2 lo = __floats2half2_rn(q.v[0], q.v[1]), hi = __floats2half2_rn(q.v[2], q.v[3]);
      uint2 raw;
      std::memcpy(&raw.x, &lo, sizeof lo);
      std::memcpy(&raw.y, &hi, sizeof hi);
      *reinterpret_cast<uint2*>(row + c) = raw;
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int c = lane_column(col0, lane, j, false);
    if (c < dim) row[c] = __float2half_rn(q.v[j]);
  }
}

/** The tier holding `row` and the row's first element within it (device or mapped host memory). */
__device__ inline void* weight_base(const DeviceTable& table, long long row, long long* first) {
  if (row < table.hbm_rows) {
    *first = row * table.dim;
    return table.weights;
  }
  *first = (row - table.hbm_rows) * table.dim;
  return table.cold_weights;
}

__device__ inline Quad load_weight_quad(const DeviceTable& table, long long row, int col0, int lane) {
  long long first = 0;
  const void* base = weight_base(table, row, &first);
  if (table.is_f16) {
    return load_quad(static_cast<const __half*>(base) + first, col0, lane, table.dim, table.vector_access);
  }
  return load_quad(static_cast<const float*>(base) + first, col0, lane, table.dim, table.vector_access);
}

__device__ inline void store_weight_quad(const DeviceTable& table, long long row, int col0, int lane, const Quad& q) {
  long long first = 0;
  void* base = weight_base(table, row, &first);
  if (table.is_f16) {
    store_quad(static_cast<__half*>(base) + first, col0, lane, table.dim, table.vector_access, q);
  } else {
    store_quad(static_cast<float*>(base) + first, col0, lane, table.dim, table.vector_access, q);
  }
}

__device__ inline long long global_warp() {
  return (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
}

__device__ inline long long warps_in_grid() { return static_cast<long long>(gridDim.x) * blockDim.x / kWarpSize; }

/** Warp sum, reduced towards lane 0 and broadcast from it (one value for every lane). */
__device__ inline float warp_sum(float x) {
  for (int delta = kWarpSize / 2; delta > 0; delta /= 2) x += __shfl_down_sync(kFullMask, x, delta);
  return __shfl_sync(kFullMask, x, 0);
}

// ---- index check -------------------------------------------------------------------------------

/** One warp per bag; the smallest position whose index is outside [0, rows_t) → *first_bad. */
template <class Index>
__global__ void find_bad_index_kernel(const DeviceTable* tables, const long long* offsets, const Index* indices,
                                      long long batch_size, long long n_bags, unsigned long long* first_bad) {
  const int lane = threadIdx.x % kWarpSize;
  for (long long k = global_warp(); k < n_bags; k += warps_in_grid()) {
    const long long rows = tables[k / batch_size].rows;
    for (long long p = offsets[k] + lane; p < offsets[k + 1]; p += kWarpSize) {
      const auto row = static_cast<long long>(indices[p]);
      if (row < 0 || row >= rows) {
        atomicMin(first_bad, static_cast<unsigned long long>(p));
        break;
      }
    }
  }
}

// ---- forward -----------------------------------------------------------------------------------

/** Sums one 128-column chunk of bag [begin, end) for this lane; bad indices are skipped. */
template <class Index>
__device__ Quad pool_chunk(const DeviceTable& table, const Index* indices, long long begin, long long end, int col0,
                           int lane) {
  Quad acc{{0.0f, 0.0f, 0.0f, 0.0f}};
  for (long long p0 = begin; p0 < end; p0 += kWarpSize) {
    long long my_row = -1;  // cooperative index load: lane j holds lookup p0 + j
    if (p0 + lane < end) {
      my_row = static_cast<long long>(indices[p0 + lane]);
      if (my_row >= table.rows) my_row = -1;
    }
    const int count = static_cast<int>(min(static_cast<long long>(kWarpSize), end - p0));
#pragma unroll 4
    for (int j = 0; j < count; ++j) {
      const long long row = __shfl_sync(kFullMask, my_row, j);
      if (row < 0) continue;
      const Quad w = load_weight_quad(table, row, col0, lane);
#pragma unroll
      for (int e = 0; e < 4; ++e) acc.v[e] += w.v[e];
    }
  }
  return acc;
}

/** One warp per (table, bag): out[b][D_offsets[t] + d] = Σ rows (fp32). */
template <class Index>
__global__ void forward_kernel(const DeviceTable* tables, const long long* offsets, const Index* indices,
                               long long batch_size, long long n_bags, long long total_dim, float* out) {
  const int lane = threadIdx.x % kWarpSize;
  for (long long k = global_warp(); k < n_bags; k += warps_in_grid()) {
    const long long t = k / batch_size;
    const long long b = k - t * batch_size;
    const DeviceTable table = tables[t];
    float* out_row = out + b * total_dim + table.d_offset;
    for (int col0 = 0; col0 < table.dim; col0 += kColumnsPerChunk) {
      const Quad sum = pool_chunk(table, indices, offsets[k], offsets[k + 1], col0, lane);
      store_quad(out_row, col0, lane, table.dim, table.vector_access, sum);
    }
  }
}

// ---- backward ----------------------------------------------------------------------------------

/** Table t's lookups as (row, bag) pairs in position order; one warp per bag. */
template <class Index>
__global__ void fill_pairs_kernel(const long long* table_offsets, const Index* indices, long long batch_size,
                                  unsigned long long* rows, long long* bags) {
  const int lane = threadIdx.x % kWarpSize;
  const long long base = table_offsets[0];
  for (long long b = global_warp(); b < batch_size; b += warps_in_grid()) {
    for (long long p = table_offsets[b] + lane; p < table_offsets[b + 1]; p += kWarpSize) {
      rows[p - base] = static_cast<unsigned long long>(indices[p]);  // checked: 0 ≤ index < rows
      bags[p - base] = b;
    }
  }
}

/** Σ of the gradient rows of `count` sorted bags, for this lane's columns of one chunk. */
__device__ Quad gradient_chunk(const long long* bags, int begin, int count, const float* grad, long long total_dim,
                               int dim, bool vector_access, int col0, int lane) {
  double total[4] = {0.0, 0.0, 0.0, 0.0};
  for (int i0 = 0; i0 < count; i0 += kGradientBlock) {
    float block[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const int i1 = min(count, i0 + kGradientBlock);
    for (int i = i0; i < i1; ++i) {
      const Quad g = load_quad(grad + bags[begin + i] * total_dim, col0, lane, dim, vector_access);
#pragma unroll
      for (int e = 0; e < 4; ++e) block[e] += g.v[e];
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) total[e] += block[e];
  }
  Quad g;
#pragma unroll
  for (int e = 0; e < 4; ++e) g.v[e] = static_cast<float>(total[e]);
  return g;
}

/** Pieces of each segment: ⌈count / kLongSegment⌉ for a long one, else 0; 0 past the segments. */
__global__ void count_pieces_kernel(const int* counts, const int* num_segments, int n, int* pieces) {
  const int segments = *num_segments;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int count = i < segments ? counts[i] : 0;
    pieces[i] = count > kLongSegment ? (count + kLongSegment - 1) / kLongSegment : 0;
  }
}

struct PieceArgs {
  const int* starts;
  const int* counts;
  const int* num_segments;
  const int* pieces;         // per segment (count_pieces_kernel)
  const int* piece_offsets;  // exclusive sum of pieces: a segment's first piece
  const long long* sorted_bags;
  const float* grad;  // grad_out + D_offsets[t]
  long long total_dim;
  long long max_pieces;  // a bound on the pieces of all segments (2 · lookups / kLongSegment + 1)
  int dim;
  bool vector_access;
  float* sums;  // piece p's gradient sum: dim floats from p · dim
};

/** One warp per piece of a long segment: the sum of its ≤ kLongSegment gradient rows. */
__global__ void piece_sums_kernel(PieceArgs a) {
  const int lane = threadIdx.x % kWarpSize;
  const int segments = *a.num_segments;
  for (long long p = global_warp(); p < a.max_pieces; p += warps_in_grid()) {
    int lo = 0, hi = segments - 1;  // the last segment whose first piece is at or before p
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (a.piece_offsets[mid] <= p)
        lo = mid;
      else
        hi = mid - 1;
    }
    const long long j = p - a.piece_offsets[lo];
    if (j >= a.pieces[lo]) continue;  // past the last piece (the whole warp alike)
    const int begin = a.starts[lo] + static_cast<int>(j) * kLongSegment;
    const int count = min(kLongSegment, a.starts[lo] + a.counts[lo] - begin);
    for (int col0 = 0; col0 < a.dim; col0 += kColumnsPerChunk) {
      const Quad g =
          gradient_chunk(a.sorted_bags, begin, count, a.grad, a.total_dim, a.dim, a.vector_access, col0, lane);
      store_quad(a.sums + p * a.dim, col0, lane, a.dim, a.vector_access, g);
    }
  }
}

/** A long segment's gradient: its pieces' sums added in piece order (deterministic), in fp64. */
__device__ Quad pieces_total(const float* sums, int pieces, int dim, bool vector_access, int col0, int lane) {
  double total[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll 8
  for (int i = 0; i < pieces; ++i) {
    const Quad g = load_quad(sums + static_cast<long long>(i) * dim, col0, lane, dim, vector_access);
#pragma unroll
    for (int e = 0; e < 4; ++e) total[e] += g.v[e];
  }
  Quad q;
#pragma unroll
  for (int e = 0; e < 4; ++e) q.v[e] = static_cast<float>(total[e]);
  return q;
}

struct UpdateArgs {
  DeviceTable table;
  const unsigned long long* unique_rows;
  const int* starts;
  const int* counts;
  const int* num_segments;
  const int* pieces;
  const int* piece_offsets;
  const float* piece_sums;
  const long long* sorted_bags;
  const float* grad;  // grad_out + D_offsets[t]
  long long total_dim;
  OptimizerConfig optimizer;
};

/** One warp per distinct row: sum its gradient (a long row's from its pieces), apply SGD or row-wise Adagrad once. */
__global__ void update_rows_kernel(UpdateArgs a) {
  const int lane = threadIdx.x % kWarpSize;
  const DeviceTable& table = a.table;
  const int dim = table.dim;
  const long long n_segments = *a.num_segments;
  for (long long s = global_warp(); s < n_segments; s += warps_in_grid()) {
    const auto row = static_cast<long long>(a.unique_rows[s]);
    const int begin = a.starts[s], count = a.counts[s];
    const auto gradient = [&](int col0) {
      if (count > kLongSegment) {
        return pieces_total(a.piece_sums + static_cast<long long>(a.piece_offsets[s]) * dim, a.pieces[s], dim,
                            table.vector_access, col0, lane);
      }
      return gradient_chunk(a.sorted_bags, begin, count, a.grad, a.total_dim, dim, table.vector_access, col0, lane);
    };
    float scale = a.optimizer.learning_rate;
    if (a.optimizer.kind == OptimizerKind::kRowwiseAdagrad) {
      float sum_squares = 0.0f;  // pass 1; pass 2 recomputes the same (deterministic) gradient
      for (int col0 = 0; col0 < dim; col0 += kColumnsPerChunk) {
        const Quad g = gradient(col0);
        for (int e = 0; e < 4; ++e) sum_squares += g.v[e] * g.v[e];
      }
      const float m = table.momentum[row] + warp_sum(sum_squares) / static_cast<float>(dim);
      __syncwarp();
      if (lane == 0) table.momentum[row] = m;
      scale = a.optimizer.learning_rate / (sqrtf(m) + a.optimizer.eps);
    }
    for (int col0 = 0; col0 < dim; col0 += kColumnsPerChunk) {
      const Quad g = gradient(col0);
      Quad w = load_weight_quad(table, row, col0, lane);
      for (int e = 0; e < 4; ++e) w.v[e] -= scale * g.v[e];
      store_weight_quad(table, row, col0, lane, w);
    }
  }
}

// ---- host side ---------------------------------------------------------------------------------

unsigned grid_for_warps(long long warps) {
  const long long blocks = (warps * kWarpSize + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(std::clamp<long long>(blocks, 1, 1 << 20));
}

void require_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky-free error state
    EMBSHARD_THROW("no CUDA device visible (", cudaGetErrorString(status), ")");
  }
}

template <class T>
DeviceBuffer<T> upload(const T* host, std::size_t count, cudaStream_t stream) {
  DeviceBuffer<T> buffer(count);
  if (count > 0) {
    check_cuda(cudaMemcpyAsync(buffer.data(), host, count * sizeof(T), cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync (upload)");
  }
  return buffer;
}

std::int64_t table_bytes(const TableView& table) { return table.rows * table.dim * weight_bytes(table.dtype); }

}  // namespace

namespace cuda {

/** Everything one CudaEmbeddingBag keeps on the device; the sort scratch fits the largest table. */
struct DeviceState {
  std::vector<TableView> shapes;                     // rows/dim/dtype/momentum presence of the uploaded tables
  std::vector<DeviceBuffer<unsigned char>> weights;  // rows [0, hbm_rows) of each table
  std::vector<MappedHostBuffer> cold_weights;        // rows [hbm_rows, rows), mapped host memory
  std::vector<DeviceBuffer<float>> momentum;
  std::vector<DeviceTable> host_tables;
  DeviceBuffer<DeviceTable> tables;
  std::vector<std::int64_t> host_offsets;
  DeviceBuffer<long long> offsets;
  DeviceBuffer<unsigned char> indices;
  IndexType index_type = IndexType::kI64;
  std::int64_t batch_size = 0, total_dim = 0, n_bags = 0, max_table_lookups = 0;
  DeviceBuffer<float> out, grad;
  DeviceBuffer<unsigned long long> rows, sorted_rows, unique_rows, first_bad;
  DeviceBuffer<long long> bags, sorted_bags;
  DeviceBuffer<int> counts, starts, num_segments, pieces, piece_offsets;
  DeviceBuffer<float> piece_sums;  // the long segments' piece sums of the largest table
  DeviceBuffer<unsigned char> temp;
  KernelStatus index_status;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;

  DeviceState() {
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaEventCreate(&start), "cudaEventCreate");
    check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~DeviceState() {
    if (stop != nullptr) cudaEventDestroy(stop);
    if (start != nullptr) cudaEventDestroy(start);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  template <class Index>
  const Index* indices_as() const {
    return reinterpret_cast<const Index*>(indices.data());
  }
  std::int64_t table_lookups(std::size_t t) const {
    return host_offsets[(t + 1) * batch_size] - host_offsets[t * batch_size];
  }
};

}  // namespace cuda

struct CudaEmbeddingBag::State : cuda::DeviceState {};

namespace {

using cuda::DeviceState;

/** Rows of table t in device memory: hbm_rows[t] when in [0, rows), else all (header). */
std::int64_t device_rows(const TableView& view, std::span<const std::int64_t> hbm_rows, std::size_t t) {
  if (hbm_rows.empty() || hbm_rows[t] < 0 || hbm_rows[t] >= view.rows) return view.rows;
  return hbm_rows[t];
}

void upload_tables(DeviceState& s, std::span<const TableView> tables, std::span<const std::int64_t> hbm_rows) {
  const std::vector<std::int64_t> d_offsets = detail::dim_offsets(tables);
  s.total_dim = d_offsets.back();
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableView& view = tables[t];
    const auto bytes = static_cast<std::size_t>(table_bytes(view));
    const std::int64_t hot = view.rows > 0 ? device_rows(view, hbm_rows, t) : 0;
    const auto hot_bytes = static_cast<std::size_t>(hot * view.dim * weight_bytes(view.dtype));
    s.weights.push_back(upload(static_cast<const unsigned char*>(view.weights), hot_bytes, s.stream));
    s.cold_weights.emplace_back(view.rows > 0 ? bytes - hot_bytes : 0);
    if (s.cold_weights.back().bytes() > 0) {  // pinned host memory: filled by the CPU directly
      std::memcpy(s.cold_weights.back().host(), static_cast<const unsigned char*>(view.weights) + hot_bytes,
                  bytes - hot_bytes);
    }
    const bool has_momentum = view.momentum != nullptr && view.rows > 0;
    s.momentum.push_back(has_momentum ? upload(view.momentum, static_cast<std::size_t>(view.rows), s.stream)
                                      : DeviceBuffer<float>());
    const bool vector_access = s.total_dim % 4 == 0 && d_offsets[t] % 4 == 0 && view.dim % 4 == 0;
    s.host_tables.push_back({s.weights.back().data(), s.cold_weights.back().device(), s.momentum.back().data(),
                             view.rows, hot, d_offsets[t], view.dim, view.dtype == WeightDtype::kF16, vector_access});
    TableView shape = view;
    shape.weights = nullptr;
    s.shapes.push_back(shape);
  }
  s.tables = upload(s.host_tables.data(), s.host_tables.size(), s.stream);
}

void upload_batch(DeviceState& s, const BagBatch& batch) {
  s.batch_size = batch.batch_size;
  s.n_bags = static_cast<std::int64_t>(batch.offsets.size()) - 1;
  s.host_offsets.assign(batch.offsets.begin(), batch.offsets.end());
  s.offsets = upload(reinterpret_cast<const long long*>(s.host_offsets.data()), s.host_offsets.size(), s.stream);
  s.index_type = batch.index_type;
  const std::size_t index_bytes = batch.index_type == IndexType::kI32 ? 4 : 8;
  // Only [0, offsets[T·B]) can be referenced; later indices are ignored.
  const auto used = static_cast<std::size_t>(s.host_offsets.back());
  s.indices = upload(static_cast<const unsigned char*>(batch.indices), used * index_bytes, s.stream);
  for (std::size_t t = 0; t < s.shapes.size(); ++t) {
    s.max_table_lookups = std::max(s.max_table_lookups, s.table_lookups(t));
  }
  EMBSHARD_CHECK(s.max_table_lookups < INT_MAX, "CudaEmbeddingBag: a table has ", s.max_table_lookups,
                 " lookups; the CUDA implementation takes at most 2^31 - 1");
}

template <class Index>
KernelStatus check_indices(DeviceState& s) {
  if (s.n_bags == 0 || s.batch_size == 0) return {};
  s.first_bad = DeviceBuffer<unsigned long long>(1);
  check_cuda(cudaMemsetAsync(s.first_bad.data(), 0xff, sizeof(unsigned long long), s.stream), "cudaMemsetAsync");
  find_bad_index_kernel<Index><<<grid_for_warps(s.n_bags), kThreadsPerBlock, 0, s.stream>>>(
      s.tables.data(), s.offsets.data(), s.indices_as<Index>(), s.batch_size, s.n_bags, s.first_bad.data());
  check_cuda(cudaGetLastError(), "find_bad_index_kernel");
  unsigned long long first_bad = 0;
  check_cuda(cudaMemcpyAsync(&first_bad, s.first_bad.data(), sizeof first_bad, cudaMemcpyDeviceToHost, s.stream),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
  if (first_bad == ULLONG_MAX) return {};
  return {KernelError::kBadIndex, static_cast<std::int64_t>(first_bad)};
}

/** A bound on the pieces of a table's long segments: fewer than n / kLongSegment of them, each ≤ 1 extra. */
long long max_pieces(std::int64_t n) { return 2 * n / kLongSegment + 1; }

/** Sizes the sort / run-length / scan scratch for the largest table. */
void allocate_sort_scratch(DeviceState& s) {
  const auto n = static_cast<int>(s.max_table_lookups);
  if (n == 0) return;
  const auto count = static_cast<std::size_t>(n);
  s.rows = DeviceBuffer<unsigned long long>(count);
  s.sorted_rows = DeviceBuffer<unsigned long long>(count);
  s.unique_rows = DeviceBuffer<unsigned long long>(count);
  s.bags = DeviceBuffer<long long>(count);
  s.sorted_bags = DeviceBuffer<long long>(count);
  s.counts = DeviceBuffer<int>(count);
  s.starts = DeviceBuffer<int>(count);
  s.num_segments = DeviceBuffer<int>(1);
  s.pieces = DeviceBuffer<int>(count);
  s.piece_offsets = DeviceBuffer<int>(count);
  std::size_t piece_floats = 1;
  for (std::size_t t = 0; t < s.shapes.size(); ++t) {
    piece_floats = std::max(piece_floats, static_cast<std::size_t>(max_pieces(s.table_lookups(t)) * s.shapes[t].dim));
  }
  s.piece_sums = DeviceBuffer<float>(piece_floats);
  std::size_t sort_bytes = 0, encode_bytes = 0, scan_bytes = 0;
  check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, s.rows.data(), s.sorted_rows.data(), s.bags.data(),
                                             s.sorted_bags.data(), n, 0, 64, s.stream),
             "cub::DeviceRadixSort::SortPairs (size)");
  check_cuda(cub::DeviceRunLengthEncode::Encode(nullptr, encode_bytes, s.sorted_rows.data(), s.unique_rows.data(),
                                                s.counts.data(), s.num_segments.data(), n, s.stream),
             "cub::DeviceRunLengthEncode::Encode (size)");
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, s.counts.data(), s.starts.data(), n, s.stream),
             "cub::DeviceScan::ExclusiveSum (size)");
  s.temp = DeviceBuffer<unsigned char>(std::max({sort_bytes, encode_bytes, scan_bytes, std::size_t{1}}));
}

/** Sorts table t's lookups by row and cuts them into one segment per distinct row. */
template <class Index>
void sort_table_lookups(DeviceState& s, std::size_t t, int n) {
  const long long* table_offsets = s.offsets.data() + t * s.batch_size;
  fill_pairs_kernel<Index><<<grid_for_warps(s.batch_size), kThreadsPerBlock, 0, s.stream>>>(
      table_offsets, s.indices_as<Index>(), s.batch_size, s.rows.data(), s.bags.data());
  check_cuda(cudaGetLastError(), "fill_pairs_kernel");
  const int end_bit = std::max(1, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(s.shapes[t].rows - 1))));
  std::size_t bytes = s.temp.size();
  check_cuda(cub::DeviceRadixSort::SortPairs(s.temp.data(), bytes, s.rows.data(), s.sorted_rows.data(), s.bags.data(),
                                             s.sorted_bags.data(), n, 0, end_bit, s.stream),
             "cub::DeviceRadixSort::SortPairs");
  bytes = s.temp.size();
  check_cuda(cub::DeviceRunLengthEncode::Encode(s.temp.data(), bytes, s.sorted_rows.data(), s.unique_rows.data(),
                                                s.counts.data(), s.num_segments.data(), n, s.stream),
             "cub::DeviceRunLengthEncode::Encode");
  bytes = s.temp.size();
  check_cuda(cub::DeviceScan::ExclusiveSum(s.temp.data(), bytes, s.counts.data(), s.starts.data(), n, s.stream),
             "cub::DeviceScan::ExclusiveSum");
}

/** The pieces of table t's long segments and their gradient sums (piece_sums_kernel). */
void sum_long_segments(DeviceState& s, std::size_t t, int n, const float* grad) {
  count_pieces_kernel<<<grid_for_warps((n + kWarpSize - 1) / kWarpSize), kThreadsPerBlock, 0, s.stream>>>(
      s.counts.data(), s.num_segments.data(), n, s.pieces.data());
  check_cuda(cudaGetLastError(), "count_pieces_kernel");
  std::size_t bytes = s.temp.size();
  check_cuda(cub::DeviceScan::ExclusiveSum(s.temp.data(), bytes, s.pieces.data(), s.piece_offsets.data(), n, s.stream),
             "cub::DeviceScan::ExclusiveSum (pieces)");
  const PieceArgs args{s.starts.data(),
                       s.counts.data(),
                       s.num_segments.data(),
                       s.pieces.data(),
                       s.piece_offsets.data(),
                       s.sorted_bags.data(),
                       grad,
                       s.total_dim,
                       max_pieces(n),
                       s.host_tables[t].dim,
                       s.host_tables[t].vector_access,
                       s.piece_sums.data()};
  piece_sums_kernel<<<grid_for_warps(max_pieces(n)), kThreadsPerBlock, 0, s.stream>>>(args);
  check_cuda(cudaGetLastError(), "piece_sums_kernel");
}

template <class Index>
void backward_tables(DeviceState& s, const OptimizerConfig& optimizer) {
  for (std::size_t t = 0; t < s.shapes.size(); ++t) {
    const auto n = static_cast<int>(s.table_lookups(t));
    if (n == 0) continue;
    sort_table_lookups<Index>(s, t, n);
    const float* grad = s.grad.data() + s.host_tables[t].d_offset;
    sum_long_segments(s, t, n, grad);
    const UpdateArgs args{s.host_tables[t],
                          s.unique_rows.data(),
                          s.starts.data(),
                          s.counts.data(),
                          s.num_segments.data(),
                          s.pieces.data(),
                          s.piece_offsets.data(),
                          s.piece_sums.data(),
                          s.sorted_bags.data(),
                          grad,
                          s.total_dim,
                          optimizer};
    update_rows_kernel<<<grid_for_warps(n), kThreadsPerBlock, 0, s.stream>>>(args);
    check_cuda(cudaGetLastError(), "update_rows_kernel");
  }
}

}  // namespace

bool cuda_device_available() {
  int count = 0;
  const bool available = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  return available;
}

std::string cuda_device_name() {
  require_device();
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  return properties.name;
}

CudaBandwidth cuda_bandwidth() {
  require_device();
  CudaBandwidth result;
  int device = 0, clock_khz = 0, bus_bits = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess) {
    result.hbm_peak_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;  // DDR: 2 per clock
  }
  cudaGetLastError();
  constexpr std::size_t kBytes = std::size_t{1} << 30;
  DeviceBuffer<unsigned char> from(kBytes), to(kBytes);
  check_cuda(cudaMemset(from.data(), 1, kBytes), "cudaMemset");
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  float best_ms = 0;
  for (int i = 0; i < 5; ++i) {
    cudaEventRecord(start);
    cudaMemcpy(to.data(), from.data(), kBytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (i == 0 || ms < best_ms) best_ms = ms;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  check_cuda(cudaGetLastError(), "device-to-device cudaMemcpy");
  result.copy_gbps = 2.0 * static_cast<double>(kBytes) / (best_ms * 1e6);  // read + write
  return result;
}

namespace {

__global__ void dense_sgd_kernel(float* weights, float* gradient, std::int64_t n, float lr) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    weights[i] -= lr * gradient[i];
    gradient[i] = 0.0f;
  }
}

}  // namespace

std::vector<double> cuda_dense_update_ms(std::int64_t elements, int repeats) {
  EMBSHARD_CHECK(repeats >= 1, "cuda_dense_update_ms: repeats must be ≥ 1");
  if (elements <= 0) return std::vector<double>(static_cast<std::size_t>(repeats), 0.0);
  require_device();
  const auto n = static_cast<std::size_t>(elements);
  DeviceBuffer<float> weights(n), gradient(n);
  check_cuda(cudaMemset(weights.data(), 0, n * sizeof(float)), "cudaMemset");
  check_cuda(cudaMemset(gradient.data(), 0, n * sizeof(float)), "cudaMemset");
  cudaEvent_t start = nullptr, stop = nullptr;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  const int blocks = static_cast<int>(std::min<std::int64_t>((elements + 255) / 256, 65535));
  std::vector<double> times;
  for (int i = 0; i <= repeats; ++i) {  // run 0 warms up
    cudaEventRecord(start);
    dense_sgd_kernel<<<blocks, 256>>>(weights.data(), gradient.data(), elements, 0.01f);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (i > 0) times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  check_cuda(cudaGetLastError(), "dense SGD kernel");
  return times;
}

CudaEmbeddingBag::CudaEmbeddingBag(std::span<const TableView> tables, const BagBatch& batch,
                                   std::span<const std::int64_t> hbm_rows) {
  EMBSHARD_CHECK(hbm_rows.empty() || hbm_rows.size() == tables.size(), "CudaEmbeddingBag: ", hbm_rows.size(),
                 " hbm_rows entries for ", tables.size(), " tables");
  require_device();
  const auto total_dim = static_cast<std::size_t>(detail::dim_offsets(tables).back());
  const std::size_t out_floats = static_cast<std::size_t>(std::max<std::int64_t>(0, batch.batch_size)) * total_dim;
  const KernelStatus shapes = detail::check_shapes(tables, batch, out_floats, false);
  EMBSHARD_CHECK(shapes.ok(), "CudaEmbeddingBag: ", to_string(shapes.error), " (position ", shapes.position, ")");
  state_ = std::make_unique<State>();
  State& s = *state_;
  upload_tables(s, tables, hbm_rows);
  upload_batch(s, batch);
  s.out = DeviceBuffer<float>(out_floats);
  s.index_status = s.index_type == IndexType::kI32 ? check_indices<std::int32_t>(s) : check_indices<std::int64_t>(s);
  allocate_sort_scratch(s);
}

CudaEmbeddingBag::~CudaEmbeddingBag() = default;
CudaEmbeddingBag::CudaEmbeddingBag(CudaEmbeddingBag&&) noexcept = default;
CudaEmbeddingBag& CudaEmbeddingBag::operator=(CudaEmbeddingBag&&) noexcept = default;

std::int64_t CudaEmbeddingBag::output_floats() const { return static_cast<std::int64_t>(state_->out.size()); }

KernelStatus CudaEmbeddingBag::index_status() const { return state_->index_status; }

KernelStatus CudaEmbeddingBag::forward() {
  State& s = *state_;
  if (!s.index_status.ok() || s.n_bags == 0 || s.batch_size == 0) return s.index_status;
  const unsigned grid = grid_for_warps(s.n_bags);
  if (s.index_type == IndexType::kI32) {
    forward_kernel<std::int32_t><<<grid, kThreadsPerBlock, 0, s.stream>>>(s.tables.data(), s.offsets.data(),
                                                                          s.indices_as<std::int32_t>(), s.batch_size,
                                                                          s.n_bags, s.total_dim, s.out.data());
  } else {
    forward_kernel<std::int64_t><<<grid, kThreadsPerBlock, 0, s.stream>>>(s.tables.data(), s.offsets.data(),
                                                                          s.indices_as<std::int64_t>(), s.batch_size,
                                                                          s.n_bags, s.total_dim, s.out.data());
  }
  check_cuda(cudaGetLastError(), "forward_kernel");
  return {};
}

void CudaEmbeddingBag::set_grad_output(std::span<const float> grad_out) {
  State& s = *state_;
  EMBSHARD_CHECK(grad_out.size() == s.out.size(), "CudaEmbeddingBag: grad_out has ", grad_out.size(),
                 " floats, expected ", s.out.size());
  if (s.grad.size() != grad_out.size()) s.grad = DeviceBuffer<float>(grad_out.size());
  if (!grad_out.empty()) {
    check_cuda(cudaMemcpyAsync(s.grad.data(), grad_out.data(), grad_out.size_bytes(), cudaMemcpyHostToDevice, s.stream),
               "cudaMemcpyAsync (grad_out)");
  }
}

KernelStatus CudaEmbeddingBag::backward(const OptimizerConfig& optimizer) {
  State& s = *state_;
  if (optimizer.kind == OptimizerKind::kRowwiseAdagrad) {
    for (std::size_t t = 0; t < s.host_tables.size(); ++t) {
      if (s.host_tables[t].rows > 0 && s.host_tables[t].momentum == nullptr) {
        return {KernelError::kBadTable, static_cast<std::int64_t>(t)};
      }
    }
  }
  if (!s.index_status.ok() || s.max_table_lookups == 0) return s.index_status;
  EMBSHARD_CHECK(s.grad.size() == s.out.size(), "CudaEmbeddingBag: backward before set_grad_output");
  if (s.index_type == IndexType::kI32) {
    backward_tables<std::int32_t>(s, optimizer);
  } else {
    backward_tables<std::int64_t>(s, optimizer);
  }
  return {};
}

void CudaEmbeddingBag::synchronize() { check_cuda(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize"); }

void CudaEmbeddingBag::copy_output_to(std::span<float> out) {
  State& s = *state_;
  EMBSHARD_CHECK(out.size() == s.out.size(), "CudaEmbeddingBag: output has ", out.size(), " floats, expected ",
                 s.out.size());
  if (!out.empty()) {
    check_cuda(cudaMemcpyAsync(out.data(), s.out.data(), out.size_bytes(), cudaMemcpyDeviceToHost, s.stream),
               "cudaMemcpyAsync (output)");
  }
  synchronize();
}

void CudaEmbeddingBag::copy_tables_to(std::span<const TableView> tables) {
  State& s = *state_;
  EMBSHARD_CHECK(tables.size() == s.shapes.size(), "CudaEmbeddingBag: ", tables.size(), " tables given, ",
                 s.shapes.size(), " uploaded");
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableView& view = tables[t];
    const TableView& shape = s.shapes[t];
    EMBSHARD_CHECK(view.rows == shape.rows && view.dim == shape.dim && view.dtype == shape.dtype,
                   "CudaEmbeddingBag: table ", t, " differs in shape from the uploaded one");
    if (s.weights[t].size() > 0) {
      check_cuda(
          cudaMemcpyAsync(view.weights, s.weights[t].data(), s.weights[t].bytes(), cudaMemcpyDeviceToHost, s.stream),
          "cudaMemcpyAsync (weights)");
    }
    if (view.momentum != nullptr && s.momentum[t].size() > 0) {
      check_cuda(
          cudaMemcpyAsync(view.momentum, s.momentum[t].data(), s.momentum[t].bytes(), cudaMemcpyDeviceToHost, s.stream),
          "cudaMemcpyAsync (momentum)");
    }
  }
  synchronize();  // the kernels are done with the mapped host rows: read them on the CPU
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const MappedHostBuffer& cold = s.cold_weights[t];
    if (cold.bytes() == 0) continue;
    std::memcpy(static_cast<unsigned char*>(tables[t].weights) + s.weights[t].bytes(), cold.host(), cold.bytes());
  }
}

double CudaEmbeddingBag::elapsed_ms(const std::function<void()>& work) {
  State& s = *state_;
  check_cuda(cudaEventRecord(s.start, s.stream), "cudaEventRecord");
  work();
  check_cuda(cudaEventRecord(s.stop, s.stream), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(s.stop), "cudaEventSynchronize");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, s.start, s.stop), "cudaEventElapsedTime");
  return ms;
}

namespace detail {

KernelStatus forward_cuda(std::span<const TableView> tables, const BagBatch& batch, std::span<float> out) {
  CudaEmbeddingBag device(tables, batch);
  const KernelStatus status = device.forward();
  if (status.ok()) device.copy_output_to(out);
  return status;
}

KernelStatus backward_cuda(std::span<const TableView> tables, const BagBatch& batch, std::span<const float> grad_out,
                           const OptimizerConfig& optimizer) {
  CudaEmbeddingBag device(tables, batch);
  if (!device.index_status().ok()) return device.index_status();
  device.set_grad_output(grad_out);
  const KernelStatus status = device.backward(optimizer);
  if (status.ok()) device.copy_tables_to(tables);
  return status;
}

}  // namespace detail
}  // namespace embshard::kernels
