#pragma once
/**
 * @file cuda_embedding_bag.h
 * @brief The CUDA implementation of the embedding-bag operator, device-resident (for timing).
 *
 * Semantics are those of embedding_bag.h, unchanged. `embedding_bag_forward/backward(kCuda, …)`
 * work on host memory by staging through this class (upload, run, download); this class keeps
 * one set of tables and one batch on the GPU so that the kernels alone can be timed.
 *
 * Kernels: forward = one warp per (table, bag), float4 loads for fp32 (4×half for fp16) when
 * dim % 4 == 0, scalar otherwise, fp32 accumulation. Backward = per table, (row, bag) pairs
 * radix-sorted by row (stable: bags ascending within a row), one warp per distinct row sums its
 * gradient rows (fp32 blocks of 16, double totals) and applies the update once: deterministic.
 * Index validity is checked once on upload (device-side minimum over bad positions); forward and
 * backward then return that status and launch nothing when it is bad.
 *
 * Memory tiers (RecShard's HBM / UVM split): the constructor may be given, per table, a row
 * threshold `hbm_rows`. Rows [0, hbm_rows) are uploaded to device memory as usual; rows
 * [hbm_rows, rows) are copied into pinned host memory allocated with cudaHostAlloc(…,
 * cudaHostAllocMapped) and the kernels read and update them in place over the host link through
 * the pointer of cudaHostGetDevicePointer (each table carries a second base pointer and the
 * threshold; a row below it is read from device memory). Momentum stays in device memory. An
 * entry < 0 or ≥ rows, or no thresholds at all, keeps the whole table in device memory. Tiering
 * changes only where rows live: results are those of embedding_bag.h, bit for bit, and
 * `copy_tables_to` returns both parts.
 *
 * Limits: at most 2^31 − 1 lookups per table. Errors of the CUDA runtime (no device, out of
 * memory) and bad tables/shapes given to the constructor throw embshard::Error; so does every
 * member when embshard was built without CUDA ("embshard was built without CUDA").
 * This header needs no CUDA headers.
 */
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "embshard/kernels/embedding_bag.h"

namespace embshard::kernels {

/** True when embshard was built with CUDA and a GPU is visible; never throws. */
bool cuda_device_available();

/** The current GPU's name as CUDA reports it (e.g. "NVIDIA H200"); throws Error without CUDA or GPU. */
std::string cuda_device_name();

/** Bandwidth figures of the current GPU (0 where unknown). */
struct CudaBandwidth {
  double hbm_peak_gbps = 0;  ///< data-sheet peak: 2 · memory clock · bus width (0 if not reported)
  double copy_gbps = 0;      ///< measured device-to-device cudaMemcpy: 2 · bytes / t
};

/** Measures/reads the bandwidth of the current GPU; throws Error without CUDA or GPU. */
CudaBandwidth cuda_bandwidth();

/**
 * The dense optimizer step of data-parallel copies timed on the current GPU: SGD over `elements`
 * fp32 weights from a dense gradient of the same size, then cleared (w -= lr · g; g = 0), one
 * kernel; `repeats` runs after one warm-up, each timed with CUDA events; returns their ms in run
 * order (0 elements: zeros). Throws Error without CUDA or GPU, or when the GPU lacks the memory.
 */
std::vector<double> cuda_dense_update_ms(std::int64_t elements, int repeats);

/** One set of tables and one batch, resident on the current GPU. */
class CudaEmbeddingBag {
 public:
  /**
   * Uploads the tables' weights (and momentum where non-null), the offsets and indices, and
   * checks the index values once. `hbm_rows`: empty, or one row threshold per table (file
   * comment: rows from it on live in mapped host memory). Throws Error when the tables, the batch
   * or the thresholds' count are invalid (shape checks of embedding_bag.h), on CUDA errors, and
   * without CUDA.
   */
  CudaEmbeddingBag(std::span<const TableView> tables, const BagBatch& batch,
                   std::span<const std::int64_t> hbm_rows = {});
  ~CudaEmbeddingBag();
  CudaEmbeddingBag(CudaEmbeddingBag&&) noexcept;
  CudaEmbeddingBag& operator=(CudaEmbeddingBag&&) noexcept;
  CudaEmbeddingBag(const CudaEmbeddingBag&) = delete;
  CudaEmbeddingBag& operator=(const CudaEmbeddingBag&) = delete;

  /** B · total_dim: floats of the output and of grad_out. */
  [[nodiscard]] std::int64_t output_floats() const;

  /** Result of the index check done on upload (kBadIndex with the smallest bad position). */
  [[nodiscard]] KernelStatus index_status() const;

  /** Enqueues the forward into the device output (asynchronous); returns index_status(). */
  KernelStatus forward();

  /** Uploads grad_out (output_floats() floats; Error otherwise) for the following backward calls. */
  void set_grad_output(std::span<const float> grad_out);

  /**
   * Enqueues backward + fused update of the device tables (asynchronous); returns index_status()
   * and updates nothing when it is bad. Row-wise Adagrad needs momentum for every table with
   * rows > 0 (kBadTable with the table number otherwise).
   */
  KernelStatus backward(const OptimizerConfig& optimizer);

  /** Waits for everything enqueued. */
  void synchronize();

  /** Copies the device output to `out` (output_floats() floats; Error otherwise); synchronises. */
  void copy_output_to(std::span<float> out);

  /**
   * Copies the device weights (and momentum where the view's is non-null) into `tables`, which
   * must have the uploaded shapes (Error otherwise); synchronises.
   */
  void copy_tables_to(std::span<const TableView> tables);

  /** Runs `work` (which enqueues calls on this object) between two cudaEvents; milliseconds. */
  double elapsed_ms(const std::function<void()>& work);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace embshard::kernels
