// Input checks shared by every implementation, and the dispatch by EmbeddingBagImpl.
#include "embshard/kernels/embedding_bag.h"

#include <array>

#include "kernels/embedding_bag_internal.h"

namespace embshard::kernels {

std::string_view to_string(KernelError error) {
  switch (error) {
    case KernelError::kNone: return "ok";
    case KernelError::kBadTable: return "bad table";
    case KernelError::kBadShape: return "bad shape";
    case KernelError::kBadOffsets: return "bad offsets";
    case KernelError::kBadIndex: return "index out of range";
  }
  return "?";
}

std::span<const EmbeddingBagImpl> embedding_bag_impls() {
#ifdef EMBSHARD_WITH_CUDA
  static constexpr std::array impls{EmbeddingBagImpl::kReference, EmbeddingBagImpl::kCpu, EmbeddingBagImpl::kCuda};
#else
  static constexpr std::array impls{EmbeddingBagImpl::kReference, EmbeddingBagImpl::kCpu};
#endif
  return impls;
}

std::string_view to_string(EmbeddingBagImpl impl) {
  switch (impl) {
    case EmbeddingBagImpl::kReference: return "reference";
    case EmbeddingBagImpl::kCpu: return "cpu";
    case EmbeddingBagImpl::kCuda: return "cuda";
  }
  return "?";
}

KernelStatus embedding_bag_forward(EmbeddingBagImpl impl, std::span<const TableView> tables, const BagBatch& batch,
                                   std::span<float> out) {
  if (const KernelStatus status = detail::check_shapes(tables, batch, out.size(), false); !status.ok()) {
    return status;
  }
  if (impl == EmbeddingBagImpl::kCpu) return detail::forward_cpu(tables, batch, out);
  if (impl == EmbeddingBagImpl::kCuda) return detail::forward_cuda(tables, batch, out);
  return detail::forward_ref(tables, batch, out);
}

KernelStatus embedding_bag_backward(EmbeddingBagImpl impl, std::span<const TableView> tables, const BagBatch& batch,
                                    std::span<const float> grad_out, const OptimizerConfig& optimizer) {
  const bool adagrad = optimizer.kind == OptimizerKind::kRowwiseAdagrad;
  if (const KernelStatus status = detail::check_shapes(tables, batch, grad_out.size(), adagrad); !status.ok()) {
    return status;
  }
  if (impl == EmbeddingBagImpl::kCpu) return detail::backward_cpu(tables, batch, grad_out, optimizer);
  if (impl == EmbeddingBagImpl::kCuda) {
    return detail::backward_cuda(tables, batch, grad_out, optimizer);
  }
  return detail::backward_ref(tables, batch, grad_out, optimizer);
}

namespace detail {

std::vector<std::int64_t> dim_offsets(std::span<const TableView> tables) {
  std::vector<std::int64_t> d_offsets(tables.size() + 1, 0);
  for (std::size_t t = 0; t < tables.size(); ++t) d_offsets[t + 1] = d_offsets[t] + tables[t].dim;
  return d_offsets;
}

namespace {

bool table_ok(const TableView& table, bool needs_momentum) {
  if (table.rows < 0 || table.dim < 1 || table.dim > 65536) return false;
  if (table.dtype != WeightDtype::kF32 && table.dtype != WeightDtype::kF16) return false;
  if (table.rows > 0 && table.weights == nullptr) return false;
  return !(needs_momentum && table.rows > 0 && table.momentum == nullptr);
}

}  // namespace

KernelStatus check_shapes(std::span<const TableView> tables, const BagBatch& batch, std::size_t out_floats,
                          bool needs_momentum) {
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (!table_ok(tables[t], needs_momentum)) {
      return {KernelError::kBadTable, static_cast<std::int64_t>(t)};
    }
  }
  const std::int64_t batch_size = batch.batch_size;
  if (batch_size < 0 || batch_size > (std::int64_t{1} << 40) || batch.num_indices < 0 ||
      (batch.indices == nullptr && batch.num_indices > 0)) {
    return {KernelError::kBadShape, -1};
  }
  const auto total_dim = static_cast<std::uint64_t>(dim_offsets(tables).back());
  if (out_floats != static_cast<std::uint64_t>(batch_size) * total_dim) {
    return {KernelError::kBadShape, -1};
  }
  const auto& offsets = batch.offsets;
  const std::size_t expected = tables.size() * static_cast<std::size_t>(batch_size) + 1;
  if (offsets.size() != expected) {
    return {KernelError::kBadOffsets, static_cast<std::int64_t>(offsets.size())};
  }
  if (offsets[0] < 0 || offsets[0] > batch.num_indices) return {KernelError::kBadOffsets, 0};
  for (std::size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1] || offsets[i] > batch.num_indices) {
      return {KernelError::kBadOffsets, static_cast<std::int64_t>(i)};
    }
  }
  return {};
}

}  // namespace detail
}  // namespace embshard::kernels
