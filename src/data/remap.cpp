// RecShard's remapping tables (remap.h).
#include "embshard/data/remap.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "embshard/core/error.h"
#include "embshard/core/file_io.h"

namespace embshard {
namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'R', 'E', 'M', 'A', 'P'};

template <typename T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // the hosts embshard supports are little-endian
  out.append(bytes, sizeof(T));
}

class Reader {
 public:
  Reader(const std::string& path, const std::string& data) : path_(path), data_(data) {}
  template <typename T>
  T get(const char* what) {
    EMBSHARD_CHECK(data_.size() - pos_ >= sizeof(T), path_, ": truncated at byte ", pos_, " (reading ", what, ")");
    T value;
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string bytes(std::size_t n, const char* what) {
    EMBSHARD_CHECK(data_.size() - pos_ >= n, path_, ": truncated at byte ", pos_, " (reading ", what, ")");
    std::string s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  [[nodiscard]] std::size_t left() const { return data_.size() - pos_; }

 private:
  const std::string& path_;
  const std::string& data_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<std::int64_t> count_row_accesses(std::span<const TableBatch> batches, std::int64_t num_rows) {
  EMBSHARD_CHECK(num_rows >= 0, "remap: num_rows = ", num_rows, " must be >= 0");
  std::vector<std::int64_t> counts(static_cast<std::size_t>(num_rows), 0);
  for (const TableBatch& batch : batches) {
    for (const std::int64_t row : batch.indices) {
      EMBSHARD_CHECK(row >= 0 && row < num_rows, "remap: index ", row, " outside [0, ", num_rows, ")");
      ++counts[static_cast<std::size_t>(row)];
    }
  }
  return counts;
}

RowRemap build_remap(const std::string& table, std::span<const std::int64_t> counts, std::int64_t hbm_rows,
                     std::int64_t row_begin, std::int64_t row_end) {
  const auto n = static_cast<std::int64_t>(counts.size());
  if (row_end < 0) row_end = n;
  EMBSHARD_ASSERT(0 <= row_begin && row_begin <= row_end && row_end <= n);
  EMBSHARD_CHECK(n <= std::numeric_limits<std::int32_t>::max(), "remap: table '", table, "' has ", n,
                 " rows; 4-byte remap entries hold at most 2^31 - 1");
  RowRemap remap;
  remap.table = table;
  remap.hbm_rows = row_begin + std::clamp<std::int64_t>(hbm_rows, 0, row_end - row_begin);
  // new row of every old row: the range's rows by rank, every other row its own number
  std::vector<std::int64_t> new_row(static_cast<std::size_t>(n));
  std::iota(new_row.begin(), new_row.end(), 0);
  std::vector<std::int64_t> order(new_row.begin() + row_begin, new_row.begin() + row_end);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return counts[static_cast<std::size_t>(a)] > counts[static_cast<std::size_t>(b)];
  });
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    new_row[static_cast<std::size_t>(order[rank])] = row_begin + static_cast<std::int64_t>(rank);
  }
  remap.entries.resize(static_cast<std::size_t>(n));
  for (std::int64_t old = 0; old < n; ++old) {
    const std::int64_t r = new_row[static_cast<std::size_t>(old)];
    remap.entries[static_cast<std::size_t>(old)] =
        static_cast<std::int32_t>(r < remap.hbm_rows ? r : -(r - remap.hbm_rows) - 1);
  }
  return remap;
}

std::string find_error_in_remap(const RowRemap& r) {
  const std::int64_t n = r.num_rows();
  if (r.hbm_rows < 0 || r.hbm_rows > n) {
    return detail::concat("remap of table '", r.table, "': hbm_rows = ", r.hbm_rows, " outside [0, ", n, "]");
  }
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (std::int64_t row = 0; row < n; ++row) {
    const std::int32_t e = r.entries[static_cast<std::size_t>(row)];
    const bool ok = e >= 0 ? e < r.hbm_rows : -static_cast<std::int64_t>(e) - 1 < n - r.hbm_rows;
    if (!ok) {
      return detail::concat("remap of table '", r.table, "': row ", row, " maps to entry ", e, ", outside its tier (",
                            r.hbm_rows, " HBM rows, ", n - r.hbm_rows, " UVM rows)");
    }
    const std::int64_t target = r.new_row(row);
    if (seen[static_cast<std::size_t>(target)]) {
      return detail::concat("remap of table '", r.table, "': row ", row, " maps to new row ", target,
                            ", which another row maps to already");
    }
    seen[static_cast<std::size_t>(target)] = true;
  }
  return "";
}

void apply_remap(const RowRemap& remap, TableBatch& batch) {
  for (std::int64_t& row : batch.indices) {
    EMBSHARD_CHECK(row >= 0 && row < remap.num_rows(), "remap of table '", remap.table, "': index ", row,
                   " outside [0, ", remap.num_rows(), ")");
    row = remap.new_row(row);
  }
}

void write_remap_file(const std::string& path, std::span<const RowRemap> remaps) {
  std::string out(kMagic, sizeof kMagic);
  put<std::uint32_t>(out, kRemapFileVersion);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(remaps.size()));
  for (const RowRemap& r : remaps) {
    const std::string problem = find_error_in_remap(r);
    EMBSHARD_CHECK(problem.empty(), path, ": ", problem);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(r.table.size()));
    out += r.table;
    put<std::int64_t>(out, r.num_rows());
    put<std::int64_t>(out, r.hbm_rows);
    out.append(reinterpret_cast<const char*>(r.entries.data()), r.entries.size() * sizeof(std::int32_t));
  }
  write_file_atomic(path, out);
}

std::vector<RowRemap> read_remap_file(const std::string& path) {
  const std::string data = read_file(path);
  Reader in(path, data);
  EMBSHARD_CHECK(in.bytes(sizeof kMagic, "magic") == std::string(kMagic, sizeof kMagic), path,
                 ": not a remap file (no EMBREMAP magic)");
  const auto version = in.get<std::uint32_t>("version");
  EMBSHARD_CHECK(version == kRemapFileVersion, path, ": remap file version ", version, ", this build reads ",
                 kRemapFileVersion);
  const auto count = in.get<std::uint32_t>("table count");
  std::vector<RowRemap> remaps;
  for (std::uint32_t t = 0; t < count; ++t) {
    RowRemap r;
    const auto name_size = in.get<std::uint32_t>("name length");
    r.table = in.bytes(name_size, "table name");
    const auto rows = in.get<std::int64_t>("num_rows");
    r.hbm_rows = in.get<std::int64_t>("hbm_rows");
    EMBSHARD_CHECK(rows >= 0 && static_cast<std::uint64_t>(rows) * 4 <= in.left(), path, ": table ", t, " '", r.table,
                   "': num_rows = ", rows, " does not match the bytes left");
    const std::string raw = in.bytes(static_cast<std::size_t>(rows) * 4, "entries");
    r.entries.resize(static_cast<std::size_t>(rows));
    std::memcpy(r.entries.data(), raw.data(), raw.size());
    const std::string problem = find_error_in_remap(r);
    EMBSHARD_CHECK(problem.empty(), path, ": table ", t, ": ", problem);
    remaps.push_back(std::move(r));
  }
  EMBSHARD_CHECK(in.left() == 0, path, ": ", in.left(), " trailing bytes after ", count, " tables");
  return remaps;
}

}  // namespace embshard
