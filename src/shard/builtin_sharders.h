#pragma once
// Registration of the built-in sharders, one function per folder of src/shard/.
#include "embshard/shard/sharder.h"

namespace embshard::detail {

void register_baselines(Registry<Sharder>& registry);   ///< src/shard/baselines: random, greedy
void register_exhaustive(Registry<Sharder>& registry);  ///< src/shard/exhaustive
void register_torchrec(Registry<Sharder>& registry);    ///< src/shard/torchrec: TorchRec's planner
void register_neuroshard(Registry<Sharder>& registry);  ///< src/shard/neuroshard: NeuroShard's search
void register_dreamshard(Registry<Sharder>& registry);  ///< src/shard/dreamshard: DreamShard's policy
void register_autoshard(Registry<Sharder>& registry);   ///< src/shard/autoshard: AutoShard's policy
void register_recshard(Registry<Sharder>& registry);    ///< src/shard/recshard: RecShard's MILP
void register_joint(Registry<Sharder>& registry);       ///< src/shard/joint: embshard's own planner

}  // namespace embshard::detail
