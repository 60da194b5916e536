#pragma once
/**
 * @file link_model.h
 * @brief The link model: how long each device spends in the output exchanges (forward and
 *        backward) and the input all-to-all of a step, costed as NCCL and TorchRec run them on a
 *        topology of H hosts of L devices each (N = H·L), per link.
 *
 * Links. Each device has an intra-host link (NVLink, PCIe) and an inter-host link (its NIC, one
 * per GPU: an all-to-all cannot aggregate several NICs), full duplex, running concurrently. An
 * exchange that moves, per device d, send/recv bytes over each link takes
 *
 *   time_d = latency + max( max(send_intra_d, recv_intra_d) / intra_gbps,
 *                           max(send_inter_d, recv_inter_d) / inter_gbps )
 *
 * (latency = `a2a_latency_us`; GB/s = 10^9 bytes/s; one device: no exchange, 0 ms). intra_gbps and
 * inter_gbps are device d's own (`Topology::intra_gbps(d)`): on mixed hardware each host keeps
 * its preset's NVLink and NIC, so a byte between hosts of different NICs takes the sender's rate
 * on the sender and the receiver's on the receiver, and the slower side sets the collective. On a
 * topology whose links are half duplex (`Topology::half_duplex`: a device's sends and receives
 * share its link, as TorchRec's gloo ranks on one CPU do) each link carries both directions:
 * send + recv in place of max(send, recv), and an all-reduce's byte terms count twice. The
 * bandwidths are NCCL's bus bandwidths (busbw: per rank, what it sends to the others / time; the
 * presets' figures and their sources are in data/topology.cpp and docs/judge.md).
 *
 * The output exchange (comm_model.h `OutputDims`; B the global batch, 4-byte outputs). Every
 * device trains on B/N samples.
 *   pooled vectors (table-wise shards, column pieces): an all-to-all over all ranks; device d
 *     sends each other device the B/N samples it trains on, b_d = B·pooled_d·4 / N bytes: (L−1)·b_d
 *     over its intra-host link and (N−L)·b_d = (H−1)/H of its bytes over its NIC; it receives
 *     b_e from every other device e (TorchRec's PooledEmbeddingsAllToAll).
 *   partial sums (row-wise, table-row-wise, grid blocks): TorchRec's table-row-wise output dist,
 *     used for every row split: a reduce-scatter inside the host, then an all-to-all of the reduced
 *     rows across hosts among the devices of one local rank. Device d sends each other device of
 *     its host s_d = B·partial_d·4 / L bytes (its partial sums of their share of the batch) and
 *     receives their s_e; its host's partial sums reduce to B·reduced_h·4 bytes, of which device d
 *     then holds 1/L and sends q_h = B·reduced_h·4 / N to the device of its local rank on each
 *     other host, receiving q_g from each other host g. A row-wise table over all N ranks (a ring
 *     reduce-scatter in NCCL, whose multi-node bus bandwidth is L NICs') moves the same bytes over
 *     each NIC within (N−1)/N vs (H−1)/H; on one host the reduce-scatter moves exactly the bytes of
 *     an all-to-all of those columns.
 * So, with each device's host h and Σ over its host's devices,
 *   send_intra_d = (L−1)·(b_d + s_d)           recv_intra_d = Σ_h (b + s) − (b_d + s_d)
 *   send_inter_d = (N−L)·b_d + (H−1)·q_h       recv_inter_d = Σ_all b − Σ_h b + Σ_g q_g − q_h
 * in whole bytes per peer (b, s, q truncated). The backward exchange moves the gradients of the
 * same outputs the other way (all-to-all; cross-host all-to-all then all-gather): send and
 * receive swapped, the same time. The collective as a whole lasts max_d time_d (design.md §4); the
 * wait for the slowest sender (straggler) is a separate term (`DeviceCost::fw_wait_ms`).
 * Where the bytes are known per device only (`exchange_ms`: the input all-to-all, a table-wise
 * estimate), all are pooled.
 *
 * The input all-to-all (the KeyedJaggedTensor of indices and lengths, TorchRec's input dist)
 * runs the other way before the forward: each device holds the indices of its B/N samples for
 * every table and sends every shard's owner the indices it needs. A shard receives, for the whole
 * batch, `lookups · index_bytes + B · length_bytes` bytes (`device_input_bytes`): a table-wise
 * shard and every column piece all of the table's lookups (each column piece receives the
 * indices: TorchRec's column-wise input dist replicates the feature), a row-wise shard the
 * lookups that fall in its row range (bucketised by row range: its share rows / num_rows of
 * them) and a length per sample. So device d receives (N−1)/N of its `input_bytes[d]` and sends
 * each other device 1/N of theirs: the output exchange with send and receive swapped, costed by
 * the same per-device formula (`input_all_to_all_ms`). Whether a step pays it is the judge's
 * `input_comm` option: `exposed` (a pipeline that waits for its input), `overlap` (TorchRec's
 * TrainPipelineSparseDist starts the next batch's input dist during this batch's compute: only
 * the part longer than the device's fw + bw compute shows) or `omit` (the papers' benchmarks,
 * which load every device's indices before timing; refs-zha.md §3).
 *
 * Copies of data-parallel tables (plan/plan.h) take part in neither exchange: each looks up its
 * own device's samples. Their dense gradients — S bytes, the summed size of the data-parallel
 * tables (weights' dtype) — are all-reduced once per step, hierarchically (TorchRec's DDP over
 * NCCL): a reduce-scatter and an all-gather inside each host of L devices, and an all-reduce of
 * each device's 1/L slice across the H hosts, so every device needs
 *
 *   all_reduce = latency + 2 (L − 1) / L · S / intra_gbps + 2 (H − 1) / H · (S / L) / inter_gbps
 *
 * (0 with one device or no data-parallel table), the same on every device (`all_reduce_ms`).
 * Its rings pass every host, so where hosts have links of their own the slowest device's figures
 * set both terms (`Topology::slowest_intra_gbps` / `slowest_inter_gbps`).
 */
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "embshard/core/spec.h"
#include "embshard/cost/comm_model.h"
#include "embshard/cost/compute_model.h"
#include "embshard/data/topology.h"
#include "embshard/plan/plan.h"
#include "embshard/plan/sharding_groups.h"

namespace embshard {

/** The bytes of one exchange for the whole batch (file comment): per device what it sends by
 *  all-to-all and what it reduce-scatters inside its host, per host what that reduces to. */
struct ExchangeBytes {
  std::vector<double> pooled;   ///< per device: B · pooled columns · element bytes
  std::vector<double> partial;  ///< per device: B · partial-sum columns · element bytes (empty: none)
  std::vector<double> reduced;  ///< per host: B · reduced columns · element bytes (empty: none)
};

/** The output exchange's bytes of `outputs` at `batch_size` (file comment). */
[[nodiscard]] ExchangeBytes output_exchange_bytes(const OutputDims& outputs, std::int64_t batch_size,
                                                  int element_bytes = 4);

struct LinkVolume {
  std::int64_t send_intra_bytes = 0;
  std::int64_t send_inter_bytes = 0;
  std::int64_t recv_intra_bytes = 0;
  std::int64_t recv_inter_bytes = 0;
};

/** Per-device volumes of the forward all-to-all of pooled outputs of `dim_sums` columns per device. */
[[nodiscard]] std::vector<LinkVolume> all_to_all_volumes(const Topology& topology,
                                                         const std::vector<std::int64_t>& dim_sums,
                                                         std::int64_t batch_size, int element_bytes = 4);

/** Per-device time in ms of that all-to-all under the link model (file comment). */
[[nodiscard]] std::vector<double> all_to_all_ms(const Topology& topology, const std::vector<std::int64_t>& dim_sums,
                                                std::int64_t batch_size, int element_bytes = 4);

/** Per-device volumes of an exchange (file comment). */
[[nodiscard]] std::vector<LinkVolume> exchange_volumes(const Topology& topology, const ExchangeBytes& bytes);
/** Per-device time in ms of an exchange under the link model (file comment). */
[[nodiscard]] std::vector<double> exchange_ms(const Topology& topology, const ExchangeBytes& bytes);
/** The same into `times` (one entry per device), without allocating: for search code. */
void exchange_ms_into(const Topology& topology, const ExchangeBytes& bytes, std::span<double> times);

/**
 * An all-to-all in which device d sends each other device 1/N of `bytes[d]`: every byte pooled
 * (the input all-to-all; a table-wise output: bytes[d] = B · dim_sums[d] · element_bytes).
 */
[[nodiscard]] std::vector<LinkVolume> exchange_volumes(const Topology& topology, const std::vector<double>& bytes);
[[nodiscard]] std::vector<double> exchange_ms(const Topology& topology, const std::vector<double>& bytes);
void exchange_ms_into(const Topology& topology, std::span<const double> bytes, std::span<double> times);

/** The input all-to-all's bytes (file comment); defaults follow TorchRec's KJT (int64, int32).
 *  `per_type_exchanges`: the plan's exchanges run once per sharding type it uses, as TorchRec runs
 *  them (`exchange_groups`), rather than fused into one (the papers' benchmarks). */
struct InputCommOptions {
  InputCommMode mode = InputCommMode::kExposed;
  int index_bytes = 8;
  int length_bytes = 4;
  bool per_type_exchanges = false;
};

/**
 * TorchRec groups a collection's tables by sharding type and runs, for each group, its own input
 * all-to-all, lookup and output all-to-all (forward and backward). The groups a plan has: its
 * sharding types other than data_parallel (whose copies exchange nothing), at least 1.
 */
[[nodiscard]] int exchange_groups(const Plan& plan);
/** The same rule for a plan in which `tables_per_type[type]` tables have each sharding type (a
 *  search's running counts). */
[[nodiscard]] int exchange_groups(const std::array<int, kNumShardingTypes>& tables_per_type);
/** Under `per_type_exchanges`, what each of the step's exchanges (input, output forward, output
 *  backward) costs every device beyond one group: the all-to-all latency per further group. */
[[nodiscard]] double extra_group_latency_ms(const Topology& topology, const InputCommOptions& options, int groups);

/** "exposed", "overlap" or "omit"; anything else is an Error listing them. */
[[nodiscard]] InputCommMode parse_input_comm_mode(const std::string& name);

/** `own` followed by `input_comm`, `index_bytes`, `length_bytes`: every judge's parameters. */
[[nodiscard]] std::vector<ParamSpec> with_input_comm_params(std::vector<ParamSpec> own);
[[nodiscard]] InputCommOptions input_comm_options(const Params& params);

/** The bytes of indices and lengths one shard receives for the whole batch (file comment; a copy
 *  of a data-parallel table: 0). */
[[nodiscard]] double shard_input_bytes(const Task& task, const PlacedShard& shard, const InputCommOptions& options);

/** Per device, the bytes of indices and lengths its shards receive for the whole batch. */
[[nodiscard]] std::vector<double> device_input_bytes(const Task& task,
                                                     const std::vector<std::vector<PlacedShard>>& by_device,
                                                     const InputCommOptions& options);

/** Per device, the input all-to-all's time in ms (the exchange with send and receive swapped). */
[[nodiscard]] std::vector<double> input_all_to_all_ms(const Topology& topology, const std::vector<double>& input_bytes);

/** The bytes of the dense gradients of the data-parallel copies among `shards` (file comment). */
[[nodiscard]] double replica_gradient_bytes(const Task& task, std::span<const PlacedShard> shards);

/** The gradient all-reduce of `bytes` in ms, every device's (file comment; 0 for no bytes). */
[[nodiscard]] double all_reduce_ms(const Topology& topology, double bytes);

/** all_reduce_ms's time per byte, without the latency: what a lower bound may charge per byte. */
[[nodiscard]] double all_reduce_ms_per_byte(const Topology& topology);

/** The bytes a 2D plan's replica sync all-reduces for a rank holding `shards`: each shard's
 *  weights and optimizer state, both memory tiers (plan/sharding_groups.h). */
[[nodiscard]] double replica_sync_bytes(const Task& task, std::span<const PlacedShard> shards);

/**
 * A 2D plan's replica sync of `bytes` in ms per step on the whole job's `topology`: the
 * hierarchical all-reduce above over the rank's replicas — `replica_spread`'s k per host on m
 * hosts: latency + 2 (k − 1) / k · S / intra_gbps + 2 (m − 1) / m · (S / k) / inter_gbps, at the
 * slowest device's links (its rings pass every host) — once every `sync_every` steps
 * (Workload::replica_sync_every; 0 for a 1D layout or no bytes).
 */
[[nodiscard]] double replica_sync_ms(const Topology& topology, const ShardingGroups& groups, int sync_every,
                                     double bytes);

/** The replica sync the busiest rank of any plan of 2D layout `groups` pays at least: that of the
 *  average rank's bytes (every cell of every table is on some rank of a group; sync is affine). */
[[nodiscard]] double replica_sync_floor_ms(const Task& task, const ShardingGroups& groups);
/** The same where the caller has the task's table bytes (Workload::total_bytes, a sum over every
 *  table) for several layouts. */
[[nodiscard]] double replica_sync_floor_ms(const Task& task, const ShardingGroups& groups, double total_bytes);

/** replica_sync_ms as latency + time per byte, for search code that keeps it per device. */
struct ReplicaSyncCost {
  double latency_ms = 0.0;
  double ms_per_byte = 0.0;
  [[nodiscard]] bool enabled() const { return latency_ms > 0.0 || ms_per_byte > 0.0; }
  [[nodiscard]] double at(double bytes) const { return bytes > 0.0 ? latency_ms + bytes * ms_per_byte : 0.0; }
};
[[nodiscard]] ReplicaSyncCost replica_sync_cost(const Topology& topology, const ShardingGroups& groups, int sync_every);

/** The link model as a `CommModel` of `topology` at `batch_size` (spec "link"). */
[[nodiscard]] std::unique_ptr<CommModel> make_link_comm_model(const Topology& topology, std::int64_t batch_size,
                                                              InputCommOptions input = {});

}  // namespace embshard
