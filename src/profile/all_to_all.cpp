#include "embshard/profile/all_to_all.h"

#include <cmath>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <optional>
#include <thread>

#include "embshard/core/error.h"

#ifdef EMBSHARD_WITH_MPI
#include <mpi.h>
#endif

namespace embshard {
namespace {

/** Element counts and offsets of one MPI_Alltoallv side (send or receive), in floats. */
struct ExchangeSide {
  std::vector<int> counts;
  std::vector<int> offsets;
  std::vector<float> buffer;
};

ExchangeSide make_side(const std::vector<std::int64_t>& counts, const char* what) {
  ExchangeSide side;
  std::int64_t total = 0;
  for (std::int64_t count : counts) {
    EMBSHARD_CHECK(total + count <= INT_MAX, "all-to-all: ", what, " volume of ", total + count,
                   " floats exceeds MPI's 2^31 - 1 element limit (lower the batch or the dims)");
    side.offsets.push_back(static_cast<int>(total));
    side.counts.push_back(static_cast<int>(count));
    total += count;
  }
  side.buffer.assign(static_cast<std::size_t>(total), 1.0f);  // touch every page before timing
  return side;
}

/** What this rank sends in the forward all-to-all (the backward receives the same). */
ExchangeSide forward_send_side(std::int64_t batch_size, const std::vector<std::int64_t>& dim_sums, int rank) {
  const int n = static_cast<int>(dim_sums.size());
  std::vector<std::int64_t> counts(static_cast<std::size_t>(n), 0);
  for (int e = 0; e < n; ++e)
    if (e != rank) counts[e] = samples_of_rank(batch_size, n, e) * dim_sums[rank];
  return make_side(counts, "send");
}

/** What this rank receives in the forward all-to-all (the backward sends the same). */
ExchangeSide forward_recv_side(std::int64_t batch_size, const std::vector<std::int64_t>& dim_sums, int rank) {
  const int n = static_cast<int>(dim_sums.size());
  const std::int64_t own_share = samples_of_rank(batch_size, n, rank);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(n), 0);
  for (int e = 0; e < n; ++e)
    if (e != rank) counts[e] = own_share * dim_sums[e];
  return make_side(counts, "receive");
}

void sleep_for_ms(double ms) {
  if (ms > 0.0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

#ifdef EMBSHARD_WITH_MPI
void exchange(ExchangeSide& from, ExchangeSide& to) {
  MPI_Alltoallv(from.buffer.data(), from.counts.data(), from.offsets.data(), MPI_FLOAT, to.buffer.data(),
                to.counts.data(), to.offsets.data(), MPI_FLOAT, MPI_COMM_WORLD);
}
#else
void exchange(ExchangeSide&, ExchangeSide&) {}
#endif

/** Rank `rank`'s side of the input all-to-all: it sends (or receives) floats per peer. */
ExchangeSide input_side(std::int64_t batch_size, const std::vector<double>& input_bytes, int rank, bool send) {
  const int n = static_cast<int>(input_bytes.size());
  std::vector<std::int64_t> counts(static_cast<std::size_t>(n), 0);
  for (int e = 0; e < n; ++e) {
    if (e == rank) continue;
    // send: my samples' share of e's bytes; receive: e's samples' share of mine.
    const double share =
        static_cast<double>(samples_of_rank(batch_size, n, send ? rank : e)) / static_cast<double>(batch_size);
    counts[e] =
        static_cast<std::int64_t>(std::ceil(share * input_bytes[static_cast<std::size_t>(send ? e : rank)] / 4.0));
  }
  return make_side(counts, send ? "input send" : "input receive");
}

/** The median time of the input all-to-all on this rank. */
double measure_input_exchange(const MpiSession& session, std::int64_t batch_size,
                              const std::vector<double>& input_bytes, const MeasureOptions& options) {
  EMBSHARD_CHECK(static_cast<int>(input_bytes.size()) == session.size(), "all-to-all: ", input_bytes.size(),
                 " input volumes for a world of ", session.size(), " ranks (need one per rank)");
  ExchangeSide sent = input_side(batch_size, input_bytes, session.rank(), true);
  ExchangeSide received = input_side(batch_size, input_bytes, session.rank(), false);
  std::vector<double> ms;
  for (int i = 0; i < options.warmup + options.repeats; ++i) {
    session.barrier();
    const double start_ms = now_ms();
    exchange(sent, received);
    session.barrier();
    if (i >= options.warmup) ms.push_back(now_ms() - start_ms);
  }
  return summarise(std::move(ms), options.trim).median_ms;
}

void check_measure_inputs(const MpiSession& session, std::int64_t batch_size, const std::vector<std::int64_t>& dim_sums,
                          const std::vector<double>& sleep_ms, const MeasureOptions& options) {
  const std::string problem = find_error_in_measure_options(options);
  EMBSHARD_CHECK(problem.empty(), "all-to-all: ", problem);
  EMBSHARD_CHECK(batch_size >= 1, "all-to-all: batch size must be positive, got ", batch_size);
  EMBSHARD_CHECK(
      static_cast<int>(dim_sums.size()) == session.size() && static_cast<int>(sleep_ms.size()) == session.size(),
      "all-to-all: ", dim_sums.size(), " dim sums and ", sleep_ms.size(), " sleeps for a world of ", session.size(),
      " ranks (need one per rank)");
  for (std::size_t d = 0; d < dim_sums.size(); ++d) {
    EMBSHARD_CHECK(dim_sums[d] >= 0, "all-to-all: dim sum of rank ", d, " is negative");
    EMBSHARD_CHECK(sleep_ms[d] >= 0.0, "all-to-all: sleep of rank ", d, " is negative");
  }
}

}  // namespace

// ---- the session and the small collectives ------------------------------------------------------

#ifdef EMBSHARD_WITH_MPI

bool built_with_mpi() { return true; }

MpiSession::MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  EMBSHARD_CHECK(finalized == 0, "MPI already ended in this process (at most one MpiSession per process)");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    owns_mpi_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && finalized == 0) MPI_Finalize();
}

void MpiSession::barrier() const { MPI_Barrier(MPI_COMM_WORLD); }

void MpiSession::abort(int exit_code) const {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

std::vector<double> gather_to_root(const MpiSession& session, double value) {
  std::vector<double> values(session.is_root() ? static_cast<std::size_t>(session.size()) : 0);
  MPI_Gather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return values;
}

std::vector<double> all_gather(const MpiSession& session, double value) {
  std::vector<double> values(static_cast<std::size_t>(session.size()));
  MPI_Allgather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
  return values;
}

std::int64_t broadcast_from_root(const MpiSession&, std::int64_t value) {
  static_assert(sizeof(std::int64_t) == sizeof(long long));
  long long v = value;
  MPI_Bcast(&v, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  return v;
}

#else  // built without MPI: a session cannot be constructed, so the rest is never reached

bool built_with_mpi() { return false; }

MpiSession::MpiSession() {
  EMBSHARD_THROW(
      "embshard was built without MPI (install an MPI such as libopenmpi-dev and "
      "configure with -DEMBSHARD_MPI=ON)");
}
MpiSession::~MpiSession() = default;
void MpiSession::barrier() const {}
void MpiSession::abort(int exit_code) const { std::_Exit(exit_code); }
std::vector<double> gather_to_root(const MpiSession&, double value) { return {value}; }
std::vector<double> all_gather(const MpiSession&, double value) { return {value}; }
std::int64_t broadcast_from_root(const MpiSession&, std::int64_t value) { return value; }

#endif

// ---- the measurement ----------------------------------------------------------------------------

std::int64_t samples_of_rank(std::int64_t batch_size, int num_ranks, int rank) {
  EMBSHARD_ASSERT(num_ranks >= 1 && rank >= 0 && rank < num_ranks);
  return batch_size / num_ranks + (rank < batch_size % num_ranks ? 1 : 0);
}

AllToAllTiming measure_all_to_all(const MpiSession& session, std::int64_t batch_size,
                                  const std::vector<std::int64_t>& dim_sums, const std::vector<double>& sleep_ms,
                                  const MeasureOptions& options) {
  check_measure_inputs(session, batch_size, dim_sums, sleep_ms, options);
  const int rank = session.rank();
  ExchangeSide sent = forward_send_side(batch_size, dim_sums, rank);
  ExchangeSide received = forward_recv_side(batch_size, dim_sums, rank);
  std::optional<CacheFlusher> flusher;
  if (options.flush_cache) flusher.emplace();
  std::vector<double> fw_ms;
  std::vector<double> bw_ms;
  for (int i = 0; i < options.warmup + options.repeats; ++i) {
    if (flusher) flusher->flush();
    session.barrier();
    sleep_for_ms(sleep_ms[static_cast<std::size_t>(rank)]);
    const double fw_start_ms = now_ms();  // after the sleep: the sleep is not timed
    exchange(sent, received);
    session.barrier();
    const double fw_end_ms = now_ms();
    session.barrier();
    const double bw_start_ms = now_ms();
    exchange(received, sent);
    const double bw_end_ms = now_ms();
    if (i < options.warmup) continue;
    fw_ms.push_back(fw_end_ms - fw_start_ms);
    bw_ms.push_back(bw_end_ms - bw_start_ms);
  }
  return {summarise(std::move(fw_ms), options.trim), summarise(std::move(bw_ms), options.trim)};
}

bool launched_by_mpirun() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::atoi(value) > 1) return true;
  }
  return false;
}

std::vector<DeviceTiming> measure_plan_all_to_all(const MpiSession& session, std::int64_t batch_size,
                                                  const std::vector<std::int64_t>& dim_sums,
                                                  const MeasureOptions& options,
                                                  const std::vector<double>& input_bytes) {
  const std::vector<double> input_ms =
      input_bytes.empty() ? std::vector<double>(dim_sums.size(), 0.0)
                          : all_gather(session, measure_input_exchange(session, batch_size, input_bytes, options));
  const std::vector<double> no_sleep(dim_sums.size(), 0.0);
  const AllToAllTiming mine = measure_all_to_all(session, batch_size, dim_sums, no_sleep, options);
  const std::vector<double> fw = all_gather(session, mine.fw.median_ms);
  const std::vector<double> bw = all_gather(session, mine.bw.median_ms);
  std::vector<DeviceTiming> devices(fw.size());
  for (std::size_t d = 0; d < devices.size(); ++d) devices[d] = {fw[d], bw[d], input_ms[d]};
  return devices;
}

}  // namespace embshard
