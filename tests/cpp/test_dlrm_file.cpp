// The DLRM dataset reader and writer: fixtures written by PyTorch, writer -> reader round trips
// over every dtype and container, and corrupt input (each must be one embshard::Error naming the
// file, never a crash or a hang).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "data/torch_format/byte_source.h"
#include "data/torch_format/pickle.h"
#include "data/torch_format/torch_file.h"
#include "data/torch_format/zip.h"
#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/data/dlrm_file.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;
using test_util::expect_same_stats;

namespace fs = std::filesystem;
const std::string kFixtures = std::string(EMBSHARD_TEST_DATA_DIR) + "/fixtures/";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

Context quiet(int threads = 1) {
  Context ctx;
  ctx.num_threads = threads;
  ctx.verbosity = LogLevel::kQuiet;
  return ctx;
}

std::string temp_path(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / "embshard_dlrm_file";
  fs::create_directories(dir);
  return (dir / name).string();
}

std::vector<TableBatch> read_all(DlrmFileReader& reader) {
  std::vector<TableBatch> out;
  reader.for_each_table([&](std::int64_t t, const TableBatch& batch) {
    EXPECT_EQ(t, static_cast<std::int64_t>(out.size()));
    out.push_back(batch);
  });
  return out;
}

/** Reads `bytes` completely (tables and stats); throws what the reader throws. */
void read_fully(const std::string& bytes, const std::string& name) {
  DlrmFileReader reader = DlrmFileReader::from_bytes(bytes, name);
  reader.for_each_table([](std::int64_t, const TableBatch& batch) { (void)compute_table_stats(batch); });
  (void)reader.compute_stats(quiet(2));
}

// ---- fixtures written by PyTorch ---------------------------------------------------------------

struct FixtureCase {
  std::string stem;
  std::string suffix;
  std::string container;
  bool gzipped;
};

class DlrmFileFixture : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(DlrmFileFixture, InfoAndStatsMatchExpected) {
  const FixtureCase& c = GetParam();
  const std::string path = kFixtures + c.stem + c.suffix;
  const nlohmann::json want = nlohmann::json::parse(read_bytes(kFixtures + c.stem + ".expected.json"));

  DlrmFileReader reader(path);
  const DlrmFileInfo& info = reader.info();
  EXPECT_EQ(info.path, path);
  EXPECT_EQ(info.container, c.container);
  EXPECT_EQ(info.gzipped, c.gzipped);
  EXPECT_EQ(info.num_tables, want["num_tables"].get<std::int64_t>());
  EXPECT_EQ(info.batch_size, want["batch_size"].get<std::int64_t>());
  EXPECT_EQ(to_string(info.indices_type), want["dtypes"]["indices"].get<std::string>());
  EXPECT_EQ(to_string(info.offsets_type), want["dtypes"]["offsets"].get<std::string>());
  EXPECT_EQ(to_string(info.lengths_type), want["dtypes"]["lengths"].get<std::string>());

  const std::vector<TableStats> stats = compute_file_stats(path, quiet());
  ASSERT_EQ(stats.size(), want["tables"].size());
  std::int64_t total = 0;
  for (std::size_t t = 0; t < stats.size(); ++t) {
    SCOPED_TRACE("table " + std::to_string(t));
    const nlohmann::json& w = want["tables"][t];
    const TableStats& s = stats[t];
    EXPECT_EQ(s.num_rows, w["rows"].get<std::int64_t>());
    EXPECT_NEAR(s.pooling_factor, w["pooling_factor"].get<double>(), 1e-9);
    EXPECT_EQ(s.coverage, w["coverage"].get<double>());
    EXPECT_EQ(s.num_indices, w["num_indices"].get<std::int64_t>());
    EXPECT_EQ(s.num_distinct, w["num_distinct"].get<std::int64_t>());
    EXPECT_EQ(s.batch_size, info.batch_size);
    ASSERT_EQ(w["bins"].size(), 17u);
    for (int j = 0; j < kNumReuseBins; ++j) EXPECT_NEAR(s.bins[j], w["bins"][j].get<double>(), 1e-9) << "bin " << j;
    total += s.num_indices;
  }
  EXPECT_EQ(info.num_indices, total);

  // Table by table, several threads, and from memory: all the same statistics.
  const std::vector<TableBatch> tables = read_all(reader);
  ASSERT_EQ(tables.size(), stats.size());
  const std::vector<TableStats> threaded = reader.compute_stats(quiet(3));
  DlrmFileReader in_memory = DlrmFileReader::from_bytes(read_bytes(path), "copy.pt");
  const std::vector<TableStats> from_memory = in_memory.compute_stats(quiet());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    EXPECT_EQ(tables[t].batch_size(), info.batch_size);
    expect_same_stats(compute_table_stats(tables[t]), stats[t]);
    expect_same_stats(threaded[t], stats[t]);
    expect_same_stats(from_memory[t], stats[t]);
  }
}

INSTANTIATE_TEST_SUITE_P(DlrmFile, DlrmFileFixture,
                         ::testing::Values(FixtureCase{"dlrm_t4_bs64_offsets_i64", ".pt", "zip", false},
                                           FixtureCase{"dlrm_t4_bs64_offsets_i64", ".pt.gz", "zip", true},
                                           FixtureCase{"dlrm_t4_bs64_offsets_i64", ".legacy.pt", "legacy", false},
                                           FixtureCase{"dlrm_t5_bs128_lengths_i64", ".pt", "zip", false},
                                           FixtureCase{"dlrm_t5_bs128_lengths_i64", ".pt.gz", "zip", true}),
                         [](const ::testing::TestParamInfo<FixtureCase>& p) {
                           std::string name = p.param.stem + p.param.suffix;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// ---- writer -> reader ---------------------------------------------------------------------------

/** Random tables plus an empty table and a table with one hot row at the top of the dtype. */
std::vector<TableBatch> sample_tables(bool wide_indices) {
  std::mt19937_64 rng(99);
  const std::int64_t B = 48;
  std::vector<TableBatch> tables;
  auto add = [&](auto length, auto index) {
    TableBatch t;
    t.offsets.push_back(0);
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t L = length(b);
      for (std::int64_t i = 0; i < L; ++i) t.indices.push_back(index());
      t.offsets.push_back(static_cast<std::int64_t>(t.indices.size()));
    }
    tables.push_back(std::move(t));
  };
  std::uniform_int_distribution<std::int64_t> len8(0, 8);
  std::uniform_int_distribution<std::int64_t> row1000(0, 999);
  add([&](std::int64_t) { return len8(rng); }, [&] { return row1000(rng); });
  add([](std::int64_t) { return 0; }, [] { return std::int64_t{0}; });  // empty table
  const std::int64_t hot = wide_indices ? 5'000'000'000LL : std::numeric_limits<std::int32_t>::max();
  add([](std::int64_t b) { return b % 3; }, [hot] { return hot; });
  std::uniform_real_distribution<double> u(0, 1);
  add([&](std::int64_t b) { return b % 5 == 0 ? 40 : 1; },
      [&] { return static_cast<std::int64_t>(std::pow(u(rng), 6) * 50000); });
  return tables;
}

struct RoundTripCase {
  TensorType indices;
  TensorType offsets;
  TensorType lengths;
  std::string container;
  bool gzip;
};

class DlrmFileRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(DlrmFileRoundTrip, WriterThenReader) {
  const RoundTripCase& c = GetParam();
  DlrmWriteOptions options;
  options.container = c.container;
  options.gzip = c.gzip;
  options.archive_name = c.gzip ? "archive" : "rt.folder";
  options.indices_type = c.indices;
  options.offsets_type = c.offsets;
  options.lengths_type = c.lengths;
  const std::vector<TableBatch> tables = sample_tables(c.indices == TensorType::kI64);

  const std::string bytes = encode_dlrm_file(tables, options);
  DlrmFileReader reader = DlrmFileReader::from_bytes(bytes, "roundtrip.pt");
  const DlrmFileInfo& info = reader.info();
  EXPECT_EQ(info.container, c.container);
  EXPECT_EQ(info.gzipped, c.gzip);
  EXPECT_EQ(info.num_tables, 4);
  EXPECT_EQ(info.batch_size, 48);
  EXPECT_EQ(info.indices_type, c.indices);
  EXPECT_EQ(info.offsets_type, c.offsets);
  EXPECT_EQ(info.lengths_type, c.lengths);
  const std::vector<TableBatch> back = read_all(reader);
  ASSERT_EQ(back.size(), tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    EXPECT_EQ(back[t].offsets, tables[t].offsets) << "table " << t;
    EXPECT_EQ(back[t].indices, tables[t].indices) << "table " << t;
  }
  const std::vector<TableStats> stats = reader.compute_stats(quiet(2));
  for (std::size_t t = 0; t < tables.size(); ++t) expect_same_stats(stats[t], compute_table_stats(tables[t]));
  EXPECT_EQ(stats[2].num_distinct, 1);

  // Through a real file: mapped when plain, streamed from the descriptor when gzipped.
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');
  const std::string path = temp_path(name + (c.gzip ? ".pt.gz" : ".pt"));
  write_dlrm_file(path, tables, options);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  EXPECT_EQ(read_bytes(path), bytes);
  const std::vector<TableStats> from_file = compute_file_stats(path, quiet(3));
  ASSERT_EQ(from_file.size(), tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) expect_same_stats(from_file[t], stats[t]);
  fs::remove(path);
}

std::vector<RoundTripCase> all_round_trip_cases() {
  std::vector<RoundTripCase> cases;
  for (TensorType i : {TensorType::kI32, TensorType::kI64})
    for (TensorType o : {TensorType::kI32, TensorType::kI64})
      for (TensorType l : {TensorType::kI32, TensorType::kI64})
        for (const char* container : {"zip", "legacy"})
          for (bool gz : {false, true}) cases.push_back({i, o, l, container, gz});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(DlrmFile, DlrmFileRoundTrip, ::testing::ValuesIn(all_round_trip_cases()),
                         [](const ::testing::TestParamInfo<RoundTripCase>& p) {
                           const RoundTripCase& c = p.param;
                           return std::string("i") + to_string(c.indices) + "_o" + to_string(c.offsets) + "_l" +
                                  to_string(c.lengths) + "_" + c.container + (c.gzip ? "_gz" : "");
                         });

TEST(DlrmFileWriter, ZipLayoutLikePyTorch) {
  DlrmWriteOptions options;
  options.archive_name = "my.data-v2";
  const std::string bytes = encode_dlrm_file(sample_tables(false), options);
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::vector<detail::ZipEntry> entries = detail::read_zip_directory(data, bytes.size(), "w.pt");
  const std::vector<std::string> names = {"data.pkl", "data/0", "data/1", "data/2", "version"};
  ASSERT_EQ(entries.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(entries[i].name, "my.data-v2/" + names[i]);
    EXPECT_EQ(entries[i].data_offset % 64, 0u) << names[i];
    EXPECT_EQ(entries[i].method, 0);
  }
  EXPECT_EQ(bytes.substr(entries[4].data_offset, 2), "3\n");
  EXPECT_EQ(bytes.compare(0, 4, "PK\x03\x04"), 0);
  EXPECT_EQ(bytes.compare(bytes.size() - 22, 4, "PK\x05\x06"), 0);
  EXPECT_EQ(bytes.compare(bytes.size() - 42, 4, "PK\x06\x07"), 0);  // zip64 locator
  EXPECT_EQ(bytes.find("archive/"), std::string::npos);
  // The pickle has the structure torch.save writes (§1.5).
  const std::string pkl = bytes.substr(entries[0].data_offset, entries[0].size);
  EXPECT_EQ(pkl.compare(0, 2, "\x80\x02"), 0);
  EXPECT_NE(pkl.find("ctorch._utils\n_rebuild_tensor_v2\n"), std::string::npos);
  EXPECT_NE(pkl.find("ctorch\nIntStorage\n"), std::string::npos);
  EXPECT_NE(pkl.find("ctorch\nLongStorage\n"), std::string::npos);
  EXPECT_NE(pkl.find("ccollections\nOrderedDict\n"), std::string::npos);
  EXPECT_EQ(pkl.back(), '.');
  EXPECT_EQ(DlrmFileReader::from_bytes(bytes, "w.pt").info().num_tables, 4);
}

TEST(DlrmFileWriter, ReproducesPyTorchBytes) {
  // Re-encoding a fixture with its folder name and dtypes gives exactly the bytes torch.save wrote.
  for (const char* stem : {"dlrm_t4_bs64_offsets_i64", "dlrm_t5_bs128_lengths_i64"}) {
    const std::string path = kFixtures + stem + ".pt";
    DlrmFileReader reader(path);
    DlrmWriteOptions options;
    options.archive_name = stem;
    options.indices_type = reader.info().indices_type;
    options.offsets_type = reader.info().offsets_type;
    options.lengths_type = reader.info().lengths_type;
    const std::string bytes = encode_dlrm_file(read_all(reader), options);
    const std::string want = read_bytes(path);
    ASSERT_EQ(bytes.size(), want.size()) << stem;
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(bytes[i], want[i]) << stem << ": first difference at byte " << i;
  }
}

TEST(DlrmFileWriter, RejectsWhatItCannotWrite) {
  std::vector<TableBatch> tables = sample_tables(true);  // an index of 5e9
  DlrmWriteOptions options;
  EXPECT_NE(error_of([&] {
              (void)encode_dlrm_file(tables, options);
            }).find("table 2: index 5000000000 does not fit int32 indices"),
            std::string::npos);
  options.indices_type = TensorType::kF32;
  EXPECT_NE(error_of([&] { (void)encode_dlrm_file(tables, options); }).find("float32"), std::string::npos);
  options = {};
  options.container = "tar";
  EXPECT_NE(error_of([&] { (void)encode_dlrm_file(tables, options); }).find("'tar'"), std::string::npos);
  options = {};
  options.archive_name = "a/b";
  EXPECT_NE(error_of([&] { (void)encode_dlrm_file(tables, options); }).find("archive_name"), std::string::npos);
  options = {};
  options.indices_type = TensorType::kI64;
  tables[1].offsets.push_back(0);  // batch 49 vs 48
  EXPECT_NE(error_of([&] { (void)encode_dlrm_file(tables, options); }).find("batch size"), std::string::npos);
  tables = sample_tables(false);
  tables[0].indices[3] = -1;
  EXPECT_NE(error_of([&] { (void)encode_dlrm_file(tables, options); }).find("negative"), std::string::npos);
}

TEST(DlrmFileWriter, WritesAtomically) {
  const std::string path = temp_path("sub/dir/atomic.pt");
  fs::remove_all(fs::path(path).parent_path());
  const std::vector<TableBatch> tables = sample_tables(false);
  write_dlrm_file(path, tables, {});
  const std::string good = read_bytes(path);
  std::vector<TableBatch> bad = tables;
  bad[0].indices[0] = -5;
  EXPECT_NE(error_of([&] { write_dlrm_file(path, bad, {}); }).find(path), std::string::npos);
  EXPECT_EQ(read_bytes(path), good);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  fs::remove_all(fs::path(path).parent_path());
}

TEST(DlrmFileWriter, EmptyFile) {
  for (const char* container : {"zip", "legacy"}) {
    DlrmWriteOptions options;
    options.container = container;
    DlrmFileReader reader = DlrmFileReader::from_bytes(encode_dlrm_file({}, options), "none.pt");
    EXPECT_EQ(reader.info().num_tables, 0);
    EXPECT_EQ(reader.info().num_indices, 0);
    EXPECT_TRUE(reader.compute_stats(quiet(4)).empty());
  }
}

// ---- hand-built files ---------------------------------------------------------------------------

/** Raw tensors written without any validation, to build corrupt files. */
struct RawFile {
  std::vector<std::int64_t> indices = {5, 6, 7, 1, 2, 3, 4};
  std::vector<std::int64_t> offsets = {0, 2, 2, 3, 4, 7, 7};
  std::vector<std::int64_t> lengths = {2, 0, 1, 1, 3, 0};
  std::vector<std::int64_t> lengths_sizes = {2, 3};
  TensorType indices_type = TensorType::kI32;
  TensorType offsets_type = TensorType::kI64;
  TensorType lengths_type = TensorType::kI32;
};

std::function<void(detail::Sink&)> raw_writer(TensorType type, const std::vector<std::int64_t>& v) {
  return [type, v](detail::Sink& out) {
    for (std::int64_t x : v) out.write(&x, static_cast<std::size_t>(element_size(type)));  // LE
  };
}

std::vector<detail::TensorToSave> raw_tensors(const RawFile& f) {
  return {{f.indices_type, {static_cast<std::int64_t>(f.indices.size())}, raw_writer(f.indices_type, f.indices)},
          {f.offsets_type, {static_cast<std::int64_t>(f.offsets.size())}, raw_writer(f.offsets_type, f.offsets)},
          {f.lengths_type, f.lengths_sizes, raw_writer(f.lengths_type, f.lengths)}};
}

std::string encode_raw(const RawFile& f, bool legacy = false) {
  std::string out;
  detail::StringSink sink(out);
  if (legacy)
    detail::save_tensor_tuple_legacy(sink, raw_tensors(f), "raw");
  else
    detail::save_tensor_tuple_zip(sink, raw_tensors(f), "archive", "raw");
  return out;
}

std::string gzip(const std::string& bytes) {
  std::string out;
  detail::StringSink sink(out);
  detail::GzipSink gz(sink, "gzip");
  gz.write(bytes);
  gz.finish();
  return out;
}

/** A zip with the given records (name under "archive/", content). */
std::string make_zip(const std::vector<std::pair<std::string, std::string>>& records, bool zip64 = false) {
  std::string out;
  detail::StringSink sink(out);
  detail::ZipWriter zip(sink, "archive", "zip", zip64);
  for (const auto& [name, content] : records) zip.add(name, content);
  zip.finish();
  return out;
}

/** One tensor of a hand-written data.pkl. */
struct PickledTensor {
  std::string storage_class;  // "IntStorage", ...
  std::string key;
  std::int64_t storage_numel;
  std::int64_t offset;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
};

std::string pickle_of(const std::vector<PickledTensor>& tensors) {
  using namespace detail::pickle_op;
  detail::PickleWriter w;
  w.proto(2);
  for (const PickledTensor& t : tensors) {
    w.global("torch._utils", "_rebuild_tensor_v2");
    w.op(kMark);
    w.op(kMark);
    w.unicode("storage");
    w.global("torch", t.storage_class);
    w.unicode(t.key);
    w.unicode("cpu");
    w.integer(t.storage_numel);
    w.op(kTuple);
    w.op(kBinPersId);
    w.integer(t.offset);
    for (std::int64_t s : t.sizes) w.integer(s);
    w.tuple(static_cast<int>(t.sizes.size()));
    for (std::int64_t s : t.strides) w.integer(s);
    w.tuple(static_cast<int>(t.strides.size()));
    w.op(kNewFalse);
    w.global("collections", "OrderedDict");
    w.op(kEmptyTuple);
    w.op(kReduce);
    w.op(kTuple);
    w.op(kReduce);
  }
  w.tuple(static_cast<int>(tensors.size()));
  w.op(kStop);
  return w.bytes();
}

template <typename T>
std::string raw_bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

/** The valid RawFile as a hand-built zip, with `edit` applied to its tensor descriptions. */
std::string hand_zip(const std::function<void(std::vector<PickledTensor>&,
                                              std::vector<std::pair<std::string, std::string>>&)>& edit = nullptr,
                     bool zip64 = false) {
  std::vector<PickledTensor> tensors = {{"IntStorage", "0", 7, 0, {7}, {1}},
                                        {"LongStorage", "1", 7, 0, {7}, {1}},
                                        {"IntStorage", "2", 6, 0, {2, 3}, {3, 1}}};
  std::vector<std::pair<std::string, std::string>> data = {
      {"data/0", raw_bytes(std::vector<std::int32_t>{5, 6, 7, 1, 2, 3, 4})},
      {"data/1", raw_bytes(std::vector<std::int64_t>{0, 2, 2, 3, 4, 7, 7})},
      {"data/2", raw_bytes(std::vector<std::int32_t>{2, 0, 1, 1, 3, 0})}};
  if (edit) edit(tensors, data);
  std::vector<std::pair<std::string, std::string>> records = {{"data.pkl", pickle_of(tensors)}};
  records.insert(records.end(), data.begin(), data.end());
  records.emplace_back("version", "3\n");
  return make_zip(records, zip64);
}

void expect_error_in(const std::string& bytes, const std::string& name, const std::string& piece) {
  const std::string msg = error_of([&] { read_fully(bytes, name); });
  EXPECT_NE(msg.find(name + ": "), std::string::npos) << msg;
  EXPECT_NE(msg.find(piece), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(DlrmFileHandBuilt, ValidFileInAllContainers) {
  const RawFile f;
  for (const std::string& bytes : {encode_raw(f), encode_raw(f, true), gzip(encode_raw(f)), gzip(encode_raw(f, true)),
                                   hand_zip(), gzip(hand_zip())}) {
    DlrmFileReader reader = DlrmFileReader::from_bytes(bytes, "ok.pt");
    const std::vector<TableBatch> tables = read_all(reader);
    ASSERT_EQ(tables.size(), 2u);
    EXPECT_EQ(tables[1].offsets, (std::vector<std::int64_t>{0, 1, 4, 4}));
    EXPECT_EQ(tables[1].indices, (std::vector<std::int64_t>{1, 2, 3, 4}));
  }
}

TEST(DlrmFileHandBuilt, Zip64FieldsAreFollowed) {
  // Every size and offset behind 0xFFFFFFFF markers and zip64 extras, 8-byte descriptors, and
  // unknown records with descriptors before and after the data (found by scanning in a stream).
  const std::string bytes = hand_zip(
      [](auto&, auto& data) {
        data.insert(data.begin(), {".data/serialization_id", "1234567890"});
        data.insert(data.begin(), {"byteorder", "little"});
      },
      true);
  EXPECT_EQ(bytes.compare(bytes.size() - 12, 8, std::string(8, '\xff')), 0);
  for (const std::string& b : {bytes, gzip(bytes)}) {
    DlrmFileReader reader = DlrmFileReader::from_bytes(b, "z64.pt");
    EXPECT_EQ(read_all(reader)[1].indices, (std::vector<std::int64_t>{1, 2, 3, 4}));
  }
  std::string truncated_descriptor = bytes;
  const std::size_t d = truncated_descriptor.find(std::string("PK\x07\x08", 4));
  truncated_descriptor[d + 8] ^= 1;  // the data.pkl size in its descriptor
  expect_error_in(gzip(truncated_descriptor), "desc.pt.gz", "data descriptor of record 'archive/data.pkl'");
}

TEST(DlrmFileHandBuilt, StorageOffsetIsRespected) {
  const std::string bytes = hand_zip([](auto& tensors, auto& data) {
    tensors[0].storage_numel = 9;
    tensors[0].offset = 2;
    data[0].second = raw_bytes(std::vector<std::int32_t>{-9, -9, 5, 6, 7, 1, 2, 3, 4});
  });
  DlrmFileReader reader = DlrmFileReader::from_bytes(bytes, "offset.pt");
  EXPECT_EQ(read_all(reader)[0].indices, (std::vector<std::int64_t>{5, 6, 7}));
}

TEST(DlrmFileHandBuilt, BigEndianByteorderIsSwapped) {
  auto swap_all = [](std::string bytes, int size) {
    for (std::size_t i = 0; i + size <= bytes.size(); i += static_cast<std::size_t>(size))
      std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(i),
                   bytes.begin() + static_cast<std::ptrdiff_t>(i) + size);
    return bytes;
  };
  const std::string bytes = hand_zip([&](auto&, auto& data) {
    data[0].second = swap_all(data[0].second, 4);
    data[1].second = swap_all(data[1].second, 8);
    data[2].second = swap_all(data[2].second, 4);
    data.insert(data.begin(), {"byteorder", "big"});
  });
  for (const std::string& b : {bytes, gzip(bytes)}) {
    DlrmFileReader reader = DlrmFileReader::from_bytes(b, "big.pt");
    EXPECT_EQ(read_all(reader)[1].indices, (std::vector<std::int64_t>{1, 2, 3, 4}));
  }
  const std::string odd = hand_zip([](auto&, auto& data) { data.insert(data.begin(), {"byteorder", "middle"}); });
  EXPECT_NE(error_of([&] { read_fully(odd, "odd.pt"); }).find("odd.pt: byteorder record says 'middle'"),
            std::string::npos);
}

// ---- corrupt input ------------------------------------------------------------------------------

void expect_error(const std::string& bytes, const std::string& name, const std::string& piece) {
  expect_error_in(bytes, name, piece);
}

TEST(DlrmFileCorrupt, ValidationErrorsNameTableAndSample) {
  for (bool legacy : {false, true}) {
    RawFile f;
    f.offsets = {0, 2, 1, 3, 4, 7, 7};
    expect_error(encode_raw(f, legacy), "decrease.pt",
                 "table 0 sample 1: offsets decrease (offsets[2] = 1 < offsets[1] = 2)");
    f = {};
    f.offsets = {0, 2, 2, 3, 4, 9, 7};
    expect_error(encode_raw(f, legacy), "mid.pt", "table 1 sample 1: offsets[5] = 9 overruns the 7 indices");
    f = {};
    f.offsets.back() = 8;
    expect_error(encode_raw(f, legacy), "overrun.pt", "offsets end at 8 (overrun) but indices has 7");
    f = {};
    f.offsets.back() = 6;
    expect_error(encode_raw(f, legacy), "underrun.pt", "offsets end at 6 (underrun)");
    f = {};
    f.offsets = {1, 2, 2, 3, 4, 7, 7};
    expect_error(encode_raw(f, legacy), "start.pt", "offsets[0] = 1; expected 0");
    f = {};
    f.lengths[4] = 2;
    expect_error(encode_raw(f, legacy), "lengths.pt", "table 1 sample 1: lengths[1][1] = 2 but offsets give 3");
    f = {};
    f.indices[5] = -3;
    expect_error(encode_raw(f, legacy), "negative.pt", "table 1 sample 1: negative index -3 at indices[5]");
    f = {};
    f.lengths_sizes = {6};
    expect_error(encode_raw(f, legacy), "dims.pt", "lengths has 1 dimension(s) [6]; expected 2");
    f = {};
    f.lengths_sizes = {2, 2};
    f.lengths.resize(4);
    expect_error(encode_raw(f, legacy), "shape.pt", "offsets has 7 entries; expected T*B + 1 = 5 for lengths [2, 2]");
    f = {};
    f.indices_type = TensorType::kF32;
    expect_error(encode_raw(f, legacy), "float.pt",
                 "indices has dtype float32 (torch.FloatStorage); expected int32 or int64");
    f = {};
    f.lengths_type = TensorType::kI16;
    expect_error(encode_raw(f, legacy), "short.pt", "lengths has dtype int16");
  }
}

TEST(DlrmFileCorrupt, WrongObjectShape) {
  std::string out;
  detail::StringSink sink(out);
  std::vector<detail::TensorToSave> two = raw_tensors(RawFile{});
  two.pop_back();
  detail::save_tensor_tuple_zip(sink, two, "archive", "two");
  expect_error(out, "two.pt", "the saved tuple has 2 items; expected 3 tensors");
  const std::string not_tuple = make_zip({{"data.pkl", std::string("\x80\x02K\x05.", 5)}});
  expect_error(not_tuple, "int.pt", "the saved object is a int; expected a tuple");
  const std::string strided = hand_zip([](auto& tensors, auto&) { tensors[2].strides = {1, 2}; });
  expect_error(strided, "strided.pt", "lengths is not contiguous (sizes [2, 3], strides [1, 2])");
  const std::string past = hand_zip([](auto& tensors, auto&) { tensors[0].offset = 1; });
  expect_error(past, "past.pt", "indices (7 elements at storage offset 1) runs past its storage of 7");
}

TEST(DlrmFileCorrupt, PickleErrors) {
  expect_error(make_zip({{"data.pkl", std::string("\x80\x02\xfe.", 4)}}), "op.pt",
               "unknown pickle opcode 0xfe at byte 2 of data.pkl");
  expect_error(hand_zip([](auto& tensors, auto&) { tensors[0].storage_class = "ComplexFloatStorage"; }), "complex.pt",
               "unknown storage class 'torch.ComplexFloatStorage'");
  expect_error(make_zip({{"data.pkl",
                          "\x80\x02"
                          "cos\nsystem\n."}}),
               "evil.pt", "unsupported global 'os.system'");
  expect_error(make_zip({{"data.pkl", "\x80\x02t."}}), "mark.pt", "needs a MARK");
  expect_error(make_zip({{"data.pkl", "\x80\x02h\x07."}}), "memo.pt", "memo key 7 was never stored");
  expect_error(make_zip({{"data.pkl", "\x80\x02X\xff\xff\xff\x7f"}}), "long.pt", "exceeds the pickle size limit");
  expect_error(make_zip({{"data.pkl", "\x80\x02(K\x01"}}), "nostop.pt", "truncated");
  // The same problems in a legacy file (no CRC there to catch them first) and, with the CRC
  // checks off (the fuzz target's second pass), in a gzip stream.
  std::string legacy = encode_raw(RawFile{}, true);
  legacy.replace(legacy.find("IntStorage"), 10, "XntStorage");
  expect_error(legacy, "legacy.pt", "unknown storage class 'torch.XntStorage'");
  std::string zip = encode_raw(RawFile{});
  zip[zip.find("ctorch\nIntStorage")] = '\xf0';
  EXPECT_NE(error_of([&] {
              (void)DlrmFileReader::from_bytes(gzip(zip), "stream.pt.gz", false);
            }).find("unknown pickle opcode 0xf0 at byte"),
            std::string::npos);
  expect_error(gzip(zip), "stream.pt.gz", "CRC-32 mismatch in record 'archive/data.pkl'");
  expect_error(zip, "crc.pt", "CRC-32 mismatch in record 'archive/data.pkl'");
}

TEST(DlrmFileCorrupt, ContainerErrors) {
  const std::string good = encode_raw(RawFile{});
  expect_error("", "empty.pt", "empty file");
  expect_error("hello world", "text.pt", "not a torch.save file (starts with 68 65 6c 6c)");
  expect_error(gzip("hello"), "text.pt.gz", "gzip content is not a torch.save file");
  std::string bad_cd = good;
  bad_cd[bad_cd.size() - 3] = '\x7f';  // central directory offset in the end record
  // The zip64 record still gives the right offset, so corrupt that one too.
  const std::size_t z64 = bad_cd.rfind(std::string("PK\x06\x06", 4));
  bad_cd[z64 + 48 + 3] = '\x7f';
  expect_error(bad_cd, "cd.pt", "lies beyond the end of the file");
  std::string bad_local = good;
  const std::size_t central = bad_local.find(std::string("PK\x01\x02", 4));
  bad_local[central + 42 + 2] = '\x33';  // local header offset of data.pkl
  expect_error(bad_local, "local.pt", "bad local header offset");
  std::string short_record = hand_zip([](auto&, auto& data) { data[1].second.resize(48); });
  expect_error(short_record, "size.pt",
               "record 'archive/data/1' holds 48 bytes but storage '1' (torch.LongStorage, 7 "
               "elements) needs 56");
  expect_error(gzip(short_record), "size.pt.gz", "size.pt.gz: ");
  std::string missing = hand_zip([](auto&, auto& data) { data.erase(data.begin() + 2); });
  expect_error(missing, "missing.pt", "record 'archive/data/2' for storage '2' is missing");
  expect_error(gzip(missing), "missing.pt.gz", "no data for storage '2'");
  std::string gz = gzip(good);
  gz[gz.size() - 6] ^= 0x55;  // the gzip CRC
  expect_error(gz, "crc.pt.gz", "corrupt gzip data");
  expect_error(gzip(good) + "junk", "junk.pt.gz", "trailing bytes after the compressed stream");
  std::string newline;
  {
    detail::StringSink sink(newline);
    detail::ZipWriter zip(sink, "bad\nfolder", "nl");
    zip.add("version", "3\n");
    zip.finish();
  }
  expect_error(newline, "nl.pt", "no record 'bad\\x0afolder/data.pkl'");
  std::string legacy = encode_raw(RawFile{}, true);
  legacy[3] ^= 1;  // inside the magic number
  expect_error(legacy, "magic.pt", "bad magic number");
}

// ---- integrity: CRC-32 and trailing bytes -------------------------------------------------------

/** The fixture's largest storage record (the indices) found through the central directory. */
detail::ZipEntry largest_record(const std::string& zip) {
  const auto entries =
      detail::read_zip_directory(reinterpret_cast<const std::uint8_t*>(zip.data()), zip.size(), "fixture");
  return *std::max_element(entries.begin(), entries.end(),
                           [](const auto& a, const auto& b) { return a.size < b.size; });
}

TEST(DlrmFileIntegrity, FlippedBitInATensorFailsItsCrc) {
  // A flipped bit in a tensor record used to change a table's statistics silently.
  const std::string good = read_bytes(kFixtures + "dlrm_t4_bs64_offsets_i64.pt");
  const detail::ZipEntry e = largest_record(good);
  ASSERT_GT(e.size, 64u);
  std::string bad = good;
  bad[e.data_offset + e.size / 2] ^= 0x10;
  const std::string want = "CRC-32 mismatch in record '" + e.name + "'";
  expect_error_in(bad, "flip.pt", want);           // in memory, through the central directory
  expect_error_in(gzip(bad), "flip.pt.gz", want);  // streamed (gzip's own CRC is intact)
  // Only the CRC catches it: without the check the file reads as a valid (wrong) dataset.
  EXPECT_NO_THROW({
    DlrmFileReader unchecked = DlrmFileReader::from_bytes(bad, "flip.pt", /*verify_crc=*/false);
    (void)read_all(unchecked);
  });
  // A real path (mapped, checked 64 MiB at a time) names the path.
  const std::string path = test_util::temp_file("crc", "flip.pt");
  { std::ofstream(path, std::ios::binary) << bad; }
  const std::string msg = error_of([&] { DlrmFileReader reader(path); });
  EXPECT_EQ(msg.rfind(path + ": " + want, 0), 0u) << msg;
  std::filesystem::remove(path);
}

TEST(DlrmFileIntegrity, BytesAfterTheEndAreErrors) {
  const std::string zip = read_bytes(kFixtures + "dlrm_t4_bs64_offsets_i64.pt");
  const std::string gz = read_bytes(kFixtures + "dlrm_t4_bs64_offsets_i64.pt.gz");
  const std::string legacy = read_bytes(kFixtures + "dlrm_t4_bs64_offsets_i64.legacy.pt");
  expect_error_in(gz + "garbage", "junk.pt.gz", "trailing bytes after the compressed stream");
  expect_error_in(gz + std::string(5, '\0'), "zeros.pt.gz", "trailing bytes");
  // A second, valid gzip member: its content follows the zip's end record.
  expect_error_in(gz + gzip("garbage"), "member.pt.gz",
                  "7 bytes after the end of the zip (offset " + std::to_string(zip.size()) + ")");
  expect_error_in(zip + "garbage", "junk.pt", "7 bytes after the end of the zip");
  expect_error_in(gzip(legacy + "x"), "junk.legacy.pt.gz", "1 bytes after the last storage");
  expect_error_in(legacy + "x", "junk.legacy.pt", "1 bytes after the last storage");
  // Multi-member gzip (RFC 1952, `cat a.gz b.gz`) is one stream: split content reads as a whole.
  const std::size_t half = zip.size() / 2;
  DlrmFileReader split = DlrmFileReader::from_bytes(gzip(zip.substr(0, half)) + gzip(zip.substr(half)), "two.pt.gz");
  DlrmFileReader whole = DlrmFileReader::from_bytes(zip, "one.pt");
  const auto a = read_all(split);
  const auto b = read_all(whole);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t t = 0; t < a.size(); ++t) EXPECT_EQ(a[t].indices, b[t].indices);
  // A real gzip path names the path.
  const std::string path = test_util::temp_file("trail", "junk.pt.gz");
  { std::ofstream(path, std::ios::binary) << gz << "garbage"; }
  const std::string msg = error_of([&] { DlrmFileReader reader(path); });
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
  std::filesystem::remove(path);
}

TEST(DlrmFileCorrupt, HugeClaimsDoNotAllocate) {
  // A storage that claims 2^50 elements: in a zip the record size disagrees; in a gzip stream the
  // claim exceeds what the compressed bytes can hold; neither allocates it.
  const std::string zip = hand_zip([](auto& tensors, auto&) { tensors[0].storage_numel = std::int64_t{1} << 50; });
  expect_error(zip, "huge.pt", "needs 4503599627370496");
  expect_error(gzip(zip), "huge.pt.gz", "more than the compressed file can hold");
  const std::string absurd = hand_zip([](auto& tensors, auto&) { tensors[0].storage_numel = std::int64_t{1} << 62; });
  expect_error(gzip(absurd), "absurd.pt.gz", "absurd");
}

TEST(DlrmFileCorrupt, ErrorsNameThePathOfAFile) {
  RawFile f;
  f.indices[0] = -1;
  for (bool gz : {false, true}) {
    const std::string path = temp_path(gz ? "negative.pt.gz" : "negative.pt");
    write_bytes(path, gz ? gzip(encode_raw(f)) : encode_raw(f));
    const std::string msg = error_of([&] { (void)compute_file_stats(path, quiet(2)); });
    EXPECT_NE(msg.find(path + ": table 0 sample 0: negative index -1"), std::string::npos) << msg;
    fs::remove(path);
  }
  const std::string msg = error_of([] { DlrmFileReader reader("/nonexistent/x.pt"); });
  EXPECT_NE(msg.find("/nonexistent/x.pt"), std::string::npos);
}

/** Small files of every container: the ones the truncation and bit-flip loops run over. */
std::vector<std::pair<std::string, std::string>> small_files() {
  DlrmWriteOptions zip;
  DlrmWriteOptions legacy;
  legacy.container = "legacy";
  std::vector<TableBatch> tables(2);
  tables[0].offsets = {0, 2, 2, 5};
  tables[0].indices = {1, 2, 3, 1, 9};
  tables[1].offsets = {0, 1, 1, 2};
  tables[1].indices = {70000, 4};
  zip.gzip = legacy.gzip = false;
  std::vector<std::pair<std::string, std::string>> files = {{"small.pt", encode_dlrm_file(tables, zip)},
                                                            {"small.legacy.pt", encode_dlrm_file(tables, legacy)}};
  zip.gzip = legacy.gzip = true;
  files.emplace_back("small.pt.gz", encode_dlrm_file(tables, zip));
  files.emplace_back("small.legacy.pt.gz", encode_dlrm_file(tables, legacy));
  return files;
}

TEST(DlrmFileCorrupt, TruncatedAtEveryLength) {
  auto files = small_files();
  for (const char* fixture :
       {"dlrm_t4_bs64_offsets_i64.pt", "dlrm_t4_bs64_offsets_i64.pt.gz", "dlrm_t4_bs64_offsets_i64.legacy.pt"})
    files.emplace_back(fixture, read_bytes(kFixtures + fixture));
  for (const auto& [name, bytes] : files) {
    ASSERT_NO_THROW(read_fully(bytes, name)) << name;
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      try {
        read_fully(bytes.substr(0, n), name);
        ADD_FAILURE() << name << " truncated to " << n << " bytes was accepted";
      } catch (const Error& e) {
        ASSERT_NE(std::string(e.what()).find(name + ": "), std::string::npos) << e.what();
      }
    }
  }
}

TEST(DlrmFileCorrupt, FlippedBytesNeverCrash) {
  auto files = small_files();
  files.emplace_back("fixture.pt", read_bytes(kFixtures + "dlrm_t4_bs64_offsets_i64.pt"));
  files.emplace_back("fixture.legacy.pt", read_bytes(kFixtures + "dlrm_t4_bs64_offsets_i64.legacy.pt"));
  int accepted = 0;
  int rejected = 0;
  for (const auto& [name, bytes] : files) {
    const bool small = bytes.size() < 4096;
    for (std::size_t i = 0; i < bytes.size(); i += small ? 1 : 7) {
      for (unsigned char mask : {0x01, 0x80, 0xff}) {
        if (!small && mask != 0xff) continue;
        std::string corrupt = bytes;
        corrupt[i] = static_cast<char>(corrupt[i] ^ mask);
        try {
          read_fully(corrupt, name);
          ++accepted;  // e.g. a flipped index value or padding byte: still a valid file
        } catch (const Error& e) {
          ++rejected;
          ASSERT_NE(std::string(e.what()).find(name + ": "), std::string::npos) << e.what();
        }
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace embshard
