#pragma once
/**
 * @file all_to_all.h
 * @brief Real all-to-alls between MPI ranks, timed the way NeuroShard's communication
 *        benchmark times them (refs-zha.md §3.4 b), so the link model can be checked and fitted.
 *
 * One MPI rank stands for one device. Rank d "produced" pooled vectors of width dim_sums[d] for
 * the whole global batch B (fp32) and, in the forward all-to-all, sends every other rank e the
 * rows of the samples e trains on; the backward all-to-all returns the gradients of those rows:
 *
 *   share_e       = floor(B / N) + (e < B mod N ? 1 : 0)    samples rank e trains on; B need not
 *                                                            divide by N, the first B mod N ranks
 *                                                            take one sample more (Σ_e share_e = B)
 *   fw  d → e     : share_e · dim_sums[d] floats             (e ≠ d; zero-width allowed)
 *   bw  e → d     : the same floats back                     (the reverse exchange)
 *
 * A rank keeps its own share: it sends itself nothing (the link model's convention, link_model.h;
 * torch's all_to_all_single also copies the own share, which is a local memcpy, not a link).
 * Both directions are one `MPI_Alltoallv` on MPI_COMM_WORLD. Buffers hold only what is sent and
 * received (not the whole B × dim_sum output), so a rank needs
 * 4 · ((B − share_d) · dim_sums[d] + share_d · Σ_{e≠d} dim_sums[e]) bytes.
 *
 * One repeat on every rank (warm-up repeats identical, not recorded):
 *
 *     flush the caches (if options.flush_cache)                  untimed
 *     barrier                                                    untimed
 *     t0; sleep(sleep_ms[rank]); t1; Alltoallv(fw); barrier; t2
 *     barrier                                                    untimed
 *     t3; Alltoallv(bw); t4
 *
 *     fw = t2 − t1   (= (t2 − t0) − the sleep as measured; NeuroShard subtracts the nominal
 *                     sleep, the difference is timer oversleep, which is not communication)
 *     bw = t4 − t3
 *
 * So a rank that sleeps less than the latest one waits for it inside fw: fw_d includes the
 * straggler wait max_e sleep_e − sleep_d, as in NeuroShard's data. Summaries (median, trimmed
 * mean) follow measure.h; NeuroShard used 5 warm-up and 10 measured repeats and the median.
 *
 * Every function taking an `MpiSession` is collective: all ranks call it with the same
 * arguments (each rank may pass only its own values where the comment says so).
 */
#include <cstdint>
#include <vector>

#include "embshard/profile/measure.h"

namespace embshard {

/** Whether this build of embshard has MPI (EMBSHARD_MPI found an MPI at configure time). */
[[nodiscard]] bool built_with_mpi();

/**
 * MPI for the lifetime of the object: MPI_Init_thread (funneled: only the constructing thread
 * may call MPI) in the constructor, MPI_Finalize in the destructor. Started without mpirun the
 * process is a world of one rank. MPI cannot be initialised twice in a process, so there is at
 * most one session per process and none after it ended (constructing another throws Error);
 * if MPI was already initialised by someone else, the session uses it and leaves it running.
 * Without MPI in the build, constructing one throws Error "embshard was built without MPI".
 */
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] bool is_root() const { return rank_ == 0; }

  void barrier() const;
  /** Ends every rank of the job with `exit_code` (MPI_Abort): for errors the others cannot see. */
  [[noreturn]] void abort(int exit_code) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  bool owns_mpi_ = false;
};

/** Every rank's `value` in rank order on rank 0; an empty vector on the other ranks. */
[[nodiscard]] std::vector<double> gather_to_root(const MpiSession& session, double value);

/** Every rank's `value` in rank order, on every rank. */
[[nodiscard]] std::vector<double> all_gather(const MpiSession& session, double value);

/** Rank 0's `value` on every rank (the other ranks' arguments are ignored). */
[[nodiscard]] std::int64_t broadcast_from_root(const MpiSession& session, std::int64_t value);

/** share_e of the file comment: the samples of a batch of `batch_size` rank `rank` trains on. */
[[nodiscard]] std::int64_t samples_of_rank(std::int64_t batch_size, int num_ranks, int rank);

/** This rank's forward and backward all-to-all times. */
struct AllToAllTiming {
  Timing fw;
  Timing bw;
};

/**
 * Times the forward and backward all-to-all of the file comment on this rank. `dim_sums` and
 * `sleep_ms` hold one entry per rank (the same vectors on every rank); the warm-up and repeat
 * counts and the cache flush come from `options`. Throws Error (on every rank alike, before any
 * communication) if the vectors do not match the world size or a message exceeds 2^31 − 1 floats.
 */
[[nodiscard]] AllToAllTiming measure_all_to_all(const MpiSession& session, std::int64_t batch_size,
                                                const std::vector<std::int64_t>& dim_sums,
                                                const std::vector<double>& sleep_ms, const MeasureOptions& options);

/** Median forward, backward and input all-to-all time of one device, ms. */
struct DeviceTiming {
  double fw_ms = 0.0;
  double bw_ms = 0.0;
  double in_ms = 0.0;  ///< the input all-to-all of indices (0 where it was not measured)
};

/**
 * Whether this process was started by an MPI launcher with more than one rank (Open MPI's
 * OMPI_COMM_WORLD_SIZE, MPICH / PMI's PMI_SIZE), read from the environment without starting MPI.
 */
[[nodiscard]] bool launched_by_mpirun();

/**
 * The all-to-all cost of a plan whose device d (= rank d) produces `dim_sums[d]` columns: no
 * sleeps (NeuroShard's evaluator), medians of every rank, returned on every rank in rank order.
 * With `input_bytes` (one entry per rank: the bytes of indices and lengths rank d's shards look up
 * for the whole batch, cost/link_model.h's `device_input_bytes`) the input all-to-all is timed
 * too, before the forward one: rank d sends rank e the share of e's bytes that d's samples hold,
 * ceil(share_d · input_bytes[e] / B / 4) floats, as one `MPI_Alltoallv`.
 */
[[nodiscard]] std::vector<DeviceTiming> measure_plan_all_to_all(const MpiSession& session, std::int64_t batch_size,
                                                                const std::vector<std::int64_t>& dim_sums,
                                                                const MeasureOptions& options,
                                                                const std::vector<double>& input_bytes = {});

}  // namespace embshard
