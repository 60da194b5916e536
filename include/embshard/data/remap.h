#pragma once
/**
 * @file remap.h
 * @brief RecShard's remapping layer (paper 004 §4.3): per table, old row → (tier, new row), so
 *        that the rows a plan puts in HBM (`Shard::hbm_rows`, the first rows of the shard) are
 *        the table's hottest.
 *
 * A `RowRemap` of a table with `num_rows` rows and `hbm_rows` HBM rows ranks the rows by access
 * count, most accessed first (ties: lower old row first, so it is deterministic), and sends the
 * row of rank r to new row r. The first hbm_rows ranks are the HBM tier, the rest the UVM tier.
 * Each row is stored in 4 bytes as the paper does, the sign naming the tier:
 *
 *   entry ≥ 0   HBM, row `entry` of the HBM part
 *   entry < 0   UVM, row −entry − 1 of the UVM part
 *
 * and the kernels' single index space (a shard's rows, HBM part first) is
 * `new_row(old) = entry ≥ 0 ? entry : hbm_rows + (−entry − 1)`. Tables of more than 2^31 − 1
 * rows do not fit 4-byte entries (Error).
 *
 * `apply_remap` rewrites a batch's indices in place before the kernels (ShardTimer does it for a
 * table whose ShardTableSpec carries a remap, profile/shard_timer.h). Counts come from profiled
 * batches (`count_row_accesses`, e.g. of the pool's `materialise_table`); the share of a later
 * batch's lookups that falls in the first k new rows then follows the ICDF of the profile.
 *
 * File (`write_remap_file` / `read_remap_file`): little-endian binary, "EMBREMAP" + uint32
 * version (1) + uint32 table count; per table uint32 name length, the name's bytes, int64
 * num_rows, int64 hbm_rows, num_rows int32 entries. The reader checks every field and that the
 * entries are a bijection onto the HBM and UVM parts, naming the file and table.
 */
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "embshard/data/index_batch.h"

namespace embshard {

inline constexpr std::uint32_t kRemapFileVersion = 1;

struct RowRemap {
  std::string table;                  ///< TableSpec::name
  std::int64_t hbm_rows = 0;          ///< rows in the HBM part
  std::vector<std::int32_t> entries;  ///< per old row (file comment)

  [[nodiscard]] std::int64_t num_rows() const { return static_cast<std::int64_t>(entries.size()); }
  /** The kernels' index of old row `row` (HBM part first). */
  [[nodiscard]] std::int64_t new_row(std::int64_t row) const {
    const std::int32_t e = entries[static_cast<std::size_t>(row)];
    return e >= 0 ? e : hbm_rows + (-static_cast<std::int64_t>(e) - 1);
  }
  [[nodiscard]] bool in_hbm(std::int64_t row) const { return entries[static_cast<std::size_t>(row)] >= 0; }
};

/** Access count of every row in [0, num_rows) over `batches` (Error for an index out of range). */
[[nodiscard]] std::vector<std::int64_t> count_row_accesses(std::span<const TableBatch> batches, std::int64_t num_rows);

/**
 * The remap of the file comment (hbm_rows clamped to [0, rows]); Error above 2^31 − 1 rows. With a
 * row range [row_begin, row_end) (a row-wise shard; row_end −1 = all rows), only the range's rows
 * are ranked, onto new rows row_begin.., and every other row keeps its number; the remap's
 * hbm_rows is then row_begin + the range's HBM rows (clamped to the range).
 */
[[nodiscard]] RowRemap build_remap(const std::string& table, std::span<const std::int64_t> counts,
                                   std::int64_t hbm_rows, std::int64_t row_begin = 0, std::int64_t row_end = -1);

/** "" if `remap` is a valid remap (bijection onto both parts), else the first problem. */
[[nodiscard]] std::string find_error_in_remap(const RowRemap& remap);

/** Rewrites every index of `batch` to its new row (Error naming the table for one out of range). */
void apply_remap(const RowRemap& remap, TableBatch& batch);

void write_remap_file(const std::string& path, std::span<const RowRemap> remaps);
[[nodiscard]] std::vector<RowRemap> read_remap_file(const std::string& path);

}  // namespace embshard
