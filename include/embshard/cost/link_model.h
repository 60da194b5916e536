#pragma once
/**
 * @file link_model.h
 * @brief The all-to-all link model: how long each device spends in the forward and backward
 *        all-to-all of a step, from the summed dims each device produces.
 *
 * Device d holds shards whose output columns sum to `dim_sums[d]`; it computes pooled vectors
 * for the whole global batch B and, in the forward all-to-all, sends each other device e the
 * B/N samples e trains on (N devices; a device keeps its own share):
 *
 *   bytes(d → e) = (B / N) · dim_sums[d] · element_bytes            (e ≠ d)
 *   send_d = Σ_{e≠d} bytes(d → e),   recv_d = Σ_{e≠d} bytes(e → d)
 *
 * split by whether e is on d's host (intra-host link) or not (inter-host link). Links are full
 * duplex and the intra- and inter-host links run concurrently, so device d needs
 *
 *   time_d = latency + max( max(send_intra_d, recv_intra_d) / intra_gbps,
 *                           max(send_inter_d, recv_inter_d) / inter_gbps )
 *
 * (latency = `a2a_latency_us`; GB/s = 10^9 bytes/s). The backward all-to-all moves the gradients
 * of the same vectors the other way, so its per-device volume is the forward's with send and
 * receive swapped — the same time under this symmetric model. One device: no all-to-all (0 ms).
 * The collective as a whole lasts max_d time_d (design.md §4); the wait for the slowest sender
 * (straggler) is a separate term (`DeviceCost::fw_wait_ms`).
 *
 * Every sharding type's output fits this form: a table-wise shard and a column piece send their
 * own columns; a row-wise or table-row-wise shard produces partial pooled sums of all its columns
 * for the whole batch, and the reduce-scatter that combines them moves the same (B/N)·cols bytes
 * to every other device as an all-to-all of those columns would (TorchRec's
 * PooledEmbeddingsReduceScatter; table-row-wise's two steps, intra-host reduce-scatter then
 * inter-host all-to-all, are costed as one such exchange, an upper bound on its inter-host part).
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
 */
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "embshard/core/spec.h"
#include "embshard/cost/comm_model.h"
#include "embshard/cost/compute_model.h"
#include "embshard/data/topology.h"

namespace embshard {

struct LinkVolume {
  std::int64_t send_intra_bytes = 0;
  std::int64_t send_inter_bytes = 0;
  std::int64_t recv_intra_bytes = 0;
  std::int64_t recv_inter_bytes = 0;
};

/** Per-device volumes of the forward all-to-all (file comment); dim_sums.size() == devices. */
[[nodiscard]] std::vector<LinkVolume> all_to_all_volumes(const Topology& topology,
                                                         const std::vector<std::int64_t>& dim_sums,
                                                         std::int64_t batch_size,
                                                         int element_bytes = 4);

/** Per-device forward all-to-all time in ms under the link model (file comment). */
[[nodiscard]] std::vector<double> all_to_all_ms(const Topology& topology,
                                                const std::vector<std::int64_t>& dim_sums,
                                                std::int64_t batch_size, int element_bytes = 4);

/**
 * Per-device volumes of an all-to-all in which device d sends each other device 1/N of
 * `bytes[d]` (the output exchange: bytes[d] = B · dim_sums[d] · element_bytes).
 */
[[nodiscard]] std::vector<LinkVolume> exchange_volumes(const Topology& topology,
                                                       const std::vector<double>& bytes);

/** Per-device time in ms of such an exchange under the link model (file comment). */
[[nodiscard]] std::vector<double> exchange_ms(const Topology& topology, const std::vector<double>& bytes);
/** The same into `times` (one entry per device), without allocating: for search code. */
void exchange_ms_into(const Topology& topology, std::span<const double> bytes, std::span<double> times);

/** The input all-to-all's bytes (file comment); defaults follow TorchRec's KJT (int64, int32). */
struct InputCommOptions {
  InputCommMode mode = InputCommMode::kExposed;
  int index_bytes = 8;
  int length_bytes = 4;
};

/** "exposed", "overlap" or "omit"; anything else is an Error listing them. */
[[nodiscard]] InputCommMode parse_input_comm_mode(const std::string& name);

/** `own` followed by `input_comm`, `index_bytes`, `length_bytes`: every judge's parameters. */
[[nodiscard]] std::vector<ParamSpec> with_input_comm_params(std::vector<ParamSpec> own);
[[nodiscard]] InputCommOptions input_comm_options(const Params& params);

/** The bytes of indices and lengths one shard receives for the whole batch (file comment; a copy
 *  of a data-parallel table: 0). */
[[nodiscard]] double shard_input_bytes(const Task& task, const PlacedShard& shard, const InputCommOptions& options);

/** Per device, the bytes of indices and lengths its shards receive for the whole batch. */
[[nodiscard]] std::vector<double> device_input_bytes(
    const Task& task, const std::vector<std::vector<PlacedShard>>& by_device,
    const InputCommOptions& options);

/** Per device, the input all-to-all's time in ms (the exchange with send and receive swapped). */
[[nodiscard]] std::vector<double> input_all_to_all_ms(const Topology& topology,
                                                      const std::vector<double>& input_bytes);

/** The bytes of the dense gradients of the data-parallel copies among `shards` (file comment). */
[[nodiscard]] double replica_gradient_bytes(const Task& task, std::span<const PlacedShard> shards);

/** The gradient all-reduce of `bytes` in ms, every device's (file comment; 0 for no bytes). */
[[nodiscard]] double all_reduce_ms(const Topology& topology, double bytes);

/** all_reduce_ms's time per byte, without the latency: what a lower bound may charge per byte. */
[[nodiscard]] double all_reduce_ms_per_byte(const Topology& topology);

/** The link model as a `CommModel` of `topology` at `batch_size` (spec "link"). */
[[nodiscard]] std::unique_ptr<CommModel> make_link_comm_model(const Topology& topology,
                                                              std::int64_t batch_size,
                                                              InputCommOptions input = {});

}  // namespace embshard
