// embshard profile comm: NeuroShard's communication benchmark (refs-zha.md §3.4 b) over MPI
// ranks, one rank per device: `mpirun -n 4 embshard profile comm --out comm.jsonl`.
//
// Every rank draws the same samples (comm_sampler.h) and times its side of each all-to-all
// (all_to_all.h); rank 0 gathers the medians and appends them to the cost-sample file. Failures
// that every rank sees alike (bad options, a bad sample) end every rank the same way; rank 0's
// own failures (the file) are agreed on before any measurement, or end the job with MPI_Abort,
// so no rank is left waiting in a collective.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include "commands.h"
#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/progress.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/topology.h"
#include "embshard/plan/plan.h"
#include "embshard/profile/all_to_all.h"
#include "embshard/profile/comm_sampler.h"
#include "embshard/profile/cost_sample.h"

namespace embshard::cli {
namespace {


struct CommProfileRun {
  CommSamplerParams sampler;
  std::uint64_t seed = 0;
  std::int64_t batch_size = 65536;
  std::int64_t num_samples = 100;  ///< the file holds this many samples when done
  MeasureOptions measure{.warmup = 5, .repeats = 10, .flush_cache = false, .trim = 0.2};
};

CommProfileRun parse_run(Args& args) {
  CommProfileRun run;
  run.num_samples = args.get_int("samples", run.num_samples);
  run.batch_size = args.get_int("batch", run.batch_size);
  run.seed = static_cast<std::uint64_t>(args.get_int("seed", 0));
  run.sampler.max_tables = static_cast<int>(args.get_int("max-tables", run.sampler.max_tables));
  run.sampler.max_sleep_ms =
      static_cast<int>(args.get_int("max-sleep-ms", run.sampler.max_sleep_ms));
  if (args.flag("no-sleep")) run.sampler.max_sleep_ms = 0;
  run.measure = measure_options(args, run.measure);
  EMBSHARD_CHECK(run.num_samples >= 1, "--samples must be at least 1");
  EMBSHARD_CHECK(run.batch_size >= 1 && run.batch_size <= (std::int64_t{1} << 24),
                 "--batch must lie in [1, 2^24], got ", run.batch_size);
  const std::string problem = find_error_in_comm_sampler(run.sampler);
  EMBSHARD_CHECK(problem.empty(), "--max-tables/--max-sleep-ms: ", problem);
  return run;
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

/**
 * Opens the file on rank 0 and tells every rank where to start; -1 on every rank if rank 0 could
 * not (it printed why), so all ranks stop before the first collective measurement.
 */
std::int64_t open_on_root(const MpiSession& session, std::optional<CostSampleWriter>& writer,
                          const std::string& path, const CostSampleHeader& header,
                          const Context& ctx) {
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
CommSample measure_sample(const MpiSession& session, const CommProfileRun& run,
                          std::int64_t index) {
  const CommDraw draw = draw_comm_sample(run.sampler, run.seed, index, session.size());
  const AllToAllTiming mine = measure_all_to_all(session, run.batch_size, draw.placement.dim_sums,
                                                 draw.sleep_ms, run.measure);
  CommSample sample;
  sample.index = index;
  sample.dim_sums = draw.placement.dim_sums;
  sample.sleep_ms = draw.sleep_ms;
  sample.fw_ms = gather_to_root(session, mine.fw.median_ms);
  sample.bw_ms = gather_to_root(session, mine.bw.median_ms);
  return sample;
}

/** Measured slowest-rank times beside the link model's, summed over the samples of this run. */
class ModelComparison {
 public:
  ModelComparison(int num_ranks, std::int64_t batch_size)
      : topology_(make_topology(detail::concat("cpu:devices=", num_ranks))),
        batch_size_(batch_size) {}

  void add(const CommSample& sample) {
    const std::vector<double> model = all_to_all_ms(topology_, sample.dim_sums, batch_size_);
    fw_ms_ += *std::max_element(sample.fw_ms.begin(), sample.fw_ms.end());
    bw_ms_ += *std::max_element(sample.bw_ms.begin(), sample.bw_ms.end());
    model_ms_ += *std::max_element(model.begin(), model.end());
    ++count_;
  }

  [[nodiscard]] std::string summary() const {
    if (count_ == 0) return "profile comm: nothing measured in this run";
    const double n = static_cast<double>(count_);
    std::string line = detail::concat(
        "profile comm: mean over ", count_, " samples of the slowest rank: fw ", fw_ms_ / n,
        " ms (includes the wait for late ranks), bw ", bw_ms_ / n, " ms; link model (",
        topology_.name, ") ", model_ms_ / n, " ms");
    if (model_ms_ > 0.0)
      line += detail::concat("; measured/model fw ", fw_ms_ / model_ms_, ", bw ", bw_ms_ / model_ms_);
    return line;
  }

 private:
  Topology topology_;
  std::int64_t batch_size_;
  double fw_ms_ = 0.0;
  double bw_ms_ = 0.0;
  double model_ms_ = 0.0;
  std::int64_t count_ = 0;
};

/** Collects the samples; every rank runs this, rank 0 writes and logs. Returns the exit code. */
int collect_comm_samples(const MpiSession& session, const CommProfileRun& run,
                         const std::string& path, const Context& ctx) {
  const bool root = session.is_root();
  if (root && session.size() == 1)
    ctx.warn("profile comm: a world of one rank has no all-to-all, every time is ~0 "
             "(start it as `mpirun -n D embshard profile comm ...` for D devices)");
  std::optional<CostSampleWriter> writer;
  const std::int64_t first = open_on_root(session, writer, path, comm_header(run, session.size()), ctx);
  if (first < 0) return 1;
  ModelComparison comparison(session.size(), run.batch_size);
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
    comparison.add(sample);
    progress->advance();
  }
  if (root) {
    progress->finish(detail::concat("on ", session.size(), " ranks; ", path, " holds ", writer->next_index(), " samples"));
    ctx.info(comparison.summary());
  }
  return 0;
}

}  // namespace

int run_profile_comm(Args& args, const Context& ctx) {
  const std::string out = args.require("out");
  const CommProfileRun run = parse_run(args);
  args.finish(1);
  check_paths({}, {}, {{"--out", out}});  // a directory is refused here; the file is appended to
  // Every rank parsed the same options and failed alike above; from here on a failure may be
  // one rank's own, so it must end the whole job rather than leave the others waiting.
  MpiSession session;
  try {
    return collect_comm_samples(session, run, out, ctx);
  } catch (const std::exception& e) {
    if (session.size() == 1) throw;
    std::cerr << "error: rank " << session.rank() << " of " << session.size() << ": " << e.what()
              << " (ending every rank)\n";
    session.abort(1);
  }
}

}  // namespace embshard::cli
