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

/** Loads a torch.save file held in memory; gzip is detected and streamed. */
TorchFile load_torch_file(const std::uint8_t* data, std::uint64_t size, const std::string& name);

/**
 * Loads a gzip-compressed torch.save file from a file descriptor of `compressed_size` bytes;
 * `on_input`, if set, is called with the compressed bytes read so far as decompression proceeds.
 */
TorchFile load_torch_gzip_fd(int fd, std::uint64_t compressed_size, const std::string& name,
                             const std::function<void(std::uint64_t)>& on_input = nullptr);

[[nodiscard]] bool is_gzip_magic(const std::uint8_t* data, std::uint64_t size);

/** A tensor to save: contiguous, `sizes`, data produced by `write_data` (little-endian). */
struct TensorToSave {
  TensorType type = TensorType::kI64;
  std::vector<std::int64_t> sizes;
  /** Must write exactly numel × element_size bytes to the sink. */
  std::function<void(Sink&)> write_data;
};

/** torch.save of the tuple `tensors` in the zip layout, entries under `folder/`. */
void save_tensor_tuple_zip(Sink& out, const std::vector<TensorToSave>& tensors,
                           const std::string& folder, const std::string& name);

/** torch.save of the tuple `tensors` in the legacy (pre-1.6) layout. */
void save_tensor_tuple_legacy(Sink& out, const std::vector<TensorToSave>& tensors,
                              const std::string& name);

}  // namespace embshard::detail
