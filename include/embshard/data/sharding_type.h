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
 *
 * In the data layer (not plan/) because a table's constraints name the types it may use.
 */
#include <string>
#include <vector>

namespace embshard {

enum class ShardingType { kTableWise, kColumnWise, kRowWise, kTableRowWise, kDataParallel };
inline constexpr int kNumShardingTypes = 5;

/** "table_wise", "column_wise", "row_wise", "table_row_wise" or "data_parallel". */
[[nodiscard]] const char* to_string(ShardingType type);
/** Parses the names above; throws Error naming `where` and the accepted names otherwise. */
[[nodiscard]] ShardingType parse_sharding_type(const std::string& text, const std::string& where);

}  // namespace embshard
