#include "embshard/profile/lazy_table.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/core/error.h"

namespace embshard {
namespace {

std::int64_t page_bytes() { return static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE)); }

void* reserve(std::int64_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = ::mmap(nullptr, static_cast<std::size_t>(bytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  EMBSHARD_CHECK(p != MAP_FAILED, "cannot reserve ", bytes,
                 " bytes of address space for a table: ", std::strerror(errno));
  ::madvise(p, static_cast<std::size_t>(bytes), MADV_NOHUGEPAGE);
  return p;
}

std::int64_t resident(const void* p, std::int64_t bytes) {
  if (p == nullptr || bytes == 0) return 0;
  const std::int64_t page = page_bytes();
  std::vector<unsigned char> pages(static_cast<std::size_t>((bytes + page - 1) / page));
  if (::mincore(const_cast<void*>(p), static_cast<std::size_t>(bytes), pages.data()) != 0) return -1;
  std::int64_t count = 0;
  for (unsigned char flag : pages) count += flag & 1;
  return count * page;
}

/** A small deterministic weight in [-1/64, 1/64) for (seed, row, column). */
float initial_weight(std::uint64_t row_seed, int column) {
  const std::uint64_t bits = derive_seed(row_seed, static_cast<std::uint64_t>(column));
  return static_cast<float>(static_cast<double>(bits >> 40) * 0x1p-24 - 0.5) / 32.0f;
}

}  // namespace

LazyTable::LazyTable(std::int64_t rows, int dim, WeightType dtype, bool with_momentum, std::uint64_t seed)
    : rows_(rows), dim_(dim), dtype_(dtype), seed_(seed) {
  EMBSHARD_CHECK(rows >= 0 && dim >= 1, "lazy table: bad shape ", rows, " x ", dim);
  weight_bytes_ = rows * dim * bytes_per_element(dtype);
  momentum_bytes_ = with_momentum ? rows * static_cast<std::int64_t>(sizeof(float)) : 0;
  weights_ = reserve(weight_bytes_);
  momentum_ = static_cast<float*>(reserve(momentum_bytes_));
}

LazyTable::~LazyTable() { release(); }

LazyTable::LazyTable(LazyTable&& other) noexcept { *this = std::move(other); }

LazyTable& LazyTable::operator=(LazyTable&& other) noexcept {
  if (this != &other) {
    release();
    rows_ = other.rows_;
    dim_ = other.dim_;
    dtype_ = other.dtype_;
    seed_ = other.seed_;
    weights_ = std::exchange(other.weights_, nullptr);
    momentum_ = std::exchange(other.momentum_, nullptr);
    weight_bytes_ = std::exchange(other.weight_bytes_, 0);
    momentum_bytes_ = std::exchange(other.momentum_bytes_, 0);
  }
  return *this;
}

void LazyTable::release() {
  if (weights_ != nullptr) ::munmap(weights_, static_cast<std::size_t>(weight_bytes_));
  if (momentum_ != nullptr) ::munmap(momentum_, static_cast<std::size_t>(momentum_bytes_));
  weights_ = nullptr;
  momentum_ = nullptr;
}

void LazyTable::materialise(std::span<const std::int32_t> rows) {
  for (const std::int32_t row : rows) {
    EMBSHARD_ASSERT(row >= 0 && row < rows_);
    const std::uint64_t row_seed = derive_seed(seed_, static_cast<std::uint64_t>(row));
    const std::size_t first = static_cast<std::size_t>(row) * static_cast<std::size_t>(dim_);
    for (int d = 0; d < dim_; ++d) {
      const float w = initial_weight(row_seed, d);
      if (dtype_ == WeightType::kF32) {
        static_cast<float*>(weights_)[first + d] = w;
      } else {
        static_cast<std::uint16_t*>(weights_)[first + d] = kernels::float_to_half(w);
      }
    }
    if (momentum_ != nullptr) momentum_[row] = 0.0f;
  }
}

kernels::TableView LazyTable::view() const {
  kernels::TableView v;
  v.weights = weights_;
  v.rows = rows_;
  v.dim = dim_;
  v.dtype = dtype_ == WeightType::kF32 ? kernels::WeightDtype::kF32 : kernels::WeightDtype::kF16;
  v.momentum = momentum_;
  return v;
}

std::int64_t LazyTable::resident_bytes() const {
  return resident(weights_, weight_bytes_) + resident(momentum_, momentum_bytes_);
}

}  // namespace embshard
