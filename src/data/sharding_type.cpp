#include "embshard/data/sharding_type.h"

#include "embshard/core/error.h"

namespace embshard {
namespace {

constexpr const char* kTypeNames[kNumShardingTypes] = {"table_wise",     "column_wise",   "row_wise",
                                                       "table_row_wise", "data_parallel", "grid_shard"};

}  // namespace

const char* to_string(ShardingType type) { return kTypeNames[static_cast<int>(type)]; }

ShardingType parse_sharding_type(const std::string& text, const std::string& where) {
  for (int i = 0; i < kNumShardingTypes; ++i)
    if (text == kTypeNames[i]) return static_cast<ShardingType>(i);
  EMBSHARD_THROW(where, ": unknown sharding type '", detail::one_line(text),
                 "' (expected table_wise, column_wise, row_wise, table_row_wise, data_parallel or grid_shard)");
}

}  // namespace embshard
