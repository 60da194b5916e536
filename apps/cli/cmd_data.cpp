// embshard stats | pool
#include <cmath>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "embshard/core/file_io.h"
#include "embshard/core/progress.h"
#include "embshard/data/data_io.h"
#include "embshard/data/dlrm_file.h"
#include "embshard/data/pool.h"

namespace embshard::cli {

int run_stats(Args& args, const Context& ctx) {
  const std::string data = args.require("data");
  const std::string out = args.require("out");
  args.finish();
  check_paths({{"--data", data}}, {}, {{"--out", out}});
  const auto stats = compute_file_stats(data, ctx);
  write_stats_file(out, stats);
  ctx.info("wrote statistics of " + std::to_string(stats.size()) + " tables to " + out);
  return 0;
}

namespace {

/** The first `count` pool tables as one batch in the dataset's own file format. */
void write_pool_dataset(const Pool& pool, const std::string& path, std::int64_t count, std::int64_t batch,
                        const Context& ctx) {
  EMBSHARD_CHECK(count >= 1 && count <= static_cast<std::int64_t>(pool.tables().size()),
                 "embshard pool: --tables must lie in [1, ", pool.tables().size(), "]");
  // Every batch is held in memory (int64 offsets and indices) and then written out.
  double bytes = 0;
  for (std::int64_t id = 0; id < count; ++id) {
    const double per_sample = 1.0 + pool.tables()[static_cast<std::size_t>(id)].pooling_factor;
    bytes += 8.0 * per_sample * static_cast<double>(batch);
  }
  const std::string what = detail::concat("embshard pool --write-pt with --batch ", batch, " and --tables ", count);
  check_fits_in_memory(static_cast<std::uint64_t>(bytes), what);
  if (path != "-") check_fits_on_disk(path, static_cast<std::uint64_t>(bytes / (path.ends_with(".gz") ? 4 : 1)), what);
  Progress progress(ctx, "pool --write-pt: tables drawn", count);
  std::vector<TableBatch> tables;
  for (std::int64_t id = 0; id < count; ++id) {
    tables.push_back(pool.materialise(id, batch));
    progress.advance();
  }
  DlrmWriteOptions options;
  options.gzip = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  write_dlrm_file(path, tables, options);
  progress.finish("wrote " + std::to_string(count) + " tables x " + std::to_string(batch) + " samples to " + path);
}

int print_check(const Pool& pool, int measured, std::int64_t batch, const Context& ctx) {
  const auto rows = check_pool(pool, measured, batch, ctx);
  int failures = 0;
  std::printf("%-48s %16s %16s %12s  %s\n", "figure", "published", "generated", "tolerance", "ok");
  for (const auto& r : rows) {
    failures += r.ok() ? 0 : 1;
    std::printf("%-48s %16.6g %16.6g %12.3g  %s\n", r.figure.c_str(), r.published, r.generated, r.tolerance,
                r.ok() ? "yes" : "NO");
  }
  std::printf("%zu figures, %d outside tolerance (pool seed %llu, version %d)\n", rows.size(), failures,
              static_cast<unsigned long long>(pool.seed()), kPoolVersion);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int run_pool(Args& args, const Context& ctx) {
  // One mode, and only the options of that mode (another mode's option is refused by finish()).
  const auto seed = static_cast<std::uint64_t>(args.get_int("seed"));
  const bool check = args.flag("check");
  const bool fit = args.flag("fit");
  const auto out = args.get("out");
  const auto write_pt = args.get("write-pt");
  EMBSHARD_CHECK(int{check} + int{fit} + int{out.has_value()} + int{write_pt.has_value()} == 1,
                 "embshard pool: give one of --out FILE, --check, --write-pt FILE or --fit");
  const auto batch = fit ? kPublishedDlrm.batch_size : args.get_int("batch");
  const auto measured = check ? static_cast<int>(args.get_int("measure")) : 0;
  const auto num_tables = write_pt ? args.get_int("tables") : 0;
  args.finish();
  EMBSHARD_CHECK(batch > 0 && batch <= kMaxBatchSize, "embshard pool: --batch must lie in [1, ", kMaxBatchSize, "]");
  if (fit) {
    const PoolParams p = fit_pool_params(seed, PoolParams{}, ctx);
    std::printf(
        "alpha_min = %.4f\nalpha_max = %.4f\nactive_log10_min = %.4f\nactive_log10_max = %.4f\noffset_log10_max = "
        "%.4f\n",
        p.alpha_min, p.alpha_max, p.active_log10_min, p.active_log10_max, p.offset_log10_max);
    return 0;
  }
  check_paths({}, {}, {{"--out", out.value_or("")}, {"--write-pt", write_pt.value_or("")}});
  const Pool pool = Pool::generate(seed);
  if (check) return print_check(pool, measured, batch, ctx);
  if (write_pt) {
    write_pool_dataset(pool, *write_pt, num_tables, batch, ctx);
    return 0;
  }
  write_file_atomic(*out, pool_to_json(pool, batch, ctx.num_threads));
  ctx.info("wrote " + std::to_string(pool.tables().size()) + " tables to " + *out);
  return 0;
}

}  // namespace embshard::cli
