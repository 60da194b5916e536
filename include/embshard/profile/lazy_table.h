#pragma once
/**
 * @file lazy_table.h
 * @brief Embedding-table storage that costs memory only for the rows a batch touches, so a 4 GB
 *        shard can be measured on a machine with less free memory than the shard's size.
 *
 * The table's full address range (rows × dim elements, plus rows floats of row-wise Adagrad state
 * when asked) is reserved with an anonymous MAP_NORESERVE mapping: the kernels see the same
 * addresses, strides and therefore the same access pattern as with a fully allocated table, but
 * the operating system backs a 4 KiB page only when it is first written. `materialise` writes
 * every row a batch looks up (deterministic values from the seed), faulting in just those pages,
 * before any timing starts. Transparent huge pages are disabled on the mapping (MADV_NOHUGEPAGE)
 * so one touched row never materialises 2 MiB around it.
 *
 * Rows never materialised read as zero (the kernels never read them: they only touch looked-up
 * rows). `resident_bytes` asks the OS (mincore) how much of the mapping is really backed.
 */
#include <cstdint>
#include <span>

#include "embshard/data/table.h"
#include "embshard/kernels/embedding_bag.h"

namespace embshard {

class LazyTable {
 public:
  /** Reserves rows × dim elements of `dtype` (and momentum when `with_momentum`). */
  LazyTable(std::int64_t rows, int dim, WeightType dtype, bool with_momentum, std::uint64_t seed);
  ~LazyTable();
  LazyTable(LazyTable&& other) noexcept;
  LazyTable& operator=(LazyTable&& other) noexcept;
  LazyTable(const LazyTable&) = delete;
  LazyTable& operator=(const LazyTable&) = delete;

  /** Initialises every row in `rows` (repeats allowed; each must lie in [0, rows)). */
  void materialise(std::span<const std::int32_t> rows);

  /** The kernel's view of this table. */
  [[nodiscard]] kernels::TableView view() const;

  [[nodiscard]] std::int64_t reserved_bytes() const { return weight_bytes_ + momentum_bytes_; }
  /** Bytes of the mapping the OS has backed with memory (multiple of the page size). */
  [[nodiscard]] std::int64_t resident_bytes() const;

 private:
  void release();

  std::int64_t rows_ = 0;
  int dim_ = 0;
  WeightType dtype_ = WeightType::kF32;
  std::uint64_t seed_ = 0;
  void* weights_ = nullptr;
  float* momentum_ = nullptr;
  std::int64_t weight_bytes_ = 0;
  std::int64_t momentum_bytes_ = 0;
};

}  // namespace embshard
