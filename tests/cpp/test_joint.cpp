// Tests of `joint` (src/shard/joint/joint.h) and of the lower bound it is certified against.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <tuple>

#include <filesystem>

#include "embshard/core/file_io.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/cost_model.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/derived_stats.h"
#include "embshard/data/random.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/plan/plan_io.h"
#include "embshard/plan/torchrec_export.h"
#include "embshard/shard/sharder.h"
#include "shard/joint/joint.h"
#include "shard/joint/row_cuts.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::quiet;
using test_util::tiny_task;

double value_of(CostModel& cost, const Task& task, const Plan& plan, Objective objective) {
  if (plan.groups.enabled())  // a 2D plan: costed on its group's task (plan/sharding_groups.h)
    return objective_value(cost.for_task(sharding_group_task(task, plan.groups))->estimate(task, plan, quiet()),
                           objective);
  return objective_value(cost.estimate(task, plan, quiet()), objective);
}

const char* const kTinyTopologies[] = {"cpu:devices=3", "v100:gpus_per_node=2", "2080ti:gpus_per_node=4",
                                       "a100:nodes=2,gpus_per_node=2"};

TEST(Joint, FindsTheExhaustiveOptimumOnTinyTasksAndSplitsOnlyToBeatIt) {
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    const Task task = tiny_task(4 + static_cast<int>(seed % 4), kTinyTopologies[seed % 4], seed);
    const auto cost = make_cost_model("sim", task);
    for (const Objective objective : {Objective::kStep, Objective::kMaxSum}) {
      SCOPED_TRACE(task.topology.name + " seed " + std::to_string(seed) + " " + to_string(objective));
      const std::string o = std::string("objective=") + to_string(objective);
      const ShardResult exact = plan_task("exhaustive:" + o, task, cost.get(), quiet());
      ASSERT_EQ(exact.status, ShardStatus::kOk) << exact.reason;
      const double optimum = value_of(*cost, task, exact.plan, objective);
      // Within exhaustive's space (table-wise only), joint finds the same optimum ...
      const ShardResult same =
          plan_task("joint:rows=false,columns=false,uvm=false," + o, task, cost.get(), quiet(seed));
      ASSERT_EQ(same.status, ShardStatus::kOk) << same.reason;
      EXPECT_NEAR(value_of(*cost, task, same.plan, objective), optimum, 1e-9 * optimum);
      // ... and with splits it is never worse.
      const ShardResult full = plan_task("joint:" + o, task, cost.get(), quiet(seed));
      ASSERT_EQ(full.status, ShardStatus::kOk) << full.reason;
      const double value = value_of(*cost, task, full.plan, objective);
      EXPECT_LE(value, optimum * (1 + 1e-9));
      EXPECT_GE(value * (1 + 1e-12), *cost->lower_bound(task, objective));
    }
  }
}

/** A valid plan with random layouts: whole, columns or uneven rows over random distinct devices,
 *  2 × 2 grids, or data-parallel copies, one table in `copy_one_in` of those that may be copied
 *  (0: none, a 2D plan's group); each layout only where the task and the table allow it. */
Plan random_split_plan(const Task& task, Rng& rng, int copy_one_in = 5) {
  Plan plan;
  const int n = task.topology.num_devices();
  for (const TableSpec& t : task.workload.tables) {
    TablePlacement tp{t.name, ShardingType::kTableWise, {}};
    std::vector<int> devices(static_cast<std::size_t>(n));
    for (int d = 0; d < n; ++d) devices[static_cast<std::size_t>(d)] = d;
    for (int i = n - 1; i > 0; --i) std::swap(devices[static_cast<std::size_t>(i)], devices[rng.below(i + 1)]);
    if (copy_one_in > 0 && may_replicate(task, t) &&
        rng.below(static_cast<std::uint64_t>(copy_one_in)) == 0) {  // a data-parallel copy on every device
      tp.type = ShardingType::kDataParallel;
      for (int d = 0; d < n; ++d) tp.shards.push_back({d, 0, t.num_rows(), 0, t.dim, -1});
      plan.tables.push_back(tp);
      continue;
    }
    if (allows(task, t, ShardingType::kGridShard) && n >= 4 && t.dim >= 8 && t.num_rows() >= 2 &&
        rng.below(5) == 0) {  // a 2 × 2 grid
      tp.type = ShardingType::kGridShard;
      const int col = 4 * (1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(t.dim / 4 - 1))));
      for (int c = 0; c < 2; ++c) {
        const std::int64_t row = 1 + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(t.num_rows() - 1)));
        const int lo = c == 0 ? 0 : col, hi = c == 0 ? col : t.dim;
        tp.shards.push_back({devices[static_cast<std::size_t>(2 * c)], 0, row, lo, hi, -1});
        tp.shards.push_back({devices[static_cast<std::size_t>(2 * c + 1)], row, t.num_rows(), lo, hi, -1});
      }
      plan.tables.push_back(tp);
      continue;
    }
    const int parts = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
    const std::uint64_t kind = parts == 1 ? 0 : 1 + rng.below(2);  // whole, columns or rows
    if (kind == 1 && t.dim / 4 >= parts && allows(task, t, ShardingType::kColumnWise)) {
      tp.type = ShardingType::kColumnWise;
      int begin = 0;
      for (int i = 0; i < parts; ++i) {
        const int left = (t.dim - begin) / 4 - (parts - 1 - i);
        const int width = i + 1 == parts ? t.dim - begin : 4 * (1 + static_cast<int>(rng.below(left)));
        tp.shards.push_back({devices[static_cast<std::size_t>(i)], 0, t.num_rows(), begin, begin + width, -1});
        begin += width;
      }
    } else if (kind == 2 && allows(task, t, ShardingType::kRowWise)) {
      tp.type = ShardingType::kRowWise;
      std::vector<std::int64_t> cuts{0, t.num_rows()};
      for (int i = 1; i < parts; ++i) cuts.push_back(static_cast<std::int64_t>(rng.below(t.num_rows())));
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
        tp.shards.push_back({devices[i], cuts[i], cuts[i + 1], 0, t.dim, -1});
    } else {
      tp.shards.push_back({devices[0], 0, t.num_rows(), 0, t.dim, -1});
    }
    plan.tables.push_back(tp);
  }
  return plan;
}

/** The tiny topologies and two more with several hosts of several devices. */
const char* const kBoundTopologies[] = {"cpu:devices=3",
                                        "v100:gpus_per_node=2",
                                        "2080ti:gpus_per_node=4",
                                        "a100:nodes=2,gpus_per_node=2",
                                        "h100:nodes=3,gpus_per_node=2",
                                        "v100:nodes=2,gpus_per_node=4"};

/** `draws` random split plans of `task` (every plan fits, one table in `copy_one_in` copied where
 *  it may be), each checked against the bound on both objectives; returns the checks made.
 *  `label` names the case in failures. */
int expect_random_plans_above_bound(const Task& task, CostModel& cost, std::uint64_t seed, int draws,
                                    const std::string& label, int copy_one_in = 5) {
  Rng rng(seed);
  int checked = 0;
  for (int draw = 0; draw < draws; ++draw) {
    const Plan plan = random_split_plan(task, rng, copy_one_in);
    EXPECT_EQ(find_error_in_plan(task, plan), "");
    for (const Objective o : {Objective::kStep, Objective::kMaxSum}) {
      EXPECT_GE(value_of(cost, task, plan, o) * (1 + 1e-12), *cost.lower_bound(task, o))
          << task.topology.name << " " << label << " draw " << draw;
      ++checked;
    }
  }
  return checked;
}

/** tiny_task(6 + seed % 6) on the seed's bound topology, every plan fitting its memory; seeds 6–11
 *  with half-duplex links (topology.h). */
Task bound_task(std::uint64_t seed) {
  Task task = tiny_task(6 + static_cast<int>(seed % 6), kBoundTopologies[seed % 6], seed);
  task.topology.half_duplex = seed / 6 % 3 == 1;
  task.workload.batch_size = seed % 2 ? 65536 : 4096;
  for (Device& d : task.topology.devices) d.hbm_bytes = std::int64_t{1} << 40;
  return task;
}

TEST(LowerBound, NoPlanWithAnySplitsBeatsIt) {
  int checked = 0;
  for (std::uint64_t seed = 0; seed < 18; ++seed) {
    for (const char* input : {"exposed", "overlap", "omit"}) {
      const Task task = bound_task(seed);
      const auto cost = make_cost_model(std::string("sim:input_comm=") + input, task);
      checked +=
          expect_random_plans_above_bound(task, *cost, seed, 40, "seed " + std::to_string(seed) + " input " + input);
    }
  }
  EXPECT_GT(checked, 3000);
}

TEST(LowerBound, NoPlanBeatsItWithSequenceTables) {
  // Every other table a sequence table (TableSpec::pooled false): its row pieces send their rows'
  // lookups instead of partial sums, so splitting it adds no output — the bound charges it once.
  int checked = 0;
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    Task task = bound_task(seed);
    for (std::size_t t = seed % 2; t < task.workload.tables.size(); t += 2) task.workload.tables[t].pooled = false;
    const auto cost = make_cost_model(seed % 3 ? "sim" : "sim:input_comm=omit", task);
    checked += expect_random_plans_above_bound(task, *cost, seed, 40, "seed " + std::to_string(seed));
    // joint plans sequence tables too, within the bound.
    const ShardResult joint = plan_task("joint", task, cost.get(), quiet(seed));
    ASSERT_EQ(joint.status, ShardStatus::kOk) << joint.reason;
    EXPECT_GE(value_of(*cost, task, joint.plan, Objective::kStep) * (1 + 1e-12),
              *cost->lower_bound(task, Objective::kStep));
  }
  EXPECT_GT(checked, 900);
}

TEST(LowerBound, No2DPlanBeatsIt) {
  // Random plans of every 2D layout the multi-host topologies allow (plan/sharding_groups.h),
  // replicas synced every step to every 1,000 steps: the task's bound covers them too.
  int checked = 0;
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    Task task = tiny_task(6 + static_cast<int>(seed % 6), kBoundTopologies[3 + seed % 3], seed);
    task.workload.batch_size = seed % 2 ? 65536 : 6144;
    task.workload.replica_sync_every = seed % 3 == 0 ? 1 : seed % 3 == 1 ? 10 : 1000;
    for (Device& d : task.topology.devices) d.hbm_bytes = std::int64_t{1} << 40;  // every plan fits
    const auto cost = make_cost_model("sim", task);
    Rng rng(seed);
    for (const ShardingGroups& groups : sharding_group_layouts(task)) {
      const Task group = sharding_group_task(task, groups);
      const auto group_cost = make_cost_model("sim", group);
      for (int draw = 0; draw < 10; ++draw) {
        Plan plan = random_split_plan(group, rng, 0);
        plan.groups = groups;
        ASSERT_EQ(find_error_in_plan(task, plan), "");
        for (const Objective o : {Objective::kStep, Objective::kMaxSum}) {
          EXPECT_GE(value_of(*group_cost, task, plan, o) * (1 + 1e-12), *cost->lower_bound(task, o))
              << task.topology.name << " seed " << seed << " " << describe_groups(groups, task.topology.num_devices());
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

/** Three tables of many lookups (pooling 400–800) among 13 light ones, 1M rows each, batch 65,536. */
Task heavy_tables_task(std::uint64_t seed, const std::string& topology) {
  Task task;
  task.id = "heavy-" + std::to_string(seed);
  task.workload.batch_size = 65536;
  task.topology = make_topology(topology);
  Rng rng(seed);
  for (int t = 0; t < 16; ++t) {
    TableSpec spec;
    spec.name = "t" + std::to_string(t);
    spec.dim = 16 << rng.below(4);
    const double pooling =
        t < 3 ? 400.0 + static_cast<double>(rng.below(400)) : 1.0 + static_cast<double>(rng.below(20));
    spec.stats = derive_table_stats(1'000'000, pooling, -1.0, task.workload.batch_size, pool_median_model(), spec.name);
    task.workload.tables.push_back(spec);
  }
  return task;
}

TEST(LowerBound, OnMixedHardwareWeighsEachDeviceBySpeedAndNoPlanBeatsIt) {
  // Every other host of a slower kind (data/topology.h, "Mixed hardware"): the bound averages the
  // kernels' work over the devices' speeds (analytic.h, "Mixed speeds"), so it is above the bound
  // of the same task on devices all as fast as the fastest, and still below every plan. From seed
  // 6 on the slower hosts have their kind's links too (each device costed on its own).
  const char* const kinds[][2] = {{"h100:nodes=2,gpus_per_node=2", "2080ti"},
                                  {"a100:nodes=3,gpus_per_node=2", "v100"},
                                  {"h100:nodes=2,gpus_per_node=4", "a100"}};
  int checked = 0, above = 0;
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    const auto& [spec, slow_kind] = kinds[seed % 3];
    Task task = tiny_task(6 + static_cast<int>(seed % 6), spec, seed);
    task.workload.batch_size = seed % 2 ? 65536 : 4096;
    const Device slow = make_topology(slow_kind).devices.front();
    Task fastest = task;
    for (std::size_t d = 0; d < task.topology.devices.size(); ++d) {
      Device& device = task.topology.devices[d];
      device.hbm_bytes = fastest.topology.devices[d].hbm_bytes = std::int64_t{1} << 40;
      if (task.topology.host_of(static_cast<int>(d)) % 2 == 1) {
        device.hbm_gbps = slow.hbm_gbps, device.uvm_gbps = slow.uvm_gbps;
        if (seed >= 6) {
          const Topology links = make_topology(std::string(slow_kind) + ":nodes=2");
          device.intra_host_gbps = links.intra_host_gbps, device.inter_host_gbps = links.inter_host_gbps;
        }
      }
    }
    ASSERT_EQ(find_error_in_topology(task.topology, "mixed"), "");
    EXPECT_EQ(task.topology.uniform_links(), seed < 6) << seed;
    const auto cost = make_cost_model("sim", task);
    const auto fast_cost = make_cost_model("sim", fastest);
    const double bound = *cost->lower_bound(task, Objective::kStep);
    EXPECT_GE(bound, *fast_cost->lower_bound(fastest, Objective::kStep)) << seed;
    above += bound > *fast_cost->lower_bound(fastest, Objective::kStep) * (1 + 1e-9);
    checked += expect_random_plans_above_bound(task, *cost, seed, 40, "mixed seed " + std::to_string(seed));
    const ShardResult joint = plan_task("joint", task, cost.get(), quiet(seed));
    ASSERT_EQ(joint.status, ShardStatus::kOk) << joint.reason;
    EXPECT_GE(value_of(*cost, task, joint.plan, Objective::kStep) * (1 + 1e-12), bound) << seed;
  }
  EXPECT_GT(checked, 900);
  EXPECT_GE(above, 9);  // where the kernels weigh in the step at all
}

TEST(LowerBound, HoldsWhereHeavyTablesAreSplitInsideAHost) {
  // A few tables of many lookups, too heavy for one device, among light ones on two and three
  // hosts: joint splits them, and row pieces inside one host send their outputs across hosts
  // once, not once per piece (cost/link_model.h) — the bound must not charge them per piece.
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    const Task task =
        heavy_tables_task(seed, seed % 2 ? "v100:nodes=2,gpus_per_node=4" : "h100:nodes=3,gpus_per_node=4");
    ASSERT_EQ(find_error_in_task(task, task.id), "");
    const auto cost = make_cost_model("sim", task);
    const double bound = *cost->lower_bound(task, Objective::kStep);
    const ShardResult r = plan_task("joint", task, cost.get(), quiet(seed));
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_GE(value_of(*cost, task, r.plan, Objective::kStep) * (1 + 1e-12), bound)
        << task.topology.name << " seed " << seed;
  }
}

TEST(LowerBound, ChargesHalfDuplexLinksBothDirectionsAndJointStaysAboveIt) {
  // A slow link, so the exchanges weigh: on half-duplex links (topology.h) every exchange floor's
  // bytes count twice, so the bound rises by about the full-duplex bound's bytes term (its excess
  // over the same task on links 1,000× as fast); joint's plans, on one host and on 64 devices (where
  // its incremental fast path is off for half duplex), stay above it.
  static constexpr int kDims[] = {16, 64, 128};
  for (const char* topology : {"v100:gpus_per_node=4", "v100:nodes=8,gpus_per_node=8"}) {
    Task task = test_util::pool_task(topology[5] == 'g' ? 24 : 150, topology, 6, kDims);
    task.topology.intra_host_gbps = 20.0;
    task.topology.inter_host_gbps = 5.0;
    const auto bound = [&](double speed, bool half_duplex) {
      Task t = task;
      t.topology.intra_host_gbps *= speed;
      t.topology.inter_host_gbps *= speed;
      t.topology.half_duplex = half_duplex;
      return *make_cost_model("sim", t)->lower_bound(t, Objective::kStep);
    };
    const double fast = bound(1000.0, false), full = bound(1.0, false), half = bound(1.0, true);
    EXPECT_GT(full, fast * 1.05) << topology << ": the link should weigh";
    EXPECT_GT(half - full, 0.5 * (full - fast)) << topology << ": full " << full << ", half " << half;
    task.topology.half_duplex = true;
    const auto cost = make_cost_model("sim", task);
    const ShardResult r = plan_task("joint:work=50000", task, cost.get(), quiet(3));
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_EQ(find_error_in_plan(task, r.plan), "");
    const double value = value_of(*cost, task, r.plan, Objective::kStep);
    EXPECT_GE(value * (1 + 1e-12), half) << topology;
    EXPECT_NEAR(r.stats.solver_gap, (value - half) / half, 1e-9) << topology;
  }
}

TEST(Joint, AboveOneHostAHeavyTableStartsInRowPiecesAndOnOneHostWhole) {
  // joint.h step 2: with no budget to search, the plan is the start. Three tables of many lookups
  // among light ones on 8 devices: on two hosts each table holding more than split_start of an
  // average device's lookups or lookups × dim starts in ⌈that share / split_start⌉ row pieces (at
  // most one a device); on one host, or with split_start=0, every table starts whole.
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    Task task = heavy_tables_task(seed, "v100:nodes=2,gpus_per_node=4");
    double lookups = 0.0, weight = 0.0;
    for (const TableSpec& t : task.workload.tables) {
      lookups += static_cast<double>(t.stats.num_indices) / 8;
      weight += static_cast<double>(t.stats.num_indices) * t.dim / 8;
    }
    for (const char* topology : {"v100:nodes=2,gpus_per_node=4", "v100:gpus_per_node=8"}) {
      task.topology = make_topology(topology);
      ASSERT_EQ(find_error_in_task(task, task.id), "");
      const auto cost = make_cost_model("sim", task);
      const bool hosts = task.topology.num_hosts() > 1;
      for (const char* spec : {"joint:work=1", "joint:work=1,split_start=0"}) {
        const ShardResult r = plan_task(spec, task, cost.get(), quiet(seed));
        ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
        const bool splits = hosts && std::string(spec).find("split_start=0") == std::string::npos;
        int split = 0;
        for (const TablePlacement& p : r.plan.tables) {
          const TableSpec& t = *std::find_if(task.workload.tables.begin(), task.workload.tables.end(),
                                             [&](const TableSpec& s) { return s.name == p.table; });
          const double share = std::max(static_cast<double>(t.stats.num_indices) / lookups,
                                        static_cast<double>(t.stats.num_indices) * t.dim / weight);
          // at most a piece per device (max_parts)
          const std::size_t pieces = splits ? static_cast<std::size_t>(std::min(std::ceil(share / 0.5), 8.0)) : 1;
          SCOPED_TRACE(std::string(topology) + " " + spec + " seed " + std::to_string(seed) + " " + p.table);
          ASSERT_EQ(p.shards.size(), pieces);
          std::int64_t rows = 0;
          for (const Shard& s : p.shards) {
            EXPECT_EQ(s.num_cols(), t.dim);
            rows += s.num_rows();
          }
          EXPECT_EQ(rows, t.num_rows());
          split += pieces > 1 ? 1 : 0;
        }
        EXPECT_GE(split, splits ? 3 : 0);  // at least the three heavy tables
      }
    }
  }
}

TEST(Joint, BelowSixtyFourDevicesASplitStartIsAlsoSearchedWhole) {
  // joint.h step 2: where the greedy start split heavy tables (above one host), below 64 devices
  // the start is made again with every table whole and searched the same way, and the better
  // kept. With no perturbation rounds (patience=0) the plan is then never worse than the search
  // from the whole start alone (split_start=0).
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    const Task task =
        heavy_tables_task(seed, seed % 2 ? "v100:nodes=2,gpus_per_node=4" : "h100:nodes=3,gpus_per_node=4");
    const auto cost = make_cost_model("sim", task);
    const auto step = [&](const char* spec) {
      const ShardResult r = plan_task(spec, task, cost.get(), quiet(seed));
      EXPECT_EQ(r.status, ShardStatus::kOk) << r.reason;
      return value_of(*cost, task, r.plan, Objective::kStep);
    };
    const double both = step("joint:patience=0,groups=none,data_parallel=false");
    const double whole = step("joint:patience=0,groups=none,data_parallel=false,split_start=0");
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_LE(both, whole * (1 + 1e-12));
  }
}

TEST(Joint, FromSixtyFourHostsAHeavyTableTakesTheLeastLoadedHostFirst) {
  // joint.h step 2: from 64 hosts on, a table that starts in row pieces takes its host first, the
  // one whose loads so far are least aligned with its own. 64 equal heavy tables among light ones
  // on 64 hosts of 8: each starts in 5 row pieces and, with no budget to search, the plan is the
  // start: every heavy table on a host of its own. The devices' candidates alone (the least loaded
  // devices, which share hosts) would open a new host only when the last one's devices ran out.
  Task task;
  task.id = "host-first";
  task.workload.batch_size = 65536;
  task.topology = make_topology("v100:nodes=64,gpus_per_node=8");
  for (int t = 0; t < 512; ++t) {
    TableSpec spec;
    spec.name = "t" + std::to_string(t);
    spec.dim = 32;
    spec.stats = derive_table_stats(100'000, t < 64 ? 60.0 : 20.0, -1.0, task.workload.batch_size, pool_median_model(),
                                    spec.name);
    task.workload.tables.push_back(spec);
  }
  ASSERT_EQ(find_error_in_task(task, task.id), "");
  const auto cost = make_cost_model("sim", task);
  const ShardResult r = plan_task("joint:work=1,groups=none", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  std::set<int> hosts;
  int heavy = 0;
  for (const TablePlacement& p : r.plan.tables) {
    if (std::stoi(p.table.substr(1)) >= 64) continue;
    ++heavy;
    SCOPED_TRACE(p.table);
    ASSERT_EQ(p.shards.size(), 5U);
    const int host = task.topology.host_of(p.shards.front().device);
    for (const Shard& s : p.shards) EXPECT_EQ(task.topology.host_of(s.device), host);
    EXPECT_TRUE(hosts.insert(host).second) << "host " << host << " holds two heavy tables";
  }
  EXPECT_EQ(heavy, 64);
}

/** An empty task `id` at batch 65,536 on `topology`, every device with 1 TiB of HBM (every plan fits). */
Task roomy_task(const std::string& id, const std::string& topology) {
  Task task;
  task.id = id;
  task.workload.batch_size = 65536;
  task.topology = make_topology(topology);
  for (Device& d : task.topology.devices) d.hbm_bytes = std::int64_t{1} << 40;
  return task;
}

TEST(LowerBound, KnowsPiecesPayForTheCacheAndNoPlanSplitJustEnoughBeatsIt) {
  // One table whose working set outgrows the V100's L2: a plan that splits it into k equal row
  // pieces pays k − 1 more per-table costs and evicts less. The bound charges the cheaper of the
  // whole table under the cache and enough pieces for none to evict (analytic.h), so it is above
  // the bound of a device whose cache holds everything, and no split of it goes below.
  for (const int dim : {32, 64, 128}) {
    Task task = roomy_task("cache-" + std::to_string(dim), "v100:gpus_per_node=4");
    TableSpec spec;
    spec.name = "heavy";
    spec.dim = dim;
    spec.stats = derive_table_stats(400'000, 30.0, -1.0, task.workload.batch_size, pool_median_model(), spec.name);
    task.workload.tables.push_back(spec);
    ASSERT_EQ(find_error_in_task(task, task.id), "");
    const SimHardware hw = sim_hardware_for(task.topology);
    ASSERT_GT(hw.fw[kSimTables], 0.0);  // each piece pays a per-table cost
    const double working_set = static_cast<double>(spec.stats.num_distinct) * dim * 4.0;
    ASSERT_GT(working_set, static_cast<double>(hw.cache_bytes)) << dim;
    SimHardware roomy = hw;
    roomy.cache_bytes = std::int64_t{1} << 50;
    const InputCommOptions input;
    const double bound = sim_lower_bound(task, hw, Objective::kStep, input);
    EXPECT_GT(bound, sim_lower_bound(task, roomy, Objective::kStep, input) * (1 + 1e-6)) << dim;
    const auto cost = make_cost_model("sim", task);
    for (int k = 1; k <= 4; ++k) {
      Plan plan;
      TablePlacement tp{spec.name, k == 1 ? ShardingType::kTableWise : ShardingType::kRowWise, {}};
      for (int i = 0; i < k; ++i)
        tp.shards.push_back({i, spec.num_rows() * i / k, spec.num_rows() * (i + 1) / k, 0, dim, -1});
      plan.tables.push_back(tp);
      ASSERT_EQ(find_error_in_plan(task, plan), "");
      EXPECT_GE(value_of(*cost, task, plan, Objective::kStep) * (1 + 1e-12), *cost->lower_bound(task, Objective::kStep))
          << "dim " << dim << ", " << k << " pieces";
    }
  }
}

TEST(LowerBound, NoPlanWhosePiecesStillEvictBeatsIt) {
  // Eight tables of 1.5 to 3.5 times a V100's L2, each cut into k equal row pieces over the eight
  // devices. Between ⌊working set / cache⌋ and ⌈working set / cache⌉ pieces the one fewer still
  // evicts a little and saves a per-table cost: until stop 63 the bound took only the whole table
  // and ⌈working set / cache⌉ pieces, and two pieces of a table 2.0–2.2 times the cache beat it.
  int checked = 0, between = 0;
  for (int rows = 70'000; rows <= 180'000; rows = rows * 21 / 20) {
    Task task = roomy_task("evict-" + std::to_string(rows), "v100:gpus_per_node=8");
    TableSpec spec;
    spec.dim = 32;
    spec.stats = derive_table_stats(rows, 30.0, -1.0, task.workload.batch_size, pool_median_model(), "t");
    for (int t = 0; t < 8; ++t) {
      spec.name = "t" + std::to_string(t);
      task.workload.tables.push_back(spec);
    }
    ASSERT_EQ(find_error_in_task(task, task.id), "");
    const double spread = static_cast<double>(spec.stats.num_distinct) * spec.dim * 4.0 /
                          static_cast<double>(sim_hardware_for(task.topology).cache_bytes);
    between += spread > 2.0 && spread < 2.3;
    const auto cost = make_cost_model("sim", task);
    const double bound = *cost->lower_bound(task, Objective::kStep);
    for (int k = 1; k <= 8; ++k) {
      Plan plan;
      for (int t = 0; t < 8; ++t) {
        TablePlacement tp{"t" + std::to_string(t), k == 1 ? ShardingType::kTableWise : ShardingType::kRowWise, {}};
        for (int i = 0; i < k; ++i)
          tp.shards.push_back({(t + i) % 8, spec.num_rows() * i / k, spec.num_rows() * (i + 1) / k, 0, spec.dim, -1});
        plan.tables.push_back(tp);
      }
      ASSERT_EQ(find_error_in_plan(task, plan), "");
      EXPECT_GE(value_of(*cost, task, plan, Objective::kStep) * (1 + 1e-12), bound)
          << rows << " rows (working set " << spread << " caches), " << k << " pieces";
      ++checked;
    }
  }
  EXPECT_GE(between, 2);
  EXPECT_GT(checked, 100);
}

/** Two hosts of eight (H100s for even seeds, V100s for odd), one table (t0) of many lookups among
 *  47 light ones: no device can receive all its lookups within the input floor. */
Task one_hot_table_task(std::uint64_t seed) {
  Task task = roomy_task("input-" + std::to_string(seed),
                         seed % 2 ? "v100:nodes=2,gpus_per_node=8" : "h100:nodes=2,gpus_per_node=8");
  Rng rng(seed);
  for (int t = 0; t < 48; ++t) {
    TableSpec spec;
    spec.name = "t" + std::to_string(t);
    spec.dim = t == 0 ? 4 : 8 << rng.below(3);
    const double pooling = t == 0 ? 40.0 + 10.0 * static_cast<double>(seed) : 1.0 + static_cast<double>(rng.below(4));
    spec.stats = derive_table_stats(100'000 << rng.below(4), pooling, -1.0, task.workload.batch_size,
                                    pool_median_model(), spec.name);
    task.workload.tables.push_back(spec);
  }
  return task;
}

/** `task` with its hot table t0 in row pieces of the given row shares (summing to 1) on devices 0,
 *  1, …, and every other table whole, round the devices after them. */
Plan hot_table_in_pieces(const Task& task, const std::vector<double>& shares) {
  const int n = task.topology.num_devices();
  const int k = static_cast<int>(shares.size());
  const TableSpec& hot = task.workload.tables[0];
  Plan plan;
  TablePlacement tp{hot.name, k == 1 ? ShardingType::kTableWise : ShardingType::kRowWise, {}};
  double begin = 0.0;
  for (int i = 0; i < k; ++i) {
    const double end = i + 1 == k ? 1.0 : begin + shares[static_cast<std::size_t>(i)];
    const auto row = [&](double share) {
      return static_cast<std::int64_t>(share * static_cast<double>(hot.num_rows()));
    };
    tp.shards.push_back({i, row(begin), row(end), 0, hot.dim, -1});
    begin = end;
  }
  plan.tables.push_back(tp);
  for (std::size_t t = 1; t < task.workload.tables.size(); ++t) {
    const TableSpec& spec = task.workload.tables[t];
    const int device = (k + static_cast<int>(t) - 1) % n;
    plan.tables.push_back({spec.name, ShardingType::kTableWise, {{device, 0, spec.num_rows(), 0, spec.dim, -1}}});
  }
  return plan;
}

TEST(LowerBound, KnowsATableTooHeavyForOneDevicesInputTakesRowPiecesAndNoPlanSplitJustEnoughBeatsIt) {
  // No device can receive all the hot table's lookups within the input floor, though it computes
  // them within the compute floor. So a plan either splits it by rows, each piece paying the
  // per-table costs, or pays a longer input (analytic.h, "Input caps"): the bound charges the
  // cheaper of the two beyond the floors, and no split of it goes below.
  int checked = 0;
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    const Task task = one_hot_table_task(seed);
    ASSERT_EQ(find_error_in_task(task, task.id), "");
    // The input floor: every device receiving the same share of all the lookups; the heavy
    // table's alone on one device take longer (the link model's own figures).
    const InputCommOptions exposed;
    const auto received = [&](const TableSpec& t) {
      return static_cast<double>(t.stats.num_indices) * exposed.index_bytes +
             static_cast<double>(task.workload.batch_size) * exposed.length_bytes;
    };
    double total = 0.0;
    for (const TableSpec& t : task.workload.tables) total += received(t);
    const int n = task.topology.num_devices();
    const double floor = exchange_ms(task.topology, std::vector<double>(n, total / n)).front();
    std::vector<double> heavy_alone(n, (total - received(task.workload.tables[0])) / (n - 1));
    heavy_alone[0] = received(task.workload.tables[0]);
    ASSERT_GT(exchange_ms(task.topology, heavy_alone).front(), 1.5 * floor) << seed;
    const SimHardware hw = sim_hardware_for(task.topology);
    ASSERT_GT(hw.fw[kSimTables] + hw.bw[kSimTables], 0.0);  // each piece pays a per-table cost
    InputCommOptions omit;
    omit.mode = InputCommMode::kOmit;
    const double bound = sim_lower_bound(task, hw, Objective::kStep, exposed);
    EXPECT_GT(bound - sim_lower_bound(task, hw, Objective::kStep, omit), floor * 1.01) << seed;
    // The heavy table in k equal row pieces on the first k devices, the others round the rest.
    const auto cost = make_cost_model("sim", task);
    for (int k = 1; k <= n; ++k) {
      const Plan plan = hot_table_in_pieces(task, std::vector<double>(static_cast<std::size_t>(k), 1.0 / k));
      ASSERT_EQ(find_error_in_plan(task, plan), "");
      EXPECT_GE(value_of(*cost, task, plan, Objective::kStep) * (1 + 1e-12), bound) << seed << ", " << k << " pieces";
    }
    checked += expect_random_plans_above_bound(task, *cost, seed, 20, "input seed " + std::to_string(seed));
    const ShardResult joint = plan_task("joint", task, cost.get(), quiet(seed));
    ASSERT_EQ(joint.status, ShardStatus::kOk) << joint.reason;
    EXPECT_GE(value_of(*cost, task, joint.plan, Objective::kStep) * (1 + 1e-12), bound) << seed;
  }
  EXPECT_GT(checked, 200);
}

TEST(LowerBound, HoldsWhereReReadsCostMoreAsHitsThanAsMisses) {
  // Coefficients (a fit is only held to be ≥ 0) under which a hit costs more than a miss: then
  // pieces that evict the most are the cheapest, one big piece and small ones, not k equal ones
  // (analytic.cpp `PieceFloors`). The hot table, twice the H100's L2 or more, is cut into equal
  // and unequal row pieces, and random plans are drawn: none goes below the bound.
  int checked = 0;
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    Task task = one_hot_table_task(seed);
    task.workload.tables[0].dim = 64;
    task.workload.tables[0].stats = derive_table_stats(3'000'000, 40.0 + 10.0 * static_cast<double>(seed), -1.0,
                                                       task.workload.batch_size, pool_median_model(), "t0");
    SimHardware hw = sim_hardware_for(task.topology);
    hw.fw[kSimHitBytes] = 3.0 * hw.fw[kSimMissBytes], hw.bw[kSimHitBytes] = 3.0 * hw.bw[kSimMissBytes];
    const std::string path = test_util::temp_file("hits", std::to_string(seed) + ".json");
    write_file_atomic(path, sim_hardware_json(hw, task.topology.device_kind));
    const auto cost = make_cost_model("sim:coefficients=" + path, task);
    std::filesystem::remove(path);
    const TableSpec& hot = task.workload.tables[0];
    ASSERT_GT(static_cast<double>(hot.stats.num_distinct) * hot.dim * 4.0, 2.0 * static_cast<double>(hw.cache_bytes));
    const double bound = *cost->lower_bound(task, Objective::kStep);
    for (int k = 1; k <= 8; ++k) {
      for (const double big : {1.0 / k, 0.5, 0.8}) {
        if (k == 1 && big != 1.0) continue;
        std::vector<double> shares(static_cast<std::size_t>(k), k > 1 ? (1.0 - big) / (k - 1) : 1.0);
        shares.front() = k > 1 ? big : 1.0;
        const Plan plan = hot_table_in_pieces(task, shares);
        ASSERT_EQ(find_error_in_plan(task, plan), "");
        EXPECT_GE(value_of(*cost, task, plan, Objective::kStep) * (1 + 1e-12), bound)
            << seed << ", " << k << " pieces, the first " << big;
        ++checked;
      }
    }
    checked += expect_random_plans_above_bound(task, *cost, seed, 10, "hits seed " + std::to_string(seed));
  }
  EXPECT_GT(checked, 100);
}

TEST(LowerBound, KnowsEveryPieceServesAllLookupsWhereRowsMayNotSplitAndNoPlanBeatsIt) {
  // Where no layout may split a table's rows (TorchRec's CPU runtime, a table's sharding_types),
  // each of its pieces serves all its lookups, so the busiest device pays them all (analytic.h,
  // "Whole lookups"). Forbidden task-wide, with columns too, or table by table.
  int checked = 0, sharper = 0, exhausted = 0;
  for (std::uint64_t seed = 0; seed < 15; ++seed) {
    Task task = tiny_task(6 + static_cast<int>(seed % 6), kBoundTopologies[1 + seed % 5], seed);
    task.workload.batch_size = seed % 2 ? 65536 : 4096;
    for (Device& d : task.topology.devices) d.hbm_bytes = std::int64_t{1} << 40;
    task.workload.tables[0].dim = 256;
    task.workload.tables[0].stats =
        derive_table_stats(400'000, 150.0, -1.0, task.workload.batch_size, pool_median_model(), "t0");
    const InputCommOptions input;
    const SimHardware hw = sim_hardware_for(task.topology);
    Task whole = task;
    if (seed % 3 == 0) whole.constraints.allow_row_split = false;
    if (seed % 3 == 1) whole.constraints.allow_row_split = whole.constraints.allow_column_split = false;
    if (seed % 3 == 2)
      for (TableSpec& t : whole.workload.tables)
        t.constraints.sharding_types = {ShardingType::kTableWise, ShardingType::kColumnWise,
                                        ShardingType::kDataParallel};
    // The heavy table may be cut into columns by column_wise, or by a grid's blocks of every row.
    const ShardingType cut = seed % 3 == 0 ? ShardingType::kGridShard : ShardingType::kColumnWise;
    whole.workload.tables[0].constraints.sharding_types = {ShardingType::kTableWise, cut};
    ASSERT_EQ(find_error_in_task(whole, whole.id), "");
    const double bound = sim_lower_bound(whole, hw, Objective::kStep, input);
    const double with_rows = sim_lower_bound(task, hw, Objective::kStep, input);
    EXPECT_GE(bound, with_rows * (1 - 1e-12)) << "seed " << seed;  // over fewer plans
    const TableSpec& heavy = whole.workload.tables[0];
    const double busiest = hw.fw[kSimCalls] + hw.bw[kSimCalls] + hw.fw[kSimTables] + hw.bw[kSimTables] +
                           (hw.fw[kSimLookups] + hw.bw[kSimLookups]) * static_cast<double>(heavy.stats.num_indices);
    EXPECT_GE(bound, busiest * (1 - 1e-12)) << "seed " << seed;
    if (bound > 1.05 * with_rows) ++sharper;
    const auto cost = make_cost_model("sim", whole);
    checked += expect_random_plans_above_bound(whole, *cost, seed, 40, "seed " + std::to_string(seed));
    // The heavy table's columns cut over every device (the widest share the bound allows), the rest whole.
    const int n = whole.topology.num_devices();
    Plan cut_plan;
    const int pieces = whole.constraints.allow_column_split ? std::min(n, heavy.dim / 4) : 1;
    TablePlacement heavy_cut{heavy.name, pieces > 1 ? cut : ShardingType::kTableWise, {}};
    for (int i = 0; i < pieces; ++i)
      heavy_cut.shards.push_back(
          {i, 0, heavy.num_rows(), 4 * (heavy.dim / 4 * i / pieces), 4 * (heavy.dim / 4 * (i + 1) / pieces), -1});
    cut_plan.tables.push_back(heavy_cut);
    for (std::size_t t = 1; t < whole.workload.tables.size(); ++t) {
      const TableSpec& spec = whole.workload.tables[t];
      cut_plan.tables.push_back(
          {spec.name, ShardingType::kTableWise, {{static_cast<int>(t) % n, 0, spec.num_rows(), 0, spec.dim, -1}}});
    }
    ASSERT_EQ(find_error_in_plan(whole, cut_plan), "") << "seed " << seed;
    EXPECT_GE(value_of(*cost, whole, cut_plan, Objective::kStep) * (1 + 1e-12), bound) << "seed " << seed;
    // Whole tables only: the exhaustive optimum is the best plan there is.
    if (whole.workload.tables.size() > 10 || std::pow(whole.topology.num_devices(), whole.workload.tables.size()) > 1e5)
      continue;
    for (TableSpec& t : whole.workload.tables) t.constraints.sharding_types = {ShardingType::kTableWise};
    const ShardResult best = plan_task("exhaustive", whole, cost.get(), quiet());
    ASSERT_EQ(best.status, ShardStatus::kOk) << best.reason;
    EXPECT_GE(value_of(*cost, whole, best.plan, Objective::kStep) * (1 + 1e-12),
              sim_lower_bound(whole, hw, Objective::kStep, input))
        << "seed " << seed;
    ++exhausted;
  }
  EXPECT_GE(sharper, 10) << "forbidding row splits should lift most of these bounds";
  EXPECT_GT(checked, 1000);
  EXPECT_GE(exhausted, 4);
}

TEST(LowerBound, AThinnedEnumerationIsWeakerAndStillHolds) {
  // With its enumeration capped (as at scale), the bound may only fall, and still no plan beats it.
  int thinned = 0;
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    Task task = tiny_task(6 + static_cast<int>(seed % 6), kBoundTopologies[seed % 6], seed);
    task.workload.batch_size = 65536;
    for (Device& d : task.topology.devices) d.hbm_bytes = std::int64_t{1} << 40;
    const SimHardware hw = sim_hardware_for(task.topology);
    const InputCommOptions input;
    const double full = sim_lower_bound(task, hw, Objective::kStep, input);
    const double capped = sim_lower_bound(task, hw, Objective::kStep, input, 20.0);
    EXPECT_LE(capped, full * (1 + 1e-12)) << task.topology.name << " seed " << seed;
    thinned += capped < full * (1 - 1e-9);
    const auto cost = make_cost_model("sim", task);
    Rng rng(seed);
    for (int draw = 0; draw < 20; ++draw) {
      const Plan plan = random_split_plan(task, rng);
      EXPECT_GE(value_of(*cost, task, plan, Objective::kStep) * (1 + 1e-12), capped) << " seed " << seed;
    }
  }
  EXPECT_GT(thinned, 0);  // the cap bit somewhere
}

/** `plan` with device d moved to `device_of[d]`. */
Plan relabelled(Plan plan, const std::vector<int>& device_of) {
  for (TablePlacement& tp : plan.tables)
    for (Shard& s : tp.shards) s.device = device_of[static_cast<std::size_t>(s.device)];
  return plan;
}

TEST(LinkModel, APlansCostDoesNotDependOnHowHostsAndTheirDevicesAreNumbered) {
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    Task task = tiny_task(12, seed % 2 ? "h100:nodes=3,gpus_per_node=2" : "v100:nodes=4,gpus_per_node=4", seed);
    task.workload.batch_size = 65536;
    for (Device& d : task.topology.devices) d.hbm_bytes = std::int64_t{1} << 40;
    const auto cost = make_cost_model("sim", task);
    Rng rng(seed);
    const Plan plan = random_split_plan(task, rng);
    // Hosts shuffled, and the devices inside each host.
    const int hosts = task.topology.num_hosts(), per_host = task.topology.host_size();
    std::vector<int> host_of(static_cast<std::size_t>(hosts));
    std::iota(host_of.begin(), host_of.end(), 0);
    for (int i = hosts - 1; i > 0; --i) std::swap(host_of[static_cast<std::size_t>(i)], host_of[rng.below(i + 1)]);
    std::vector<int> device_of(static_cast<std::size_t>(task.topology.num_devices()));
    for (int h = 0; h < hosts; ++h) {
      std::vector<int> local(static_cast<std::size_t>(per_host));
      std::iota(local.begin(), local.end(), 0);
      for (int i = per_host - 1; i > 0; --i) std::swap(local[static_cast<std::size_t>(i)], local[rng.below(i + 1)]);
      for (int l = 0; l < per_host; ++l)
        device_of[static_cast<std::size_t>(h * per_host + l)] =
            host_of[static_cast<std::size_t>(h)] * per_host + local[static_cast<std::size_t>(l)];
    }
    const Plan moved = relabelled(plan, device_of);
    ASSERT_EQ(find_error_in_plan(task, moved), "");
    for (const Objective o : {Objective::kStep, Objective::kMaxSum}) {
      const double want = value_of(*cost, task, plan, o);
      EXPECT_NEAR(value_of(*cost, task, moved, o), want, 1e-12 * want) << task.topology.name << " seed " << seed;
    }
  }
}

TEST(LowerBound, EverySharderRespectsItOnProtocolSizedTasks) {
  static const char* const kTopologies[] = {"2080ti", "v100:gpus_per_node=4", "v100:nodes=2,gpus_per_node=4",
                                            "h100:nodes=3,gpus_per_node=2"};
  int checked = 0;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    static constexpr int kDims[] = {16, 32, 64, 128};
    Task task = test_util::pool_task(20 + static_cast<int>(seed % 4) * 10, kTopologies[seed % 4], seed, kDims);
    task.workload.batch_size = 65536;
    const auto cost = make_cost_model("sim", task);
    const double bound = *cost->lower_bound(task, Objective::kStep);
    for (const char* spec : {"joint", "neuroshard", "torchrec", "greedy:balance=lookup", "greedy:balance=dim"}) {
      const ShardResult r = plan_task(spec, task, cost.get(), quiet(seed));
      if (std::string(spec) == "joint") {
        ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
      }
      if (r.status != ShardStatus::kOk) continue;
      EXPECT_GE(value_of(*cost, task, r.plan, Objective::kStep) * (1 + 1e-12), bound) << spec << " seed " << seed;
      ++checked;
    }
  }
  EXPECT_GE(checked, 24) << "too few plans to test the bound against";
}

/** The plan without its provenance, as JSON. */
std::string plan_text(Plan plan) {
  plan.provenance = {};
  return plan_to_json(plan);
}

TEST(Joint, IsDeterministicForASeedAndReportsItsGap) {
  static constexpr int kDims[] = {16, 64, 128};
  const Task task = test_util::pool_task(30, "2080ti", 3, kDims);
  const auto cost = make_cost_model("sim", task);
  // The evaluation budget ends the search, not the deadline (sanitizer builds run 10× slower).
  const ShardResult a = plan_task("joint:time_ms=600000", task, cost.get(), quiet(5));
  const ShardResult b = plan_task("joint:time_ms=600000", task, cost.get(), quiet(5));
  ASSERT_EQ(a.status, ShardStatus::kOk) << a.reason;
  EXPECT_EQ(plan_text(a.plan), plan_text(b.plan));
  const double value = value_of(*cost, task, a.plan, Objective::kStep);
  const double bound = *cost->lower_bound(task, Objective::kStep);
  EXPECT_NEAR(a.stats.solver_gap, (value - bound) / bound, 1e-12);
}

TEST(Joint, APlanDependsOnItsSeedAndBudgetNotOnTheThreadsItRunsOn) {
  // Given a second thread the bound is computed beside the search (joint.h "Budget"): the same
  // bound and gap as computed first on one.
  static constexpr int kDims[] = {16, 32, 64};
  for (const char* topology : {"v100:gpus_per_node=8", "v100:nodes=8,gpus_per_node=8"}) {  // 64: the fast path
    const Task task = test_util::pool_task(topology[5] == 'g' ? 40 : 200, topology, 4, kDims);
    const auto cost = make_cost_model("sim", task);
    const double bound = *cost->lower_bound(task, Objective::kStep);
    std::string first;
    double first_gap = 0.0;
    for (const int threads : {1, 2, 3}) {
      Context ctx = quiet(9);
      ctx.num_threads = threads;
      const ShardResult r = plan_task("joint:time_ms=600000,work=60000,chains=3", task, cost.get(), ctx);
      ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
      EXPECT_NE(r.stats.solver.find("3 chains"), std::string::npos) << r.stats.solver;
      if (first.empty()) first = plan_text(r.plan), first_gap = r.stats.solver_gap;
      EXPECT_EQ(plan_text(r.plan), first) << topology << ", " << threads << " threads";
      ASSERT_TRUE(r.lower_bound.has_value()) << topology << ", " << threads << " threads";
      EXPECT_EQ(*r.lower_bound, bound) << topology << ", " << threads << " threads";
      EXPECT_EQ(r.stats.solver_gap, first_gap) << topology << ", " << threads << " threads";
    }
  }
}

TEST(Joint, ALargerBudgetNeverGivesAWorsePlan) {
  static constexpr int kDims[] = {16, 64, 128};
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    Task task = test_util::pool_task(60, seed == 2 ? "v100:nodes=8,gpus_per_node=8" : "2080ti", seed, kDims);
    // Replicas synced rarely: 2D layouts are searched too (joint.h, "2D").
    if (seed == 2) task.workload.replica_sync_every = 1000;
    const auto cost = make_cost_model("sim", task);
    double previous = std::numeric_limits<double>::infinity();
    for (const int budget : {1, 300, 3000, 20000, 80000, 200000}) {
      const ShardResult r = plan_task("joint:time_ms=600000,patience=1000000,work=" + std::to_string(budget), task,
                                      cost.get(), quiet(seed));
      ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
      const double value = value_of(*cost, task, r.plan, Objective::kStep);
      EXPECT_LE(value, previous * (1 + 1e-12))
          << task.topology.name << " seed " << seed << ", budget " << budget << r.stats.solver;
      previous = value;
    }
  }
}

TEST(Joint, ADeadlineInThePastStillGivesAValidPlan) {
  // One host (every table whole, unscored) and two hosts, where heavy tables start in row pieces.
  static constexpr int kDims[] = {16, 64};
  for (const Task& task : {test_util::pool_task(40, "v100:gpus_per_node=8", 1, kDims),
                           heavy_tables_task(1, "v100:nodes=2,gpus_per_node=4")}) {
    const auto cost = make_cost_model("sim", task);
    Context ctx = quiet();
    ctx.deadline = std::chrono::steady_clock::now();
    const ShardResult r = plan_task("joint", task, cost.get(), ctx);
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;  // plan_task checked it
    EXPECT_NE(r.stats.solver.find("deadline"), std::string::npos) << r.stats.solver;
    const bool hosts = task.topology.num_hosts() > 1;
    const auto pieces = std::count_if(r.plan.tables.begin(), r.plan.tables.end(),
                                      [](const TablePlacement& p) { return p.shards.size() > 1; });
    EXPECT_EQ(pieces > 0, hosts) << task.topology.name;
  }
}

TEST(Joint, PastItsDeadlineEachTableGoesToTheLeastLoadedDevice) {
  // Beyond 32 devices a table placed unscored takes the least loaded device with room: with fewer
  // light tables than devices, the empty ones, so no two share a device. The solver line says what
  // was not cut short: the bound first where it ran first, last where it ran on a thread of its own.
  static constexpr int kDims[] = {8, 16};
  const Task task = test_util::pool_task(100, "v100:nodes=16,gpus_per_node=8", 4, kDims);
  const auto cost = make_cost_model("sim", task);
  for (const int threads : {1, 2}) {
    Context ctx = quiet();
    ctx.num_threads = threads;
    ctx.deadline = std::chrono::steady_clock::now();
    const ShardResult r = plan_task("joint:split_start=0", task, cost.get(), ctx);
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_NE(r.stats.solver.find("stopped at the deadline"), std::string::npos) << r.stats.solver;
    EXPECT_NE(r.stats.solver.find(threads == 1 ? ": the bound (" : "on a thread of its own) are not cut short"),
              std::string::npos)
        << r.stats.solver;
    std::set<int> devices;
    for (const TablePlacement& p : r.plan.tables) {
      ASSERT_EQ(p.shards.size(), 1U) << p.table;
      devices.insert(p.shards.front().device);
    }
    EXPECT_EQ(devices.size(), r.plan.tables.size()) << r.stats.solver;
  }
}

TEST(Joint, ReportsTheGapOfThePlanItReturnsOnTheFastPath) {
  // From 64 devices on the search keeps the step itself (joint.h "State"), and where it returns
  // its 1D plan unjudged it reports the gap from that: it must be the judged plan's, up to the
  // search's integer units (1e-9 ms a piece's compute).
  static constexpr int kDims[] = {16, 64};
  for (const char* topology : {"h100:nodes=8,gpus_per_node=8", "v100:nodes=9,gpus_per_node=8"}) {
    const Task task = test_util::pool_task(300, topology, 6, kDims);
    const auto cost = make_cost_model("sim", task);
    ASSERT_TRUE(detail::joint::State(task, *cost, Objective::kStep, quiet()).incremental()) << topology;
    const double bound = *cost->lower_bound(task, Objective::kStep);
    const ShardResult r = plan_task("joint:work=200000,groups=none", task, cost.get(), quiet(2));
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    const double value = value_of(*cost, task, r.plan, Objective::kStep);
    EXPECT_NEAR(r.stats.solver_gap, (value - bound) / bound, 1e-8) << topology;
  }
}

TEST(Joint, HonoursDevicesOfDifferentSizes) {
  Task task = test_util::pool_task(10, "v100:gpus_per_node=2", 2, std::array{64});
  task.workload.batch_size = 65536;
  for (TableSpec& t : task.workload.tables) t.stats.num_rows = std::max<std::int64_t>(t.stats.num_rows, 2000000);
  std::int64_t total = 0;
  for (const TableSpec& t : task.workload.tables) total += t.size_bytes();
  // Device 0 holds a fifth of the tables, device 1 the rest and a little more.
  task.topology.devices[0].hbm_bytes = total / 5;
  task.topology.devices[1].hbm_bytes = total - total / 5 + total / 20;
  ASSERT_EQ(find_error_in_task(task, "uneven"), "");
  const auto cost = make_cost_model("sim", task);
  const ShardResult r = plan_task("joint", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  // Valid (plan_task checks memory), and as good as the best table-wise plan that fits the two
  // sizes, which exhaustive search finds.
  const ShardResult exact = plan_task("exhaustive", task, cost.get(), quiet());
  ASSERT_EQ(exact.status, ShardStatus::kOk) << exact.reason;
  EXPECT_LE(value_of(*cost, task, r.plan, Objective::kStep),
            value_of(*cost, task, exact.plan, Objective::kStep) * (1 + 1e-9));
}

TEST(Joint, InfeasibleOnlyWhenNoTableWisePlanExistsAndSaysWhy) {
  int infeasible = 0;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    Task task = tiny_task(5 + static_cast<int>(seed % 3), "v100:gpus_per_node=3", seed);
    task.constraints.allow_row_split = task.constraints.allow_column_split = false;
    std::int64_t total = 0, largest = 0;
    for (const TableSpec& t : task.workload.tables)
      total += t.size_bytes(), largest = std::max(largest, t.size_bytes());
    // Budgets around the packing's edge: some tasks fit, some do not.
    const std::int64_t hbm = std::max(largest, total / 3 + static_cast<std::int64_t>(seed % 5) * (total / 40));
    for (Device& d : task.topology.devices) d.hbm_bytes = hbm;
    const auto cost = make_cost_model("sim", task);
    const ShardResult exact = plan_task("exhaustive", task, cost.get(), quiet());
    const ShardResult joint = plan_task("joint", task, cost.get(), quiet());
    EXPECT_EQ(joint.status == ShardStatus::kOk, exact.status == ShardStatus::kOk) << "seed " << seed;
    if (joint.status == ShardStatus::kInfeasible) {
      ++infeasible;
      EXPECT_NE(joint.reason.find("GiB"), std::string::npos) << joint.reason;
    }
  }
  EXPECT_GT(infeasible, 0) << "no task was infeasible: the budgets do not exercise it";
  // More bytes than every device together: said before any search.
  Task task = tiny_task(6, "v100:gpus_per_node=2", 1);
  for (Device& d : task.topology.devices) d.hbm_bytes = 1024;
  const auto cost = make_cost_model("sim", task);
  const ShardResult r = plan_task("joint", task, cost.get(), quiet());
  EXPECT_EQ(r.status, ShardStatus::kInfeasible);
  EXPECT_NE(r.reason.find("the 2 devices hold"), std::string::npos) << r.reason;
}

TEST(Joint, TorchrecModePlansWhatTorchRecsTrainingPathRuns) {
  static constexpr int kDims[] = {32, 64, 128};
  for (const char* topology : {"a100:nodes=2,gpus_per_node=4", "2080ti"}) {
    Task task = test_util::pool_task(24, topology, 4, kDims);
    task.workload.batch_size = 65536;
    const auto cost = make_cost_model("sim", task);
    const ShardResult r = plan_task("joint:torchrec=true", task, cost.get(), quiet());
    ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
    EXPECT_NO_THROW((void)torchrec_plan_json(task, r.plan, {}));
  }
}

TEST(Joint, PlansUnderModelsThatDoNotAddUpAndThenPrintsNoBound) {
  const Task task = tiny_task(10, "cpu:devices=4", 9);
  const auto cost = make_cost_model("neural:weights=builtin,hardware=any", task);
  EXPECT_FALSE(cost->compute().is_additive());
  EXPECT_FALSE(cost->lower_bound(task, Objective::kStep).has_value());
  const ShardResult r = plan_task("joint", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(r.stats.solver_gap, -1.0);
}

/** Small tables of wide rows, a large batch, PCIe: outputs cost more than copies' all-reduce. */
Task copies_task(std::uint64_t seed, const std::string& topology = "2080ti") {
  static constexpr int kDims[] = {128, 256};
  Task task = test_util::pool_task(12, topology, seed, kDims);
  task.workload.batch_size = 65536;
  for (TableSpec& t : task.workload.tables) {
    t.stats.num_rows = std::min<std::int64_t>(t.stats.num_rows, 300);
    t.stats.num_distinct = std::min(t.stats.num_distinct, t.stats.num_rows);
    for (double& step : t.stats.icdf) step = std::min(step, static_cast<double>(t.stats.num_rows));
  }
  check_task(task, "copies task");
  return task;
}

// The averaging floor takes each table's choice, sharded or copied, once for its compute and its
// exchanges (analytic.h): plans that copy every table they may, or half of them, still do not beat it.
TEST(LowerBound, NoPlanThatCopiesManyTablesBeatsIt) {
  int checked = 0;
  for (std::uint64_t seed = 0; seed < 18; ++seed) {
    const Task task = bound_task(seed);
    const auto cost = make_cost_model("sim", task);
    for (const int one_in : {1, 2})
      checked += expect_random_plans_above_bound(
          task, *cost, seed, 20, "seed " + std::to_string(seed) + " copies 1 in " + std::to_string(one_in), one_in);
  }
  // Tasks whose copies pay (small wide tables), where the bound over plans with copies is the lower.
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    for (const char* topology : {"2080ti", "v100:nodes=2,gpus_per_node=4"}) {
      const Task task = copies_task(seed, topology);
      const auto cost = make_cost_model("sim", task);
      for (const int one_in : {1, 2, 5})
        checked += expect_random_plans_above_bound(
            task, *cost, seed, 20,
            std::string(topology) + " seed " + std::to_string(seed) + " copies 1 in " + std::to_string(one_in), one_in);
      const ShardResult joint = plan_task("joint", task, cost.get(), quiet(seed));
      ASSERT_EQ(joint.status, ShardStatus::kOk) << joint.reason;
      EXPECT_GE(value_of(*cost, task, joint.plan, Objective::kStep) * (1 + 1e-12),
                *cost->lower_bound(task, Objective::kStep));
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(Joint, MakesSmallWideTablesDataParallelWhereThatPaysAndTheBoundStillHolds) {
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Task task = copies_task(seed);
    const auto cost = make_cost_model("sim", task);
    const ShardResult with = plan_task("joint", task, cost.get(), quiet(seed));
    const ShardResult without = plan_task("joint:data_parallel=false", task, cost.get(), quiet(seed));
    ASSERT_EQ(with.status, ShardStatus::kOk) << with.reason;
    ASSERT_EQ(without.status, ShardStatus::kOk) << without.reason;
    const auto copies = std::count_if(with.plan.tables.begin(), with.plan.tables.end(),
                                      [](const TablePlacement& tp) { return tp.type == ShardingType::kDataParallel; });
    EXPECT_GT(copies, 0);
    const double value = value_of(*cost, task, with.plan, Objective::kStep);
    EXPECT_LT(value, value_of(*cost, task, without.plan, Objective::kStep));
    EXPECT_GE(value * (1 + 1e-12), *cost->lower_bound(task, Objective::kStep));
    // The plan file means what the plan meant, and TorchRec gets `data_parallel` on "dense".
    EXPECT_EQ(value_of(*cost, task, plan_from_json(plan_to_json(with.plan), "copies"), Objective::kStep), value);
    const ShardResult torchrec = plan_task("joint:torchrec=true", task, cost.get(), quiet(seed));
    ASSERT_EQ(torchrec.status, ShardStatus::kOk) << torchrec.reason;
    EXPECT_NE(torchrec_plan_json(task, torchrec.plan, {})
                  .find("\"sharding_type\": \"data_parallel\", \"compute_kernel\": \"dense\""),
              std::string::npos);
  }
}

TEST(Joint, NeverMakesCopiesAModelCannotCost) {
  const Task task = tiny_task(10, "cpu:devices=4", 9);
  const auto cost = make_cost_model("neural:weights=builtin,hardware=any", task);
  EXPECT_FALSE(cost->compute().costs_replicas());
  const ShardResult r = plan_task("joint", task, cost.get(), quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  Plan copies = r.plan;
  copies.tables[0] = {copies.tables[0].table, ShardingType::kDataParallel, {}};
  for (int d = 0; d < 4; ++d)
    copies.tables[0].shards.push_back({d, 0, task.workload.tables[0].num_rows(), 0, task.workload.tables[0].dim, -1});
  const std::string error = test_util::error_of([&] { (void)cost->estimate(task, copies, quiet()); });
  EXPECT_NE(error.find("table 't0' is data-parallel"), std::string::npos) << error;
  for (const TablePlacement& tp : r.plan.tables) EXPECT_NE(tp.type, ShardingType::kDataParallel) << tp.table;
  // A table that allows only copies cannot be planned under this model: joint says why.
  Task only_copies = task;
  only_copies.workload.tables[0].constraints.sharding_types = {ShardingType::kDataParallel};
  const ShardResult none = plan_task("joint", only_copies, cost.get(), quiet());
  EXPECT_EQ(none.status, ShardStatus::kInfeasible);
  EXPECT_NE(none.reason.find("allow only layouts joint does not make here"), std::string::npos) << none.reason;
}

TEST(Joint, UnknownParametersListWhatExists) {
  const std::string error = test_util::error_of([] { (void)make_sharder("joint:speed=11"); });
  EXPECT_NE(error.find("time_ms"), std::string::npos) << error;
  EXPECT_NE(error.find("torchrec"), std::string::npos) << error;
}

TEST(Joint, SettingEveryRowCutAtOnceNeverEndsWorseAndKeepsThePlanValid) {
  // joint.h step 5: on 64 devices (8 hosts), each local optimum the search keeps is also tried
  // with its row cuts set by the linear program, and the search itself goes on as with
  // cut_rows=0. So for a seed and budget the plan is never worse than without the step and
  // valid (every table's rows covered); where the solver does not name the step, it is the same
  // plan.
  static constexpr int kDims[] = {8, 16, 32};
  int better_plans = 0;
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    const Task task = test_util::pool_task(200, "h100:nodes=8,gpus_per_node=8", seed, kDims);
    const auto cost = make_cost_model("sim", task);
    // In 1D: under groups=auto the 2D layouts searched follow the 1D plan (joint.h "2D").
    const ShardResult with = plan_task("joint:time_ms=600000,work=200000,groups=none", task, cost.get(), quiet(seed));
    const ShardResult without =
        plan_task("joint:time_ms=600000,work=200000,groups=none,cut_rows=0", task, cost.get(), quiet(seed));
    ASSERT_EQ(with.status, ShardStatus::kOk) << with.reason;
    ASSERT_EQ(without.status, ShardStatus::kOk) << without.reason;
    EXPECT_EQ(find_error_in_plan(task, with.plan), "");
    const double a = value_of(*cost, task, with.plan, Objective::kStep);
    const double b = value_of(*cost, task, without.plan, Objective::kStep);
    EXPECT_LE(a, b) << "seed " << seed;
    const bool said = with.stats.solver.find("every row cut set at once") != std::string::npos;
    if (!said) {
      EXPECT_EQ(plan_text(with.plan), plan_text(without.plan)) << "seed " << seed;
    }
    EXPECT_EQ(without.stats.solver.find("every row cut set at once"), std::string::npos);
    better_plans += a < b ? 1 : 0;
  }
  EXPECT_GE(better_plans, 1) << "the step made no plan better";
}

}  // namespace
}  // namespace embshard

namespace embshard::detail::joint {
namespace {

/** The state's objective against the evaluator's, through random adds, moves and removals; with
 *  `groups`, the state of a 2D plan's group (its task, the replica sync) against the 2D plan's. */
void expect_state_matches_estimate(const Task& whole, const std::string& cost_spec, std::uint64_t seed,
                                   ShardingGroups groups = {}) {
  const Task task = sharding_group_task(whole, groups);
  const auto cost = make_cost_model(cost_spec, task);
  const Context ctx = test_util::quiet();
  State state(task, *cost, Objective::kStep, ctx);
  state.set_replica_sync(replica_sync_cost(whole.topology, groups, whole.workload.replica_sync_every));
  Rng rng(seed);
  const int n = task.topology.num_devices();
  const auto check = [&](const char* when) {
    Plan plan = state.plan();
    plan.groups = groups;
    const double want = objective_value(cost->estimate(whole, plan, ctx), Objective::kStep);
    // Costs in integer units, index bytes rounded per piece: agreement to rounding (a byte is
    // 1e-7 ms on a slow link).
    EXPECT_NEAR(state.objective(), want, 1e-7 * want) << when << ", " << cost_spec << ", " << task.topology.name << ", "
                                                      << describe_groups(groups, whole.topology.num_devices());
  };
  for (int t = 0; t < state.num_tables(); ++t) {
    const TableSpec& spec = task.workload.tables[static_cast<std::size_t>(t)];
    const std::uint64_t kind = rng.below(5);
    const Layout layout = kind == 0 ? Layout{Layout::Kind::kRows, 2 + static_cast<int>(rng.below(3))}
                          : kind == 1 && spec.size_bytes() < (std::int64_t{1} << 26)
                              ? Layout{Layout::Kind::kCopies, n, 0}
                          : kind == 2 && spec.dim >= 8 ? Layout{Layout::Kind::kGrid, 2, -1, 2}
                                                       : Layout{};
    state.set_layout(t, layout);
    int device = layout.kind == Layout::Kind::kCopies ? 0 : static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
    for (const Shard& s : layout_shards(layout, spec.num_rows(), spec.dim)) {
      Piece p;
      ASSERT_TRUE(state.make_piece(t, s, device, false, p));
      state.add(p);
      device = (device + 1) % n;
    }
  }
  check("after adding every table");
  for (int move = 0; move < 40; ++move) {
    const int t = static_cast<int>(rng.below(static_cast<std::uint64_t>(state.num_tables())));
    if (state.layout(t).kind == Layout::Kind::kCopies) continue;  // one copy per device, fixed
    const Piece old = state.lift(t, 0);
    Piece p;
    const int to = static_cast<int>(rng.below(static_cast<std::uint64_t>(n)));
    if (state.make_piece(t, old.placed.shard, to, false, p))
      state.place(0, p);
    else
      state.place(0, old);
  }
  check("after moves");
  const std::vector<Piece> gone = state.remove_table(0);
  for (const Piece& p : gone) state.add(p);
  check("after a removal and re-insertion");
}

/** 200 pool tables of dims 8, 32 and 128 on `topology` at batch 65,536, every plan fitting. */
Task state_task(const char* topology) {
  static constexpr int kDims[] = {8, 32, 128};
  Task task = test_util::pool_task(200, topology, 3, kDims);
  task.workload.batch_size = 65536;
  for (Device& d : task.topology.devices) d.hbm_bytes = std::int64_t{1} << 40;
  return task;
}

TEST(JointState, ObjectiveIsTheEvaluatorsOnSmallAndLargeTopologies) {
  for (const char* topology :
       {"v100:gpus_per_node=8", "a100:nodes=16,gpus_per_node=8", "v100:nodes=8,gpus_per_node=8"}) {
    const Task task = state_task(topology);
    for (const char* spec : {"sim", "sim:input_comm=omit", "sim:input_comm=overlap", "sim:exchanges=per_type",
                             "sim:input_comm=omit,exchanges=per_type", "sim:input_comm=overlap,exchanges=per_type"}) {
      expect_state_matches_estimate(task, spec, 7);
    }
  }
}

TEST(JointState, ObjectiveIsTheEvaluatorsWithSequenceTables) {
  // A third of the tables sequence tables: their outputs, per lookup, in the state's incremental
  // sums as in the evaluator's, small and large (the fast path).
  for (const char* topology : {"v100:gpus_per_node=8", "a100:nodes=16,gpus_per_node=8"}) {
    Task task = state_task(topology);
    for (std::size_t t = 0; t < task.workload.tables.size(); t += 3) task.workload.tables[t].pooled = false;
    for (const char* spec : {"sim", "sim:input_comm=overlap", "sim:exchanges=per_type"})
      expect_state_matches_estimate(task, spec, 7);
  }
}

TEST(JointState, RowPiecesOnOneHostAreTableRowWiseOnlyWhereTheTableMayBe) {
  // Two hosts of two devices, a table in two row pieces on host 0: table_row_wise when pooled (its
  // partial sums reduce within the host), row_wise when a sequence table (TableSpec::allows: the
  // EmbeddingCollection has no table_row_wise) or a pooled one whose constraints name row_wise
  // only, and row_wise for any across hosts.
  for (const int kind : {0, 1, 2}) {
    const bool pooled = kind != 1;
    Task task = state_task("a100:nodes=2,gpus_per_node=2");
    task.workload.tables.resize(1);
    task.workload.tables[0].pooled = pooled;
    if (kind == 2) task.workload.tables[0].constraints.sharding_types = {ShardingType::kRowWise};
    const TableSpec& spec = task.workload.tables[0];
    const auto cost = make_cost_model("sim", task);
    for (const int second : {1, 2}) {
      State state(task, *cost, Objective::kStep, test_util::quiet());
      state.set_layout(0, {Layout::Kind::kRows, 2});
      int device = 0;
      for (const Shard& s : layout_shards({Layout::Kind::kRows, 2}, spec.num_rows(), spec.dim)) {
        Piece p;
        ASSERT_TRUE(state.make_piece(0, s, device, false, p));
        state.add(p);
        device = second;
      }
      const ShardingType want = kind == 0 && second == 1 ? ShardingType::kTableRowWise : ShardingType::kRowWise;
      const Plan plan = state.plan();
      EXPECT_EQ(plan.tables.at(0).type, want) << "kind " << kind << ", second piece on " << second;
      EXPECT_EQ(find_error_in_plan(task, plan), "");
    }
  }
}

TEST(JointState, ObjectiveIsTheEvaluatorsOnMixedHardware) {
  // Half the devices as fast as H100s, half as A100s (data/topology.h mixed hardware), small and
  // large (the fast path): every device costed in its own terms, the same in the search.
  for (const char* topology : {"h100:nodes=2,gpus_per_node=4", "h100:nodes=16,gpus_per_node=8"}) {
    Task task = state_task(topology);
    const Topology slow = make_topology("a100");
    for (std::size_t d = 0; d < task.topology.devices.size(); ++d) {
      Device& dev = task.topology.devices[d];
      if (d >= task.topology.devices.size() / 2)
        dev.hbm_gbps = slow.devices[0].hbm_gbps, dev.uvm_gbps = slow.devices[0].uvm_gbps;
    }
    task.topology.name = "custom";
    for (const char* spec : {"sim", "sim:input_comm=overlap", "sim:exchanges=per_type"})
      expect_state_matches_estimate(task, spec, 7);
  }
}

TEST(JointState, ObjectiveIsTheEvaluatorsOnHalfDuplexLinks) {
  // Half-duplex links (topology.h: a link carries sent + received bytes), one host and 128 devices
  // (where the state keeps no incremental exchange sums for them): the state's objective is the
  // evaluator's.
  for (const char* topology : {"v100:gpus_per_node=8", "a100:nodes=16,gpus_per_node=8"}) {
    Task task = state_task(topology);
    task.topology.half_duplex = true;
    for (const char* spec : {"sim", "sim:input_comm=overlap", "sim:exchanges=per_type"})
      expect_state_matches_estimate(task, spec, 7);
  }
}

TEST(JointState, ObjectiveIsTheEvaluatorsWhereHostsHaveLinksOfTheirOwn) {
  // Every other host with half the NIC and NVLink bandwidth (mixed hardware, data/topology.h), on
  // 16 devices (every exchange summed afresh) and 128 (the incremental sums of fast_step.h, per
  // group of hosts of one NIC): the state's objective is the evaluator's.
  for (const char* topology : {"v100:nodes=2,gpus_per_node=8", "a100:nodes=16,gpus_per_node=8"}) {
    Task task = state_task(topology);
    for (int d = 0; d < task.topology.num_devices(); ++d) {
      if (task.topology.host_of(d) % 2 == 0) continue;
      Device& device = task.topology.devices[static_cast<std::size_t>(d)];
      device.intra_host_gbps = task.topology.intra_host_gbps / 2;
      device.inter_host_gbps = task.topology.inter_host_gbps / 2;
    }
    task.topology.name = "custom";
    for (const char* spec : {"sim", "sim:input_comm=overlap", "sim:exchanges=per_type"})
      expect_state_matches_estimate(task, spec, 7);
  }
}

TEST(FastExchange, MaxIsTheLinkModelsWhereHostsHaveLinksOfTheirOwn) {
  // Four hosts of four devices, hosts 1 and 3 with half the NVLink and a third of the NIC
  // bandwidth: random bytes per peer, each host's empty, light or heavy (so that an empty slow
  // host's receiving sets the exchange at times), against the link model's max over devices
  // (cost/link_model.h).
  Topology topology = make_topology("a100:nodes=4,gpus_per_node=4");
  for (int d = 0; d < topology.num_devices(); ++d) {
    if (topology.host_of(d) % 2 == 0) continue;
    topology.devices[static_cast<std::size_t>(d)].intra_host_gbps = topology.intra_host_gbps / 2;
    topology.devices[static_cast<std::size_t>(d)].inter_host_gbps = topology.inter_host_gbps / 3;
  }
  const int n = topology.num_devices(), per_host = topology.host_size(), hosts = topology.num_hosts();
  FastExchange fast(topology);
  Rng rng(5);
  std::vector<double> times(static_cast<std::size_t>(n));
  int receiving_set_it = 0;
  for (int draw = 0; draw < 200; ++draw) {
    ExchangeBytes bytes{std::vector<double>(static_cast<std::size_t>(n)),
                        std::vector<double>(static_cast<std::size_t>(n)),
                        std::vector<double>(static_cast<std::size_t>(hosts))};
    std::vector<std::uint64_t> most(static_cast<std::size_t>(hosts));  // per host: 0, 50 or 1,000 bytes
    for (std::uint64_t& m : most) m = std::array<std::uint64_t, 3>{0, 50, 1000}[rng.below(3)];
    for (int d = 0; d < n; ++d) {
      const std::uint64_t m = most[static_cast<std::size_t>(topology.host_of(d))];
      const auto b = static_cast<std::int64_t>(m ? rng.below(m) : 0);
      const auto s = static_cast<std::int64_t>(m && rng.below(2) ? rng.below(m) : 0);
      fast.set(d, b, s);
      bytes.pooled[static_cast<std::size_t>(d)] = static_cast<double>(b * n);
      bytes.partial[static_cast<std::size_t>(d)] = static_cast<double>(s * per_host);
    }
    for (int h = 0; h < hosts; ++h) {
      const std::uint64_t m = most[static_cast<std::size_t>(h)];
      const auto q = static_cast<std::int64_t>(m ? rng.below(m) : 0);
      fast.set_host(h, q);
      bytes.reduced[static_cast<std::size_t>(h)] = static_cast<double>(q * n);
    }
    exchange_ms_into(topology, bytes, times);
    const double want = *std::max_element(times.begin(), times.end());
    EXPECT_NEAR(fast.max_ms(), want, 1e-12 * want) << "draw " << draw;
    // Whether a device of an empty host, which sends nothing, is the slowest.
    for (int h = 0; h < hosts; ++h)
      receiving_set_it +=
          most[static_cast<std::size_t>(h)] == 0 && want > 0 && times[static_cast<std::size_t>(h * per_host)] == want;
  }
  EXPECT_GT(receiving_set_it, 10);
}

TEST(MaxTree, MaxAndArgmaxAreTheSlotsAfterEveryChange) {
  // 37 slots (a tree padded to 64), values drawn from a few levels so that ties are common: after
  // every change the maximum and the lowest slot holding it, against a scan.
  constexpr int kSlots = 37;
  MaxTree tree(kSlots, 0.0);
  std::vector<double> slots(kSlots, 0.0);
  Rng rng(11);
  for (int change = 0; change < 5000; ++change) {
    const int slot = static_cast<int>(rng.below(kSlots));
    const double value = static_cast<double>(rng.below(6)) - (rng.below(20) == 0 ? 1e9 : 0.0);
    tree.set(slot, value);
    slots[static_cast<std::size_t>(slot)] = value;
    const auto most = std::max_element(slots.begin(), slots.end());  // the first of equals
    ASSERT_EQ(tree.max(), *most) << "change " << change;
    ASSERT_EQ(tree.argmax(), static_cast<int>(most - slots.begin())) << "change " << change;
    ASSERT_EQ(tree.at(slot), value);
  }
}

TEST(LoadIndex, GivesTheLeastLoadedInKeyOrderAsSortingEveryDeviceDoes) {
  // 97 devices (a tree padded to 128: the last one's sibling is padding) with loads, HBM used and
  // free drawn from few levels (ties broken by HBM used, then the slot), random skips, with and
  // without the room asked: the first k by a full sort.
  constexpr int kDevices = 97;
  LoadIndex index(kDevices);
  struct Device {
    double load = 0.0;
    std::int64_t used = 0, free = 0;
  };
  std::vector<Device> devices(kDevices);
  Rng rng(12);
  for (int round = 0; round < 400; ++round) {
    for (int change = 0; change < 10; ++change) {
      const auto d = static_cast<std::size_t>(rng.below(kDevices));
      // Now and then a device no piece can reach in time (an infinite load), which must still
      // come out, last, where it has room.
      const double load =
          rng.below(4) == 0 ? std::numeric_limits<double>::infinity() : static_cast<double>(rng.below(8));
      devices[d] = {load, static_cast<std::int64_t>(rng.below(3)), static_cast<std::int64_t>(rng.below(100))};
      index.set(static_cast<int>(d), devices[d].load, devices[d].used, devices[d].free);
    }
    std::vector<bool> skip(kDevices);
    for (int d = 0; d < kDevices; ++d) skip[static_cast<std::size_t>(d)] = rng.below(4) == 0;
    const int k = 1 + static_cast<int>(rng.below(40));
    const auto bytes = static_cast<std::int64_t>(rng.below(100));
    const bool need_room = rng.below(2) == 1;
    std::vector<int> want;
    for (int d = 0; d < kDevices; ++d) {
      const Device& v = devices[static_cast<std::size_t>(d)];
      if (!skip[static_cast<std::size_t>(d)] && (!need_room || v.free >= bytes)) want.push_back(d);
    }
    std::sort(want.begin(), want.end(), [&](int a, int b) {
      const Device& x = devices[static_cast<std::size_t>(a)];
      const Device& y = devices[static_cast<std::size_t>(b)];
      return std::tie(x.load, x.used, a) < std::tie(y.load, y.used, b);
    });
    want.resize(std::min(want.size(), static_cast<std::size_t>(k)));
    std::vector<int> got = {-1};  // least() appends
    index.least(k, bytes, need_room, skip, got);
    got.erase(got.begin());
    ASSERT_EQ(got, want) << "round " << round << ", k " << k << ", bytes " << bytes << ", room " << need_room;
  }
  // The only device with room is the last, beside the padding, and unreachable in time.
  for (int d = 0; d < kDevices; ++d) index.set(d, 1.0, 0, 0);
  index.set(kDevices - 1, std::numeric_limits<double>::infinity(), 5, 50);
  std::vector<int> got;
  index.least(3, 10, true, std::vector<bool>(kDevices), got);
  EXPECT_EQ(got, std::vector<int>{kDevices - 1});
}

TEST(JointState, TheLeastLoadedByEveryTermAreThoseASortOfEveryDeviceGives) {
  // 128 devices on 16 hosts (the fast path: four terms, three where the input is not paid, one
  // off it), pieces added, moved and taken off at random between queries by random terms, some
  // devices skipped, with and without room for what is asked: each index, refreshed only when
  // asked, against every device's load sorted.
  const std::pair<const char*, int> kSpecs[] = {{"sim", 4}, {"sim:input_comm=omit", 3}, {"sim:input_comm=overlap", 1}};
  for (const auto& [name, terms] : kSpecs) {
    const std::string spec = name;  // a lambda below names it (clang 14 captures no structured binding)
    const Task task = state_task("v100:nodes=16,gpus_per_node=8");
    const auto cost = make_cost_model(spec, task);
    const Context ctx = test_util::quiet();
    State state(task, *cost, Objective::kStep, ctx);
    ASSERT_EQ(state.load_terms(), terms) << spec;
    const int n = task.topology.num_devices();
    Rng rng(31);
    const auto query = [&](int round) {
      const auto term = static_cast<State::LoadTerm>(rng.below(static_cast<std::uint64_t>(state.load_terms())));
      std::vector<bool> skip(static_cast<std::size_t>(n));
      for (std::size_t d = 0; d < skip.size(); ++d) skip[d] = rng.below(5) == 0;
      const int k = 1 + static_cast<int>(rng.below(12));
      // HBM used differs from device to device: a random device's free HBM leaves some with room
      // and some without; more than the most free leaves none (then all are ranked).
      const auto free = [&](int d) {
        return task.topology.devices[static_cast<std::size_t>(d)].hbm_bytes - state.load(d).hbm_bytes;
      };
      std::int64_t most_free = 0;
      for (int d = 0; d < n; ++d) most_free = std::max(most_free, free(d));
      const std::int64_t bytes =
          rng.below(4) == 0 ? most_free + 1 : free(static_cast<int>(rng.below(static_cast<std::uint64_t>(n))));
      std::vector<int> room, any;
      for (int d = 0; d < n; ++d) {
        if (skip[static_cast<std::size_t>(d)]) continue;
        any.push_back(d);
        if (free(d) >= bytes) room.push_back(d);
      }
      std::vector<int> want = room.empty() ? any : room;
      const auto key = [&](int d) { return std::tuple(state.term_load_ms(d, term), state.load(d).hbm_bytes, d); };
      std::sort(want.begin(), want.end(), [&](int a, int b) { return key(a) < key(b); });
      want.resize(std::min(want.size(), static_cast<std::size_t>(k)));
      std::vector<int> got;
      state.least_loaded(k, bytes, skip, got, term);
      ASSERT_EQ(got, want) << spec << ", round " << round << ", term " << static_cast<int>(term);
    };
    for (int round = 0; round < 300; ++round) {
      const int t = static_cast<int>(rng.below(static_cast<std::uint64_t>(state.num_tables())));
      const TableSpec& table = task.workload.tables[static_cast<std::size_t>(t)];
      if (state.pieces(t).empty()) {  // placed whole or in row pieces, each on a random device
        const bool rows = rng.below(3) == 0;
        const Layout layout = rows ? Layout{Layout::Kind::kRows, 2 + static_cast<int>(rng.below(3))} : Layout{};
        state.set_layout(t, layout);
        for (const Shard& s : layout_shards(layout, table.num_rows(), table.dim)) {
          Piece p;
          ASSERT_TRUE(state.make_piece(t, s, static_cast<int>(rng.below(static_cast<std::uint64_t>(n))), false, p));
          state.add(p);
        }
      } else if (rng.below(2) == 0) {  // a piece moved
        const Piece old = state.lift(t, 0);
        Piece p;
        const bool moved =
            state.make_piece(t, old.placed.shard, static_cast<int>(rng.below(static_cast<std::uint64_t>(n))), false, p);
        state.place(0, moved ? p : old);
      } else {
        state.remove_table(t);
      }
      if (rng.below(3) == 0) query(round);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(JointState, ObjectiveIsThe2DPlansWithItsReplicaSync) {
  // Groups of 64 (the fast path), 16 and 8 ranks of 128, replicas synced every 10 steps.
  static constexpr int kDims[] = {8, 32, 128};
  Task task = test_util::pool_task(200, "a100:nodes=16,gpus_per_node=8", 3, kDims);
  task.workload.batch_size = 65536;
  task.workload.replica_sync_every = 10;
  for (Device& d : task.topology.devices) d.hbm_bytes = std::int64_t{1} << 40;
  for (const ShardingGroups groups :
       {ShardingGroups{64, GroupRanks::kStrided}, ShardingGroups{16, GroupRanks::kContiguous},
        ShardingGroups{8, GroupRanks::kStrided}}) {
    for (const char* spec : {"sim", "sim:input_comm=overlap", "sim:exchanges=per_type"}) {
      expect_state_matches_estimate(task, spec, 7, groups);
    }
  }
}

/** best_splits' ranking, each split's two devices summed from scratch (the slow reference). */
std::vector<std::uint32_t> best_splits_by_brute_force(const Repartition& r, std::size_t count) {
  std::vector<std::pair<std::pair<double, double>, std::uint32_t>> ranked;
  for (std::uint32_t split = 0; split < (std::uint32_t{1} << r.tables.size()); ++split) {
    if (split == r.now) continue;
    std::array<std::array<double, 4>, 2> v = r.base;
    for (std::size_t i = 0; i < r.tables.size(); ++i)
      for (int j = 0; j < 4; ++j) v[(split >> i) & 1U][j] += r.loads[i][j];
    double top = 0.0, squares = 0.0;
    for (std::size_t i = 0; i < r.tables.size(); ++i) top += r.moved_ms[i][(split >> i) & 1U];
    for (int j = 0; j < 4; ++j) top += std::max(v[0][j], v[1][j]), squares += v[0][j] * v[0][j] + v[1][j] * v[1][j];
    ranked.push_back({{top, squares}, split});
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < ranked.size() && i < count; ++i) out.push_back(ranked[i].second);
  return out;
}

TEST(JointRepartition, TheGrayCodeWalkRanksSplitsAsSummingEachFromScratchDoes) {
  Rng rng(17);
  for (int trial = 0; trial < 40; ++trial) {
    Repartition r;
    r.devices = {3, 7};
    const std::size_t tables = 3 + rng.below(10);
    for (auto& device : r.base)
      for (double& term : device) term = rng.uniform();
    for (std::size_t i = 0; i < tables; ++i) {
      r.tables.push_back(static_cast<int>(i));
      r.loads.push_back({rng.uniform(), 4 * rng.uniform(), rng.uniform(), rng.below(4) == 0 ? 0.0 : rng.uniform()});
      // What moving it would cost (re-planning): on its old device nothing, else its bytes × a price.
      const double price = trial % 2 == 0 ? 0.0 : 0.3 * rng.uniform();
      const std::uint64_t home = rng.below(3);  // side 0, side 1 or neither held it before
      r.moved_ms.push_back({home == 0 ? 0.0 : price, home == 1 ? 0.0 : price});
    }
    r.now = static_cast<std::uint32_t>(rng.below(std::uint64_t{1} << tables));
    for (const std::size_t count : {std::size_t{1}, std::size_t{6}, std::size_t{1} << tables}) {
      const std::vector<std::uint32_t> fast = best_splits(r, count);
      EXPECT_EQ(fast, best_splits_by_brute_force(r, count)) << "trial " << trial << ", " << tables << " tables";
      EXPECT_EQ(std::count(fast.begin(), fast.end(), r.now), 0);  // never the split it has
    }
  }
}

/** best_swaps' ranking from every pair listed, each pair's two devices summed from scratch, sorted. */
std::vector<std::array<int, 3>> best_swaps_by_brute_force(const SwapDevice& a, const std::array<bool, 4>& sets,
                                                          const std::vector<SwapDevice>& partners,
                                                          const std::array<double, 4>& most, std::size_t count) {
  std::vector<std::pair<double, std::array<int, 3>>> ranked;
  for (std::size_t e = 0; e < partners.size(); ++e) {
    const SwapDevice& b = partners[e];
    const std::array<double, 4> rate{1.0, 1.0, std::max(a.per_col, b.per_col), std::max(a.per_input, b.per_input)};
    for (std::size_t i = 0; i < a.tables.size(); ++i)
      for (std::size_t k = 0; k < b.tables.size(); ++k) {
        std::array<double, 4> on_a = a.terms, on_b = b.terms;
        for (std::size_t j = 0; j < 4; ++j) {
          on_a[j] += (b.loads[k][j] - a.loads[i][j]) * rate[j];
          on_b[j] += (a.loads[i][j] - b.loads[k][j]) * rate[j];
        }
        double before = 0.0, after = 0.0;
        bool fits = true;
        for (std::size_t j = 0; j < 4; ++j) {
          before += a.terms[j] * a.terms[j] + b.terms[j] * b.terms[j];
          after += on_a[j] * on_a[j] + on_b[j] * on_b[j];
          fits = fits && on_a[j] <= most[j] && on_b[j] <= most[j] && !(sets[j] && on_a[j] >= a.terms[j]);
        }
        if (fits && after < before) ranked.push_back({after - before, {static_cast<int>(e), a.tables[i], b.tables[k]}});
      }
  }
  std::sort(ranked.begin(), ranked.end());  // by spread, then partner, then tables
  std::vector<std::array<int, 3>> out;
  for (std::size_t i = 0; i < ranked.size() && i < count; ++i)
    out.push_back({ranked[i].second[1], ranked[i].second[2], ranked[i].second[0]});
  return out;
}

/** A device of `tables` whole tables numbered from `first`, random terms and loads. */
SwapDevice random_swap_device(Rng& rng, int first, std::size_t tables) {
  SwapDevice d;
  for (double& term : d.terms) term = 2.0 + rng.uniform();
  d.per_col = 0.01 * rng.uniform();
  d.per_input = rng.below(4) == 0 ? 0.0 : 1e-6 * rng.uniform();
  for (std::size_t i = 0; i < tables; ++i) {
    d.tables.push_back(first + static_cast<int>(i));
    d.loads.push_back(
        {0.3 * rng.uniform(), 0.9 * rng.uniform(), static_cast<double>(4 * (1 + rng.below(8))), 2e5 * rng.uniform()});
  }
  return d;
}

TEST(JointWideSwap, KeepsTheBestSwapsAsRankingEveryPairFromScratchDoes) {
  Rng rng(29);
  for (int trial = 0; trial < 60; ++trial) {
    SwapDevice a = random_swap_device(rng, 0, 1 + rng.below(8));
    std::vector<SwapDevice> partners;
    for (int e = 0, n = static_cast<int>(1 + rng.below(20)); e < n; ++e)
      partners.push_back(random_swap_device(rng, 100 * (e + 1), rng.below(7)));
    // The terms the critical device sets are the largest of all; the others leave it room.
    std::array<bool, 4> sets{};
    std::array<double, 4> most{};
    for (std::size_t j = 0; j < 4; ++j) {
      sets[j] = rng.below(2) == 0;
      if (sets[j]) a.terms[j] = 3.5;
      most[j] = sets[j] ? a.terms[j] : a.terms[j] + 0.5 * rng.uniform();
      for (const SwapDevice& p : partners) most[j] = std::max(most[j], p.terms[j]);
    }
    for (const std::size_t count : {std::size_t{1}, std::size_t{6}, std::size_t{1000}}) {
      std::int64_t estimates = 0;
      const std::vector<SwapPair> fast = best_swaps(a, sets, partners, most, count, estimates);
      std::vector<std::array<int, 3>> got;
      for (const SwapPair& p : fast) {
        got.push_back({p.table, p.other, p.partner});
        EXPECT_LT(p.spread, 0.0);
      }
      EXPECT_EQ(got, best_swaps_by_brute_force(a, sets, partners, most, count)) << "trial " << trial;
      std::int64_t pairs = 0;
      for (const SwapDevice& p : partners) pairs += static_cast<std::int64_t>(p.tables.size() * a.tables.size());
      EXPECT_EQ(estimates, pairs);
    }
  }
}

TEST(JointWideSwap, NeverKeepsASwapThatLeavesATermTheCriticalDeviceSetsWhereItWas) {
  // The critical device sets the output term. Its 8-column table swapped for the partner's 8-column
  // one would lower the spread (much less compute) but leave the output term where it is: no swap.
  SwapDevice a;
  a.terms = {1.0, 3.0, 4.0, 2.0};
  a.per_col = 0.1;
  a.tables = {1};
  a.loads = {{0.2, 1.0, 8.0, 0.0}};
  SwapDevice b = a;
  b.terms = {0.5, 1.0, 3.0, 2.0};
  b.tables = {2};
  b.loads = {{0.0, 0.1, 8.0, 0.0}};
  const std::array<double, 4> most{1.0, 3.0, 4.0, 2.0};
  std::int64_t estimates = 0;
  EXPECT_TRUE(best_swaps(a, {false, false, true, false}, {b}, most, 6, estimates).empty());
  // Where it sets the backward term instead, the same swap lowers it and is kept.
  EXPECT_EQ(best_swaps(a, {false, true, false, false}, {b}, most, 6, estimates).size(), 1U);
  EXPECT_EQ(estimates, 2);
}

TEST(JointRowCuts, TheProgramsInputTermsAreTheLinkModels) {
  // row_cuts.h: at any cuts that keep each table's rows, the program's M_in (compute left out) is
  // the link model's slowest input all-to-all over the bytes those cuts give each device, on full-
  // and half-duplex links, one host and three.
  Rng rng(7);
  const auto draw = [&rng](std::int64_t lo, std::int64_t hi) {  // uniform in [lo, hi]
    return lo + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(hi - lo + 1)));
  };
  for (const char* preset : {"h100:nodes=3,gpus_per_node=4", "v100:gpus_per_node=8"}) {
    for (const bool half : {false, true}) {
      Topology topology = make_topology(preset);
      topology.half_duplex = half;
      const int n = topology.num_devices();
      RowCutDevices devices{std::vector<DeviceCompute>(static_cast<std::size_t>(n)), {}, {}};
      for (int d = 0; d < n; ++d) {
        devices.input_bytes.push_back(static_cast<double>(n * draw(1000, 200000)));
        devices.hbm_free_bytes.push_back(1e12);
      }
      std::vector<std::vector<RowCutPiece>> tables(4);
      for (auto& pieces : tables) {
        const auto per_row = static_cast<double>(n * draw(1, 40));  // a table's indices per row held
        for (int i = 0, k = static_cast<int>(draw(2, 5)); i < k; ++i) {
          RowCutPiece p;
          p.device = static_cast<int>(draw(0, n - 1));
          p.rows = draw(1000, 100000);
          p.input_bytes_per_row = per_row;
          pieces.push_back(p);
        }
      }
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<std::vector<std::int64_t>> rows;
        std::vector<double> bytes = devices.input_bytes;
        for (const auto& pieces : tables) {  // each table keeps its rows
          rows.emplace_back();
          std::int64_t moved = 0;
          for (std::size_t i = 0; i < pieces.size(); ++i) {
            const RowCutPiece& p = pieces[i];
            const std::int64_t change = i + 1 < pieces.size() ? draw(-p.rows / 40, p.rows / 40) : -moved;
            moved += change;
            rows.back().push_back(p.rows + change);
            bytes[static_cast<std::size_t>(p.device)] += p.input_bytes_per_row * static_cast<double>(change);
          }
        }
        const std::vector<double> ms = input_all_to_all_ms(topology, bytes);
        const double slowest = *std::max_element(ms.begin(), ms.end());
        EXPECT_NEAR(row_cut_objective(topology, tables, devices, true, 0.05, rows), slowest, 1e-9 * slowest)
            << preset << (half ? " half duplex" : "") << ", trial " << trial;
        EXPECT_EQ(row_cut_objective(topology, tables, devices, false, 0.05, rows), 0.0);
      }
    }
  }
}

/** A row piece for step 5's program: 1 µs a row forward, 128 bytes of HBM a row, and `moved`
 *  bytes moved per row it gains at either end. */
RowCutPiece forward_piece(int device, std::int64_t rows, double moved = 0.0) {
  RowCutPiece p;
  p.device = device;
  p.rows = rows;
  p.grow = p.shrink = {1e-3, 0.0};
  p.hbm_bytes_per_row = 128;
  p.moved_per_row_at_end = p.moved_per_row_at_start = moved;
  return p;
}

TEST(JointRowCuts, MovesRowsOffTheBusiestDeviceWithinTheTrustRegionAndLeavesBalancedCutsAlone) {
  // Two devices, one table in pieces of 900 and 100 rows at 1 µs a row forward: the program can
  // grow the small piece by 5% (5 rows), so 5 rows leave the busy device; the forward maximum
  // falls from 0.9 to 0.895 ms. Cuts that already balance the devices come back as none.
  const Topology topology = make_topology("v100:gpus_per_node=2");
  const auto piece = [](int device, std::int64_t rows) { return forward_piece(device, rows); };
  const RowCutDevices uneven{{{0.9, 0.0}, {0.1, 0.0}}, {0.0, 0.0}, {1e12, 1e12}};
  const std::vector<std::vector<RowCutPiece>> tables{{piece(0, 900), piece(1, 100)}};
  const auto rows = cut_rows(topology, tables, uneven, false, 0.05);
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(*rows, (std::vector<std::vector<std::int64_t>>{{895, 105}}));
  EXPECT_NEAR(row_cut_objective(topology, tables, uneven, false, 0.05, *rows), 0.895, 1e-12);
  // No HBM to grow into on device 1: nothing can move.
  const RowCutDevices full{{{0.9, 0.0}, {0.1, 0.0}}, {0.0, 0.0}, {1e12, 0.0}};
  EXPECT_FALSE(cut_rows(topology, tables, full, false, 0.05).has_value());
  const RowCutDevices even{{{0.5, 0.0}, {0.5, 0.0}}, {0.0, 0.0}, {1e12, 1e12}};
  EXPECT_FALSE(cut_rows(topology, {{piece(0, 500), piece(1, 500)}}, even, false, 0.05).has_value());
}

TEST(JointRowCuts, WhenReplanningMovesOnlyWhatTheBudgetLeavesAndWhatThePricePays) {
  // The pieces above, re-planning: every row the small piece gains costs 128 bytes moved (the
  // big piece's rows were never on device 1). 384 bytes left, a row's kept for the rounding: two
  // rows move, not five. No budget: five again. A price above what a row saves (1 µs of the
  // forward maximum for 128 bytes): none.
  const Topology topology = make_topology("v100:gpus_per_node=2");
  const auto piece = [](int device, std::int64_t rows) { return forward_piece(device, rows, 128); };
  const RowCutDevices uneven{{{0.9, 0.0}, {0.1, 0.0}}, {0.0, 0.0}, {1e12, 1e12}};
  const std::vector<std::vector<RowCutPiece>> tables{{piece(0, 900), piece(1, 100)}};
  const auto within = cut_rows(topology, tables, uneven, false, 0.05, 60.0, RowCutMoves{0.0, 384.0});
  ASSERT_TRUE(within.has_value());
  EXPECT_EQ(*within, (std::vector<std::vector<std::int64_t>>{{898, 102}}));
  const auto unbudgeted =
      cut_rows(topology, tables, uneven, false, 0.05, 60.0, RowCutMoves{0.0, std::numeric_limits<double>::infinity()});
  ASSERT_TRUE(unbudgeted.has_value());
  EXPECT_EQ(*unbudgeted, (std::vector<std::vector<std::int64_t>>{{895, 105}}));
  EXPECT_FALSE(cut_rows(topology, tables, uneven, false, 0.05, 60.0, RowCutMoves{2e-3 / 128, 1e12}).has_value());
  EXPECT_FALSE(cut_rows(topology, tables, uneven, false, 0.05, 60.0, RowCutMoves{0.0, 0.0}).has_value());
}

// The default budget (joint.h "Budget"): per 8 devices off the fast path, whatever the tables; on
// it 3 M up to 5,000 tables, growing with √(tables / 5,000) to √10 times that from 50,000 tables.
TEST(JointBudget, DefaultGrowsWithTheTablesOnTheFastPathOnly) {
  EXPECT_EQ(default_work(120, 8, false), 1500000);
  EXPECT_EQ(default_work(50000, 8, false), 1500000);
  EXPECT_EQ(default_work(120, 16, false), 3000000);
  EXPECT_EQ(default_work(500, 64, true), 3000000);
  EXPECT_EQ(default_work(5000, 1024, true), 3000000);
  EXPECT_EQ(default_work(10000, 1024, true), 4242640);  // 3 M × √2
  EXPECT_EQ(default_work(20000, 4096, true), 6000000);
  EXPECT_EQ(default_work(50000, 8192, true), 9486832);  // 3 M × √10
  EXPECT_EQ(default_work(65536, 8192, true), 9486832);
  std::int64_t last = 0;
  for (int tables = 1000; tables <= 60000; tables += 1000) {
    const std::int64_t work = default_work(tables, 1024, true);
    EXPECT_GE(work, last) << tables << " tables";
    EXPECT_EQ(work, default_work(tables, 8192, true)) << "the fast path's budget does not depend on the devices";
    last = work;
  }
}

}  // namespace
}  // namespace embshard::detail::joint
