// The CUDA entry points when embshard is built without CUDA: every one throws Error (and
// cuda_device_available() says false). With CUDA, src/kernels/cuda/ defines them instead.
#ifndef EMBSHARD_WITH_CUDA

#include "embshard/core/error.h"
#include "embshard/kernels/cuda_embedding_bag.h"
#include "kernels/embedding_bag_internal.h"

namespace embshard::kernels {
namespace {

[[noreturn]] void throw_no_cuda() { EMBSHARD_THROW("embshard was built without CUDA"); }

}  // namespace

bool cuda_device_available() { return false; }

std::string cuda_device_name() { throw_no_cuda(); }
CudaBandwidth cuda_bandwidth() { throw_no_cuda(); }
std::vector<double> cuda_dense_update_ms(std::int64_t, int) { throw_no_cuda(); }

struct CudaEmbeddingBag::State {};

CudaEmbeddingBag::CudaEmbeddingBag(std::span<const TableView>, const BagBatch&, std::span<const std::int64_t>) {
  throw_no_cuda();
}
CudaEmbeddingBag::~CudaEmbeddingBag() = default;
CudaEmbeddingBag::CudaEmbeddingBag(CudaEmbeddingBag&&) noexcept = default;
CudaEmbeddingBag& CudaEmbeddingBag::operator=(CudaEmbeddingBag&&) noexcept = default;
std::int64_t CudaEmbeddingBag::output_floats() const { throw_no_cuda(); }
KernelStatus CudaEmbeddingBag::index_status() const { throw_no_cuda(); }
KernelStatus CudaEmbeddingBag::forward() { throw_no_cuda(); }
void CudaEmbeddingBag::set_grad_output(std::span<const float>) { throw_no_cuda(); }
KernelStatus CudaEmbeddingBag::backward(const OptimizerConfig&) { throw_no_cuda(); }
void CudaEmbeddingBag::synchronize() { throw_no_cuda(); }
void CudaEmbeddingBag::copy_output_to(std::span<float>) { throw_no_cuda(); }
void CudaEmbeddingBag::copy_tables_to(std::span<const TableView>) { throw_no_cuda(); }
double CudaEmbeddingBag::elapsed_ms(const std::function<void()>&) { throw_no_cuda(); }

namespace detail {

KernelStatus forward_cuda(std::span<const TableView>, const BagBatch&, std::span<float>) { throw_no_cuda(); }

KernelStatus backward_cuda(std::span<const TableView>, const BagBatch&, std::span<const float>,
                           const OptimizerConfig&) {
  throw_no_cuda();
}

}  // namespace detail
}  // namespace embshard::kernels

#endif  // EMBSHARD_WITH_CUDA
