#include "data/torch_format/torch_file.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "data/torch_format/zip.h"
#include "embshard/core/error.h"

namespace embshard::detail {

static_assert(std::endian::native == std::endian::little, "embshard assumes a little-endian host");

namespace {

constexpr std::uint64_t kMaxDeflateRatio = 1100;  // deflate cannot expand by more than ~1032
constexpr std::uint64_t kMinGrowth = std::uint64_t{64} << 20;
constexpr std::size_t kMaxSmallRecord = std::size_t{1} << 20;
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 58;
/** Bytes of a mapped record CRC-checked at a time before its pages are dropped again. */
constexpr std::uint64_t kCrcChunk = std::uint64_t{64} << 20;
constexpr std::int64_t kLegacyProtocol = 1001;
/** 0x1950a86a20f9469cfc6c as little-endian bytes (LONG1). */
const std::string kLegacyMagic("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 10);

std::uint64_t storage_bytes(const StorageRecord& s, const std::string& name) {
  EMBSHARD_CHECK(static_cast<std::uint64_t>(s.numel) <= kMaxElements, name, ": storage '", s.key, "' claims an absurd ",
                 s.numel, " elements");
  return static_cast<std::uint64_t>(s.numel) * static_cast<std::uint64_t>(element_size(s.type));
}

/** CRC-32 of [data, data + n), continuing `crc`, in chunks zlib's 32-bit length can take. */
std::uint32_t crc_update(std::uint32_t crc, const std::uint8_t* data, std::uint64_t n) {
  return static_cast<std::uint32_t>(crc32_z(crc, data, static_cast<z_size_t>(n)));
}

/** State while loading one file. */
class Loader {
 public:
  Loader(const std::string& name, std::uint64_t budget, const LoadOptions& options)
      : name_(name), budget_(budget), options_(options) {}

  TorchFile& file() { return file_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] bool verify_crc() const { return options_.verify_crc; }

  /**
   * Checks the CRC-32 of a record that lies in the caller's memory (a mapped file), 64 MiB at a
   * time, handing each chunk to `options.release` so its pages are dropped again: one
   * sequential read of the record, never the whole file resident at once.
   */
  void check_memory_crc(const std::string& record, const std::uint8_t* data, std::uint64_t n,
                        std::uint32_t expected) const {
    if (!options_.verify_crc) return;
    std::uint32_t crc = 0;
    for (std::uint64_t done = 0; done < n; done += kCrcChunk) {
      const std::uint64_t len = std::min(kCrcChunk, n - done);
      crc = crc_update(crc, data + done, len);
      if (options_.release) options_.release(data + done, static_cast<std::size_t>(len));
    }
    check_record_crc(name_, record, expected, crc);
  }

  void set_byteorder(const std::string& text) {
    EMBSHARD_CHECK(text == "little" || text == "big", name_, ": byteorder record says '", text.substr(0, 16),
                   "' (expected 'little' or 'big')");
    big_endian_ = text == "big";
  }
  void set_big_endian(bool big) { big_endian_ = big; }
  [[nodiscard]] bool big_endian() const { return big_endian_; }

  void start_storages() {
    file_.storages.resize(file_.arena.storages.size());
    loaded_.assign(file_.arena.storages.size(), false);
  }
  [[nodiscard]] bool loaded(std::size_t i) const { return loaded_[i]; }

  /**
   * Reads `bytes` bytes of storage `i` from `src`, in place when `src` is memory. For a stream,
   * returns the CRC-32 of the bytes as they arrived (when CRCs are verified); else nullopt.
   */
  std::optional<std::uint32_t> read_storage(ByteSource& src, std::size_t i, std::uint64_t bytes) {
    const StorageRecord& s = file_.arena.storages[i];
    EMBSHARD_CHECK(!loaded_[i], name_, ": storage '", s.key, "' appears twice");
    loaded_[i] = true;
    LoadedStorage& out = file_.storages[i];
    out.bytes = bytes;
    if (const std::uint8_t* p = src.view(bytes)) {
      out.data = p;
      out.in_place = true;
      return std::nullopt;
    }
    EMBSHARD_CHECK(bytes <= budget_, name_, ": storage '", s.key, "' claims ", bytes,
                   " bytes, more than the compressed file can hold");
    budget_ -= bytes;
    std::uint64_t done = 0;
    std::uint32_t crc = 0;
    while (done < bytes) {  // grow as data arrives, never trusting the claim up front
      const std::uint64_t target = std::min(bytes, std::max(2 * done, kMinGrowth));
      out.owned.reserve(target, name_);
      src.read(out.owned.data() + done, target - done);
      if (options_.verify_crc) crc = crc_update(crc, out.owned.data() + done, target - done);
      done = target;
    }
    out.owned.resize(bytes);
    out.data = out.owned.data();
    return options_.verify_crc ? std::optional(crc) : std::nullopt;
  }

  /** Checks that every storage has data; fixes alignment and byte order. */
  void finish() {
    for (std::size_t i = 0; i < file_.storages.size(); ++i) {
      const StorageRecord& s = file_.arena.storages[i];
      EMBSHARD_CHECK(loaded_[i], name_, ": no data for storage '", s.key, "' (", s.class_name, ")");
      LoadedStorage& st = file_.storages[i];
      const int size = element_size(s.type);
      const bool misaligned = reinterpret_cast<std::uintptr_t>(st.data) % size != 0;
      if (st.in_place && (misaligned || (big_endian_ && size > 1))) {
        st.owned.reserve(st.bytes, name_);
        st.owned.resize(st.bytes);
        if (st.bytes > 0) std::memcpy(st.owned.data(), st.data, st.bytes);
        st.data = st.owned.data();
        st.in_place = false;
      }
      if (big_endian_ && size > 1)
        byteswap_elements(st.owned.data(), st.bytes / static_cast<std::uint64_t>(size), size);
    }
  }

 private:
  const std::string& name_;
  std::uint64_t budget_;
  const LoadOptions& options_;
  TorchFile file_;
  std::vector<bool> loaded_;
  bool big_endian_ = false;
};

std::size_t find_storage(const PickleArena& arena, const std::string& key) {
  for (std::size_t i = 0; i < arena.storages.size(); ++i)
    if (arena.storages[i].key == key) return i;
  return arena.storages.size();
}

// ---- zip --------------------------------------------------------------------------------------

void check_stored(const std::string& name, const std::string& record, std::uint16_t method) {
  EMBSHARD_CHECK(method == 0, name, ": record '", record, "' is compressed (method ", method,
                 "); torch.save stores records uncompressed");
}

void load_zip_memory(Loader& ld, const std::uint8_t* data, std::uint64_t size) {
  const std::string& name = ld.name();
  const std::vector<ZipEntry> entries = read_zip_directory(data, size, name);
  EMBSHARD_CHECK(!entries.empty(), name, ": zip has no records");
  const std::string prefix = zip_top_folder(entries[0].name, name) + "/";
  std::unordered_map<std::string, const ZipEntry*> by_name;
  for (const ZipEntry& e : entries) by_name.emplace(e.name, &e);
  auto find = [&](const std::string& rel) -> const ZipEntry* {
    auto it = by_name.find(prefix + rel);
    if (it == by_name.end()) return nullptr;
    check_stored(name, it->second->name, it->second->method);
    EMBSHARD_CHECK(it->second->compressed_size == it->second->size, name, ": record '", it->second->name,
                   "' has different compressed and uncompressed sizes");
    return it->second;
  };

  const ZipEntry* pkl = find("data.pkl");
  EMBSHARD_CHECK(pkl != nullptr, name, ": no record '", prefix, "data.pkl' (not a torch.save file)");
  const std::uint8_t* pkl_data = data + pkl->data_offset;
  ld.check_memory_crc(pkl->name, pkl_data, pkl->size, pkl->crc);
  MemorySource pickle_src(pkl_data, pkl->size, name);
  TorchFile& file = ld.file();
  file.root = read_pickle(pickle_src, file.arena, "data.pkl");
  if (const ZipEntry* order = find("byteorder")) {
    ld.check_memory_crc(order->name, data + order->data_offset, order->size, order->crc);
    ld.set_byteorder(std::string(reinterpret_cast<const char*>(data + order->data_offset),
                                 std::min<std::uint64_t>(order->size, 64)));
  }

  ld.start_storages();
  for (std::size_t i = 0; i < file.arena.storages.size(); ++i) {
    const StorageRecord& s = file.arena.storages[i];
    const ZipEntry* e = find("data/" + s.key);
    EMBSHARD_CHECK(e != nullptr, name, ": record '", prefix, "data/", s.key, "' for storage '", s.key, "' is missing");
    const std::uint64_t bytes = storage_bytes(s, name);
    EMBSHARD_CHECK(e->size == bytes, name, ": record '", e->name, "' holds ", e->size, " bytes but storage '", s.key,
                   "' (", s.class_name, ", ", s.numel, " elements) needs ", bytes);
    ld.check_memory_crc(e->name, data + e->data_offset, e->size, e->crc);
    MemorySource src(data + e->data_offset, e->size, name);
    ld.read_storage(src, i, bytes);
  }
}

void read_stream_pickle(Loader& ld, ZipStreamReader& zip, const ZipLocalRecord& rec) {
  check_stored(ld.name(), rec.name, rec.method);
  // The whole record first (at most kMaxPickleBytes), so that its CRC is checked before parsing.
  const std::string bytes = zip.read_small(rec, kMaxPickleBytes, ld.verify_crc());
  MemorySource pickle_src(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), ld.name());
  TorchFile& file = ld.file();
  file.root = read_pickle(pickle_src, file.arena, "data.pkl");
  ld.start_storages();
}

/** Skips a record the reader does not use (its CRC is not checked: its bytes are not used). */
void skip_stream_record(ByteSource& src, ZipStreamReader& zip, const ZipLocalRecord& rec) {
  if (rec.size) {
    src.skip(*rec.size);
    zip.finish(rec, *rec.size);
  } else {
    (void)zip.read_small(rec, kMaxSmallRecord, false);
  }
}

void load_zip_stream(Loader& ld, ByteSource& src) {
  const std::string& name = ld.name();
  ZipStreamReader zip(src);
  ZipLocalRecord rec;
  std::string prefix;
  while (zip.next(rec)) {
    if (prefix.empty()) {
      prefix = zip_top_folder(rec.name, name) + "/";
      EMBSHARD_CHECK(rec.name == prefix + "data.pkl", name, ": first zip record is '", rec.name, "', expected '",
                     prefix, "data.pkl' (a gzipped file is read in order)");
      read_stream_pickle(ld, zip, rec);
      continue;
    }
    const std::string rel = rec.name.starts_with(prefix) ? rec.name.substr(prefix.size()) : std::string();
    const PickleArena& arena = ld.file().arena;
    const std::size_t i = rel.starts_with("data/") ? find_storage(arena, rel.substr(5)) : arena.storages.size();
    if (i < arena.storages.size()) {
      check_stored(name, rec.name, rec.method);
      const std::uint64_t bytes = storage_bytes(arena.storages[i], name);
      EMBSHARD_CHECK(!rec.size || *rec.size == bytes, name, ": record '", rec.name, "' holds ", rec.size.value_or(0),
                     " bytes but its storage needs ", bytes);
      const std::optional<std::uint32_t> crc = ld.read_storage(src, i, bytes);
      zip.finish(rec, bytes, crc);
    } else if (rel == "byteorder") {
      ld.set_byteorder(zip.read_small(rec, 64, ld.verify_crc()));
    } else {
      EMBSHARD_CHECK(rel != "data.pkl", name, ": record '", rec.name, "' appears twice");
      skip_stream_record(src, zip, rec);
    }
  }
  EMBSHARD_CHECK(!prefix.empty(), name, ": zip has no records");
  zip.finish_archive();
}

// ---- legacy -----------------------------------------------------------------------------------

void load_legacy(Loader& ld, ByteSource& src) {
  const std::string& name = ld.name();
  TorchFile& file = ld.file();
  PickleArena& arena = file.arena;
  const PickleValue magic = read_pickle(src, arena, "the legacy magic number");
  EMBSHARD_CHECK(magic.kind == PickleKind::kBigInt && arena.text(magic) == kLegacyMagic, name,
                 ": bad magic number (not a torch.save file)");
  const PickleValue protocol = read_pickle(src, arena, "the legacy protocol version");
  EMBSHARD_CHECK(protocol.kind == PickleKind::kInt && protocol.number == kLegacyProtocol, name,
                 ": unsupported legacy protocol version (expected 1001)");
  const PickleValue sys = read_pickle(src, arena, "the legacy sys_info");
  EMBSHARD_CHECK(sys.kind == PickleKind::kDict, name, ": legacy sys_info is not a dict");
  const std::vector<PickleValue> info = arena.elements(sys);
  for (std::size_t k = 0; k + 1 < info.size(); k += 2) {
    if (info[k].kind == PickleKind::kString && arena.text(info[k]) == "little_endian" &&
        info[k + 1].kind == PickleKind::kBool)
      ld.set_big_endian(info[k + 1].number == 0);
  }
  file.root = read_pickle(src, arena, "the legacy object pickle");
  const PickleValue keys = read_pickle(src, arena, "the legacy storage key list");
  EMBSHARD_CHECK(keys.kind == PickleKind::kList, name, ": legacy storage keys are not a list");
  ld.start_storages();
  const std::vector<PickleValue> key_list = arena.elements(keys);
  for (const PickleValue& key : key_list) {
    EMBSHARD_CHECK(key.kind == PickleKind::kString, name, ": legacy storage key is not a string");
    const std::size_t i = find_storage(arena, arena.text(key));
    EMBSHARD_CHECK(i < arena.storages.size(), name, ": legacy storage key '", arena.text(key).substr(0, 40),
                   "' is not used by the saved object");
    const StorageRecord& s = arena.storages[i];
    std::uint8_t count_bytes[8];
    src.read(count_bytes, 8);
    std::uint64_t count = load_le64(count_bytes);
    if (ld.big_endian()) count = __builtin_bswap64(count);
    EMBSHARD_CHECK(count == static_cast<std::uint64_t>(s.numel), name, ": storage '", s.key, "' holds ", count,
                   " elements but the pickle says ", s.numel);
    ld.read_storage(src, i, storage_bytes(s, name));
  }
}

// ---- dispatch ---------------------------------------------------------------------------------

TorchFile finish(Loader& ld, const char* container, bool gzipped) {
  ld.finish();
  TorchFile& file = ld.file();
  file.container = container;
  file.gzipped = gzipped;
  return std::move(file);
}

std::string leading_bytes(const std::uint8_t* p, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%s%02x", i ? " " : "", p[i]);
    out += hex;
  }
  return out;
}

TorchFile load_gzip(ByteSource& src, std::uint64_t compressed_size, const std::string& name,
                    const LoadOptions& options) {
  const std::uint64_t budget = compressed_size > std::numeric_limits<std::uint64_t>::max() / kMaxDeflateRatio
                                   ? std::numeric_limits<std::uint64_t>::max()
                                   : compressed_size * kMaxDeflateRatio;
  Loader ld(name, budget, options);
  const std::uint8_t* head = src.peek(2);
  EMBSHARD_CHECK(head != nullptr, name, ": gzip data is too short to be a torch.save file");
  const char* container = "zip";
  if (head[0] == 'P' && head[1] == 'K') {
    load_zip_stream(ld, src);
  } else if (head[0] == 0x80) {
    container = "legacy";
    load_legacy(ld, src);
    check_no_trailing_bytes(src, "the last storage");
  } else {
    EMBSHARD_THROW(name, ": gzip content is not a torch.save file (starts with ", leading_bytes(head, 2), ")");
  }
  src.skip_rest();  // at the end already: zlib has checked every member's gzip CRC
  return finish(ld, container, true);
}

}  // namespace

bool is_gzip_magic(const std::uint8_t* data, std::uint64_t size) {
  return size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
}

TorchFile load_torch_file(const std::uint8_t* data, std::uint64_t size, const std::string& name,
                          const LoadOptions& options) {
  EMBSHARD_CHECK(size > 0, name, ": empty file");
  if (is_gzip_magic(data, size)) {
    GzipSource src(data, size, name);
    return load_gzip(src, size, name, options);
  }
  Loader ld(name, std::numeric_limits<std::uint64_t>::max(), options);
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
    load_zip_memory(ld, data, size);
    return finish(ld, "zip", false);
  }
  EMBSHARD_CHECK(data[0] == 0x80, name, ": not a torch.save file (starts with ",
                 leading_bytes(data, std::min<std::uint64_t>(size, 4)), ")");
  MemorySource src(data, size, name);
  load_legacy(ld, src);
  check_no_trailing_bytes(src, "the last storage");
  return finish(ld, "legacy", false);
}

TorchFile load_torch_gzip_fd(int fd, std::uint64_t compressed_size, const std::string& name,
                             const std::function<void(std::uint64_t)>& on_input, const LoadOptions& options) {
  GzipSource src(fd, name);
  src.on_input(on_input);
  return load_gzip(src, compressed_size, name, options);
}

// ---- saving -----------------------------------------------------------------------------------

namespace {

std::int64_t numel_of(const TensorToSave& t) {
  std::int64_t n = 1;
  for (std::int64_t s : t.sizes) n *= s;
  return n;
}

/** A tuple of ints, memoized like Python's pickler does (an empty tuple is not). */
void int_tuple(PickleWriter& w, const std::vector<std::int64_t>& values) {
  if (values.size() > 3) w.op(pickle_op::kMark);
  for (std::int64_t v : values) w.integer(v);
  w.tuple(static_cast<int>(values.size()));
  if (!values.empty()) w.memoize();
}

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> strides(sizes.size());
  std::int64_t stride = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<std::int64_t>(sizes[d], 1);
  }
  return strides;
}

/**
 * The pickle of the tuple, with persistent ids of 5 fields (zip) or 6 (legacy). Memo puts follow
 * Python's pickler, so the bytes equal those torch.save writes for the same tensors.
 */
std::string tuple_pickle(const std::vector<TensorToSave>& tensors, const std::vector<std::string>& keys, bool legacy) {
  using namespace pickle_op;
  PickleWriter w;
  w.proto(2);
  if (tensors.size() > 3) w.op(kMark);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorToSave& t = tensors[i];
    w.global("torch._utils", "_rebuild_tensor_v2");
    w.op(kMark);
    w.op(kMark);
    w.memo_unicode("storage");
    w.global("torch", storage_class_name(t.type));
    w.memo_unicode(keys[i]);
    w.memo_unicode("cpu");
    w.integer(numel_of(t));
    if (legacy) w.op(kNone);
    w.op(kTuple);
    w.memoize();
    w.op(kBinPersId);
    w.integer(0);
    int_tuple(w, t.sizes);
    int_tuple(w, contiguous_strides(t.sizes));
    w.op(kNewFalse);
    w.global("collections", "OrderedDict");
    w.op(kEmptyTuple);
    w.op(kReduce);
    w.memoize();
    w.op(kTuple);
    w.memoize();
    w.op(kReduce);
    w.memoize();
  }
  w.tuple(static_cast<int>(tensors.size()));
  if (!tensors.empty()) w.memoize();
  w.op(kStop);
  return w.bytes();
}

std::vector<std::string> storage_keys(std::size_t n) {
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < n; ++i) keys.push_back(std::to_string(i));
  return keys;
}

void write_tensor_data(Sink& out, const TensorToSave& t) {
  const std::uint64_t start = out.written();
  t.write_data(out);
  EMBSHARD_ASSERT(out.written() - start ==
                  static_cast<std::uint64_t>(numel_of(t)) * static_cast<std::uint64_t>(element_size(t.type)));
}

}  // namespace

void save_tensor_tuple_zip(Sink& out, const std::vector<TensorToSave>& tensors, const std::string& folder,
                           const std::string& name) {
  const std::vector<std::string> keys = storage_keys(tensors.size());
  ZipWriter zip(out, folder, name);
  zip.add("data.pkl", tuple_pickle(tensors, keys, false));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::uint64_t bytes =
        static_cast<std::uint64_t>(numel_of(tensors[i])) * static_cast<std::uint64_t>(element_size(tensors[i].type));
    zip.begin("data/" + keys[i], bytes);
    write_tensor_data(zip.record(), tensors[i]);
    zip.end();
  }
  zip.add("version", "3\n");
  zip.finish();
}

void save_tensor_tuple_legacy(Sink& out, const std::vector<TensorToSave>& tensors, const std::string&) {
  using namespace pickle_op;
  const std::vector<std::string> keys = storage_keys(tensors.size());
  PickleWriter magic;
  magic.proto(2);
  magic.long1(kLegacyMagic);
  magic.op(kStop);
  PickleWriter protocol;
  protocol.proto(2);
  protocol.integer(kLegacyProtocol);
  protocol.op(kStop);
  PickleWriter sys;
  sys.proto(2);
  sys.op(kEmptyDict);
  sys.memoize();
  sys.op(kMark);
  sys.memo_unicode("protocol_version");
  sys.integer(kLegacyProtocol);
  sys.memo_unicode("little_endian");
  sys.op(kNewTrue);
  sys.memo_unicode("type_sizes");
  sys.op(kEmptyDict);
  sys.memoize();
  sys.op(kMark);
  for (auto [type, size] : {std::pair{"short", 2}, {"int", 4}, {"long", 8}}) {
    sys.memo_unicode(type);
    sys.integer(size);
  }
  sys.op(kSetItems);
  sys.op(kSetItems);
  sys.op(kStop);
  out.write(magic.bytes() + protocol.bytes() + sys.bytes() + tuple_pickle(tensors, keys, true));

  std::vector<std::size_t> order(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  PickleWriter list;
  list.proto(2);
  list.op(kEmptyList);
  list.memoize();
  list.op(kMark);
  for (std::size_t i : order) list.memo_unicode(keys[i]);
  list.op(kAppends);
  list.op(kStop);
  out.write(list.bytes());
  for (std::size_t i : order) {
    std::string count;
    append_le(count, static_cast<std::uint64_t>(numel_of(tensors[i])), 8);
    out.write(count);
    write_tensor_data(out, tensors[i]);
  }
}

}  // namespace embshard::detail
