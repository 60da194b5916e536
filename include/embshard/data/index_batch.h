#pragma once
/**
 * @file index_batch.h
 * @brief `TableBatch`: one table's lookups for one batch, in CSR form (FBGEMM convention).
 *
 * Bag b of the table holds `indices[offsets[b] .. offsets[b+1])`; `offsets` has batch_size + 1
 * entries, starts at 0 and never decreases. An empty bag (offsets[b] == offsets[b+1]) pools to a
 * zero vector. Indices are table-local row ids in [0, num_rows).
 */
#include <cstdint>
#include <string>
#include <vector>

#include "embshard/data/table.h"

namespace embshard {

struct TableBatch {
  std::vector<std::int64_t> offsets;  ///< batch_size + 1 entries, offsets[0] == 0
  std::vector<std::int64_t> indices;  ///< offsets.back() entries

  [[nodiscard]] std::int64_t batch_size() const {
    return offsets.empty() ? 0 : static_cast<std::int64_t>(offsets.size()) - 1;
  }
};

/**
 * Returns "" if `batch` is well formed (offsets start at 0, never decrease, end at
 * indices.size(); no negative index; every index < num_rows when num_rows > 0), else one line
 * naming the first problem, prefixed by `where`.
 */
[[nodiscard]] std::string find_error_in_batch(const TableBatch& batch, std::int64_t num_rows, const std::string& where);

/**
 * The reference statistics of one table's batch (definitions in table.h). Exact: bins and
 * pooling are computed in double precision from exact integer counts.
 * Cost: O(n log n) in the batch's lookups n, memory one copy of the indices.
 */
[[nodiscard]] TableStats compute_table_stats(const TableBatch& batch);

/**
 * The same statistics from raw views, so a streaming reader can compute them without building a
 * TableBatch: `offsets` has batch_size + 1 entries (any base; only differences matter) and
 * `indices` holds the table's offsets[B] - offsets[0] lookups. `IndexT` is int32 or int64.
 */
template <typename IndexT, typename OffsetT>
[[nodiscard]] TableStats compute_table_stats(const IndexT* indices, const OffsetT* offsets, std::int64_t batch_size);

}  // namespace embshard
