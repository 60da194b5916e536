// embshard profile comm: NeuroShard's communication benchmark (refs-zha.md §3.4 b) over MPI
// ranks, one rank per device: `mpirun -n 4 embshard profile comm --out comm.jsonl`. The
// collection is profile/comm_profile.h's; this verb parses the options, compares the samples with
// the link model, and ends every rank on any one rank's failure. Failures that every rank sees
// alike (bad options, a bad sample) end every rank the same way.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "embshard/core/error.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/topology.h"
#include "embshard/profile/comm_profile.h"

namespace embshard::cli {
namespace {

CommProfileRun parse_run(Args& args) {
  CommProfileRun run;
  run.num_samples = args.get_int("samples");
  run.batch_size = args.get_int("batch");
  run.seed = static_cast<std::uint64_t>(args.get_int("seed"));
  run.sampler.max_tables = static_cast<int>(args.get_int("max-tables"));
  run.sampler.max_sleep_ms = static_cast<int>(args.get_int("max-sleep-ms"));
  if (args.flag("no-sleep")) run.sampler.max_sleep_ms = 0;
  run.measure = measure_options(args, run.measure);
  const std::string problem = find_error_in_comm_run(run);
  EMBSHARD_CHECK(problem.empty(), problem);
  return run;
}

/** Measured slowest-rank times beside the link model's, summed over the samples of this run. */
class ModelComparison {
 public:
  ModelComparison(int num_ranks, std::int64_t batch_size)
      : topology_(make_topology(detail::concat("cpu:devices=", num_ranks))), batch_size_(batch_size) {}

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
    std::string line = detail::concat("profile comm: mean over ", count_, " samples of the slowest rank: fw ",
                                      fw_ms_ / n, " ms (includes the wait for late ranks), bw ", bw_ms_ / n,
                                      " ms; link model (", topology_.name, ") ", model_ms_ / n, " ms");
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

/** Collects the samples (profile/comm_profile.h) and logs them beside the link model. */
int collect_and_compare(const MpiSession& session, const CommProfileRun& run, const std::string& path,
                        const Context& ctx) {
  ModelComparison comparison(session.size(), run.batch_size);
  const int status = collect_comm_samples(session, run, path, ctx, [&](const CommSample& s) { comparison.add(s); });
  if (status == 0 && session.is_root()) ctx.info(comparison.summary());
  return status;
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
    return collect_and_compare(session, run, out, ctx);
  } catch (const std::exception& e) {
    if (session.size() == 1) throw;
    std::cerr << "error: rank " << session.rank() << " of " << session.size() << ": " << e.what()
              << " (ending every rank)\n";
    session.abort(1);
  }
}

}  // namespace embshard::cli
