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
 */
#include <cstdint>
#include <memory>
#include <vector>

#include "embshard/cost/comm_model.h"
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

/** The link model as a `CommModel` of `topology` at `batch_size` (spec "link"). */
[[nodiscard]] std::unique_ptr<CommModel> make_link_comm_model(const Topology& topology,
                                                              std::int64_t batch_size);

}  // namespace embshard
