#pragma once
/**
 * @file sharding_type.h
 * @brief How a table is split across devices — the sharding types TorchRec names.
 *
 *   table_wise      the whole table on one device
 *   column_wise     column ranges (multiples of 4) on devices of any host
 *   row_wise        row ranges across devices
 *   table_row_wise  row ranges across the devices of one host
 *   data_parallel   a whole copy of the table on every device, each serving its device's own
 *                   samples; the copies' gradients are all-reduced (plan/plan.h)
 *   grid_shard      column ranges, each split into row ranges, on devices of any host (TorchRec's
 *                   grid_shard is the special case of each column block row-wise over one host)
 *
 * In the data layer (not plan/) because a table's constraints name the types it may use.
 */
#include <string>
#include <vector>

namespace embshard {

enum class ShardingType { kTableWise, kColumnWise, kRowWise, kTableRowWise, kDataParallel, kGridShard };
inline constexpr int kNumShardingTypes = 6;

/** "table_wise", "column_wise", "row_wise", "table_row_wise", "data_parallel" or "grid_shard". */
[[nodiscard]] const char* to_string(ShardingType type);
/** Parses the names above; throws Error naming `where` and the accepted names otherwise. */
[[nodiscard]] ShardingType parse_sharding_type(const std::string& text, const std::string& where);

}  // namespace embshard
