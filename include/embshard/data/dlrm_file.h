#pragma once
/**
 * @file dlrm_file.h
 * @brief Reader and writer for Meta's DLRM embedding-lookup dataset files (`torch.save` format).
 *
 * A file holds the tuple `(indices, offsets, lengths)` (shared/docs/references/fbgemm-dlrm-data.md
 * §1): `indices` 1-D; `offsets` 1-D with T·B + 1 absolute positions, table-major (bag b of table t
 * is indices[offsets[t·B + b] .. offsets[t·B + b + 1])); `lengths` 2-D [T, B] with
 * lengths[t][b] = offsets[t·B+b+1] − offsets[t·B+b]. Each tensor's dtype (int32 or int64) comes
 * from the pickle's storage class, never from a guess.
 *
 * Containers, told apart by their first bytes:
 *  - zip (torch >= 1.6, `PK\x03\x04`), entries under any top folder (`archive/`, the file stem...);
 *  - legacy pre-1.6 stream of pickles (`\x80\x02`);
 *  - either of those gzip-compressed (`\x1f\x8b`), decompressed as a stream (no temporary file).
 *
 * Streaming: the reader never holds a second full copy of the data. A seekable plain file is
 * memory-mapped and each table's slice is read in place; a gzip file is decompressed once into
 * the raw tensor buffers (the bytes the file holds, in their on-disk dtype), and tables are then
 * visited one at a time. At most one table's `TableBatch` exists at any time.
 *
 * Integrity: every zip record the reader uses (data.pkl, byteorder, each tensor's storage) must
 * match its stored CRC-32 ("NAME: CRC-32 mismatch in record 'R' ..."); a mapped file is checked
 * once at open, 64 MiB at a time with the pages dropped again, a gzip stream as records arrive.
 * Bytes after the end of the zip, after a legacy file's last storage, or after the last gzip
 * member are errors; concatenated gzip members are read as one stream (RFC 1952).
 *
 * Every malformed input (truncated or corrupt container, unknown pickle opcode or storage class,
 * wrong tensor shapes, offsets that decrease or overrun, lengths that disagree with offsets,
 * negative indices) throws `embshard::Error` with one line naming the file and the problem.
 * Nothing is allocated from a header's claim alone: sizes are checked against the file (or, for
 * gzip, against 1100 times the compressed size) and buffers grow only as data arrives. Limits:
 * a pickle of at most 16 MiB and at most 65,536 tables.
 */
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "embshard/data/index_batch.h"

namespace embshard {

struct Context;

/** Element types a torch storage can have (the storage class decides). */
enum class TensorType { kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64 };

[[nodiscard]] const char* to_string(TensorType type);  ///< "int32", "int64", "float32", ...
[[nodiscard]] int element_size(TensorType type);

/** What the header of a dataset file says. */
struct DlrmFileInfo {
  std::string path;       ///< as given (or the name passed to `from_bytes`)
  std::string container;  ///< "zip" or "legacy"
  bool gzipped = false;
  std::int64_t num_tables = 0;   ///< T
  std::int64_t batch_size = 0;   ///< B
  std::int64_t num_indices = 0;  ///< total lookups, offsets[T·B]
  TensorType indices_type = TensorType::kI32;
  TensorType offsets_type = TensorType::kI64;
  TensorType lengths_type = TensorType::kI32;
};

/** Reads a dataset file table by table. Not thread-safe; move-only. */
class DlrmFileReader {
 public:
  /** Opens `path` and parses its container and pickle. Throws Error naming the file. */
  explicit DlrmFileReader(const std::string& path);
  /** The same, logging the progress of a long gzip decompression with ctx.info (every 10%). */
  DlrmFileReader(const std::string& path, const Context& ctx);
  /**
   * Reads from an in-memory copy of a file (tests, fuzzing); `name` is used in messages.
   * `verify_crc` = false skips the zip CRC-32 checks (the fuzz target's second pass, so that
   * mutated tensor bytes still reach the table validation behind the CRC); paths always check.
   */
  static DlrmFileReader from_bytes(std::string bytes, const std::string& name, bool verify_crc = true);

  DlrmFileReader(DlrmFileReader&&) noexcept;
  DlrmFileReader& operator=(DlrmFileReader&&) noexcept;
  ~DlrmFileReader();

  [[nodiscard]] const DlrmFileInfo& info() const;

  /**
   * Calls `visit(t, batch)` for t = 0 .. T-1 in order, with table t's rebased offsets
   * (B + 1 entries from 0) and its indices widened to int64. Validates as it goes and throws
   * Error naming the file, table and sample of the first problem. May be called more than once.
   */
  void for_each_table(const std::function<void(std::int64_t, const TableBatch&)>& visit);

  /**
   * `compute_table_stats` of every table, in table order, validated exactly as
   * `for_each_table` validates (the same first error is thrown). Works on the file's buffers
   * without building TableBatches, on up to ctx.num_threads threads, each holding one sorted
   * copy of one table's indices at a time. Logs progress with ctx.info for large files.
   */
  [[nodiscard]] std::vector<TableStats> compute_stats(const Context& ctx);

 private:
  struct Impl;
  explicit DlrmFileReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/** Reference statistics of every table of a dataset file (`embshard stats`). */
[[nodiscard]] std::vector<TableStats> compute_file_stats(const std::string& path, const Context& ctx);

/** How `write_dlrm_file` lays out its output. */
struct DlrmWriteOptions {
  std::string container = "zip";               ///< "zip" (torch >= 1.6 layout) or "legacy"
  bool gzip = false;                           ///< gzip the whole file, as the dataset is published
  std::string archive_name = "archive";        ///< top folder of zip entries
  TensorType indices_type = TensorType::kI32;  ///< kI32 or kI64
  TensorType offsets_type = TensorType::kI64;  ///< kI32 or kI64
  TensorType lengths_type = TensorType::kI32;  ///< kI32 or kI64
};

/**
 * Writes `tables` (all with the same batch size) as a dataset file that `torch.load` and
 * `DlrmFileReader` both read. Writes to a temporary file beside `path` and renames it, so an
 * existing file is never left half-written. Throws Error if a value does not fit its dtype.
 */
void write_dlrm_file(const std::string& path, const std::vector<TableBatch>& tables, const DlrmWriteOptions& options);

/**
 * The same bytes as `write_dlrm_file` would write, in memory (tests, fuzz seeds). The zip layout
 * and pickle are those of `torch.save` (PyTorch >= 1.6): for the same tensors and folder name the
 * bytes are identical (checked against the fixtures).
 */
[[nodiscard]] std::string encode_dlrm_file(const std::vector<TableBatch>& tables, const DlrmWriteOptions& options);

}  // namespace embshard
