// The communication side of profiling: NeuroShard's comm sampler, the all-to-all link model, and
// `embshard profile comm` run under mpirun (skipped where mpirun or MPI is missing).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <tuple>

#include "embshard/core/file_io.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/data_io.h"
#include "embshard/data/random.h"
#include "embshard/data/topology.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/plan/plan.h"
#include "embshard/plan/plan_io.h"
#include "embshard/profile/all_to_all.h"
#include "embshard/profile/comm_sampler.h"
#include "embshard/profile/cost_sample.h"
#include "embshard/shard/sharder.h"
#include "plan_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

namespace fs = std::filesystem;

// ---- the comm sampler ---------------------------------------------------------------------------

TEST(CommSampler, SameSeedAndIndexGiveTheSameSample) {
  const CommSamplerParams params;
  for (std::int64_t i : {0, 1, 17}) {
    const CommDraw a = draw_comm_sample(params, 7, i, 4);
    const CommDraw b = draw_comm_sample(params, 7, i, 4);
    EXPECT_EQ(a.dims, b.dims);
    EXPECT_EQ(a.random_share, b.random_share);
    EXPECT_EQ(a.placement.dim_sums, b.placement.dim_sums);
    EXPECT_EQ(a.sleep_ms, b.sleep_ms);
  }
  EXPECT_NE(draw_comm_sample(params, 7, 0, 4).dims, draw_comm_sample(params, 7, 1, 4).dims);
  EXPECT_NE(draw_comm_sample(params, 7, 0, 4).dims, draw_comm_sample(params, 8, 0, 4).dims);
}

TEST(CommSampler, TablesDimsAndSumsFollowTheParameters) {
  const CommSamplerParams params;
  const std::set<int> allowed(params.dims.begin(), params.dims.end());
  std::set<std::size_t> table_counts;
  for (std::int64_t i = 0; i < 300; ++i) {
    const CommDraw draw = draw_comm_sample(params, 3, i, 4);
    table_counts.insert(draw.dims.size());
    ASSERT_GE(draw.dims.size(), 10u);
    ASSERT_LE(draw.dims.size(), 59u);
    for (int d : draw.dims) ASSERT_TRUE(allowed.count(d)) << d;
    ASSERT_EQ(draw.placement.dim_sums.size(), 4u);
    const std::int64_t total = std::accumulate(draw.dims.begin(), draw.dims.end(), std::int64_t{0});
    EXPECT_EQ(std::accumulate(draw.placement.dim_sums.begin(), draw.placement.dim_sums.end(), std::int64_t{0}), total);
    EXPECT_GE(draw.random_share, 0.0);
    EXPECT_LT(draw.random_share, 1.0);
  }
  EXPECT_TRUE(table_counts.count(10) || table_counts.count(11));  // the range is really used
  EXPECT_TRUE(table_counts.count(59) || table_counts.count(58));
}

/** The greedy written out plainly: descending dims, each to the first least-loaded device. */
std::vector<std::int64_t> plain_greedy_dim_sums(std::vector<int> dims, int devices) {
  std::sort(dims.begin(), dims.end(), [](int a, int b) { return a > b; });
  std::vector<std::int64_t> sums(static_cast<std::size_t>(devices), 0);
  for (int dim : dims) {
    std::size_t best = 0;
    for (std::size_t d = 1; d < sums.size(); ++d)
      if (sums[d] < sums[best]) best = d;
    sums[best] += dim;
  }
  return sums;
}

TEST(CommSampler, GreedyWithoutRandomnessIsThePlainGreedy) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    const CommDraw draw = draw_comm_sample(CommSamplerParams{}, seed, 0, 4);
    for (int devices : {1, 2, 3, 4, 7}) {
      Rng rng(seed);
      const DimPlacement placement = random_dim_greedy(draw.dims, devices, 0.0, rng);
      EXPECT_EQ(placement.dim_sums, plain_greedy_dim_sums(draw.dims, devices));
      EXPECT_TRUE(std::is_sorted(placement.dims_descending.rbegin(), placement.dims_descending.rend()));
    }
  }
  Rng rng(1);  // ties go to the lowest index
  const DimPlacement tied = random_dim_greedy({8, 8, 8}, 4, 0.0, rng);
  EXPECT_EQ(tied.device_of_dim, (std::vector<int>{0, 1, 2}));
}

TEST(CommSampler, FullyRandomPlacementUsesEveryDevice) {
  Rng rng(5);
  std::vector<int> dims(400, 4);
  const DimPlacement placement = random_dim_greedy(dims, 4, 1.0, rng);
  for (std::int64_t sum : placement.dim_sums) EXPECT_GT(sum, 200);  // ~400 each
  EXPECT_NE(placement.dim_sums, plain_greedy_dim_sums(dims, 4));
}

TEST(CommSampler, SleepsAreWholeMillisecondsFromZeroToTheMaximum) {
  const CommSamplerParams params;
  double largest = 0.0;
  for (std::int64_t i = 0; i < 500; ++i) {
    const CommDraw draw = draw_comm_sample(params, 11, i, 4);
    ASSERT_EQ(draw.sleep_ms.size(), 4u);
    EXPECT_EQ(*std::min_element(draw.sleep_ms.begin(), draw.sleep_ms.end()), 0.0);
    for (double s : draw.sleep_ms) {
      ASSERT_GE(s, 0.0);
      ASSERT_LE(s, 18.0);
      EXPECT_EQ(s, static_cast<double>(static_cast<int>(s)));
      largest = std::max(largest, s);
    }
  }
  EXPECT_GE(largest, 15.0);
  CommSamplerParams no_sleep;
  no_sleep.max_sleep_ms = 0;
  for (double s : draw_comm_sample(no_sleep, 11, 3, 4).sleep_ms) EXPECT_EQ(s, 0.0);
}

TEST(CommSampler, SpecNamesEveryParameterAndTheDevices) {
  EXPECT_EQ(canonical_comm_sampler_spec(CommSamplerParams{}, 4),
            "neuroshard-comm:devices=4,dims=128/64/32/16/8/4,max_sleep_ms=18,max_tables=59,"
            "min_tables=10");
  CommSamplerParams bad;
  bad.max_tables = 5;
  EXPECT_NE(find_error_in_comm_sampler(bad), "");
  EXPECT_NE(test_util::error_of([&] { (void)draw_comm_sample(bad, 0, 0, 4); }), "");
}

// ---- batch split and the session without MPI ----------------------------------------------------

TEST(AllToAll, BatchSharesDifferByAtMostOneAndSumToTheBatch) {
  EXPECT_EQ(samples_of_rank(10, 4, 0), 3);
  EXPECT_EQ(samples_of_rank(10, 4, 1), 3);
  EXPECT_EQ(samples_of_rank(10, 4, 2), 2);
  EXPECT_EQ(samples_of_rank(10, 4, 3), 2);
  for (int n : {1, 3, 7}) {
    std::int64_t total = 0;
    for (int r = 0; r < n; ++r) total += samples_of_rank(65536, n, r);
    EXPECT_EQ(total, 65536);
  }
}

TEST(AllToAll, SessionWithoutMpiSaysSo) {
  if (built_with_mpi()) GTEST_SKIP() << "this build has MPI";
  EXPECT_NE(test_util::error_of([] { MpiSession session; }).find("built without MPI"), std::string::npos);
}

// ---- the link model -----------------------------------------------------------------------------

/**
 * The link model's volumes by enumerating every message (cost/link_model.h): each device's pooled
 * bytes per peer to every other device, its partial sums per peer to every other device of its
 * host, and its host's reduced rows per peer to the device of its local rank on every other host.
 * The slow reference of the O(1)-per-device formulas.
 */
std::vector<LinkVolume> message_volumes(const Topology& t, const ExchangeBytes& bytes) {
  const int n = t.num_devices(), per_host = t.host_size();
  std::vector<LinkVolume> v(static_cast<std::size_t>(n));
  const auto send = [&](int d, int e, std::int64_t b) {
    const bool intra = t.same_host(d, e);
    (intra ? v[d].send_intra_bytes : v[d].send_inter_bytes) += b;
    (intra ? v[e].recv_intra_bytes : v[e].recv_inter_bytes) += b;
  };
  for (int d = 0; d < n; ++d) {
    const auto pooled = static_cast<std::int64_t>(bytes.pooled[d] / n);  // each device's B/N samples
    const auto partial = bytes.partial.empty() ? 0 : static_cast<std::int64_t>(bytes.partial[d] / per_host);
    const auto reduced = bytes.reduced.empty() ? 0 : static_cast<std::int64_t>(bytes.reduced[t.host_of(d)] / n);
    for (int e = 0; e < n; ++e) {
      if (e == d) continue;
      send(d, e, pooled);
      if (t.same_host(d, e)) send(d, e, partial);
      if (!t.same_host(d, e) && e % per_host == d % per_host) send(d, e, reduced);
    }
  }
  return v;
}

void expect_same_volumes(const std::vector<LinkVolume>& fast, const std::vector<LinkVolume>& slow,
                         const std::string& where) {
  ASSERT_EQ(fast.size(), slow.size()) << where;
  for (std::size_t d = 0; d < fast.size(); ++d) {
    EXPECT_EQ(std::tie(fast[d].send_intra_bytes, fast[d].send_inter_bytes, fast[d].recv_intra_bytes,
                       fast[d].recv_inter_bytes),
              std::tie(slow[d].send_intra_bytes, slow[d].send_inter_bytes, slow[d].recv_intra_bytes,
                       slow[d].recv_inter_bytes))
        << where << ", device " << d;
  }
}

TEST(LinkModel, VolumesEqualTheMessageReferenceOnRandomTopologies) {
  Rng rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    Topology t = make_topology("a100:nodes=1,gpus_per_node=1");
    t.devices_per_host = 1 + static_cast<int>(rng.below(9));
    const int hosts = 1 + static_cast<int>(rng.below(6));
    const int n = trial % 10 == 0 ? 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(t.devices_per_host)))
                                  : hosts * t.devices_per_host;  // one small host, or full hosts
    t.devices.assign(static_cast<std::size_t>(n), t.devices.front());
    ASSERT_EQ(find_error_in_topology(t, "trial"), "");
    const auto draw = [&](int count) {
      std::vector<double> bytes;
      for (int i = 0; i < count; ++i) bytes.push_back(static_cast<double>(rng.below(50'000'000)));
      return bytes;
    };
    const ExchangeBytes bytes{draw(n), trial % 3 ? draw(n) : std::vector<double>{},
                              trial % 3 ? draw(t.num_hosts()) : std::vector<double>{}};
    expect_same_volumes(exchange_volumes(t, bytes), message_volumes(t, bytes),
                        detail::concat("trial ", trial, ", ", n, " devices, ", t.devices_per_host, " per host"));
  }
}

/** The output exchange of `plan` on 2 hosts of 2 devices at batch 16 (test below). */
std::vector<LinkVolume> two_host_volumes(const std::vector<TablePlacement>& placements) {
  Task task = test_util::task_of({{"t", 100, 8}}, 4, std::int64_t{1} << 40, 0, /*devices_per_host=*/2);
  task.workload.batch_size = 16;
  const Plan plan = test_util::plan_of(placements);
  EXPECT_EQ(find_error_in_plan(task, plan), "");
  return exchange_volumes(task.topology, output_exchange_bytes(device_output_dims(task, shards_by_device(task, plan)),
                                                               task.workload.batch_size));
}

/** {send intra, send inter, recv intra, recv inter} of every device. */
std::vector<std::array<std::int64_t, 4>> links(const std::vector<LinkVolume>& v) {
  std::vector<std::array<std::int64_t, 4>> out;
  for (const LinkVolume& d : v)
    out.push_back({d.send_intra_bytes, d.send_inter_bytes, d.recv_intra_bytes, d.recv_inter_bytes});
  return out;
}

TEST(LinkModel, EverySharingTypeMovesTheBytesWorkedOutByHandOnTwoHosts) {
  // Hosts {0, 1} and {2, 3}; table t: 100 rows × 8 columns; B = 16, so each device trains on 4
  // samples; a whole table's outputs are 16 · 8 · 4 = 512 bytes, a sample's 32.
  using test_util::shard;
  // table-wise on device 0: 4 samples (128 bytes) to each other device, 2 of them on host 1.
  EXPECT_EQ(
      links(two_host_volumes({{"t", ShardingType::kTableWise, {shard(0, 0, 100, 0, 8)}}})),
      (std::vector<std::array<std::int64_t, 4>>{{128, 256, 0, 0}, {0, 0, 128, 0}, {0, 0, 0, 128}, {0, 0, 0, 128}}));
  // column-wise, 4 columns on devices 0 and 2: each sends 4 samples × 16 bytes = 64 to every other.
  EXPECT_EQ(
      links(two_host_volumes({{"t", ShardingType::kColumnWise, {shard(0, 0, 100, 0, 4), shard(2, 0, 100, 4, 8)}}})),
      (std::vector<std::array<std::int64_t, 4>>{{64, 128, 0, 64}, {0, 0, 64, 64}, {64, 128, 0, 64}, {0, 0, 64, 64}}));
  // table-row-wise on host 1: devices 2 and 3 each hold partial sums of the whole batch (512
  // bytes), reduce-scatter them (256 to the other), then each sends the 4 samples of its local
  // rank's device on host 0 (128 bytes). The flat exchange of the old model sent 384 bytes from
  // each, 256 of them across hosts.
  EXPECT_EQ(
      links(two_host_volumes({{"t", ShardingType::kTableRowWise, {shard(2, 0, 50, 0, 8), shard(3, 50, 100, 0, 8)}}})),
      (std::vector<std::array<std::int64_t, 4>>{
          {0, 0, 0, 128}, {0, 0, 0, 128}, {256, 128, 256, 0}, {256, 128, 256, 0}}));
  // row-wise over all four: every host reduces its two partial sums the same way, then the hosts
  // exchange their reduced rows: 128 bytes each way per device.
  EXPECT_EQ(links(two_host_volumes(
                {{"t",
                  ShardingType::kRowWise,
                  {shard(0, 0, 25, 0, 8), shard(1, 25, 50, 0, 8), shard(2, 50, 75, 0, 8), shard(3, 75, 100, 0, 8)}}})),
            (std::vector<std::array<std::int64_t, 4>>(4, {256, 128, 256, 128})));
  // grid: columns 0-3 in rows halves on devices 0 and 1, columns 4-7 on 2 and 3: each block a
  // table-row-wise exchange of 4 columns (partial sums 256 bytes, 128 to the host peer, 64 across).
  EXPECT_EQ(links(two_host_volumes(
                {{"t",
                  ShardingType::kGridShard,
                  {shard(0, 0, 50, 0, 4), shard(1, 50, 100, 0, 4), shard(2, 0, 50, 4, 8), shard(3, 50, 100, 4, 8)}}})),
            (std::vector<std::array<std::int64_t, 4>>(4, {128, 64, 128, 64})));
  // data-parallel: no output exchange (its gradients are all-reduced).
  EXPECT_EQ(links(two_host_volumes(
                {{"t",
                  ShardingType::kDataParallel,
                  {shard(0, 0, 100, 0, 8), shard(1, 0, 100, 0, 8), shard(2, 0, 100, 0, 8), shard(3, 0, 100, 0, 8)}}})),
            (std::vector<std::array<std::int64_t, 4>>(4, {0, 0, 0, 0})));
}

TEST(LinkModel, HostsMustBeTheSameSize) {
  Topology t = make_topology("h100:nodes=2");
  EXPECT_EQ(find_error_in_topology(t, "t.json"), "");
  t.devices.pop_back();
  EXPECT_NE(find_error_in_topology(t, "t.json").find("devices_per_host 8 does not divide its 15 devices"),
            std::string::npos)
      << find_error_in_topology(t, "t.json");
  t.devices.resize(5);  // one host of 5 < 8 devices
  EXPECT_EQ(find_error_in_topology(t, "t.json"), "");
}

TEST(LinkModel, TwoDevicesOnOneHost) {
  const Topology t = make_topology("cpu:devices=2");
  // B = 8: each device trains on 4 samples; device 0 (dim 3) sends 4·3·4 = 48 bytes, device 1
  // (dim 5) sends 4·5·4 = 80 bytes.
  const std::vector<LinkVolume> v = all_to_all_volumes(t, {3, 5}, 8);
  EXPECT_EQ(v[0].send_intra_bytes, 48);
  EXPECT_EQ(v[0].recv_intra_bytes, 80);
  EXPECT_EQ(v[1].send_intra_bytes, 80);
  EXPECT_EQ(v[1].recv_intra_bytes, 48);
  for (const LinkVolume& d : v) EXPECT_EQ(d.send_inter_bytes + d.recv_inter_bytes, 0);
  const std::vector<double> ms = all_to_all_ms(t, {3, 5}, 8);
  const double expected = t.a2a_latency_us / 1000.0 + 80.0 / (t.intra_host_gbps * 1e6);
  EXPECT_DOUBLE_EQ(ms[0], expected);  // both devices move 80 bytes one way
  EXPECT_DOUBLE_EQ(ms[1], expected);
}

TEST(LinkModel, FourDevicesOnOneHost) {
  const Topology t = make_topology("cpu:devices=4");
  // B = 16: 4 samples each, d → e carries 4·dim_d·4 = 16·dim_d bytes.
  const std::vector<std::int64_t> dims{1, 2, 3, 4};
  const std::vector<LinkVolume> v = all_to_all_volumes(t, dims, 16);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(v[d].send_intra_bytes, 3 * 16 * dims[d]) << d;
    EXPECT_EQ(v[d].recv_intra_bytes, 16 * (10 - dims[d])) << d;
  }
  const std::vector<double> ms = all_to_all_ms(t, dims, 16);
  const double gbps = t.intra_host_gbps;
  EXPECT_DOUBLE_EQ(ms[0], 0.01 + 144.0 / (gbps * 1e6));  // recv 16·9 > send 16·3
  EXPECT_DOUBLE_EQ(ms[3], 0.01 + 192.0 / (gbps * 1e6));  // send 16·12 > recv 16·6
}

TEST(LinkModel, DevicesOnTwoHosts) {
  // Two hosts of one device: everything goes over the inter-host link.
  const Topology pair = make_topology("a100:nodes=2,gpus_per_node=1");
  const std::vector<LinkVolume> p = all_to_all_volumes(pair, {3, 5}, 8);
  EXPECT_EQ(p[0].send_inter_bytes, 48);
  EXPECT_EQ(p[0].recv_inter_bytes, 80);
  EXPECT_EQ(p[0].send_intra_bytes + p[0].recv_intra_bytes, 0);
  EXPECT_DOUBLE_EQ(all_to_all_ms(pair, {3, 5}, 8)[1],
                   pair.a2a_latency_us / 1000.0 + 80.0 / (pair.inter_host_gbps * 1e6));

  // Two hosts of two devices: {0, 1} and {2, 3}; d → e carries 16·dim_d bytes.
  const Topology quad = make_topology("a100:nodes=2,gpus_per_node=2");
  const std::vector<std::int64_t> dims{1, 2, 3, 4};
  const std::vector<LinkVolume> v = all_to_all_volumes(quad, dims, 16);
  EXPECT_EQ(v[0].send_intra_bytes, 16);
  EXPECT_EQ(v[0].send_inter_bytes, 32);
  EXPECT_EQ(v[0].recv_intra_bytes, 32);      // from device 1
  EXPECT_EQ(v[0].recv_inter_bytes, 16 * 7);  // from devices 2 and 3
  EXPECT_EQ(v[3].send_intra_bytes, 64);
  EXPECT_EQ(v[3].send_inter_bytes, 128);
  EXPECT_EQ(v[3].recv_intra_bytes, 48);
  EXPECT_EQ(v[3].recv_inter_bytes, 48);
  const std::vector<double> ms = all_to_all_ms(quad, dims, 16);
  const double latency_ms = quad.a2a_latency_us / 1000.0;
  EXPECT_DOUBLE_EQ(ms[0],
                   latency_ms + std::max(32.0 / (quad.intra_host_gbps * 1e6), 112.0 / (quad.inter_host_gbps * 1e6)));
  EXPECT_DOUBLE_EQ(ms[3],
                   latency_ms + std::max(64.0 / (quad.intra_host_gbps * 1e6), 128.0 / (quad.inter_host_gbps * 1e6)));
}

TEST(LinkModel, OneDeviceHasNoAllToAll) {
  const Topology t = make_topology("cpu:devices=1");
  EXPECT_EQ(all_to_all_ms(t, {512}, 65536), std::vector<double>{0.0});
  const std::vector<LinkVolume> v = all_to_all_volumes(t, {512}, 65536);
  EXPECT_EQ(v[0].send_intra_bytes + v[0].recv_intra_bytes + v[0].send_inter_bytes + v[0].recv_inter_bytes, 0);
}

TEST(LinkModel, WhatIsSentIsReceived) {
  const Topology t = make_topology("a100:nodes=2,gpus_per_node=3");
  const std::vector<std::int64_t> dims{7, 0, 64, 3, 128, 9};
  const std::vector<LinkVolume> v = all_to_all_volumes(t, dims, 6000);
  std::int64_t sent_intra = 0, recv_intra = 0, sent_inter = 0, recv_inter = 0;
  for (const LinkVolume& d : v) {
    sent_intra += d.send_intra_bytes;
    recv_intra += d.recv_intra_bytes;
    sent_inter += d.send_inter_bytes;
    recv_inter += d.recv_inter_bytes;
  }
  EXPECT_EQ(sent_intra, recv_intra);
  EXPECT_EQ(sent_inter, recv_inter);
  // Equal dims: every device sends what it receives, so all take the same time.
  const std::vector<LinkVolume> even = all_to_all_volumes(t, std::vector<std::int64_t>(6, 32), 6000);
  for (const LinkVolume& d : even) {
    EXPECT_EQ(d.send_intra_bytes, d.recv_intra_bytes);
    EXPECT_EQ(d.send_inter_bytes, d.recv_inter_bytes);
  }
}

// ---- embshard profile comm under mpirun ---------------------------------------------------------

using test_util::CommandResult;
using test_util::run_command;

bool mpirun_on_path() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

/**
 * `embshard profile comm ARGS` on `ranks` ranks (Open MPI's mpirun). --oversubscribe: more ranks
 * than cores; --allow-run-as-root: containers run tests as root; the single-copy mechanism off:
 * containers without CAP_SYS_PTRACE refuse the cross-process reads (CMA) of the shared-memory
 * transport ("Read -1, expected ..., errno = 1"), and these tests check the file, not the speed;
 * `timeout` keeps a hang from stalling ctest.
 */
CommandResult profile_comm(int ranks, const std::string& args) {
  return run_command(
      "OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 300 "
      "mpirun --oversubscribe --allow-run-as-root -n " +
      std::to_string(ranks) + " " + EMBSHARD_CLI_PATH + " profile comm " + args);
}

class ProfileComm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!built_with_mpi()) GTEST_SKIP() << "embshard built without MPI";
    if (!mpirun_on_path()) GTEST_SKIP() << "mpirun not on PATH";
    dir_ = test_util::temp_file("embshard_comm", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

constexpr const char* kQuickRun = "--repeats 2 --warmup 1 --batch 4096";

void expect_well_formed(const CostSampleFile& file, int ranks, std::size_t samples) {
  EXPECT_EQ(file.header.kind, SampleKind::kComm);
  EXPECT_EQ(file.header.backend, "mpi");
  EXPECT_NE(file.header.sampler.find("devices=" + std::to_string(ranks)), std::string::npos);
  ASSERT_EQ(file.comm.size(), samples);
  for (std::size_t i = 0; i < samples; ++i) {
    const CommSample& s = file.comm[i];
    EXPECT_EQ(s.index, static_cast<std::int64_t>(i));
    ASSERT_EQ(s.dim_sums.size(), static_cast<std::size_t>(ranks));
    ASSERT_EQ(s.sleep_ms.size(), static_cast<std::size_t>(ranks));
    ASSERT_EQ(s.fw_ms.size(), static_cast<std::size_t>(ranks));
    ASSERT_EQ(s.bw_ms.size(), static_cast<std::size_t>(ranks));
    const double latest = *std::max_element(s.sleep_ms.begin(), s.sleep_ms.end());
    for (int r = 0; r < ranks; ++r) {
      // A rank's forward waits for the latest sleeper (to 1 ms of timer slack); its backward ran.
      EXPECT_GE(s.fw_ms[r], latest - s.sleep_ms[r] - 1.0);
      EXPECT_GT(s.bw_ms[r], 0.0);
    }
    const CommDraw draw = draw_comm_sample(CommSamplerParams{}, 0, s.index, ranks);
    EXPECT_EQ(s.dim_sums, draw.placement.dim_sums);
    EXPECT_EQ(s.sleep_ms, draw.sleep_ms);
  }
}

TEST_F(ProfileComm, MeasuresEveryRankFor2To4Ranks) {
  for (int ranks : {2, 3, 4}) {
    const std::string out = path("comm" + std::to_string(ranks) + ".jsonl");
    const CommandResult r = profile_comm(ranks, std::string("--samples 2 ") + kQuickRun + " --out " + out);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("link model"), std::string::npos) << r.out;
    expect_well_formed(read_cost_samples(out, Context{}), ranks, 2);
  }
}

TEST_F(ProfileComm, ResumesWhereTheFileEnds) {
  const std::string out = path("comm.jsonl");
  CommandResult r = profile_comm(2, std::string("--samples 2 ") + kQuickRun + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  r = profile_comm(2, std::string("--samples 3 ") + kQuickRun + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  expect_well_formed(read_cost_samples(out, Context{}), 2, 3);
}

TEST_F(ProfileComm, RefusesAFileOfAnotherExperimentWithoutHanging) {
  const std::string out = path("comm.jsonl");
  ASSERT_EQ(profile_comm(3, std::string("--samples 1 ") + kQuickRun + " --out " + out).status, 0);
  const CommandResult r = profile_comm(3, "--samples 2 --repeats 2 --warmup 1 --batch 2048 --out " + out);
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("batch_size"), std::string::npos) << r.out;
  EXPECT_EQ(read_cost_samples(out, Context{}).comm.size(), 1u);  // untouched
}

TEST_F(ProfileComm, OneProcessWithoutMpirunIsAWorldOfOne) {
  const std::string out = path("comm1.jsonl");
  const CommandResult r =
      run_command(std::string(EMBSHARD_CLI_PATH) + " profile comm --samples 1 " + kQuickRun + " --out " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("one rank"), std::string::npos) << r.out;
  expect_well_formed(read_cost_samples(out, Context{}), 1, 1);
}

TEST_F(ProfileComm, EvalMeasuresThePlansAllToAllsWithOneRankPerDevice) {
  const std::string gen = std::string(EMBSHARD_CLI_PATH) +
                          " task gen --quiet --protocol neuroshard --devices 2 --max-dim 16 "
                          "--count 1 --seed 0 --out " +
                          path("t");
  ASSERT_EQ(run_command(gen).status, 0);
  const Task task = read_task_file(path("t/000.json"));
  write_plan_file(path("p.json"), plan_task("greedy:balance=size", task, nullptr, Context{}).plan);
  const std::string eval = std::string(EMBSHARD_CLI_PATH) + " eval --quiet --task " + path("t/000.json") + " --plan " +
                           path("p.json") + " --comm mpi --repeats 2 --warmup 1 --out " + path("r.json");
  const auto mpirun = [&](int ranks) {
    return run_command(
        "OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 300 mpirun "
        "--oversubscribe --allow-run-as-root -n " +
        std::to_string(ranks) + " " + eval);
  };
  CommandResult r = mpirun(2);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto report = nlohmann::json::parse(read_file(path("r.json")));
  EXPECT_EQ(report["comm"]["source"], "measured");
  ASSERT_EQ(report["devices"].size(), 2u);
  EXPECT_GT(report["devices"][0]["fw_comm_ms"].get<double>(), 0.0);
  EXPECT_GT(report["devices"][1]["in_comm_ms"].get<double>(), 0.0);  // the input all-to-all, measured
  EXPECT_NE(report["comm"]["detail"].get<std::string>().find("input all-to-all measured too"), std::string::npos)
      << report["comm"];
  // A measured backend started by mpirun measures the all-to-alls without being asked (--comm auto).
  const std::string measured = std::string(EMBSHARD_CLI_PATH) + " eval --quiet --task " + path("t/000.json") +
                               " --plan " + path("p.json") +
                               " --backend reference --batch 256 --repeats 1 "
                               "--warmup 0 --input-comm omit --out " +
                               path("m.json");
  r = run_command(
      "OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 300 mpirun --oversubscribe "
      "--allow-run-as-root -n 2 " +
      measured);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto auto_report = nlohmann::json::parse(read_file(path("m.json")));
  EXPECT_EQ(auto_report["comm"]["source"], "measured");
  EXPECT_EQ(auto_report["devices"][0]["in_comm_ms"].get<double>(), 0.0);  // omitted: not measured, not paid
  r = run_command(measured + " --comm auto");                             // no mpirun: the link model
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(read_file(path("m.json")))["comm"]["source"], "modelled");
  r = mpirun(3);  // one rank per device, or a clear error
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("the task has 2 devices but the job has 3 MPI ranks"), std::string::npos) << r.out;
}

// ---- the input all-to-all -----------------------------------------------------------------------

namespace {

/** Table "a" (1000 rows, dim 8) table-wise on device 0, "b" (400 rows, dim 8) in two column
 *  pieces on devices 1 and 2, "c" (1000 rows, dim 4) row-wise 250 / 750 on devices 2 and 3. */
std::pair<Task, Plan> mixed_plan() {
  Task task = test_util::task_of({{"a", 1000, 8}, {"b", 400, 8}, {"c", 1000, 4}}, 4, std::int64_t{1} << 30, 0,
                                 /*devices_per_host=*/4);
  task.topology.intra_host_gbps = 10.0;
  task.topology.a2a_latency_us = 0.0;
  task.workload.batch_size = 100;
  const std::int64_t lookups[] = {500, 300, 2000};
  for (std::size_t t = 0; t < 3; ++t) task.workload.tables[t].stats.num_indices = lookups[t];
  using test_util::shard;
  Plan plan = test_util::plan_of({{"a", ShardingType::kTableWise, {shard(0, 0, 1000, 0, 8)}},
                                  {"b", ShardingType::kColumnWise, {shard(1, 0, 400, 0, 4), shard(2, 0, 400, 4, 8)}},
                                  {"c", ShardingType::kRowWise, {shard(2, 0, 250, 0, 4), shard(3, 250, 1000, 0, 4)}}});
  return {task, plan};
}

}  // namespace

TEST(InputAllToAll, EveryShardReceivesItsLookupsAndALengthPerSample) {
  const auto built = mixed_plan();
  const Task& task = built.first;
  const Plan& plan = built.second;
  const InputCommOptions options;  // int64 indices, int32 lengths
  const std::vector<double> bytes = device_input_bytes(task, shards_by_device(task, plan), options);
  ASSERT_EQ(bytes.size(), 4u);
  EXPECT_DOUBLE_EQ(bytes[0], 500 * 8 + 100 * 4);                          // table-wise: all of a
  EXPECT_DOUBLE_EQ(bytes[1], 300 * 8 + 100 * 4);                          // a column piece: all of b
  EXPECT_DOUBLE_EQ(bytes[2], (300 * 8 + 100 * 4) + (500 * 8 + 100 * 4));  // b's other piece, c's first quarter
  EXPECT_DOUBLE_EQ(bytes[3], 1500 * 8 + 100 * 4);                         // c's rows 250..1000
  // Device d receives 3/4 of its bytes, one quarter from each other device; it sends a quarter of
  // every other device's: the link model prices max(send, recv).
  const std::vector<double> ms = input_all_to_all_ms(task.topology, bytes);
  const double total = bytes[0] + bytes[1] + bytes[2] + bytes[3];
  for (int d = 0; d < 4; ++d) {
    const double recv = 3.0 * std::floor(bytes[d] / 4);
    const double send = std::floor(total / 4) - std::floor(bytes[d] / 4);
    EXPECT_NEAR(ms[d], std::max(recv, send) / 10e6, 1e-9) << d;
  }
}

TEST(InputAllToAll, TheJudgeExposesOverlapsOrOmitsIt) {
  const auto built = mixed_plan();
  const Task& task = built.first;
  const Plan& plan = built.second;
  const auto judge = [&](const std::string& mode) {
    return make_cost_model("sim:input_comm=" + mode, task)->estimate(task, plan, test_util::quiet_context());
  };
  const CostBreakdown omit = judge("omit");
  const CostBreakdown exposed = judge("exposed");
  const CostBreakdown overlap = judge("overlap");
  const std::vector<double> raw =
      input_all_to_all_ms(task.topology, device_input_bytes(task, shards_by_device(task, plan), {}));
  double most = 0.0;
  for (std::size_t d = 0; d < 4; ++d) {
    EXPECT_EQ(omit.devices[d].in_comm_ms, 0.0);
    EXPECT_DOUBLE_EQ(exposed.devices[d].in_comm_ms, raw[d]);
    EXPECT_EQ(exposed.devices[d].in_hidden_ms, 0.0);
    const double compute = overlap.devices[d].fw_comp_ms + overlap.devices[d].bw_comp_ms;
    EXPECT_DOUBLE_EQ(overlap.devices[d].in_hidden_ms, std::min(raw[d], compute));
    EXPECT_DOUBLE_EQ(overlap.devices[d].in_comm_ms + overlap.devices[d].in_hidden_ms, raw[d]);
    EXPECT_DOUBLE_EQ(exposed.devices[d].fw_comp_ms, omit.devices[d].fw_comp_ms);  // compute untouched
    EXPECT_DOUBLE_EQ(exposed.devices[d].sum_ms(), omit.devices[d].sum_ms() + raw[d]);
    most = std::max(most, raw[d]);
  }
  EXPECT_GT(most, 0.0);
  EXPECT_DOUBLE_EQ(objective_value(exposed, Objective::kStep), objective_value(omit, Objective::kStep) + most);
  EXPECT_LE(objective_value(overlap, Objective::kStep), objective_value(exposed, Objective::kStep));
  EXPECT_NE(test_util::error_of([&] { judge("sometimes"); }).find("exposed"), std::string::npos);
}

}  // namespace
TEST(LinkModel, EachDeviceRunsAtItsOwnHostsLinks) {
  // Two hosts of two devices (DevicesOnTwoHosts), host 1 with half the NVLink and NIC bandwidth
  // (mixed hardware): device 0 moves max(16, 32) bytes inside its host and max(32, 112) across at
  // its own rates, device 3 max(64, 48) and max(128, 48) at host 1's.
  Topology quad = make_topology("a100:nodes=2,gpus_per_node=2");
  const double intra = quad.intra_host_gbps, inter = quad.inter_host_gbps;
  for (const int d : {2, 3}) {
    quad.devices[static_cast<std::size_t>(d)].intra_host_gbps = intra / 2;
    quad.devices[static_cast<std::size_t>(d)].inter_host_gbps = inter / 2;
  }
  ASSERT_EQ(find_error_in_topology(quad, "quad"), "");
  EXPECT_FALSE(quad.uniform_links());
  const std::vector<double> q = all_to_all_ms(quad, {1, 2, 3, 4}, 16);
  const double latency = quad.a2a_latency_us / 1000.0;
  const auto ms = [](double bytes, double gbps) { return bytes / (gbps * 1e6); };
  EXPECT_DOUBLE_EQ(q[0], latency + std::max(ms(32.0, intra), ms(112.0, inter)));
  EXPECT_DOUBLE_EQ(q[3], latency + std::max(ms(64.0, intra / 2), ms(128.0, inter / 2)));

  // A ring all-reduce passes every host: the slower host's links set it.
  Topology slow = make_topology("a100:nodes=2,gpus_per_node=2");
  slow.intra_host_gbps = intra / 2, slow.inter_host_gbps = inter / 2;
  EXPECT_DOUBLE_EQ(all_reduce_ms(quad, 1 << 20), all_reduce_ms(slow, 1 << 20));

  // A host's devices share its links, and across hosts they must be positive: one line each.
  Topology split = quad;
  split.devices[3].inter_host_gbps = inter / 4;
  EXPECT_NE(find_error_in_topology(split, "t.json").find("device 3: its links"), std::string::npos)
      << find_error_in_topology(split, "t.json");
  EXPECT_NE(find_error_in_topology(split, "t.json").find("a host's devices share its links"), std::string::npos);
  split.devices[3].inter_host_gbps = -1;
  EXPECT_NE(find_error_in_topology(split, "t.json").find("device 3: inter_host_gbps must lie in [0, 1e6]"),
            std::string::npos);
}

TEST(LinkModel, HalfDuplexLinksCarryBothDirectionsAndSayItInTheTaskFile) {
  // The two-device example above: device 0 sends 48 bytes and receives 80, device 1 the reverse.
  // On a half-duplex link each moves 128 bytes through it, not the larger 80.
  Topology pair = make_topology("cpu:devices=2");
  pair.half_duplex = true;
  const std::vector<double> ms = all_to_all_ms(pair, {3, 5}, 8);
  const double latency_ms = pair.a2a_latency_us / 1000.0;
  EXPECT_DOUBLE_EQ(ms[0], latency_ms + 128.0 / (pair.intra_host_gbps * 1e6));
  EXPECT_DOUBLE_EQ(ms[1], ms[0]);

  // Two hosts of two devices (DevicesOnTwoHosts): device 0 moves 16 + 32 bytes inside its host and
  // 32 + 112 across; device 3 64 + 48 and 128 + 48.
  Topology quad = make_topology("a100:nodes=2,gpus_per_node=2");
  quad.half_duplex = true;
  const std::vector<double> q = all_to_all_ms(quad, {1, 2, 3, 4}, 16);
  const auto intra = [&](double b) { return b / (quad.intra_host_gbps * 1e6); };
  const auto inter = [&](double b) { return b / (quad.inter_host_gbps * 1e6); };
  EXPECT_DOUBLE_EQ(q[0], quad.a2a_latency_us / 1000.0 + std::max(intra(48.0), inter(144.0)));
  EXPECT_DOUBLE_EQ(q[3], quad.a2a_latency_us / 1000.0 + std::max(intra(112.0), inter(176.0)));

  // A ring all-reduce sends and receives as much each step: its byte terms count twice.
  Topology full = quad;
  full.half_duplex = false;
  const double bytes = 1 << 20;
  EXPECT_DOUBLE_EQ(all_reduce_ms(quad, bytes) - quad.a2a_latency_us / 1000.0,
                   2.0 * (all_reduce_ms(full, bytes) - full.a2a_latency_us / 1000.0));

  // The task file says so (written only when set, so full-duplex files are as they were), and a
  // preset with half-duplex links is written in full rather than by its name.
  Task task = test_util::task_of({{"a", 1000, 8}, {"b", 400, 8}}, 2, std::int64_t{1} << 30, 0);
  EXPECT_EQ(task_to_json(task).find("half_duplex"), std::string::npos);
  task.topology = pair;
  const std::string text = task_to_json(task);
  EXPECT_NE(text.find("\"half_duplex\": true"), std::string::npos) << text;
  const Task back = task_from_json(text, "mem");
  EXPECT_TRUE(back.topology.half_duplex);
  EXPECT_EQ(all_to_all_ms(back.topology, {3, 5}, 8), ms);
}

}  // namespace embshard
