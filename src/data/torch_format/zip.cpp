#include "data/torch_format/zip.h"

#include <zlib.h>

#include <algorithm>

#include "embshard/core/error.h"

namespace embshard::detail {
namespace {

constexpr std::uint64_t kSaturated32 = 0xFFFFFFFFu;
constexpr std::uint64_t kMaxEndScan = 22 + 65535;  // end record plus the longest comment
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr int kAlignment = 64;

/** Replaces saturated 32-bit fields by the zip64 extra's 8-byte values (in zip order). */
void apply_zip64_extra(const std::uint8_t* extra, std::size_t len, std::initializer_list<std::uint64_t*> fields,
                       const std::string& name, const std::string& entry) {
  std::size_t p = 0;
  while (p + 4 <= len) {
    const std::uint16_t id = load_le16(extra + p);
    const std::size_t n = load_le16(extra + p + 2);
    if (p + 4 + n > len) break;
    if (id == kZip64ExtraId) {
      std::size_t q = p + 4;
      for (std::uint64_t* field : fields) {
        if (*field != kSaturated32) continue;
        EMBSHARD_CHECK(q + 8 <= p + 4 + n, name, ": zip64 extra field of '", entry, "' is too short");
        *field = load_le64(extra + q);
        q += 8;
      }
      return;
    }
    p += 4 + n;
  }
}

bool has_zip64_extra(const std::string& extra) {
  std::size_t p = 0;
  const auto* e = reinterpret_cast<const std::uint8_t*>(extra.data());
  while (p + 4 <= extra.size()) {
    if (load_le16(e + p) == kZip64ExtraId) return true;
    p += 4 + load_le16(e + p + 2);
  }
  return false;
}

/** Offset of the classic end record, scanning back from the end of the file. */
std::uint64_t find_end_record(const std::uint8_t* data, std::uint64_t size, const std::string& name) {
  EMBSHARD_CHECK(size >= 22, name, ": truncated zip (", size, " bytes; no end of central directory record)");
  const std::uint64_t lowest = size > kMaxEndScan ? size - kMaxEndScan : 0;
  for (std::uint64_t pos = size - 22 + 1; pos-- > lowest;) {
    if (load_le32(data + pos) == kZipEndRecord && pos + 22 + load_le16(data + pos + 20) <= size) return pos;
  }
  EMBSHARD_THROW(name, ": truncated or not a zip (no end of central directory record)");
}

struct DirectoryRange {
  std::uint64_t entries = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

DirectoryRange find_directory(const std::uint8_t* data, std::uint64_t size, const std::string& name) {
  const std::uint64_t end = find_end_record(data, size, name);
  const std::uint64_t zip_end = end + 22 + load_le16(data + end + 20);
  EMBSHARD_CHECK(zip_end == size, name, ": ", size - zip_end, " bytes after the end of the zip (offset ", zip_end,
                 "): trailing data is not part of a torch.save file");
  DirectoryRange dir{load_le16(data + end + 10), load_le32(data + end + 16), load_le32(data + end + 12)};
  if (end >= 20 && load_le32(data + end - 20) == kZip64Locator) {
    const std::uint64_t z64 = load_le64(data + end - 20 + 8);
    EMBSHARD_CHECK(z64 <= end - 20 && end - 20 - z64 >= 56 && load_le32(data + z64) == kZip64EndRecord, name,
                   ": bad zip64 end of central directory record (offset ", z64, ")");
    dir = {load_le64(data + z64 + 32), load_le64(data + z64 + 48), load_le64(data + z64 + 40)};
    EMBSHARD_CHECK(dir.offset <= z64 && dir.size <= z64 - dir.offset, name, ": central directory (offset ", dir.offset,
                   ", ", dir.size, " bytes) lies beyond the end of the file");
  }
  EMBSHARD_CHECK(dir.offset <= end && dir.size <= end - dir.offset, name, ": central directory (offset ", dir.offset,
                 ", ", dir.size, " bytes) lies beyond the end of the file");
  EMBSHARD_CHECK(dir.entries <= dir.size / 46, name, ": central directory claims ", dir.entries, " entries in ",
                 dir.size, " bytes");
  return dir;
}

/** Resolves the data offset of `e` through its local header at `header`. */
void resolve_local_header(const std::uint8_t* data, std::uint64_t size, std::uint64_t header, ZipEntry& e,
                          const std::string& name) {
  EMBSHARD_CHECK(header <= size && size - header >= 30 && load_le32(data + header) == kZipLocalHeader, name,
                 ": bad local header offset ", header, " for '", e.name, "'");
  const std::uint64_t name_len = load_le16(data + header + 26);
  const std::uint64_t extra_len = load_le16(data + header + 28);
  e.data_offset = header + 30 + name_len + extra_len;
  EMBSHARD_CHECK(e.data_offset <= size && e.compressed_size <= size - e.data_offset, name, ": record '", e.name, "' (",
                 e.compressed_size, " bytes at offset ", e.data_offset, ") lies beyond the end of the file (", size,
                 " bytes)");
  const std::string local(reinterpret_cast<const char*>(data + header + 30), name_len);
  EMBSHARD_CHECK(local == e.name, name, ": local header names '", local, "' but the central directory names '", e.name,
                 "'");
}

}  // namespace

std::vector<ZipEntry> read_zip_directory(const std::uint8_t* data, std::uint64_t size, const std::string& name) {
  const DirectoryRange dir = find_directory(data, size, name);
  std::vector<ZipEntry> entries;
  std::uint64_t p = dir.offset;
  const std::uint64_t end = dir.offset + dir.size;
  for (std::uint64_t i = 0; i < dir.entries; ++i) {
    EMBSHARD_CHECK(end - p >= 46 && load_le32(data + p) == kZipCentralHeader, name, ": bad central directory entry ", i,
                   " at offset ", p);
    const std::uint8_t* h = data + p;
    const std::uint64_t name_len = load_le16(h + 28);
    const std::uint64_t extra_len = load_le16(h + 30);
    const std::uint64_t comment_len = load_le16(h + 32);
    EMBSHARD_CHECK(end - p - 46 >= name_len + extra_len + comment_len, name, ": central directory entry ", i,
                   " runs past the directory");
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(h + 46), name_len);
    EMBSHARD_CHECK((load_le16(h + 8) & 1) == 0, name, ": record '", e.name, "' is encrypted");
    e.method = load_le16(h + 10);
    e.crc = load_le32(h + 16);
    e.compressed_size = load_le32(h + 20);
    e.size = load_le32(h + 24);
    std::uint64_t header = load_le32(h + 42);
    apply_zip64_extra(h + 46 + name_len, extra_len, {&e.size, &e.compressed_size, &header}, name, e.name);
    resolve_local_header(data, size, header, e, name);
    entries.push_back(std::move(e));
    p += 46 + name_len + extra_len + comment_len;
  }
  return entries;
}

std::string zip_top_folder(const std::string& entry_name, const std::string& file_name) {
  const auto slash = entry_name.find('/');
  EMBSHARD_CHECK(slash != std::string::npos && slash > 0, file_name, ": zip entry '", entry_name,
                 "' is not inside a top folder (not a torch.save file)");
  return entry_name.substr(0, slash);
}

void check_record_crc(const std::string& file, const std::string& record, std::uint32_t expected,
                      std::uint32_t actual) {
  EMBSHARD_CHECK(expected == actual, file, ": CRC-32 mismatch in record '", record, "' (stored 0x", std::hex, expected,
                 ", data gives 0x", actual, std::dec, "): the file is corrupt");
}

// ---- ZipStreamReader --------------------------------------------------------------------------

bool ZipStreamReader::next(ZipLocalRecord& rec) {
  const std::uint64_t at = src_.position();
  const std::uint8_t* sig = src_.peek(4);
  if (sig == nullptr) {
    EMBSHARD_THROW(src_.name(),
                   ": truncated file: zip data ends without a central directory "
                   "at offset ",
                   at);
  }
  const std::uint32_t s = load_le32(sig);
  if (s == kZipCentralHeader || s == kZip64EndRecord || s == kZipEndRecord) return false;
  EMBSHARD_CHECK(s == kZipLocalHeader, src_.name(), ": bad zip signature 0x", std::hex, s, std::dec, " at offset ", at,
                 " (expected a local file header)");
  std::uint8_t h[30];
  src_.read(h, sizeof h);
  rec = ZipLocalRecord{};
  rec.offset = at;
  rec.flags = load_le16(h + 6);
  rec.method = load_le16(h + 8);
  rec.header_crc = load_le32(h + 14);
  rec.name.resize(load_le16(h + 26));
  src_.read(rec.name.data(), rec.name.size());
  std::string extra(load_le16(h + 28), '\0');
  src_.read(extra.data(), extra.size());
  EMBSHARD_CHECK((rec.flags & 1) == 0, src_.name(), ": record '", rec.name, "' is encrypted");
  rec.has_descriptor = (rec.flags & 8) != 0;
  rec.zip64 = has_zip64_extra(extra);
  if (!rec.has_descriptor) {
    std::uint64_t usize = load_le32(h + 22);
    std::uint64_t csize = load_le32(h + 18);
    apply_zip64_extra(reinterpret_cast<const std::uint8_t*>(extra.data()), extra.size(), {&usize, &csize}, src_.name(),
                      rec.name);
    EMBSHARD_CHECK(usize == csize, src_.name(), ": record '", rec.name,
                   "' is compressed (torch.save stores records uncompressed)");
    rec.size = usize;
  }
  return true;
}

void ZipStreamReader::finish(const ZipLocalRecord& rec, std::uint64_t consumed, std::optional<std::uint32_t> crc) {
  if (!rec.has_descriptor) {
    EMBSHARD_CHECK(rec.size && *rec.size == consumed, src_.name(), ": record '", rec.name, "' holds ",
                   rec.size.value_or(0), " bytes, expected ", consumed);
    if (crc) check_record_crc(src_.name(), rec.name, rec.header_crc, *crc);
    return;
  }
  std::uint8_t d[24];
  src_.read(d, 4);
  if (load_le32(d) == kZipDataDescriptor) src_.read(d, 4);  // the signature is optional
  const int field = rec.zip64 ? 8 : 4;
  src_.read(d + 4, static_cast<std::size_t>(2 * field));
  const std::uint64_t csize = rec.zip64 ? load_le64(d + 4) : load_le32(d + 4);
  const std::uint64_t usize = rec.zip64 ? load_le64(d + 12) : load_le32(d + 8);
  EMBSHARD_CHECK(csize == consumed && usize == consumed, src_.name(), ": data descriptor of record '", rec.name,
                 "' gives ", usize, " bytes, but the record holds ", consumed);
  if (crc) check_record_crc(src_.name(), rec.name, load_le32(d), *crc);
}

namespace {
std::uint32_t crc_of(const std::string& bytes) {
  return static_cast<std::uint32_t>(
      crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<z_size_t>(bytes.size())));
}
}  // namespace

std::string ZipStreamReader::read_small(const ZipLocalRecord& rec, std::size_t max_bytes, bool verify_crc) {
  std::string buf;
  if (rec.size) {
    EMBSHARD_CHECK(*rec.size <= max_bytes, src_.name(), ": record '", rec.name, "' has ", *rec.size,
                   " bytes, more than the ", max_bytes, " expected");
    buf.resize(*rec.size);
    src_.read(buf.data(), buf.size());
    finish(rec, buf.size(), verify_crc ? std::optional(crc_of(buf)) : std::nullopt);
    return buf;
  }
  const std::size_t tail = rec.zip64 ? 24 : 16;
  for (;;) {
    EMBSHARD_CHECK(buf.size() <= max_bytes + tail && !src_.at_end(), src_.name(),
                   ": cannot find the data descriptor of record '", rec.name,
                   "' (none whose sizes match the bytes before it within ", max_bytes, " bytes)");
    buf.push_back(static_cast<char>(src_.get()));
    if (buf.size() < tail) continue;
    const std::size_t k = buf.size() - tail;
    const auto* d = reinterpret_cast<const std::uint8_t*>(buf.data()) + k;
    if (load_le32(d) != kZipDataDescriptor) continue;
    const std::uint64_t csize = rec.zip64 ? load_le64(d + 8) : load_le32(d + 8);
    const std::uint64_t usize = rec.zip64 ? load_le64(d + 16) : load_le32(d + 12);
    if (csize == k && usize == k) {
      const std::uint32_t stored = load_le32(d + 4);
      buf.resize(k);
      if (verify_crc) check_record_crc(src_.name(), rec.name, stored, crc_of(buf));
      return buf;
    }
  }
}

void ZipStreamReader::finish_archive() {
  for (;;) {
    const std::uint64_t at = src_.position();
    std::uint8_t h[46];
    src_.read(h, 4);
    const std::uint32_t s = load_le32(h);
    if (s == kZipCentralHeader) {
      src_.read(h + 4, 42);
      src_.skip(std::uint64_t{load_le16(h + 28)} + load_le16(h + 30) + load_le16(h + 32));
    } else if (s == kZip64EndRecord) {
      src_.read(h + 4, 8);
      src_.skip(load_le64(h + 4));
    } else if (s == kZip64Locator) {
      src_.skip(16);
    } else if (s == kZipEndRecord) {
      src_.read(h + 4, 18);
      src_.skip(load_le16(h + 20));
      break;
    } else {
      EMBSHARD_THROW(src_.name(), ": bad zip signature 0x", std::hex, s, std::dec, " at offset ", at,
                     " (expected the central directory or an end record)");
    }
  }
  check_no_trailing_bytes(src_, "the end of the zip");
}

// ---- ZipWriter --------------------------------------------------------------------------------

void ZipWriter::RecordSink::do_write(const void* data, std::size_t n) {
  crc = static_cast<std::uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), static_cast<z_size_t>(n)));
  out_.write(data, n);
}

ZipWriter::ZipWriter(Sink& out, std::string folder, std::string name, bool force_zip64)
    : out_(out), folder_(std::move(folder)), name_(std::move(name)), record_(out), force_zip64_(force_zip64) {}

void ZipWriter::begin(const std::string& record_name, std::uint64_t size) {
  EMBSHARD_ASSERT(!open_);
  Entry e;
  e.name = folder_ + "/" + record_name;
  e.header_offset = out_.written();
  e.size = size;
  e.zip64 = force_zip64_ || size >= kSaturated32;
  const bool zip64 = e.zip64;
  std::string extra;
  if (zip64) {
    append_le(extra, kZip64ExtraId, 2);
    append_le(extra, 16, 2);
    append_le(extra, 0, 8);
    append_le(extra, 0, 8);
  }
  const std::uint64_t unpadded = e.header_offset + 30 + e.name.size() + extra.size() + 4;
  const std::uint64_t pad = (kAlignment - unpadded % kAlignment) % kAlignment;
  extra += "FB";
  append_le(extra, pad, 2);
  extra.append(pad, 'Z');

  std::string h;
  append_le(h, kZipLocalHeader, 4);
  append_le(h, zip64 ? 45 : 0, 2);  // version needed (0 like PyTorch's writer)
  append_le(h, 0x0808, 2);          // data descriptor, UTF-8 names
  append_le(h, 0, 2);               // stored
  append_le(h, 0, 4);               // time, date
  append_le(h, 0, 12);              // crc and sizes follow the data
  append_le(h, e.name.size(), 2);
  append_le(h, extra.size(), 2);
  out_.write(h + e.name + extra);
  record_start_ = record_.written();
  record_.crc = 0;
  open_ = true;
  entries_.push_back(std::move(e));
}

void ZipWriter::end() {
  EMBSHARD_ASSERT(open_);
  Entry& e = entries_.back();
  EMBSHARD_ASSERT(record_.written() - record_start_ == e.size);
  e.crc = record_.crc;
  const int field = e.zip64 ? 8 : 4;
  std::string d;
  append_le(d, kZipDataDescriptor, 4);
  append_le(d, e.crc, 4);
  append_le(d, e.size, field);
  append_le(d, e.size, field);
  out_.write(d);
  open_ = false;
}

void ZipWriter::add(const std::string& record_name, const std::string& bytes) {
  begin(record_name, bytes.size());
  record_.write(bytes);
  end();
}

void ZipWriter::finish() {
  EMBSHARD_ASSERT(!open_);
  const std::uint64_t cd_offset = out_.written();
  for (const Entry& e : entries_) {
    auto field = [&](std::uint64_t v) { return force_zip64_ ? kSaturated32 : std::min(v, kSaturated32); };
    std::string fields;
    for (std::uint64_t v : {e.size, e.size, e.header_offset})
      if (field(v) == kSaturated32) append_le(fields, v, 8);
    std::string extra;
    if (!fields.empty()) {
      append_le(extra, kZip64ExtraId, 2);
      append_le(extra, fields.size(), 2);
      extra += fields;
    }
    std::string h;
    append_le(h, kZipCentralHeader, 4);
    append_le(h, 0, 2);                       // version made by
    append_le(h, extra.empty() ? 0 : 45, 2);  // version needed
    append_le(h, 0x0808, 2);
    append_le(h, 0, 2);
    append_le(h, 0, 4);
    append_le(h, e.crc, 4);
    append_le(h, field(e.size), 4);
    append_le(h, field(e.size), 4);
    append_le(h, e.name.size(), 2);
    append_le(h, extra.size(), 2);
    append_le(h, 0, 6);  // comment length, disk, internal attributes
    append_le(h, 0, 4);  // external attributes
    append_le(h, field(e.header_offset), 4);
    out_.write(h + e.name + extra);
  }
  const std::uint64_t cd_size = out_.written() - cd_offset;
  const std::uint64_t z64_offset = out_.written();
  const std::uint64_t n = entries_.size();
  std::string t;
  append_le(t, kZip64EndRecord, 4);
  append_le(t, 44, 8);
  append_le(t, 0x031e, 2);  // made by: unix, 3.0
  append_le(t, 45, 2);
  append_le(t, 0, 8);  // this disk, directory disk
  append_le(t, n, 8);
  append_le(t, n, 8);
  append_le(t, cd_size, 8);
  append_le(t, cd_offset, 8);
  append_le(t, kZip64Locator, 4);
  append_le(t, 0, 4);
  append_le(t, z64_offset, 8);
  append_le(t, 1, 4);
  const std::uint64_t count = force_zip64_ ? 0xFFFF : std::min<std::uint64_t>(n, 0xFFFF);
  append_le(t, kZipEndRecord, 4);
  append_le(t, 0, 4);
  append_le(t, count, 2);
  append_le(t, count, 2);
  append_le(t, force_zip64_ ? kSaturated32 : std::min(cd_size, kSaturated32), 4);
  append_le(t, force_zip64_ ? kSaturated32 : std::min(cd_offset, kSaturated32), 4);
  append_le(t, 0, 2);
  out_.write(t);
}

}  // namespace embshard::detail
