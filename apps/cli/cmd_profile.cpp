// embshard profile compute | comm
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/cost/machine_calibration.h"
#include "embshard/data/pool.h"
#include "embshard/eval/calibrate.h"
#include "embshard/eval/paper_calibration.h"
#include "embshard/profile/compute_sampler.h"
#include "embshard/report/fit_report.h"

namespace embshard::cli {

namespace {

kernels::EmbeddingBagImpl parse_impl(const std::string& name) {
  std::string known;
  for (kernels::EmbeddingBagImpl impl : kernels::embedding_bag_impls()) {
    if (name == kernels::to_string(impl)) return impl;
    known += (known.empty() ? "" : ", ") + std::string(kernels::to_string(impl));
  }
  EMBSHARD_THROW("unknown or unbuilt kernel backend '", name, "' (this build has: ", known, ")");
}

}  // namespace

MeasureOptions measure_options(Args& args, const MeasureOptions& defaults) {
  MeasureOptions options = defaults;
  options.warmup = static_cast<int>(args.get_int("warmup"));
  options.repeats = static_cast<int>(args.get_int("repeats"));
  if (defaults.flush_cache && args.flag("no-flush")) options.flush_cache = false;  // declared only where it flushes
  const std::string problem = find_error_in_measure_options(options);
  EMBSHARD_CHECK(problem.empty(), "--warmup/--repeats: ", problem);
  return options;
}

int run_profile(Args& args, const Context& ctx) {
  const auto& words = args.positional();
  EMBSHARD_CHECK(!words.empty() && (words[0] == "compute" || words[0] == "comm" || words[0] == "calibrate"),
                 "embshard profile: expected a sub-verb, 'compute', 'comm' or 'calibrate'");
  if (words[0] == "calibrate") return run_profile_calibrate(args, ctx);
  return words[0] == "compute" ? run_profile_compute(args, ctx) : run_profile_comm(args, ctx);
}

/** `profile calibrate --figures`: the sim judge of a GPU preset against published figures. */
int run_profile_calibrate_figures(Args& args, const Context& ctx) {
  const std::string figures = args.require("figures");
  const auto tasks = static_cast<int>(args.get_int("tasks"));
  const auto seed = static_cast<std::uint64_t>(args.get_int("seed"));
  const auto markdown = args.get("markdown");
  args.finish(1);
  check_paths({{"--figures", figures}}, {}, {{"--markdown", markdown.value_or("")}});
  const std::string text = paper_fit_markdown(fit_to_papers(read_paper_figures(figures), tasks, seed, ctx));
  if (markdown) {
    OutputSet outputs;
    outputs.add(*markdown, text);
    outputs.commit();
  }
  std::cout << text;
  return 0;
}

int run_profile_calibrate(Args& args, const Context& ctx) {
  if (args.get("figures")) return run_profile_calibrate_figures(args, ctx);
  const std::vector<std::string> samples = split_list(args.require("samples"), ',');
  const auto test_every = static_cast<int>(args.get_int("test-every"));
  const auto out = args.get("out");
  const auto report = args.get("report");
  const bool install = args.flag("install");
  args.finish(1);
  std::vector<NamedPath> inputs;
  for (const std::string& path : samples) inputs.push_back({"--samples", path});
  check_paths(inputs, {}, {{"--out", out.value_or("")}, {"--report", report.value_or("")}});
  std::vector<CostSampleFile> files;
  for (const std::string& path : samples) files.push_back(read_cost_samples(path, ctx));
  const SimCalibration calibration = calibrate_sim(files, test_every, ctx, samples);
  std::string installed;
  if (install) {
    EMBSHARD_CHECK(calibration.device_kind == "cpu" && calibration.hardware.calibrated_on,
                   "--install: the samples are of '", calibration.device_kind,
                   "' devices; only a CPU's calibration is installed (use --out C.json and sim:coefficients=C.json)");
    EMBSHARD_CHECK(calibration.backend == "cpu", "--install: the samples were measured on '", calibration.backend,
                   "', not on this machine's kernels; only those are installed as its calibration (use --out "
                   "C.json and sim:coefficients=C.json)");
    installed = machine_calibration_path(*calibration.hardware.calibrated_on);
    std::filesystem::create_directories(std::filesystem::path(installed).parent_path());
  }
  OutputSet outputs;  // the JSON, the installed copy and the report are replaced together or not at all
  if (out) outputs.add(*out, sim_calibration_json(calibration));
  if (install) outputs.add(installed, sim_calibration_json(calibration));
  if (report) outputs.add(*report, fit_report_html(sim_calibration_report(calibration)));
  outputs.commit();
  std::cout << sim_calibration_text(calibration);
  if (install) {
    const bool here = installed == machine_calibration_path(this_cpu());
    std::cout << "installed as " << (here ? "this" : "the measuring") << " machine's calibration: " << installed
              << "\n";
  }
  return 0;
}

int run_profile_compute(Args& args, const Context& ctx) {
  ComputeProfileRun run;
  const std::string out = args.require("out");
  run.num_samples = args.get_int("samples");
  run.batch_size = args.get_int("batch");
  run.seed = static_cast<std::uint64_t>(args.get_int("seed"));
  const auto pool_seed = static_cast<std::uint64_t>(args.get_int("pool-seed"));
  run.sampler.max_tables = static_cast<int>(args.get_int("max-tables"));
  run.sampler.max_bytes = args.get_int("max-bytes");
  run.impl = parse_impl(args.value("backend"));
  run.measure = measure_options(args, run.measure);
  const bool gpu = run.impl == kernels::EmbeddingBagImpl::kCuda;
  run.prepare_ahead = args.get_int("prepare-ahead", gpu ? ctx.num_threads : 0);
  args.finish(1);
  check_paths({}, {}, {{"--out", out}});  // a directory is refused here; the file is appended to
  EMBSHARD_CHECK(run.num_samples >= 1, "--samples must be at least 1");
  EMBSHARD_CHECK(run.batch_size >= 1 && run.batch_size <= (std::int64_t{1} << 24),
                 "--batch must lie in [1, 2^24], got ", run.batch_size);
  EMBSHARD_CHECK(run.sampler.max_tables >= 1 && run.sampler.max_tables <= 1000, "--max-tables must lie in [1, 1000]");
  EMBSHARD_CHECK(run.sampler.max_bytes >= 1, "--max-bytes must be positive");
  EMBSHARD_CHECK(run.prepare_ahead >= 0 && run.prepare_ahead <= 256, "--prepare-ahead must lie in [0, 256], got ",
                 run.prepare_ahead);
  const Pool pool = Pool::generate(pool_seed);
  const std::int64_t done = collect_compute_samples(pool, run, out, ctx);
  ctx.info(detail::concat(out, ": ", done, " samples"));
  return 0;
}

}  // namespace embshard::cli
