#include "data/torch_format/byte_source.h"

#define ZLIB_CONST
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"

namespace embshard::detail {
namespace {

constexpr std::size_t kInputChunk = std::size_t{1} << 20;
constexpr std::size_t kOutputChunk = std::size_t{1} << 18;
constexpr std::size_t kMaxZlibChunk = std::size_t{1} << 30;  // avail_in/out are 32-bit

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

}  // namespace

void byteswap_elements(std::uint8_t* data, std::uint64_t count, int element_size) {
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint8_t* e = data + i * static_cast<std::uint64_t>(element_size);
    std::reverse(e, e + element_size);
  }
}

// ---- Buffer -----------------------------------------------------------------------------------

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

Buffer::~Buffer() { release(); }

void Buffer::release() {
  if (data_ != nullptr) munmap(data_, capacity_);
  data_ = nullptr;
  size_ = capacity_ = 0;
}

void Buffer::reserve(std::size_t bytes, const std::string& name) {
  if (bytes <= capacity_) return;
  const std::size_t capacity = round_up(bytes, page_size());
  void* p = data_ == nullptr
                ? mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                : mremap(data_, capacity_, capacity, MREMAP_MAYMOVE);
  EMBSHARD_CHECK(p != MAP_FAILED, name, ": cannot allocate ", capacity, " bytes (", std::strerror(errno), ")");
  data_ = static_cast<std::uint8_t*>(p);
  capacity_ = capacity;
}

void Buffer::resize(std::size_t bytes) {
  if (bytes > capacity_) throw InternalError("Buffer::resize beyond capacity");
  size_ = bytes;
}

// ---- MappedFile -------------------------------------------------------------------------------

MappedFile::MappedFile(const std::string& path) : path_(path) {
  check_input_file(path, "");  // missing, a directory, a FIFO: said at once, never opened
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // O_NONBLOCK: a FIFO swapped in
  EMBSHARD_CHECK(fd_ >= 0, path, ": cannot open (", std::strerror(errno), ")");
  struct stat st {};
  if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    EMBSHARD_THROW(path, ": is not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

MappedFile::~MappedFile() {
  if (map_ != nullptr) munmap(map_, size_);
  if (fd_ >= 0) ::close(fd_);
}

std::size_t MappedFile::read_at(std::uint64_t offset, void* dst, std::size_t n) const {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = pread(fd_, static_cast<char*>(dst) + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    EMBSHARD_CHECK(got >= 0, path_, ": read failed (", std::strerror(errno), ")");
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

const std::uint8_t* MappedFile::map() {
  if (map_ != nullptr || size_ == 0) return map_;
  void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
  EMBSHARD_CHECK(p != MAP_FAILED, path_, ": cannot map (", std::strerror(errno), ")");
  madvise(p, size_, MADV_SEQUENTIAL);
  map_ = static_cast<std::uint8_t*>(p);
  return map_;
}

void MappedFile::release(const std::uint8_t* p, std::size_t n) const {
  if (map_ == nullptr || p < map_ || p + n > map_ + size_) return;
  const auto begin = round_up(reinterpret_cast<std::uintptr_t>(p), page_size());
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + n) / page_size() * page_size();
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

// ---- ByteSource -------------------------------------------------------------------------------

void ByteSource::fail_truncated(std::uint64_t wanted) const {
  EMBSHARD_THROW(name_, ": truncated file: needed ", wanted, " more byte(s) at offset ", position());
}

void ByteSource::read(void* dst, std::size_t n) {
  auto* out = static_cast<std::uint8_t*>(dst);
  while (n > 0) {
    if (cur_ == end_) {
      if (n >= 4096) {
        const std::size_t got = read_direct(out, n);
        if (got == 0) fail_truncated(n);
        window_pos_ += got;
        out += got;
        n -= got;
        continue;
      }
      if (!fill(1)) fail_truncated(n);
    }
    const std::size_t take = std::min(n, static_cast<std::size_t>(end_ - cur_));
    std::memcpy(out, cur_, take);
    cur_ += take;
    out += take;
    n -= take;
  }
}

void ByteSource::skip(std::uint64_t n) {
  while (n > 0) {
    if (cur_ == end_ && !fill(1)) fail_truncated(n);
    const auto take = std::min<std::uint64_t>(n, static_cast<std::uint64_t>(end_ - cur_));
    cur_ += take;
    n -= take;
  }
}

const std::uint8_t* ByteSource::peek(std::size_t n) {
  if (static_cast<std::size_t>(end_ - cur_) >= n || fill(n)) return cur_;
  return nullptr;
}

const std::uint8_t* ByteSource::view(std::uint64_t) { return nullptr; }

std::size_t ByteSource::read_direct(std::uint8_t*, std::size_t) { return 0; }

// ---- MemorySource -----------------------------------------------------------------------------

MemorySource::MemorySource(const std::uint8_t* data, std::size_t size, std::string name) : ByteSource(std::move(name)) {
  window_ = cur_ = data;
  end_ = data + size;
}

const std::uint8_t* MemorySource::view(std::uint64_t n) {
  if (n > static_cast<std::uint64_t>(end_ - cur_)) fail_truncated(n);
  const std::uint8_t* p = cur_;
  cur_ += n;
  return p;
}

void check_no_trailing_bytes(ByteSource& src, const char* what) {
  const std::uint64_t end = src.position();
  std::uint64_t extra = 0;
  while (extra < 64 && !src.at_end()) {
    (void)src.get();
    ++extra;
  }
  EMBSHARD_CHECK(extra == 0, src.name(), ": ", extra == 64 ? "64 or more" : std::to_string(extra), " bytes after ",
                 what, " (offset ", end, "): trailing data is not part of a torch.save file");
}

// ---- GzipSource -------------------------------------------------------------------------------

struct GzipSource::State {
  z_stream strm{};
};

GzipSource::GzipSource(const std::uint8_t* data, std::size_t size, std::string name)
    : ByteSource(std::move(name)), mem_(data), mem_left_(size) {
  init();
}

GzipSource::GzipSource(int fd, std::string name) : ByteSource(std::move(name)), fd_(fd) {
  in_buf_.resize(kInputChunk);
  init();
}

GzipSource::~GzipSource() {
  if (state_ != nullptr) inflateEnd(&state_->strm);
  delete state_;
}

void GzipSource::init() {
  state_ = new State;
  if (inflateInit2(&state_->strm, 15 + 16) != Z_OK) {
    delete state_;
    state_ = nullptr;
    EMBSHARD_THROW(name(), ": cannot initialise zlib");
  }
  out_buf_.resize(kOutputChunk);
  window_ = cur_ = end_ = out_buf_.data();
}

bool GzipSource::refill_input() {
  z_stream& strm = state_->strm;
  if (fd_ < 0) {
    if (mem_left_ == 0) return false;
    const std::size_t chunk = std::min(mem_left_, kMaxZlibChunk);
    strm.next_in = mem_;
    strm.avail_in = static_cast<uInt>(chunk);
    mem_ += chunk;
    mem_left_ -= chunk;
    return true;
  }
  ssize_t got = 0;
  do {
    got = ::read(fd_, in_buf_.data(), in_buf_.size());
  } while (got < 0 && errno == EINTR);
  EMBSHARD_CHECK(got >= 0, name(), ": read failed (", std::strerror(errno), ")");
  if (got == 0) return false;
  strm.next_in = in_buf_.data();
  strm.avail_in = static_cast<uInt>(got);
  input_read_ += static_cast<std::uint64_t>(got);
  if (on_input_) on_input_(input_read_);
  return true;
}

bool GzipSource::start_next_member() {
  z_stream& strm = state_->strm;
  if (strm.avail_in == 0 && !refill_input()) return false;
  EMBSHARD_CHECK(strm.next_in[0] == 0x1f, name(), ": corrupt gzip data (trailing bytes after the compressed stream)");
  EMBSHARD_CHECK(inflateReset(&strm) == Z_OK, name(), ": cannot reset zlib");
  return true;
}

std::size_t GzipSource::inflate_into(std::uint8_t* dst, std::size_t n) {
  z_stream& strm = state_->strm;
  std::size_t produced = 0;
  while (produced < n && !finished_) {
    if (strm.avail_in == 0 && !refill_input()) {
      EMBSHARD_THROW(name(), ": truncated file: the gzip stream ends early after ", position() + produced,
                     " decompressed bytes");
    }
    const std::size_t chunk = std::min(n - produced, kMaxZlibChunk);
    strm.next_out = dst + produced;
    strm.avail_out = static_cast<uInt>(chunk);
    const int ret = inflate(&strm, Z_NO_FLUSH);
    produced += chunk - strm.avail_out;
    if (ret == Z_STREAM_END) {
      if (!start_next_member()) finished_ = true;
    } else if (ret == Z_BUF_ERROR && strm.avail_in == 0) {
      continue;  // needs more input; the next iteration refills or reports truncation
    } else if (ret != Z_OK) {
      EMBSHARD_THROW(name(), ": corrupt gzip data (", strm.msg ? strm.msg : "zlib error ",
                     strm.msg ? "" : std::to_string(ret), ")");
    }
  }
  return produced;
}

bool GzipSource::fill(std::size_t n) {
  const auto have = static_cast<std::size_t>(end_ - cur_);
  if (have >= n) return true;
  if (finished_) return false;
  window_pos_ += static_cast<std::uint64_t>(cur_ - window_);
  std::memmove(out_buf_.data(), cur_, have);
  window_ = cur_ = out_buf_.data();
  end_ = window_ + have;
  while (static_cast<std::size_t>(end_ - cur_) < n && !finished_) {
    const std::size_t room = out_buf_.size() - static_cast<std::size_t>(end_ - window_);
    end_ += inflate_into(out_buf_.data() + (end_ - window_), room);
  }
  return static_cast<std::size_t>(end_ - cur_) >= n;
}

std::size_t GzipSource::read_direct(std::uint8_t* dst, std::size_t n) { return inflate_into(dst, n); }

// ---- sinks ------------------------------------------------------------------------------------

FileSink::FileSink(const std::string& path, const std::string& name) : path_(name.empty() ? path : name) {
  file_ = std::fopen(path.c_str(), "wb");
  EMBSHARD_CHECK(file_ != nullptr, path_, ": cannot write (", std::strerror(errno), ")");
  std::setvbuf(file_, nullptr, _IOFBF, kInputChunk);
}

FileSink::~FileSink() {
  if (file_ != nullptr) std::fclose(file_);
}

void FileSink::do_write(const void* data, std::size_t n) {
  EMBSHARD_CHECK(std::fwrite(data, 1, n, file_) == n, path_, ": write failed (", std::strerror(errno), ")");
}

void FileSink::finish() {
  // A device, FIFO or pipe cannot be synced (EINVAL); its bytes were written by the flush.
  const bool ok = std::fflush(file_) == 0 && (fsync(fileno(file_)) == 0 || errno == EINVAL);
  const int err = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  EMBSHARD_CHECK(ok && closed, path_, ": write failed (", std::strerror(err), ")");
}

struct GzipSink::State {
  z_stream strm{};
};

GzipSink::GzipSink(Sink& out, std::string name) : out_(out), name_(std::move(name)) {
  state_ = new State;
  if (deflateInit2(&state_->strm, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    delete state_;
    state_ = nullptr;
    EMBSHARD_THROW(name_, ": cannot initialise zlib");
  }
  out_buf_.resize(kOutputChunk);
}

GzipSink::~GzipSink() {
  if (state_ != nullptr) deflateEnd(&state_->strm);
  delete state_;
}

void GzipSink::deflate_step(int flush) {
  z_stream& strm = state_->strm;
  int ret = Z_OK;
  do {
    strm.next_out = out_buf_.data();
    strm.avail_out = static_cast<uInt>(out_buf_.size());
    ret = deflate(&strm, flush);
    EMBSHARD_CHECK(ret != Z_STREAM_ERROR, name_, ": gzip compression failed");
    out_.write(out_buf_.data(), out_buf_.size() - strm.avail_out);
  } while (strm.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
}

void GzipSink::do_write(const void* data, std::size_t n) {
  z_stream& strm = state_->strm;
  const auto* in = static_cast<const std::uint8_t*>(data);
  while (n > 0) {
    const std::size_t chunk = std::min(n, kMaxZlibChunk);
    strm.next_in = in;
    strm.avail_in = static_cast<uInt>(chunk);
    deflate_step(Z_NO_FLUSH);
    in += chunk;
    n -= chunk;
  }
}

void GzipSink::finish() {
  state_->strm.avail_in = 0;
  deflate_step(Z_FINISH);
}

}  // namespace embshard::detail
