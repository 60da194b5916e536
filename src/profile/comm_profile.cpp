#include "embshard/profile/comm_profile.h"

#include <iostream>
#include <optional>

#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/progress.h"
#include "embshard/core/version.h"

namespace embshard {
namespace {

/**
 * Opens the file on rank 0 and tells every rank where to start; -1 on every rank if rank 0 could
 * not (it printed why), so all ranks stop before the first collective measurement.
 */
std::int64_t open_on_root(const MpiSession& session, std::optional<CostSampleWriter>& writer, const std::string& path,
                          const CostSampleHeader& header, const Context& ctx) {
  std::int64_t first = -1;
  if (session.is_root()) {
    try {
      writer.emplace(path, header, ctx);
      first = writer->next_index();
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
    }
  }
  return broadcast_from_root(session, first);
}

/** Sample `index` measured on every rank; the per-rank arrays are filled on rank 0 only. */
CommSample measure_sample(const MpiSession& session, const CommProfileRun& run, std::int64_t index) {
  const CommDraw draw = draw_comm_sample(run.sampler, run.seed, index, session.size());
  const AllToAllTiming mine =
      measure_all_to_all(session, run.batch_size, draw.placement.dim_sums, draw.sleep_ms, run.measure);
  CommSample sample;
  sample.index = index;
  sample.dim_sums = draw.placement.dim_sums;
  sample.sleep_ms = draw.sleep_ms;
  sample.fw_ms = gather_to_root(session, mine.fw.median_ms);
  sample.bw_ms = gather_to_root(session, mine.bw.median_ms);
  return sample;
}

}  // namespace

std::string find_error_in_comm_run(const CommProfileRun& run) {
  if (run.num_samples < 1) return "--samples must be at least 1";
  if (run.batch_size < 1 || run.batch_size > (std::int64_t{1} << 24))
    return detail::concat("--batch must lie in [1, 2^24], got ", run.batch_size);
  const std::string problem = find_error_in_comm_sampler(run.sampler);
  return problem.empty() ? "" : "--max-tables/--max-sleep-ms: " + problem;
}

CostSampleHeader comm_header(const CommProfileRun& run, int num_ranks) {
  CostSampleHeader h;
  h.kind = SampleKind::kComm;
  h.backend = "mpi";
  h.sampler = canonical_comm_sampler_spec(run.sampler, num_ranks);
  h.seed = run.seed;
  h.batch_size = run.batch_size;
  h.precision = "fp32";
  h.measure = run.measure;
  h.fingerprint = this_machine("cpu", 1);  // every rank is one single-threaded process
  h.embshard_version = embshard_version();
  h.created_utc = utc_timestamp();
  return h;
}

int collect_comm_samples(const MpiSession& session, const CommProfileRun& run, const std::string& path,
                         const Context& ctx, const std::function<void(const CommSample&)>& on_sample) {
  const bool root = session.is_root();
  if (root && session.size() == 1)
    ctx.warn(
        "profile comm: a world of one rank has no all-to-all, every time is ~0 "
        "(start it as `mpirun -n D embshard profile comm ...` for D devices)");
  std::optional<CostSampleWriter> writer;
  const std::int64_t first = open_on_root(session, writer, path, comm_header(run, session.size()), ctx);
  if (first < 0) return 1;
  std::optional<Progress> progress;  // rank 0 shows it
  if (root) progress.emplace(ctx, "profile comm: samples", run.num_samples, first);
  for (std::int64_t i = first; i < run.num_samples; ++i) {
    if (broadcast_from_root(session, root && ctx.past_deadline() ? 1 : 0) != 0) {
      if (root) ctx.warn(detail::concat(path, ": deadline reached after ", i, " samples"));
      break;
    }
    const CommSample sample = measure_sample(session, run, i);
    if (!root) continue;
    writer->append(sample);
    if (on_sample) on_sample(sample);
    progress->advance();
  }
  if (root)
    progress->finish(
        detail::concat("on ", session.size(), " ranks; ", path, " holds ", writer->next_index(), " samples"));
  return 0;
}

}  // namespace embshard
