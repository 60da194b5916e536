#include "embshard/data/dlrm_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <sstream>

#include "data/torch_format/byte_source.h"
#include "data/torch_format/torch_file.h"
#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/core/parallel.h"
#include "embshard/core/progress.h"

namespace embshard {

const char* to_string(TensorType type) {
  switch (type) {
    case TensorType::kBool: return "bool";
    case TensorType::kU8: return "uint8";
    case TensorType::kI8: return "int8";
    case TensorType::kI16: return "int16";
    case TensorType::kI32: return "int32";
    case TensorType::kI64: return "int64";
    case TensorType::kF16: return "float16";
    case TensorType::kBF16: return "bfloat16";
    case TensorType::kF32: return "float32";
    case TensorType::kF64: return "float64";
  }
  return "?";
}

int element_size(TensorType type) {
  switch (type) {
    case TensorType::kBool:
    case TensorType::kU8:
    case TensorType::kI8: return 1;
    case TensorType::kI16:
    case TensorType::kF16:
    case TensorType::kBF16: return 2;
    case TensorType::kI32:
    case TensorType::kF32: return 4;
    case TensorType::kI64:
    case TensorType::kF64: return 8;
  }
  return 1;
}

namespace {

constexpr std::int64_t kMaxDimSize = std::int64_t{1} << 58;
constexpr std::int64_t kMaxTables = std::int64_t{1} << 16;         // the dataset has 856 (2021) or 788
constexpr std::int64_t kProgressMinLookups = 20'000'000;           // log progress above this size
constexpr std::uint64_t kLogReadBytes = std::uint64_t{100} << 20;  // log reading above this

/** Runs `f`, rethrowing any Error as a one-line Error (names inside a corrupt file may hold
 *  control characters). */
template <typename F>
decltype(auto) one_line_errors(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(detail::one_line(e.what()));
  }
}

/** One of the three tensors: contiguous, host byte order, int32 or int64. */
struct IntTensor {
  TensorType type = TensorType::kI64;
  const std::uint8_t* data = nullptr;
  std::int64_t numel = 0;
  std::vector<std::int64_t> sizes;

  template <typename T>
  [[nodiscard]] const T* as() const {
    return reinterpret_cast<const T*>(data);
  }
  [[nodiscard]] std::int64_t at(std::int64_t i) const {
    return type == TensorType::kI32 ? as<std::int32_t>()[i] : as<std::int64_t>()[i];
  }
};

/** Calls f(T{}) with T the C++ type of `type` (int32 or int64). */
template <typename F>
decltype(auto) with_int_type(TensorType type, F&& f) {
  if (type == TensorType::kI32) return f(std::int32_t{});
  return f(std::int64_t{});
}

bool is_contiguous(const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& strides) {
  std::int64_t expected = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 0) return true;
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

std::string join(const std::vector<std::int64_t>& v) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << "]";
  return out.str();
}

IntTensor tensor_view(const detail::TorchFile& file, const detail::PickleValue& v, const char* what, std::size_t dims,
                      const std::string& name) {
  EMBSHARD_CHECK(v.kind == detail::PickleKind::kTensor, name, ": ", what, " is a ", detail::to_string(v.kind),
                 ", not a tensor");
  const detail::TensorRecord& t = file.arena.tensors[v.ref];
  const detail::StorageRecord& s = file.arena.storages[t.storage];
  EMBSHARD_CHECK(s.type == TensorType::kI32 || s.type == TensorType::kI64, name, ": ", what, " has dtype ",
                 to_string(s.type), " (", s.class_name, "); expected int32 or int64");
  EMBSHARD_CHECK(t.sizes.size() == dims, name, ": ", what, " has ", t.sizes.size(), " dimension(s) ", join(t.sizes),
                 "; expected ", dims);
  IntTensor out;
  out.type = s.type;
  out.sizes = t.sizes;
  out.numel = 1;
  for (std::int64_t size : t.sizes) {
    EMBSHARD_CHECK(size <= kMaxDimSize && (size == 0 || out.numel <= kMaxDimSize / size), name, ": ", what,
                   " has absurd sizes ", join(t.sizes));
    out.numel *= size;
  }
  EMBSHARD_CHECK(is_contiguous(t.sizes, t.strides), name, ": ", what, " is not contiguous (sizes ", join(t.sizes),
                 ", strides ", join(t.strides), ")");
  EMBSHARD_CHECK(t.offset <= s.numel && out.numel <= s.numel - t.offset, name, ": ", what, " (", out.numel,
                 " elements at storage offset ", t.offset, ") runs past its storage of ", s.numel, " elements");
  out.data = file.storages[t.storage].data + t.offset * element_size(s.type);
  return out;
}

}  // namespace

// ---- reader -----------------------------------------------------------------------------------

struct DlrmFileReader::Impl {
  DlrmFileInfo info;
  std::string bytes;  // the file, for from_bytes
  std::unique_ptr<detail::MappedFile> mapped;
  detail::TorchFile torch;
  IntTensor indices;
  IntTensor offsets;
  IntTensor lengths;

  void open_path(const std::string& path, const Context* ctx) {
    mapped = std::make_unique<detail::MappedFile>(path);
    std::uint8_t magic[2] = {0, 0};
    const std::size_t got = mapped->read_at(0, magic, sizeof magic);
    if (detail::is_gzip_magic(magic, got)) {
      torch = detail::load_torch_gzip_fd(mapped->fd(), mapped->size(), path, progress_logger(ctx, mapped->size()));
      mapped.reset();  // everything now lives in owned buffers
    } else {
      detail::LoadOptions options;
      options.release = [m = mapped.get()](const std::uint8_t* p, std::size_t n) { m->release(p, n); };
      torch = detail::load_torch_file(mapped->map(), mapped->size(), path, options);
    }
  }

  /** The live line (core/progress.h) at every 1% of the compressed input of a large file. */
  std::function<void(std::uint64_t)> progress_logger(const Context* ctx, std::uint64_t total) const {
    if (ctx == nullptr || !ctx->progress || total < kLogReadBytes) return nullptr;
    return [ctx, total, path = info.path, last = std::uint64_t{0}](std::uint64_t read) mutable {
      const std::uint64_t step = read * 100 / total;
      if (step == last) return;
      last = step;
      ctx->progress(detail::concat(path, ": decompressed ", step, "% of the gzip input"));
    };
  }

  void interpret() {
    const std::string& name = info.path;
    const auto& root = torch.root;
    EMBSHARD_CHECK(root.kind == detail::PickleKind::kTuple || root.kind == detail::PickleKind::kList, name,
                   ": the saved object is a ", detail::to_string(root.kind),
                   "; expected a tuple (indices, offsets, lengths)");
    const auto& items = torch.arena.elements(root);
    EMBSHARD_CHECK(items.size() == 3, name, ": the saved tuple has ", items.size(),
                   " items; expected 3 tensors (indices, offsets, lengths)");
    indices = tensor_view(torch, items[0], "indices", 1, name);
    offsets = tensor_view(torch, items[1], "offsets", 1, name);
    lengths = tensor_view(torch, items[2], "lengths", 2, name);
    const std::int64_t T = lengths.sizes[0];
    const std::int64_t B = lengths.sizes[1];
    EMBSHARD_CHECK(T <= kMaxTables, name, ": lengths claims ", T, " tables (at most ", kMaxTables, " supported)");
    EMBSHARD_CHECK(offsets.numel - 1 == T * B, name, ": offsets has ", offsets.numel,
                   " entries; expected T*B + 1 = ", T * B + 1, " for lengths [", T, ", ", B, "]");
    const std::int64_t first = offsets.at(0);
    const std::int64_t last = offsets.at(T * B);
    EMBSHARD_CHECK(first == 0, name, ": offsets[0] = ", first,
                   "; expected 0 (offsets are absolute positions into indices)");
    EMBSHARD_CHECK(last == indices.numel, name, ": offsets end at ", last,
                   (last > indices.numel ? " (overrun)" : " (underrun)"), " but indices has ", indices.numel,
                   " entries");
    info.container = torch.container;
    info.gzipped = torch.gzipped;
    info.num_tables = T;
    info.batch_size = B;
    info.num_indices = indices.numel;
    info.indices_type = indices.type;
    info.offsets_type = offsets.type;
    info.lengths_type = lengths.type;
  }

  template <typename... Parts>
  [[noreturn]] void fail(std::int64_t t, std::int64_t b, Parts&&... parts) const {
    EMBSHARD_THROW(info.path, ": table ", t, " sample ", b, ": ", std::forward<Parts>(parts)...);
  }

  template <typename I, typename O, typename L>
  void check_table(std::int64_t t) const {
    const std::int64_t B = info.batch_size;
    const std::int64_t n = info.num_indices;
    const std::int64_t base = t * B;
    const O* off = offsets.as<O>() + base;
    const L* len = lengths.as<L>() + base;
    if (off[0] < 0 || off[0] > n) fail(t, 0, "offsets[", base, "] = ", off[0], " lies outside the ", n, " indices");
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t lo = off[b];
      const std::int64_t hi = off[b + 1];
      if (hi < lo)
        fail(t, b, "offsets decrease (offsets[", base + b + 1, "] = ", hi, " < offsets[", base + b, "] = ", lo, ")");
      if (hi > n) fail(t, b, "offsets[", base + b + 1, "] = ", hi, " overruns the ", n, " indices");
      if (len[b] != hi - lo) fail(t, b, "lengths[", t, "][", b, "] = ", len[b], " but offsets give ", hi - lo);
    }
    const I* idx = indices.as<I>();
    for (std::int64_t i = off[0]; i < off[B]; ++i) {
      if (idx[i] >= 0) continue;
      const std::int64_t b = std::upper_bound(off, off + B + 1, static_cast<O>(i)) - off - 1;
      fail(t, b, "negative index ", idx[i], " at indices[", i, "]");
    }
  }

  /** Calls f(I{}, O{}, L{}) with the file's three C++ element types. */
  template <typename F>
  void dispatch(F&& f) const {
    with_int_type(indices.type, [&](auto i) {
      with_int_type(offsets.type, [&](auto o) { with_int_type(lengths.type, [&](auto l) { f(i, o, l); }); });
    });
  }

  void check_table(std::int64_t t) const {
    dispatch([&](auto i, auto o, auto l) { check_table<decltype(i), decltype(o), decltype(l)>(t); });
  }

  void fill_batch(std::int64_t t, TableBatch& batch) const {
    dispatch([&](auto i, auto o, auto) {
      using I = decltype(i);
      using O = decltype(o);
      const std::int64_t B = info.batch_size;
      const O* off = offsets.as<O>() + t * B;
      batch.offsets.resize(static_cast<std::size_t>(B + 1));
      for (std::int64_t b = 0; b <= B; ++b) batch.offsets[b] = off[b] - off[0];
      const I* idx = indices.as<I>();
      batch.indices.assign(idx + off[0], idx + off[B]);
    });
  }

  TableStats table_stats(std::int64_t t) const {
    TableStats stats;
    dispatch([&](auto i, auto o, auto) {
      using I = decltype(i);
      using O = decltype(o);
      const O* off = offsets.as<O>() + t * info.batch_size;
      stats = compute_table_stats<I, O>(indices.as<I>() + off[0], off, info.batch_size);
    });
    return stats;
  }

  /** Drops table t's mapped pages from memory (a mapped file is re-read on demand). */
  void release_table(std::int64_t t) const {
    if (!mapped) return;
    const std::int64_t B = info.batch_size;
    const std::int64_t lo = offsets.at(t * B);
    const std::int64_t hi = offsets.at(t * B + B);
    const int isize = element_size(indices.type);
    mapped->release(indices.data + lo * isize, static_cast<std::size_t>((hi - lo) * isize));
    mapped->release(offsets.data + t * B * element_size(offsets.type),
                    static_cast<std::size_t>(B * element_size(offsets.type)));
    mapped->release(lengths.data + t * B * element_size(lengths.type),
                    static_cast<std::size_t>(B * element_size(lengths.type)));
  }
};

DlrmFileReader::DlrmFileReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->info.path = path;
  one_line_errors([&] {
    impl_->open_path(path, nullptr);
    impl_->interpret();
  });
}

DlrmFileReader::DlrmFileReader(const std::string& path, const Context& ctx) : impl_(std::make_unique<Impl>()) {
  impl_->info.path = path;
  one_line_errors([&] {
    impl_->open_path(path, &ctx);
    impl_->interpret();
  });
}

DlrmFileReader DlrmFileReader::from_bytes(std::string bytes, const std::string& name, bool verify_crc) {
  auto impl = std::make_unique<Impl>();
  impl->info.path = name;
  impl->bytes = std::move(bytes);
  one_line_errors([&] {
    detail::LoadOptions options;
    options.verify_crc = verify_crc;
    impl->torch = detail::load_torch_file(reinterpret_cast<const std::uint8_t*>(impl->bytes.data()), impl->bytes.size(),
                                          name, options);
    impl->interpret();
  });
  return DlrmFileReader(std::move(impl));
}

DlrmFileReader::DlrmFileReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DlrmFileReader::DlrmFileReader(DlrmFileReader&&) noexcept = default;
DlrmFileReader& DlrmFileReader::operator=(DlrmFileReader&&) noexcept = default;
DlrmFileReader::~DlrmFileReader() = default;

const DlrmFileInfo& DlrmFileReader::info() const { return impl_->info; }

void DlrmFileReader::for_each_table(const std::function<void(std::int64_t, const TableBatch&)>& visit) {
  TableBatch batch;
  for (std::int64_t t = 0; t < impl_->info.num_tables; ++t) {
    one_line_errors([&] { impl_->check_table(t); });
    impl_->fill_batch(t, batch);
    visit(t, batch);
    impl_->release_table(t);
  }
}

std::vector<TableStats> DlrmFileReader::compute_stats(const Context& ctx) {
  const Impl& im = *impl_;
  const std::int64_t T = im.info.num_tables;
  std::vector<TableStats> results(static_cast<std::size_t>(T));
  const bool big = im.info.num_indices >= kProgressMinLookups;
  const int workers = static_cast<int>(std::clamp<std::int64_t>(ctx.num_threads, 1, std::max<std::int64_t>(T, 1)));
  if (big) {
    ctx.info(detail::concat(im.info.path, ": statistics of ", T, " tables (", im.info.num_indices, " lookups) on ",
                            workers, " thread(s)"));
  }
  Progress progress(ctx, im.info.path + ": statistics of tables", T);
  one_line_errors([&] {
    parallel_for(static_cast<std::size_t>(T), workers, [&](std::size_t i) {
      const auto t = static_cast<std::int64_t>(i);
      im.check_table(t);
      results[i] = im.table_stats(t);
      im.release_table(t);
      progress.advance();
    });
  });
  if (big) progress.finish();
  return results;
}

std::vector<TableStats> compute_file_stats(const std::string& path, const Context& ctx) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size >= kLogReadBytes) ctx.info(detail::concat("reading ", path, " (", size, " bytes)"));
  DlrmFileReader reader(path, ctx);
  return reader.compute_stats(ctx);
}

// ---- writer -----------------------------------------------------------------------------------

namespace {

bool is_int_type(TensorType type) { return type == TensorType::kI32 || type == TensorType::kI64; }

std::int64_t max_of(TensorType type) {
  return type == TensorType::kI32 ? std::numeric_limits<std::int32_t>::max() : std::numeric_limits<std::int64_t>::max();
}

/** Checks the tables and options; returns the batch size. */
std::int64_t check_for_writing(const std::vector<TableBatch>& tables, const DlrmWriteOptions& options,
                               const std::string& where) {
  EMBSHARD_CHECK(options.container == "zip" || options.container == "legacy", where, ": unknown container '",
                 options.container, "' (expected zip or legacy)");
  EMBSHARD_CHECK(options.container != "zip" ||
                     (!options.archive_name.empty() && options.archive_name.find('/') == std::string::npos),
                 where, ": archive_name '", options.archive_name, "' must be a non-empty name without '/'");
  for (auto [what, type] : {std::pair{"indices", options.indices_type},
                            {"offsets", options.offsets_type},
                            {"lengths", options.lengths_type}}) {
    EMBSHARD_CHECK(is_int_type(type), where, ": ", what, " dtype ", to_string(type),
                   " is not supported (int32 or int64)");
  }
  const std::int64_t B = tables.empty() ? 0 : tables[0].batch_size();
  std::int64_t total = 0;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableBatch& batch = tables[t];
    const std::string err = find_error_in_batch(batch, 0, detail::concat(where, ": table ", t));
    EMBSHARD_CHECK(err.empty(), err);
    EMBSHARD_CHECK(batch.batch_size() == B, where, ": table ", t, " has batch size ", batch.batch_size(),
                   " but table 0 has ", B);
    for (std::size_t b = 0; b + 1 < batch.offsets.size(); ++b) {
      const std::int64_t len = batch.offsets[b + 1] - batch.offsets[b];
      EMBSHARD_CHECK(len <= max_of(options.lengths_type), where, ": table ", t, " sample ", b, ": length ", len,
                     " does not fit ", to_string(options.lengths_type));
    }
    for (std::int64_t v : batch.indices) {
      EMBSHARD_CHECK(v <= max_of(options.indices_type), where, ": table ", t, ": index ", v, " does not fit ",
                     to_string(options.indices_type), " indices");
    }
    total += static_cast<std::int64_t>(batch.indices.size());
  }
  EMBSHARD_CHECK(total <= max_of(options.offsets_type), where, ": ", total, " lookups do not fit ",
                 to_string(options.offsets_type), " offsets");
  return B;
}

/** Buffers values converted to T and writes them in chunks. */
template <typename T>
class ChunkWriter {
 public:
  explicit ChunkWriter(detail::Sink& out) : out_(out) { buf_.reserve(kChunk); }
  void push(std::int64_t v) {
    buf_.push_back(static_cast<T>(v));
    if (buf_.size() == kChunk) flush();
  }
  void flush() {
    out_.write(buf_.data(), buf_.size() * sizeof(T));
    buf_.clear();
  }

 private:
  static constexpr std::size_t kChunk = 1 << 16;
  detail::Sink& out_;
  std::vector<T> buf_;
};

template <typename F>
std::function<void(detail::Sink&)> typed_writer(TensorType type, F body) {
  return [type, body](detail::Sink& out) {
    with_int_type(type, [&](auto tag) {
      ChunkWriter<decltype(tag)> w(out);
      body(w);
      w.flush();
    });
  };
}

std::vector<detail::TensorToSave> dlrm_tensors(const std::vector<TableBatch>& tables, std::int64_t B,
                                               const DlrmWriteOptions& o) {
  const auto T = static_cast<std::int64_t>(tables.size());
  std::int64_t n = 0;
  for (const TableBatch& batch : tables) n += static_cast<std::int64_t>(batch.indices.size());
  std::vector<detail::TensorToSave> tensors(3);
  tensors[0] = {o.indices_type, {n}, typed_writer(o.indices_type, [&tables](auto& w) {
                  for (const TableBatch& batch : tables)
                    for (std::int64_t v : batch.indices) w.push(v);
                })};
  tensors[1] = {o.offsets_type, {T * B + 1}, typed_writer(o.offsets_type, [&tables](auto& w) {
                  std::int64_t base = 0;
                  w.push(0);
                  for (const TableBatch& batch : tables) {
                    for (std::size_t b = 1; b < batch.offsets.size(); ++b) w.push(base + batch.offsets[b]);
                    base += batch.offsets.back();
                  }
                })};
  tensors[2] = {o.lengths_type, {T, B}, typed_writer(o.lengths_type, [&tables](auto& w) {
                  for (const TableBatch& batch : tables)
                    for (std::size_t b = 1; b < batch.offsets.size(); ++b)
                      w.push(batch.offsets[b] - batch.offsets[b - 1]);
                })};
  return tensors;
}

/** Encodes tables already checked by check_for_writing (batch size B). */
void encode_to(detail::Sink& out, const std::vector<TableBatch>& tables, std::int64_t B,
               const DlrmWriteOptions& options, const std::string& where) {
  const std::vector<detail::TensorToSave> tensors = dlrm_tensors(tables, B, options);
  auto save = [&](detail::Sink& sink) {
    if (options.container == "zip")
      detail::save_tensor_tuple_zip(sink, tensors, options.archive_name, where);
    else
      detail::save_tensor_tuple_legacy(sink, tensors, where);
  };
  if (!options.gzip) {
    save(out);
    return;
  }
  detail::GzipSink gz(out, where);
  save(gz);
  gz.finish();
}

}  // namespace

void write_dlrm_file(const std::string& path, const std::vector<TableBatch>& tables, const DlrmWriteOptions& options) {
  const std::int64_t B = check_for_writing(tables, options, path);
  OutputFile out(path);                            // a unique temporary beside the target, or a device / FIFO / stdout
  if (out.written_through()) std::fflush(stdout);  // what was printed comes first
  detail::FileSink file(out.write_path(), path);
  encode_to(file, tables, B, options, path);
  file.finish();
  out.commit();
}

std::string encode_dlrm_file(const std::vector<TableBatch>& tables, const DlrmWriteOptions& options) {
  std::string out;
  detail::StringSink sink(out);
  const std::string where = "encode_dlrm_file";
  encode_to(sink, tables, check_for_writing(tables, options, where), options, where);
  return out;
}

}  // namespace embshard
