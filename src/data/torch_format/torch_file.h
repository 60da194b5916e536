#pragma once
/**
 * @file torch_file.h
 * @brief Loading and saving `torch.save` files of plain tensors, in any container
 * (shared/docs/references/fbgemm-dlrm-data.md §1.4-1.6):
 *
 *  - zip (torch >= 1.6): in memory, records are found through the central directory and the
 *    storages are used in place (no copy); in a gzip stream, records are read in order;
 *  - legacy (pre-1.6): a sequence of pickles followed by the raw storages;
 *  - gzip of either, decompressed as a stream into one buffer per storage.
 *
 * After loading, every storage is in host byte order and aligned to its element size: data read
 * in place is copied only when it is misaligned or big-endian.
 */
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/torch_format/byte_source.h"
#include "data/torch_format/pickle.h"

namespace embshard::detail {

/** The bytes of one storage. */
struct LoadedStorage {
  const std::uint8_t* data = nullptr;
  std::uint64_t bytes = 0;
  bool in_place = false;  ///< points into the caller's memory (a mapped file), not `owned`
  Buffer owned;
};

struct TorchFile {
  std::string container;  ///< "zip" or "legacy"
  bool gzipped = false;
  PickleArena arena;
  PickleValue root;                     ///< the saved object
  std::vector<LoadedStorage> storages;  ///< parallel to arena.storages
};

/**
 * How strictly a file is read. Zip CRC-32s: the records the reader uses (data.pkl, byteorder,
 * every storage) are checked against their stored CRC; in memory each record once when the file
 * is loaded, 64 MiB at a time (`release` then drops those mapped pages again, so a large mapped
 * file is read sequentially once and never held resident); in a gzip stream as each record's
 * bytes arrive. Legacy files carry no CRC (gzip's own CRC covers a gzipped one). Bytes after the
 * end of the zip (end record and comment) or after a legacy file's last storage are an error.
 * A gzip file may have several members (RFC 1952; `cat a.gz b.gz`): their concatenated content
 * must be exactly one torch.save file; bytes after the last member that are not a gzip member
 * are an error.
 */
struct LoadOptions {
  /** false skips the CRC-32 checks (only the fuzz target does, to reach the code behind them). */
  bool verify_crc = true;
  /** Called with each CRC-checked chunk of the caller's memory; may be empty. */
  std::function<void(const std::uint8_t*, std::size_t)> release;
};

/** Loads a torch.save file held in memory; gzip is detected and streamed. */
TorchFile load_torch_file(const std::uint8_t* data, std::uint64_t size, const std::string& name,
                          const LoadOptions& options = {});

/**
 * Loads a gzip-compressed torch.save file from a file descriptor of `compressed_size` bytes;
 * `on_input`, if set, is called with the compressed bytes read so far as decompression proceeds.
 */
TorchFile load_torch_gzip_fd(int fd, std::uint64_t compressed_size, const std::string& name,
                             const std::function<void(std::uint64_t)>& on_input = nullptr,
                             const LoadOptions& options = {});

[[nodiscard]] bool is_gzip_magic(const std::uint8_t* data, std::uint64_t size);

/** A tensor to save: contiguous, `sizes`, data produced by `write_data` (little-endian). */
struct TensorToSave {
  TensorType type = TensorType::kI64;
  std::vector<std::int64_t> sizes;
  /** Must write exactly numel × element_size bytes to the sink. */
  std::function<void(Sink&)> write_data;
};

/** torch.save of the tuple `tensors` in the zip layout, entries under `folder/`. */
void save_tensor_tuple_zip(Sink& out, const std::vector<TensorToSave>& tensors, const std::string& folder,
                           const std::string& name);

/** torch.save of the tuple `tensors` in the legacy (pre-1.6) layout. */
void save_tensor_tuple_legacy(Sink& out, const std::vector<TensorToSave>& tensors, const std::string& name);

}  // namespace embshard::detail
