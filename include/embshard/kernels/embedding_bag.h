#pragma once
/**
 * @file embedding_bag.h
 * @brief The fused table-batched embedding-bag operator (FBGEMM "TBE" semantics), CPU side:
 *        forward (SUM pooling) and backward with the optimizer fused (exact SGD, row-wise Adagrad).
 *
 * Semantics, written once (every implementation computes exactly this, up to fp rounding):
 *
 *   inputs   T tables; table t: W_t [rows_t × dim_t] row-major (fp32 or fp16),
 *            momentum M_t [rows_t] fp32 (row-wise Adagrad only)
 *            B (batch size), offsets [T·B + 1] int64, indices [N] int32 or int64
 *            D_offsets[t] = dim_0 + … + dim_{t-1}; total_dim = D_offsets[T]
 *   bag(t, b) = indices[offsets[t·B + b] .. offsets[t·B + b + 1])       // table-major, like DLRM
 *
 *   forward:  out [B × total_dim] fp32
 *     for t, b:  for d < dim_t:
 *       out[b][D_offsets[t] + d] = Σ_{r ∈ bag(t, b)} float(W_t[r][d])    // empty bag → 0
 *
 *   backward: grad_out [B × total_dim] fp32 (d loss / d out)
 *     for t:  for every row r that occurs in some bag of table t (repeats counted each time):
 *       g_r[d] = Σ_{b, each occurrence of r in bag(t, b)} grad_out[b][D_offsets[t] + d]
 *       SGD:               W_t[r][d] ← W_t[r][d] − lr · g_r[d]
 *       row-wise Adagrad:  M_t[r] ← M_t[r] + (1/dim_t) Σ_d g_r[d]²
 *                          W_t[r][d] ← W_t[r][d] − lr · g_r[d] / (sqrt(M_t[r]) + eps)
 *     Rows that occur in no bag are untouched (weights and momentum). The update is "exact":
 *     all occurrences of a row are summed first and the row is updated once.
 *     fp16 weights are widened to fp32, updated in fp32, rounded back to nearest-even.
 *
 * Validity (checked by every implementation; kernels never throw and never read or write
 * out of bounds on bad input, they return a KernelStatus instead):
 *   - each table: rows ≥ 0, 1 ≤ dim ≤ 65536, weights non-null when rows > 0; Adagrad needs momentum
 *   - batch_size ≥ 0; offsets.size() == T·B + 1; 0 ≤ offsets[0]; offsets non-decreasing;
 *     offsets[T·B] ≤ number of indices (indices past offsets[T·B] are ignored)
 *   - every index referenced by a bag of table t lies in [0, rows_t)
 *   - output / grad_out hold exactly B·total_dim floats
 * On a non-ok status: forward leaves `out` unspecified (partly written); backward leaves every
 * table's weights and momentum UNMODIFIED (all checks happen before the first update).
 * The reported position is the smallest bad position (deterministic in every implementation).
 *
 * Tables must not alias each other (one table per feature; no feature_table_map sharing).
 * Threads: the fast CPU implementation uses OpenMP's default team (OMP_NUM_THREADS, or what
 * `set_cpu_kernel_threads` set) when built with OpenMP, one thread otherwise. Results of every
 * implementation are deterministic and do not depend on the thread count.
 */
#include <bit>
#include <cstdint>
#include <span>
#include <string_view>

namespace embshard::kernels {

/** Storage type of a table's weights. */
enum class WeightDtype : std::uint8_t { kF32, kF16 };

/** Bytes per weight element (4 or 2). */
constexpr int weight_bytes(WeightDtype dtype) { return dtype == WeightDtype::kF32 ? 4 : 2; }

/** One embedding table, viewed (not owned). */
struct TableView {
  void* weights = nullptr;  ///< rows × dim elements, row-major; float or IEEE binary16 bits (uint16_t)
  std::int64_t rows = 0;    ///< number of rows (valid indices are 0 .. rows-1)
  std::int32_t dim = 0;     ///< elements per row (columns this table writes in the output)
  WeightDtype dtype = WeightDtype::kF32;
  float* momentum = nullptr;  ///< rows floats, row-wise Adagrad state; may be null otherwise
};

/** Element type of the index array. */
enum class IndexType : std::uint8_t { kI32, kI64 };

/** The lookups of one call, CSR, table-major (see the file comment). */
struct BagBatch {
  std::int64_t batch_size = 0;            ///< B: bags per table
  std::span<const std::int64_t> offsets;  ///< T·B + 1 entries, element positions in `indices`
  const void* indices = nullptr;          ///< num_indices elements of `index_type`
  std::int64_t num_indices = 0;
  IndexType index_type = IndexType::kI64;

  static BagBatch of(std::int64_t batch, std::span<const std::int64_t> offs, std::span<const std::int32_t> idx) {
    return {batch, offs, idx.data(), static_cast<std::int64_t>(idx.size()), IndexType::kI32};
  }
  static BagBatch of(std::int64_t batch, std::span<const std::int64_t> offs, std::span<const std::int64_t> idx) {
    return {batch, offs, idx.data(), static_cast<std::int64_t>(idx.size()), IndexType::kI64};
  }
};

/** The optimizer fused into the backward. */
enum class OptimizerKind : std::uint8_t { kSgd, kRowwiseAdagrad };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;  ///< lr
  float eps = 1e-8f;            ///< Adagrad only: added to sqrt(M_r)
};

/** What went wrong, if anything. */
enum class KernelError : std::uint8_t {
  kNone,
  kBadTable,    ///< a table's rows/dim/weights/momentum are invalid; position = table number
  kBadShape,    ///< output / grad_out size ≠ B·total_dim, or B < 0; position = -1
  kBadOffsets,  ///< position = first offending entry of `offsets` (or offsets.size() if too short/long)
  kBadIndex,    ///< position = first offending element of `indices` (outside [0, rows_t))
};

struct KernelStatus {
  KernelError error = KernelError::kNone;
  std::int64_t position = -1;  ///< see KernelError
  [[nodiscard]] bool ok() const { return error == KernelError::kNone; }
};

std::string_view to_string(KernelError error);

/** The implementations; all compute the semantics above. */
enum class EmbeddingBagImpl : std::uint8_t {
  kReference,  ///< scalar loops, double accumulation, serial
  kCpu,        ///< OpenMP over balanced work items, vectorised along dim, prefetching, sorted backward
  kCuda,       ///< GPU kernels (cuda_embedding_bag.h); host memory is staged to the device and back.
               ///< Listed by embedding_bag_impls() only when built with CUDA; calling it without
               ///< CUDA or without a visible GPU throws embshard::Error (not a KernelStatus).
};

/**
 * Sets the team size of the `cpu` implementation (OpenMP's process-wide default; the CLI's
 * `--threads`). Returns the team size now in effect (1 without OpenMP).
 */
int set_cpu_kernel_threads(int threads);

/** Every implementation built into this library, reference first (kCuda only when built with CUDA). */
std::span<const EmbeddingBagImpl> embedding_bag_impls();
std::string_view to_string(EmbeddingBagImpl impl);

/** out: B·total_dim floats, row-major [B × total_dim]. `tables` weights are only read. */
KernelStatus embedding_bag_forward(EmbeddingBagImpl impl, std::span<const TableView> tables, const BagBatch& batch,
                                   std::span<float> out);

/** grad_out: B·total_dim floats. Updates the tables' weights (and momentum) in place. */
KernelStatus embedding_bag_backward(EmbeddingBagImpl impl, std::span<const TableView> tables, const BagBatch& batch,
                                    std::span<const float> grad_out, const OptimizerConfig& optimizer);

// ---- IEEE binary16 <-> binary32 (no _Float16 needed) --------------------------------------------

/** Exact widening of binary16 bits to float (subnormals, inf and NaN included). */
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa · 2^-24
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/** Rounds a float to binary16 bits, to nearest-even; overflow → ±inf, NaN stays NaN. */
inline std::uint16_t float_to_half(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  std::uint32_t h = 0;
  if (x >= 0x47800000u) {  // ≥ 65536, inf or NaN
    h = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {  // below 2^-14: subnormal or zero
    // Adding 0.5 aligns the binary16 subnormal grid (2^-24) with float's ulp; the FPU rounds.
    const float shifted = std::bit_cast<float>(x) + 0.5f;
    h = std::bit_cast<std::uint32_t>(shifted) - std::bit_cast<std::uint32_t>(0.5f);
  } else {  // normal: rebias, round the 13 dropped bits
    const std::uint32_t odd = (x >> 13) & 1u;
    x += 0xc8000fffu + odd;  // (15 − 127) << 23, plus rounding bias
    h = x >> 13;             // a carry into the exponent is correct (→ inf)
  }
  return static_cast<std::uint16_t>(sign | h);
}

}  // namespace embshard::kernels
