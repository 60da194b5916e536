#pragma once
// Registration of the built-in sharders, one function per folder of src/shard/.
#include "embshard/shard/sharder.h"

namespace embshard::detail {

void register_baselines(Registry<Sharder>& registry);   ///< src/shard/baselines: random, greedy
void register_exhaustive(Registry<Sharder>& registry);  ///< src/shard/exhaustive
void register_torchrec(Registry<Sharder>& registry);    ///< src/shard/torchrec: TorchRec's planner
void register_neuroshard(Registry<Sharder>& registry);  ///< src/shard/neuroshard: NeuroShard's search

}  // namespace embshard::detail
