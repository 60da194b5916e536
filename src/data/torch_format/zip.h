#pragma once
/**
 * @file zip.h
 * @brief The subset of the zip format that torch.save uses (stored records, zip64 end records,
 * data descriptors, 64-byte aligned data), read either through the central directory (seekable
 * memory) or record by record (a gzip stream), and written like PyTorch's writer.
 *
 * See shared/docs/references/fbgemm-dlrm-data.md §1.4. Errors name the file and, where it
 * helps, the record and the byte offset.
 */
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/torch_format/byte_source.h"

namespace embshard::detail {

inline constexpr std::uint32_t kZipLocalHeader = 0x04034b50;
inline constexpr std::uint32_t kZipCentralHeader = 0x02014b50;
inline constexpr std::uint32_t kZipDataDescriptor = 0x08074b50;
inline constexpr std::uint32_t kZip64EndRecord = 0x06064b50;
inline constexpr std::uint32_t kZip64Locator = 0x07064b50;
inline constexpr std::uint32_t kZipEndRecord = 0x06054b50;

/** One record found through the central directory. */
struct ZipEntry {
  std::string name;
  std::uint16_t method = 0;  ///< 0 = stored
  std::uint32_t crc = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t size = 0;         ///< uncompressed
  std::uint64_t data_offset = 0;  ///< from the local header's name and extra lengths
};

/**
 * Parses the central directory of the zip in [data, data + size): finds the end record
 * (following the zip64 locator when present), walks the entries and resolves every data offset
 * through its local header. Checks that every range lies inside the file.
 */
std::vector<ZipEntry> read_zip_directory(const std::uint8_t* data, std::uint64_t size, const std::string& name);

/** The top folder of an entry name: everything before the first '/' (throws if there is none). */
std::string zip_top_folder(const std::string& entry_name, const std::string& file_name);

/** A local record met while reading a zip front to back. */
struct ZipLocalRecord {
  std::string name;
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  bool has_descriptor = false;        ///< flag bit 3: sizes follow the data
  bool zip64 = false;                 ///< local zip64 extra: the descriptor has 8-byte sizes
  std::optional<std::uint64_t> size;  ///< known when there is no descriptor
  std::uint32_t header_crc = 0;       ///< the local header's CRC-32 (used without a descriptor)
  std::uint64_t offset = 0;           ///< stream offset of the local header
};

/**
 * The CRC-32 check of a record: "" if `actual` equals `expected`, else the one-line error
 * "NAME: CRC-32 mismatch in record 'R' (stored 0x..., data gives 0x...): the file is corrupt".
 */
void check_record_crc(const std::string& file, const std::string& record, std::uint32_t expected, std::uint32_t actual);

/** Reads local records in order from a stream (no seeking), as needed for a gzipped zip. */
class ZipStreamReader {
 public:
  explicit ZipStreamReader(ByteSource& src) : src_(src) {}
  /** Reads the next local header into `rec`; false once the central directory starts. */
  bool next(ZipLocalRecord& rec);
  /**
   * After the caller consumed `consumed` data bytes of `rec`, checks its data descriptor and,
   * when `crc` (the CRC-32 of those bytes) is given, the record's stored CRC-32.
   */
  void finish(const ZipLocalRecord& rec, std::uint64_t consumed, std::optional<std::uint32_t> crc = std::nullopt);
  /**
   * Reads a whole record (at most `max_bytes`) and checks its CRC-32 unless `verify_crc` is
   * false. Without a known size (bit 3 set) it scans for a data descriptor whose size fields
   * equal the bytes before it.
   */
  std::string read_small(const ZipLocalRecord& rec, std::size_t max_bytes, bool verify_crc);
  /**
   * After `next` returned false: reads the central directory, the zip64 end records and the end
   * record (with its comment), then requires the stream to end there. Bytes after the end of the
   * zip are an error naming the file and the offset.
   */
  void finish_archive();

 private:
  ByteSource& src_;
};

/**
 * Writes a zip like PyTorch's `PyTorchStreamWriter`: records stored, data aligned to 64 bytes
 * by an "FB" padding extra field, sizes and CRC in a data descriptor after each record and in
 * the central directory, and zip64 end records always present.
 */
class ZipWriter {
 public:
  /**
   * `force_zip64` writes every size and offset through zip64 fields, as PyTorch does for records
   * of 4 GiB and more (lets tests cover that path with small files).
   */
  ZipWriter(Sink& out, std::string folder, std::string name, bool force_zip64 = false);
  /** Starts record `folder/record_name`; exactly `size` bytes must then go to `record()`. */
  void begin(const std::string& record_name, std::uint64_t size);
  [[nodiscard]] Sink& record() { return record_; }
  void end();
  /** Writes a whole small record. */
  void add(const std::string& record_name, const std::string& bytes);
  /** Writes the central directory and end records. */
  void finish();

 private:
  struct Entry {
    std::string name;
    std::uint64_t header_offset = 0;
    std::uint64_t size = 0;
    std::uint32_t crc = 0;
    bool zip64 = false;
  };
  class RecordSink : public Sink {
   public:
    explicit RecordSink(Sink& out) : out_(out) {}
    std::uint32_t crc = 0;

   protected:
    void do_write(const void* data, std::size_t n) override;

   private:
    Sink& out_;
  };

  Sink& out_;
  std::string folder_;
  std::string name_;
  RecordSink record_;
  std::vector<Entry> entries_;
  std::uint64_t record_start_ = 0;  ///< record_.written() when the open record began
  bool force_zip64_ = false;
  bool open_ = false;
};

}  // namespace embshard::detail
