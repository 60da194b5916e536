#pragma once
// Shared by the embedding-bag implementations: input checks and the per-implementation entry
// points that embedding_bag.cpp dispatches to. Not a public header.
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "embshard/kernels/embedding_bag.h"

namespace embshard::kernels::detail {

/** Per-table column offsets D_offsets (T + 1 entries). */
std::vector<std::int64_t> dim_offsets(std::span<const TableView> tables);

/** Checks tables, B, offsets and the output size (everything but the index values). */
KernelStatus check_shapes(std::span<const TableView> tables, const BagBatch& batch, std::size_t out_floats,
                          bool needs_momentum);

/** Index element at position p (either index type). */
inline std::int64_t index_at(const BagBatch& batch, std::int64_t p) {
  return batch.index_type == IndexType::kI32 ? static_cast<const std::int32_t*>(batch.indices)[p]
                                             : static_cast<const std::int64_t*>(batch.indices)[p];
}

/** Loads element d of a row (float or binary16 bits) as float. */
template <class W>
inline float load_weight(const W* row, std::int64_t d) {
  if constexpr (std::is_same_v<W, float>) {
    return row[d];
  } else {
    return half_to_float(row[d]);
  }
}

// The implementations. The dispatcher has already run check_shapes; each one checks the index
// values itself and reports the first bad position.
KernelStatus forward_ref(std::span<const TableView> tables, const BagBatch& batch, std::span<float> out);
KernelStatus backward_ref(std::span<const TableView> tables, const BagBatch& batch, std::span<const float> grad_out,
                          const OptimizerConfig& optimizer);
KernelStatus forward_cpu(std::span<const TableView> tables, const BagBatch& batch, std::span<float> out);
KernelStatus backward_cpu(std::span<const TableView> tables, const BagBatch& batch, std::span<const float> grad_out,
                          const OptimizerConfig& optimizer);
// CUDA (src/kernels/cuda/): stage host memory through CudaEmbeddingBag. Without CUDA they throw
// Error("embshard was built without CUDA"), as do CUDA runtime failures (no device, no memory).
KernelStatus forward_cuda(std::span<const TableView> tables, const BagBatch& batch, std::span<float> out);
KernelStatus backward_cuda(std::span<const TableView> tables, const BagBatch& batch, std::span<const float> grad_out,
                           const OptimizerConfig& optimizer);

}  // namespace embshard::kernels::detail
