#pragma once
/**
 * @file byte_source.h
 * @brief Internal byte plumbing for torch.save files: growable buffers, read-only file maps,
 * sequential byte sources (memory or gzip stream) and byte sinks (string, file, gzip).
 *
 * Every failure throws `embshard::Error` whose message starts with the name given at
 * construction (the file name), so callers never need to re-wrap messages.
 */
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace embshard::detail {

// ---- little-endian helpers --------------------------------------------------------------------

inline std::uint16_t load_le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
inline std::uint32_t load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
inline std::uint64_t load_le64(const std::uint8_t* p) {
  return static_cast<std::uint64_t>(load_le32(p)) | (static_cast<std::uint64_t>(load_le32(p + 4)) << 32);
}
/** Appends `value` as `bytes` little-endian bytes to `out` (zero bytes beyond the eighth). */
inline void append_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(i < 8 ? static_cast<char>((value >> (8 * i)) & 0xFF) : '\0');
}

/** Reverses the byte order of `count` elements of `element_size` bytes in place. */
void byteswap_elements(std::uint8_t* data, std::uint64_t count, int element_size);

// ---- memory -----------------------------------------------------------------------------------

/**
 * Page-aligned anonymous memory that grows without copying (mremap) and is never
 * over-allocated from a header's claim: callers grow it as bytes actually arrive. Move-only.
 */
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  /** Ensures capacity for `bytes` bytes; throws Error prefixed by `name` if memory is short. */
  void reserve(std::size_t bytes, const std::string& name);
  /** Sets the size; `bytes` must not exceed the capacity. */
  void resize(std::size_t bytes);
  [[nodiscard]] std::uint8_t* data() { return data_; }
  [[nodiscard]] const std::uint8_t* data() const { return data_; }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  void release();
  std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

/** A read-only file descriptor plus, on request, a private read-only map of the whole file. */
class MappedFile {
 public:
  /** Opens `path`; throws Error naming it if it cannot be opened or is not a regular file. */
  explicit MappedFile(const std::string& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  /** Reads up to `n` bytes at `offset` (for format detection); returns the count read. */
  std::size_t read_at(std::uint64_t offset, void* dst, std::size_t n) const;
  /** Maps the whole file read-only (idempotent); returns its first byte (nullptr if empty). */
  const std::uint8_t* map();
  /** Drops the mapped pages of [p, p + n) from this process (they stay in the page cache). */
  void release(const std::uint8_t* p, std::size_t n) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint8_t* map_ = nullptr;
};

// ---- sources ----------------------------------------------------------------------------------

/**
 * A forward-only byte stream with a buffered window. `position()` counts bytes consumed from the
 * (decompressed) stream. Reading past the end throws Error "NAME: truncated ...".
 */
class ByteSource {
 public:
  explicit ByteSource(std::string name) : name_(std::move(name)) {}
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  virtual ~ByteSource() = default;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] std::uint64_t position() const { return window_pos_ + static_cast<std::uint64_t>(cur_ - window_); }
  /** Bytes left, when the source knows (memory); nullopt for streams. */
  [[nodiscard]] virtual std::optional<std::uint64_t> remaining() const { return std::nullopt; }

  std::uint8_t get() {
    if (cur_ == end_ && !fill(1)) fail_truncated(1);
    return *cur_++;
  }
  /** Reads exactly `n` bytes into `dst`. */
  void read(void* dst, std::size_t n);
  /** Skips exactly `n` bytes. */
  void skip(std::uint64_t n);
  /** The next `n` bytes without consuming them, or nullptr if the stream has fewer (n <= 64). */
  const std::uint8_t* peek(std::size_t n);
  /** True when no byte is left. */
  bool at_end() { return cur_ == end_ && !fill(1); }
  /** Consumes everything left (for a gzip stream: decompresses and checks it to the end). */
  void skip_rest() {
    while (cur_ != end_ || fill(1)) cur_ = end_;
  }
  /**
   * Consumes the next `n` bytes and returns a pointer to them in place when the source is
   * contiguous memory; returns nullptr (consuming nothing) for streams.
   */
  virtual const std::uint8_t* view(std::uint64_t n);

  [[noreturn]] void fail_truncated(std::uint64_t wanted) const;

 protected:
  /** Makes at least `n` bytes (n <= 64) available in [cur_, end_) if the stream has them. */
  virtual bool fill(std::size_t n) = 0;
  /**
   * Reads up to `n` bytes straight into `dst`, bypassing the (empty) window; returns 0 at the end
   * of the stream. Sources whose whole content is the window return 0.
   */
  virtual std::size_t read_direct(std::uint8_t* dst, std::size_t n);

  const std::uint8_t* window_ = nullptr;  ///< start of the buffered window
  const std::uint8_t* cur_ = nullptr;
  const std::uint8_t* end_ = nullptr;
  std::uint64_t window_pos_ = 0;  ///< stream position of window_

 private:
  std::string name_;
};

/**
 * Requires `src` to be at its end (for a gzip stream: every member decompressed and its CRC
 * checked). Otherwise throws "NAME: N bytes after WHAT (offset X): trailing data is not part of a
 * torch.save file" (N counted up to 64).
 */
void check_no_trailing_bytes(ByteSource& src, const char* what);

/** Bytes in memory (a mapped file, a string). */
class MemorySource : public ByteSource {
 public:
  MemorySource(const std::uint8_t* data, std::size_t size, std::string name);
  [[nodiscard]] std::optional<std::uint64_t> remaining() const override {
    return static_cast<std::uint64_t>(end_ - cur_);
  }
  const std::uint8_t* view(std::uint64_t n) override;

 protected:
  bool fill(std::size_t) override { return false; }
};

/**
 * Decompresses gzip data (one or more members) from memory or from a file descriptor, with
 * zlib's inflate. Corrupt data throws "NAME: corrupt gzip data ..."; an early end throws
 * "NAME: truncated ...". Trailing bytes after the last member are an error.
 */
class GzipSource : public ByteSource {
 public:
  GzipSource(const std::uint8_t* data, std::size_t size, std::string name);
  GzipSource(int fd, std::string name);
  ~GzipSource() override;
  /** Called with the compressed bytes consumed so far, each time more input is read. */
  void on_input(std::function<void(std::uint64_t)> callback) { on_input_ = std::move(callback); }

 protected:
  bool fill(std::size_t n) override;
  std::size_t read_direct(std::uint8_t* dst, std::size_t n) override;

 private:
  void init();
  bool refill_input();
  /** Inflates into [dst, dst + n); returns bytes produced, 0 only at the end of the stream. */
  std::size_t inflate_into(std::uint8_t* dst, std::size_t n);
  bool start_next_member();

  struct State;
  State* state_ = nullptr;
  const std::uint8_t* mem_ = nullptr;
  std::size_t mem_left_ = 0;
  int fd_ = -1;
  std::uint64_t input_read_ = 0;
  std::function<void(std::uint64_t)> on_input_;
  bool finished_ = false;
  std::vector<std::uint8_t> in_buf_;
  std::vector<std::uint8_t> out_buf_;
};

// ---- sinks ------------------------------------------------------------------------------------

/** Where encoded bytes go. `written()` counts bytes given to `write`. */
class Sink {
 public:
  Sink() = default;
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;
  virtual ~Sink() = default;
  void write(const void* data, std::size_t n) {
    if (n == 0) return;
    do_write(data, n);
    written_ += n;
  }
  void write(const std::string& bytes) { write(bytes.data(), bytes.size()); }
  /** Flushes everything to the destination; call once at the end. */
  virtual void finish() {}
  [[nodiscard]] std::uint64_t written() const { return written_; }

 protected:
  virtual void do_write(const void* data, std::size_t n) = 0;

 private:
  std::uint64_t written_ = 0;
};

class StringSink : public Sink {
 public:
  explicit StringSink(std::string& out) : out_(out) {}

 protected:
  void do_write(const void* data, std::size_t n) override { out_.append(static_cast<const char*>(data), n); }

 private:
  std::string& out_;
};

/**
 * Writes to a new file (or through a device / FIFO); `finish` flushes, syncs (where the file can
 * be synced) and closes it. Errors name `name` (default: `path`).
 */
class FileSink : public Sink {
 public:
  explicit FileSink(const std::string& path, const std::string& name = "");
  ~FileSink() override;
  void finish() override;

 protected:
  void do_write(const void* data, std::size_t n) override;

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

/** Compresses into gzip format and forwards to another sink. */
class GzipSink : public Sink {
 public:
  GzipSink(Sink& out, std::string name);
  ~GzipSink() override;
  void finish() override;

 protected:
  void do_write(const void* data, std::size_t n) override;

 private:
  void deflate_step(int flush);
  struct State;
  State* state_ = nullptr;
  Sink& out_;
  std::string name_;
  std::vector<std::uint8_t> out_buf_;
};

}  // namespace embshard::detail
