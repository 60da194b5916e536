// Tests of the `torchrec` sharder (src/shard/torchrec): TorchRec's perf formulas against hand
// computations from the digest (/work/shared/docs/references/torchrec-planner.md §1.5), the
// enumerator and shard sizing (§1.3–§1.4), partitioning (§1.8) and whole plans.
#include <gtest/gtest.h>

#include <chrono>

#include <algorithm>
#include <cmath>
#include <map>

#include "embshard/data/pool.h"
#include "embshard/data/random.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/shard/sharder.h"
#include "shard/torchrec/torchrec_planner.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

namespace tr = detail::torchrec;

Context quiet() {
  Context ctx;
  ctx.verbosity = LogLevel::kQuiet;
  return ctx;
}

TableSpec table(const std::string& name, int dim, std::int64_t rows, double pooling) {
  return test_util::hand_table(name, dim, rows, pooling);
}

Task hand_task(std::vector<TableSpec> tables, const std::string& topology, std::int64_t batch) {
  Task task;
  task.id = "hand";
  task.workload.tables = std::move(tables);
  task.workload.batch_size = batch;
  task.topology = make_topology(topology);
  return task;
}

/** `n` pool tables with lookups and random dims in {4..256}, at batch 4096. */
Task pool_task(int n, const std::string& topology, std::uint64_t seed) {
  static constexpr int kDims[] = {4, 16, 64, 128, 256};
  return test_util::pool_task(n, topology, seed, kDims);
}

/** Gives every device max(1.3 × the largest table, `spread` × total / devices) bytes of HBM. */
void size_memory(Task& task, double spread) {
  std::int64_t largest = 0;
  for (const auto& t : task.workload.tables) largest = std::max(largest, t.size_bytes());
  const double share = spread * static_cast<double>(task.workload.total_bytes()) / task.topology.num_devices();
  for (auto& d : task.topology.devices) {
    d.hbm_bytes = static_cast<std::int64_t>(std::max(1.3 * static_cast<double>(largest), share));
  }
}

tr::TorchrecTopology topology_of(const Task& task, tr::BandwidthSource bandwidths) {
  tr::PlannerOptions options;
  options.bandwidths = bandwidths;
  return tr::make_torchrec_topology(task, options);
}

/** `tables` on 4 V100s at batch 4096, no splits allowed (table-wise only). */
Task whole_tables_task(std::vector<TableSpec> tables) {
  Task task = hand_task(std::move(tables), "v100:gpus_per_node=4", 4096);
  task.constraints.allow_column_split = false;
  task.constraints.allow_row_split = false;
  return task;
}

/** The first enumerated option of every table (table-wise when splits are off). */
template <class Enumerated>
/** Each table's first table-wise option (the enumeration lists data-parallel first, whose copies
 *  every partition places alike: nothing for a partitioner to decide). */
std::vector<const tr::ShardingOption*> table_wise_options(const Enumerated& enumerated) {
  std::vector<const tr::ShardingOption*> proposal;
  for (const auto& options : enumerated) {
    const auto it = std::find_if(options.begin(), options.end(),
                                 [](const tr::ShardingOption& o) { return o.type == ShardingType::kTableWise; });
    EXPECT_NE(it, options.end());
    proposal.push_back(&*it);
  }
  return proposal;
}

TEST(TorchrecSharder, TableWisePerfMatchesHandComputation) {
  // One table: dim D = 128, pf = 2, fp32, global batch 1024 on 4 GPUs of one host (W = L = 4),
  // TorchRec's bandwidth constants. Per rank B = 1024 / 4 = 256; I = pf·B = 512; O = B = 256.
  //   in     = ceil(I·W·8)      = 512·4·8       = 16,384 bytes
  //   lookup = I·W·max(D,32)·4  = 512·4·128·4   = 1,048,576 bytes
  //   out    = O·W·D·4          = 256·4·128·4   = 524,288 bytes
  //   fwd_compute = (16,384 + 1,048,576 + 524,288)·1 / (897 GiB/s = 963,146,416.768 B/ms)
  //               = 1,589,248 / 963,146,416.768 = 0.00165005857 ms
  //   fwd_comms   = out / intra (600 GiB/s = 644,245,094.4 B/ms) = 0.000813802083 ms
  //   bwd_compute = 2 × fwd_compute; bwd_comms = fwd_comms.
  const Task task = hand_task({table("t", 128, 1000, 2.0)}, "v100:gpus_per_node=4", 1024);
  const auto topo = topology_of(task, tr::BandwidthSource::kTorchrec);
  const tr::Perf p =
      tr::shard_perf(task.workload.tables[0], ShardingType::kTableWise, tr::ComputeKernel::kFused, 128, topo);
  EXPECT_NEAR(p.fwd_compute_ms, 0.0016500585719760312, 1e-15);
  EXPECT_NEAR(p.fwd_comms_ms, 0.0008138020833333334, 1e-15);
  EXPECT_DOUBLE_EQ(p.bwd_compute_ms, 2 * p.fwd_compute_ms);
  EXPECT_DOUBLE_EQ(p.bwd_comms_ms, p.fwd_comms_ms);
  EXPECT_DOUBLE_EQ(p.prefetch_compute_ms, 0.0);

  // The same with the task's bandwidths: V100 HBM 900 GB/s = 9e8 B/ms, NVLink 150 GB/s = 1.5e8 B/ms.
  const auto task_topo = topology_of(task, tr::BandwidthSource::kTask);
  const tr::Perf q =
      tr::shard_perf(task.workload.tables[0], ShardingType::kTableWise, tr::ComputeKernel::kFused, 128, task_topo);
  EXPECT_NEAR(q.fwd_compute_ms, 1589248.0 / 9e8, 1e-15);
  EXPECT_NEAR(q.fwd_comms_ms, 524288.0 / 1.5e8, 1e-15);
}

TEST(TorchrecSharder, ReproducesTheDigestsWorkedExample) {
  // §1.5 worked example: defaults, W = L = 8, B = 512 per rank, pf = 1, D = 128, fp32, fused.
  const Task task = hand_task({table("t", 128, 1000, 1.0)}, "v100:gpus_per_node=8", 8 * 512);
  const auto topo = topology_of(task, tr::BandwidthSource::kTorchrec);
  const TableSpec& t = task.workload.tables[0];
  const tr::Perf tw = tr::shard_perf(t, ShardingType::kTableWise, tr::ComputeKernel::kFused, 128, topo);
  EXPECT_NEAR(tw.fwd_compute_ms, 0.0044, 0.00005);
  EXPECT_NEAR(tw.fwd_comms_ms, 0.0033, 0.00005);
  EXPECT_NEAR(tw.bwd_compute_ms, 0.0088, 0.0001);
  EXPECT_NEAR(tw.total_ms(), 0.0197, 0.0001);
  const tr::Perf rw = tr::shard_perf(t, ShardingType::kRowWise, tr::ComputeKernel::kFused, 128, topo);
  EXPECT_NEAR(rw.fwd_compute_ms, 0.0025, 0.00005);
  EXPECT_NEAR(rw.fwd_comms_ms, 0.0033, 0.00005);
  EXPECT_NEAR(rw.bwd_compute_ms, 0.0049, 0.0001);
  EXPECT_NEAR(rw.bwd_comms_ms, 0.0086, 0.0001);
  // Two hosts of 8 (W = 16 > L): the TW all-to-all runs at 12.5 GiB/s: 0.156 ms per direction.
  const Task two_hosts = hand_task({t}, "v100:nodes=2,gpus_per_node=8", 16 * 512);
  const tr::Perf far = tr::shard_perf(two_hosts.workload.tables[0], ShardingType::kTableWise, tr::ComputeKernel::kFused,
                                      128, topology_of(two_hosts, tr::BandwidthSource::kTorchrec));
  EXPECT_NEAR(far.fwd_comms_ms, 0.3125, 0.0005);  // O·W·D·4 = 512·16·128·4 bytes; 0.156 at W = 8
}

TEST(TorchrecSharder, ColumnBlockRuleAndRowBlocks) {
  EXPECT_EQ(tr::column_block_width(128, 128), 128);
  EXPECT_EQ(tr::column_block_width(256, 128), 128);
  EXPECT_EQ(tr::column_block_width(384, 128), 128);
  EXPECT_EQ(tr::column_block_width(1024, 128), 128);
  EXPECT_EQ(tr::column_block_width(160, 128), 160);
  EXPECT_EQ(tr::column_block_width(96, 32), 32);
  const Task task = hand_task({table("t", 16, 1000, 1.0)}, "v100:gpus_per_node=4", 1024);
  const auto topo = topology_of(task, tr::BandwidthSource::kTask);
  std::vector<std::int64_t> rows;
  for (const auto& s : tr::shard_shapes(ShardingType::kRowWise, 10, 16, topo, 128)) rows.push_back(s.num_rows);
  EXPECT_EQ(rows, (std::vector<std::int64_t>{3, 3, 3, 1}));
  rows.clear();
  for (const auto& s : tr::shard_shapes(ShardingType::kRowWise, 5, 16, topo, 128)) rows.push_back(s.num_rows);
  EXPECT_EQ(rows, (std::vector<std::int64_t>{2, 2, 1, 0}));
}

TEST(TorchrecSharder, EnumeratorOptionsFollowTheConstraints) {
  Task task = hand_task({table("t", 256, 1000, 1.0)}, "v100:nodes=2,gpus_per_node=2", 1024);
  tr::PlannerOptions options;
  auto count = [](const std::vector<tr::ShardingOption>& opts) {
    std::map<ShardingType, std::vector<std::size_t>> shards;
    for (const auto& o : opts) shards[o.type].push_back(o.shards.size());
    return shards;
  };
  auto topo = tr::make_torchrec_topology(task, options);
  auto by_type = count(tr::enumerate_options(task, topo, options).at(0));
  ASSERT_EQ(by_type.size(), 5u);                                                 // DP (dense), TW, CW, RW, TWRW (fused)
  EXPECT_EQ(by_type[ShardingType::kDataParallel], std::vector<std::size_t>{4});  // a copy per rank
  EXPECT_EQ(by_type[ShardingType::kTableWise], std::vector<std::size_t>{1});
  EXPECT_EQ(by_type[ShardingType::kColumnWise], std::vector<std::size_t>{2});    // 256 = 2 × 128
  EXPECT_EQ(by_type[ShardingType::kRowWise], std::vector<std::size_t>{4});       // W = 4
  EXPECT_EQ(by_type[ShardingType::kTableRowWise], std::vector<std::size_t>{2});  // L = 2
  task.constraints.allow_column_split = false;
  by_type = count(tr::enumerate_options(task, topo, options).at(0));
  EXPECT_EQ(by_type.count(ShardingType::kColumnWise), 0u);
  task.constraints.allow_row_split = false;
  by_type = count(tr::enumerate_options(task, topo, options).at(0));
  EXPECT_EQ(by_type.size(), 2u);  // DP and TW
  task.constraints.allow_uvm = true;
  EXPECT_EQ(tr::enumerate_options(task, topo, options).at(0).size(), 4u);  // DP dense; TW fused, fused_uvm, caching
  task.workload.tables[0].constraints.sharding_types = {ShardingType::kTableWise};
  EXPECT_EQ(tr::enumerate_options(task, topo, options).at(0).size(), 3u);  // the table's own constraints
}

TEST(TorchrecSharder, DataParallelPerfIsTheDigestsFormula) {
  // 2 hosts of 2: W = 4, L = 2, n = min(W/L, 2) = 2; 1000 rows × 256 fp32, pf 1, B = 1024 / 4.
  const Task task = hand_task({table("t", 256, 1000, 1.0)}, "v100:nodes=2,gpus_per_node=2", 1024);
  const auto topo = tr::make_torchrec_topology(task, {});
  const tr::Perf p =
      tr::shard_perf(task.workload.tables[0], ShardingType::kDataParallel, tr::ComputeKernel::kDense, 256, topo);
  // The dense kernel runs at half the HBM bandwidth (kernel_bw_lookup; checked against 1.9.2).
  const double b = 256.0, table = 1000.0 * 256 * 4, bw = 0.5 * topo.hbm_mem_bw_bytes_per_ms;
  EXPECT_DOUBLE_EQ(p.fwd_compute_ms, (b * 8 + b * 256 * 4 + b * 256 * 4) / bw);
  EXPECT_EQ(p.fwd_comms_ms, 0.0);
  EXPECT_DOUBLE_EQ(p.bwd_compute_ms, 2 * p.fwd_compute_ms);
  EXPECT_DOUBLE_EQ(p.bwd_comms_ms, table * 1.5 / (topo.inter_host_bw_bytes_per_ms * 2) + table * 9.22 / bw);
}

TEST(TorchrecSharder, StorageReservationIsTorchrecs) {
  const Task task = hand_task({table("t", 128, 1000, 2.0)}, "v100:gpus_per_node=4,hbm_gib=1", 1024);
  tr::PlannerOptions options;
  const auto topo = tr::make_torchrec_topology(task, options);
  // (1 − 0.15)·1 GiB, then the KJT estimate ceil(pf·B·8)·20 = ceil(2·256·8)·20 = 81,920 bytes.
  EXPECT_EQ(tr::kjt_reservation_bytes(task, 256.0), 81920);
  EXPECT_EQ(topo.hbm_cap_bytes.at(0), static_cast<std::int64_t>(0.85 * 1073741824.0) - 81920);
}

TEST(TorchrecSharder, TheReservationPythonTakesOffATopologyIsTheSharders) {
  // EmbshardPlanner calls these (shard/torchrec_reservation.h); the dense parameters cost 6×.
  EXPECT_EQ(torchrec_kjt_reservation_bytes(2.0 * 256.0), 81920);
  EXPECT_EQ(torchrec_table_budget_bytes(1073741824, 0.15, 0, 81920),
            static_cast<std::int64_t>(0.85 * 1073741824.0) - 81920);
  EXPECT_EQ(torchrec_table_budget_bytes(1000000, 0.0, 1000, 20), 1000000 - 6000 - 20);
  EXPECT_NE(test_util::error_of([] { (void)torchrec_kjt_reservation_bytes(1e300); }).find("out of range"),
            std::string::npos);
}

TEST(TorchrecSharder, ARunnableSpecKeepsWhatTheUserSaid) {
  // What `plan --format torchrec` and EmbshardPlanner run (shard/sharder.h).
  EXPECT_EQ(torchrec_runnable_spec("joint", "none", false), "joint:torchrec=true,groups=none");
  EXPECT_EQ(torchrec_runnable_spec("joint:time_ms=5,groups=auto", "none", true),
            "joint:time_ms=5,groups=auto,torchrec=true");
  EXPECT_EQ(torchrec_runnable_spec("joint:torchrec=false", "2", false), "joint:torchrec=false,groups=2");
  EXPECT_EQ(torchrec_runnable_spec("torchrec", "none", false), "torchrec");
  EXPECT_EQ(torchrec_runnable_spec("torchrec", "none", true),
            "torchrec:storage_reservation=0,reservation=fixed_percentage");
  EXPECT_EQ(torchrec_runnable_spec("torchrec:reservation=heuristical", "none", true),
            "torchrec:reservation=heuristical");
  EXPECT_EQ(torchrec_runnable_spec("greedy:balance=dim", "auto", true), "greedy:balance=dim");
}

TEST(TorchrecSharder, EstimatesOutOfRangeAreErrorsNotCasts) {
  // Defence in depth behind find_error_in_task: a pooling factor no task file may carry (1e300,
  // NaN) reaches the float → int conversions as an Error, never as undefined behaviour.
  for (double pooling : {1e300, std::nan("")}) {
    const Task task = hand_task({table("t", 128, 1000, pooling)}, "v100:gpus_per_node=4", 1024);
    EXPECT_NE(test_util::error_of([&] { (void)tr::kjt_reservation_bytes(task, 256.0); }).find("out of range"),
              std::string::npos);
  }
}

TEST(TorchrecSharder, EveryPlanIsValidForItsTask) {
  const std::vector<std::string> specs = {"torchrec", "torchrec:partitioner=memory_balanced",
                                          "torchrec:bandwidths=torchrec", "torchrec:proposers=greedy,threshold=3",
                                          "torchrec:reservation=fixed_percentage"};
  const std::vector<std::string> topologies = {"v100:gpus_per_node=4", "a100:nodes=2,gpus_per_node=2", "cpu:devices=3"};
  for (const auto& topology : topologies) {
    for (std::uint64_t seed = 0; seed < 3; ++seed) {
      Task task = pool_task(12, topology, seed);
      size_memory(task, 1.2 + 0.3 * static_cast<double>(seed));  // tight to roomy
      task.constraints.allow_uvm = seed == 2;
      task.constraints.allow_column_split = seed != 1;
      for (const auto& spec : specs) {
        const ShardResult r = plan_task(spec, task, nullptr, quiet());  // checks validity itself
        ASSERT_EQ(r.status, ShardStatus::kOk) << spec << " on " << topology << ": " << r.reason;
        EXPECT_EQ(find_error_in_plan(task, r.plan), "");
        EXPECT_GT(r.stats.plans_evaluated, 0);
      }
    }
  }
}

TEST(TorchrecSharder, InfeasibleNamesTheTable) {
  // 10^6 rows × 256 × 4 bytes = 1 GB cannot fit 0.25 GiB devices without row splits.
  Task task = hand_task({table("small", 16, 1000, 1.0), table("huge", 256, 1000000, 1.0)},
                        "v100:gpus_per_node=4,hbm_gib=0.25", 1024);
  task.constraints.allow_row_split = false;
  const ShardResult r = plan_task("torchrec", task, nullptr, quiet());
  EXPECT_EQ(r.status, ShardStatus::kInfeasible);
  EXPECT_NE(r.reason.find("'huge'"), std::string::npos) << r.reason;
  task.constraints.allow_row_split = true;  // 4 row shards of 256 MB: still too big for 0.85·0.25 GiB
  const ShardResult rw = plan_task("torchrec", task, nullptr, quiet());
  EXPECT_EQ(rw.status, ShardStatus::kInfeasible);
  EXPECT_NE(rw.reason.find("'huge'"), std::string::npos) << rw.reason;
  task.topology = make_topology("v100:gpus_per_node=4,hbm_gib=0.5");
  EXPECT_EQ(plan_task("torchrec", task, nullptr, quiet()).status, ShardStatus::kOk);
}

TEST(TorchrecSharder, RespectsConstraints) {
  Task task = pool_task(16, "v100:gpus_per_node=4", 7);
  task.workload.tables.push_back(table("wide", 512, 200000, 8.0));
  size_memory(task, 1.5);
  task.constraints.allow_column_split = false;
  task.constraints.allow_row_split = false;
  const ShardResult r = plan_task("torchrec", task, nullptr, quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  for (const auto& tp : r.plan.tables) {
    EXPECT_EQ(tp.type, ShardingType::kTableWise) << tp.table;
    EXPECT_EQ(tp.shards.size(), 1u);
    EXPECT_EQ(tp.shards[0].hbm_rows, -1);
  }
  task.constraints.allow_column_split = true;  // the wide table alone on a rank is the bottleneck
  const ShardResult cw = plan_task("torchrec", task, nullptr, quiet());
  ASSERT_EQ(cw.status, ShardStatus::kOk) << cw.reason;
  for (const auto& tp : cw.plan.tables) {
    EXPECT_TRUE(tp.type == ShardingType::kTableWise || tp.type == ShardingType::kColumnWise);
    for (const auto& s : tp.shards) EXPECT_EQ(s.num_cols() % 4, 0);
  }
}

TEST(TorchrecSharder, GreedyPartitionerBalancesPerfAcrossDevices) {
  std::vector<TableSpec> tables;
  for (int i = 0; i < 8; ++i) tables.push_back(table("t" + std::to_string(i), 64, 10000, 4.0));
  const Task task = whole_tables_task(tables);
  const tr::PlannerOptions options;
  const auto topo = tr::make_torchrec_topology(task, options);
  const auto enumerated = tr::enumerate_options(task, topo, options);
  const auto proposal = table_wise_options(enumerated);
  const tr::PartitionOutcome greedy = tr::greedy_partition(proposal, task, topo, false);
  ASSERT_TRUE(greedy.ok) << greedy.failure;
  const double one_table_ms = proposal[0]->perf_sum_ms();
  EXPECT_NEAR(tr::rate_partition(greedy.partition), 2 * one_table_ms, 1e-12);  // 2 per rank
  const double all_on_one_ms = 8 * one_table_ms;
  EXPECT_LT(tr::rate_partition(greedy.partition), all_on_one_ms / 3);
  const ShardResult r = plan_task("torchrec", task, nullptr, quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk);
  std::vector<int> per_device(4, 0);
  for (const auto& tp : r.plan.tables) ++per_device.at(tp.shards.at(0).device);
  EXPECT_EQ(per_device, (std::vector<int>{2, 2, 2, 2}));
}

TEST(TorchrecSharder, MemoryBalancedPartitionerLowersPeakHbmWithinTolerance) {
  // Same perf (dim, pooling), very different sizes: perf-sorted greedy ignores HBM; the memory-
  // balanced search tightens the per-rank cap while the rating stays within 2% (§1.8).
  std::vector<TableSpec> tables;
  for (int i = 0; i < 12; ++i) {
    tables.push_back(table("t" + std::to_string(i), 64, i % 4 == 0 ? 2000000 : 20000, 4.0));
  }
  const Task task = whole_tables_task(tables);
  const tr::PlannerOptions options;
  const auto topo = tr::make_torchrec_topology(task, options);
  const auto enumerated = tr::enumerate_options(task, topo, options);
  const auto proposal = table_wise_options(enumerated);
  const auto by_perf = tr::greedy_partition(proposal, task, topo, true);
  const auto balanced = tr::memory_balanced_partition(proposal, task, topo);
  ASSERT_TRUE(by_perf.ok && balanced.ok);
  const auto peak = [](const tr::Partition& p) {
    return *std::max_element(p.hbm_by_rank_bytes.begin(), p.hbm_by_rank_bytes.end());
  };
  // Equal perfs go round the 4 ranks, so the big tables 0, 4 and 8 share one: a peak to lower.
  const std::int64_t big = proposal[0]->shards.at(0).storage.hbm_bytes;
  EXPECT_EQ(peak(by_perf.partition), 3 * big);
  EXPECT_LT(peak(balanced.partition), peak(by_perf.partition));
  EXPECT_LE(tr::rate_partition(balanced.partition), 1.02 * tr::rate_partition(by_perf.partition));
}

TEST(TorchrecSharder, RowWiseShardsUseCeilBlocksAndDropEmptyTails) {
  // 100 rows on 64 ranks: block ceil(100/64) = 2, so 50 shards of 2 rows and 14 empty ones (§1.4),
  // which the embshard Plan leaves out.
  const Task task = hand_task({table("rows", 8, 100, 5.0)}, "v100:gpus_per_node=64", 1 << 16);
  tr::PlannerOptions options;
  const auto topo = tr::make_torchrec_topology(task, options);
  const auto enumerated = tr::enumerate_options(task, topo, options);
  const auto& opts = enumerated.at(0);
  const auto rw =
      std::find_if(opts.begin(), opts.end(), [](const auto& o) { return o.type == ShardingType::kRowWise; });
  ASSERT_NE(rw, opts.end());
  EXPECT_EQ(rw->shards.size(), 64u);
  const std::vector<const tr::ShardingOption*> proposal{&*rw};
  const tr::PartitionOutcome outcome = tr::greedy_partition(proposal, task, topo, false);
  ASSERT_TRUE(outcome.ok) << outcome.failure;
  const Plan plan = tr::to_plan(task, proposal, outcome.partition);
  ASSERT_EQ(plan.tables.at(0).shards.size(), 50u);
  for (std::size_t i = 0; i < 50; ++i) {
    EXPECT_EQ(plan.tables[0].shards[i].device, static_cast<int>(i));
    EXPECT_EQ(plan.tables[0].shards[i].row_begin, static_cast<std::int64_t>(2 * i));
    EXPECT_EQ(plan.tables[0].shards[i].num_rows(), 2);
  }
  EXPECT_EQ(find_error_in_plan(task, plan), "");
}

TEST(TorchrecSharder, FormulaSetsDifferOnlyInPooledOutputsBelowOneLookup) {
  // torchrec 1.9.2 counts pooled outputs as min(1, pf)·B, 1.4.0a0 as B (torchrec_planner.h).
  // pf = 0.25, B = 256 per rank, W = 4, D = 128, fp32, TorchRec's bandwidths:
  //   1.9.2 output bytes O·W·D·4 = 64·4·128·4 = 131,072; 1.4.0a0: 256·4·128·4 = 524,288.
  const Task task = hand_task({table("t", 128, 1000, 0.25)}, "v100:gpus_per_node=4", 1024);
  tr::PlannerOptions options;
  options.bandwidths = tr::BandwidthSource::kTorchrec;
  const auto perf_of = [&](tr::TorchrecFormulas formulas) {
    options.formulas = formulas;
    return tr::shard_perf(task.workload.tables[0], ShardingType::kTableWise, tr::ComputeKernel::kFused, 128,
                          tr::make_torchrec_topology(task, options));
  };
  const tr::Perf released = perf_of(tr::TorchrecFormulas::k1_9_2);
  const tr::Perf snapshot = perf_of(tr::TorchrecFormulas::k1_4_0a0);
  EXPECT_NEAR(released.fwd_comms_ms, 131072.0 / tr::kIntraHostBwBytesPerMs, 1e-15);
  EXPECT_NEAR(snapshot.fwd_comms_ms, 524288.0 / tr::kIntraHostBwBytesPerMs, 1e-15);
  // At pf ≥ 1 the two agree exactly.
  const Task dense = hand_task({table("t", 128, 1000, 3.0)}, "v100:gpus_per_node=4", 1024);
  const auto dense_total = [&](tr::TorchrecFormulas formulas) {
    options.formulas = formulas;
    return tr::shard_perf(dense.workload.tables[0], ShardingType::kTableWise, tr::ComputeKernel::kFused, 128,
                          tr::make_torchrec_topology(dense, options))
        .total_ms();
  };
  EXPECT_DOUBLE_EQ(dense_total(tr::TorchrecFormulas::k1_9_2), dense_total(tr::TorchrecFormulas::k1_4_0a0));
  EXPECT_EQ(plan_task("torchrec:formulas=1.4.0a0", pool_task(8, "v100:gpus_per_node=4", 3), nullptr, quiet()).status,
            ShardStatus::kOk);
}

TEST(TorchrecSharder, ASequenceTableOutputsARowPerLookup) {
  // TorchRec's estimator counts an EmbeddingCollection's outputs as its inputs (O = I): pf = 3,
  // B = 256 per rank, W = 4, D = 128, fp32: output bytes O·W·D·4 = 768·4·128·4 = 1,572,864;
  // pooled, O = B: 524,288.
  Task task = hand_task({table("t", 128, 1000, 3.0)}, "v100:gpus_per_node=4", 1024);
  tr::PlannerOptions options;
  options.bandwidths = tr::BandwidthSource::kTorchrec;
  const auto comms_ms = [&](bool pooled, ShardingType type) {
    task.workload.tables[0].pooled = pooled;
    return tr::shard_perf(task.workload.tables[0], type, tr::ComputeKernel::kFused, 128,
                          tr::make_torchrec_topology(task, options))
        .fwd_comms_ms;
  };
  EXPECT_NEAR(comms_ms(true, ShardingType::kTableWise), 524288.0 / tr::kIntraHostBwBytesPerMs, 1e-15);
  EXPECT_NEAR(comms_ms(false, ShardingType::kTableWise), 1572864.0 / tr::kIntraHostBwBytesPerMs, 1e-15);
  // Row-wise, each of the W shards serves I' = I / W = 192 ids and outputs them: 192·4·128·4 =
  // 393,216 bytes (pooled: O = B = 256 partial sums, 524,288). Table-row-wise on one host alike.
  EXPECT_NEAR(comms_ms(true, ShardingType::kRowWise), 524288.0 / tr::kIntraHostBwBytesPerMs, 1e-15);
  EXPECT_NEAR(comms_ms(false, ShardingType::kRowWise), 393216.0 / tr::kIntraHostBwBytesPerMs, 1e-15);
  EXPECT_NEAR(comms_ms(false, ShardingType::kTableRowWise), 393216.0 / tr::kIntraHostBwBytesPerMs, 1e-15);
  EXPECT_EQ(plan_task("torchrec", task, nullptr, quiet()).status, ShardStatus::kOk);
}

TEST(TorchrecSharder, HonoursEachTablesOwnConstraints) {
  Task task = pool_task(12, "v100:gpus_per_node=4", 11);
  size_memory(task, 1.5);
  task.workload.tables[0].constraints.sharding_types = {ShardingType::kRowWise};
  task.workload.tables[1].constraints.sharding_types = {ShardingType::kColumnWise};
  task.workload.tables[1].constraints.min_partition = 8;
  task.workload.tables[2].constraints.sharding_types = {ShardingType::kTableRowWise};
  const ShardResult r = plan_task("torchrec", task, nullptr, quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(r.plan.tables[0].type, ShardingType::kRowWise);
  EXPECT_EQ(r.plan.tables[1].type, ShardingType::kColumnWise);
  EXPECT_EQ(r.plan.tables[2].type, ShardingType::kTableRowWise);
  EXPECT_EQ(find_table_constraint_violation(task, r.plan), "");
  // A sharder that only places whole tables reports the table it cannot honour, as infeasible.
  auto cost = make_cost_model("sim", task);
  const ShardResult greedy = plan_task("greedy", task, cost.get(), quiet());
  EXPECT_EQ(greedy.status, ShardStatus::kInfeasible);
  EXPECT_NE(greedy.reason.find("table '" + task.workload.tables[0].name +
                               "' is table_wise, but its "
                               "constraints allow only row_wise"),
            std::string::npos)
      << greedy.reason;
}

TEST(TorchrecSharder, CountsOptimizerStateInStorage) {
  Task task = hand_task({table("t", 128, 1000, 1.0)}, "v100:gpus_per_node=4", 1024);
  tr::PlannerOptions options;
  const auto topo = tr::make_torchrec_topology(task, options);
  const tr::OptionShard whole{0, 1000, 0, 128, {}, {}};
  const auto hbm = [&](OptimizerState state) {
    task.workload.tables[0].optimizer = state;
    return tr::shard_storage(task.workload.tables[0], ShardingType::kTableWise, tr::ComputeKernel::kFused, whole, topo)
        .hbm_bytes;
  };
  const std::int64_t weights = 1000 * 128 * 4;
  const std::int64_t none = hbm(OptimizerState::kNone);
  EXPECT_EQ(hbm(OptimizerState::kAdam) - none, 2 * weights);              // m = 2
  EXPECT_EQ(hbm(OptimizerState::kRowWiseAdagrad) - none, weights / 128);  // m = 1 / dim
  EXPECT_EQ(hbm(OptimizerState::kAdagrad) - none, weights);               // m = 1
}

TEST(TorchrecSharder, StopsAtItsDeadlineWithTheBestPlanSoFarOrSaysWhereItWas) {
  const Task task = pool_task(40, "v100:nodes=2,gpus_per_node=8", 5);
  // A deadline already past: not even the options were enumerated.
  Context late = quiet();
  late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const ShardResult none = plan_task("torchrec", task, nullptr, late);
  EXPECT_EQ(none.status, ShardStatus::kTimeLimit);
  EXPECT_NE(none.reason.find("while enumerating the sharding options (0 of 40 tables"), std::string::npos)
      << none.reason;
  // Without one it runs every proposer; a time_ms that ends proposing early keeps its best plan
  // (TorchRec's timeout_seconds) and says so.
  const ShardResult all = plan_task("torchrec", task, nullptr, quiet());
  ASSERT_EQ(all.status, ShardStatus::kOk) << all.reason;
  EXPECT_EQ(all.stats.solver, "");
  const ShardResult one = plan_task("torchrec:time_ms=1", task, nullptr, quiet());
  if (one.status == ShardStatus::kOk && !one.stats.solver.empty()) {
    EXPECT_NE(one.stats.solver.find("stopped proposing at the deadline after"), std::string::npos) << one.stats.solver;
    EXPECT_LE(one.stats.nodes_visited, all.stats.nodes_visited);
  } else {
    EXPECT_EQ(one.status, ShardStatus::kTimeLimit) << one.reason;  // the millisecond ran out sooner
  }
}

TEST(TorchrecSharder, SpecIsCanonicalAndRegistered) {
  EXPECT_EQ(canonical_sharder_spec("torchrec"),
            "torchrec:formulas=1.9.2,partitioner=greedy,proposers=default,bandwidths=task,storage_reservation=0.15,"
            "reservation=heuristical,min_partition=128,threshold=0,time_ms=0");
}

}  // namespace
}  // namespace embshard
