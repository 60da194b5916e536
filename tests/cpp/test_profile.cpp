// Tests of the profile layer: timing summaries, the cost-sample file (resume, torn lines,
// mismatched headers), lazily backed tables, the shard bench and the compute sampler.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "embshard/core/file_io.h"
#include "embshard/data/pool.h"
#include "embshard/profile/compute_sampler.h"
#include "embshard/profile/cost_sample.h"
#include "embshard/profile/lazy_table.h"
#include "embshard/profile/measure.h"
#include "embshard/profile/shard_timer.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("embshard-profile-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

Context quiet() {
  Context ctx;
  ctx.verbosity = LogLevel::kQuiet;
  return ctx;
}

// ---- measure ---------------------------------------------------------------------------------

TEST(Measure, MedianAndTrimmedMean) {
  const Timing odd = summarise({5, 1, 4, 2, 3}, 0.2);
  EXPECT_EQ(odd.median_ms, 3);
  EXPECT_EQ(odd.trimmed_mean_ms, 3);  // drops 1 and 5
  EXPECT_EQ(odd.min_ms, 1);
  EXPECT_EQ(odd.max_ms, 5);
  EXPECT_EQ(odd.samples_ms, (std::vector<double>{5, 1, 4, 2, 3}));
  const Timing even = summarise({10, 1, 2, 3, 4, 100, 5, 6, 7, 8}, 0.2);
  EXPECT_EQ(even.median_ms, 5.5);
  EXPECT_DOUBLE_EQ(even.trimmed_mean_ms, (3 + 4 + 5 + 6 + 7 + 8) / 6.0);  // AutoShard's middle 6
}

TEST(Measure, RunsWarmupPlusRepeatsAndChecksOptions) {
  int calls = 0;
  int flushes = 0;
  CacheFlusher flusher(1 << 16);
  const Timing t = measure([&] { ++calls; }, {3, 4, true, 0.0},
                           [&] {
                             ++flushes;
                             flusher.flush();
                           });
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(flushes, 7);
  (void)measure([&] { ++calls; }, {0, 2, false, 0.0}, [&] { ++flushes; });
  EXPECT_EQ(flushes, 7);  // flush_cache off
  EXPECT_EQ(t.samples_ms.size(), 4u);
  EXPECT_NE(error_of([&] { (void)measure([] {}, {0, 0, false, 0.0}); }).find("repeats"), std::string::npos);
  EXPECT_GT(last_level_cache_bytes(), 0u);
}

/** Sets an environment variable for one scope and restores what was there. */
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Fingerprint, TheEnvironmentCanFakeItAndABadValueNamesTheVariable) {
  const HardwareFingerprint real = [] {
    ScopedEnv none(kFakeFingerprintVariable, "host");
    return this_machine("cpu", 3);
  }();
  EXPECT_EQ(real.threads, 3);
  EXPECT_GT(real.llc_bytes, 0);
  {
    ScopedEnv fake(kFakeFingerprintVariable, "host:cpu_model=Fake CPU 9000,llc_bytes=1048576,logical_cpus=5");
    const HardwareFingerprint f = this_machine("cpu", 2);
    EXPECT_EQ(f.cpu_model, "Fake CPU 9000");
    EXPECT_EQ(f.llc_bytes, 1048576);
    EXPECT_EQ(f.logical_cpus, 5);
    EXPECT_EQ(f.memory_bytes, real.memory_bytes);  // not given: the real value
    EXPECT_EQ(f.threads, 2);
  }
  for (const char* bad :
       {"host:llc_bytes=big", "host:cache=3", "machine:llc_bytes=3", "host:llc_bytes=0", "host:llc_bytes"}) {
    ScopedEnv fake(kFakeFingerprintVariable, bad);
    const std::string error = error_of([] { (void)this_machine("cpu", 1); });
    EXPECT_NE(error.find(kFakeFingerprintVariable), std::string::npos) << bad << ": " << error;
  }
}

// ---- cost-sample file ----------------------------------------------------------------------------

CostSampleHeader compute_header() {
  CostSampleHeader h;
  h.sampler = "neuroshard-compute:test";
  h.seed = 3;
  h.batch_size = 128;
  h.fingerprint = this_machine("cpu", 1);
  return h;
}

ComputeSample sample(std::int64_t i) { return {i, {{i, 4}, {i + 1, 8}}, 1.0 + i, 2.0 + i, 1.5 + i, 2.5 + i}; }

TEST(CostSampleFile, AppendsResumesAndReadsBack) {
  const std::string path = temp_path("resume.jsonl");
  const Context ctx = quiet();
  {
    CostSampleWriter writer(path, compute_header(), ctx);
    EXPECT_EQ(writer.next_index(), 0);
    writer.append(sample(0));
    writer.append(sample(1));
  }
  {
    CostSampleWriter writer(path, compute_header(), ctx);
    EXPECT_EQ(writer.next_index(), 2);
    writer.append(sample(2));
  }
  const CostSampleFile file = read_cost_samples(path, ctx);
  EXPECT_EQ(file.header.batch_size, 128);
  EXPECT_EQ(file.header.fingerprint, compute_header().fingerprint);
  ASSERT_EQ(file.compute.size(), 3u);
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(file.compute[i].index, i);
    EXPECT_EQ(file.compute[i].tables, sample(i).tables);
    EXPECT_EQ(file.compute[i].bw_trimmed_ms, sample(i).bw_trimmed_ms);
  }
}

TEST(CostSampleFile, DropsATornLastLineWhenResuming) {
  const std::string path = temp_path("torn.jsonl");
  const Context ctx = quiet();
  {
    CostSampleWriter writer(path, compute_header(), ctx);
    writer.append(sample(0));
  }
  { std::ofstream(path, std::ios::app) << R"({"index": 1, "tables": [{"pool_)"; }
  EXPECT_EQ(read_cost_samples(path, ctx).compute.size(), 1u);
  CostSampleWriter writer(path, compute_header(), ctx);
  EXPECT_EQ(writer.next_index(), 1);
  writer.append(sample(1));
  EXPECT_EQ(read_cost_samples(path, ctx).compute.size(), 2u);
}

TEST(CostSampleFile, HasOneWriterAtATimeAndTheRefusalNamesTheHolder) {
  const std::string path = temp_path("locked.jsonl");
  std::filesystem::remove(path);
  const Context ctx = quiet();
  {
    CostSampleWriter first(path, compute_header(), ctx);
    first.append(sample(0));
    const std::string again = error_of([&] { CostSampleWriter second(path, compute_header(), ctx); });
    EXPECT_NE(again.find("another writer"), std::string::npos) << again;
    EXPECT_NE(again.find("in this process"), std::string::npos) << again;
    (void)read_cost_samples(path, ctx);  // reading the file does not drop the lock
    EXPECT_NE(error_of([&] { CostSampleWriter second(path, compute_header(), ctx); }), "");
    first.append(sample(1));
  }
  // Another process holds it: the error names that process.
  int ready[2];
  int done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CostSampleWriter held(path, compute_header(), ctx);
    char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    (void)!::read(done[0], &byte, 1);
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  const std::string other = error_of([&] { CostSampleWriter second(path, compute_header(), ctx); });
  EXPECT_NE(other.find("process " + std::to_string(child)), std::string::npos) << other;
  ASSERT_EQ(::write(done[1], &byte, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
  // Once the holder is gone the file resumes where it was.
  CostSampleWriter after(path, compute_header(), ctx);
  EXPECT_EQ(after.next_index(), 2);
}

TEST(CostSampleFile, AHeaderCutShortSaysSoAndAnEmptyFileStartsAfresh) {
  const std::string path = temp_path("cut.jsonl");
  const Context ctx = quiet();
  write_file_atomic(path, R"({"format": "embshard-cost-samples", "vers)");
  for (const std::string& error : {error_of([&] { (void)read_cost_samples(path, ctx); }),
                                   error_of([&] { CostSampleWriter w(path, compute_header(), ctx); })}) {
    EXPECT_NE(error.find("header line is cut short"), std::string::npos) << error;
    EXPECT_NE(error.find("delete " + path), std::string::npos) << error;
  }
  write_file_atomic(path, "");  // a run stopped between creating the file and writing its header
  {
    CostSampleWriter writer(path, compute_header(), ctx);
    EXPECT_EQ(writer.next_index(), 0);
    writer.append(sample(0));
  }
  EXPECT_EQ(read_cost_samples(path, ctx).compute.size(), 1u);
}

TEST(CostSampleFile, RefusesToResumeAnotherExperiment) {
  const std::string path = temp_path("mismatch.jsonl");
  const Context ctx = quiet();
  { CostSampleWriter writer(path, compute_header(), ctx); }
  CostSampleHeader other = compute_header();
  other.batch_size = 256;
  EXPECT_NE(error_of([&] { CostSampleWriter w(path, other, ctx); }).find("batch_size"), std::string::npos);
  other = compute_header();
  other.fingerprint.cpu_model = "another CPU";
  EXPECT_NE(error_of([&] { CostSampleWriter w(path, other, ctx); }).find("fingerprint"), std::string::npos);
  other = compute_header();
  other.created_utc = "1999-01-01T00:00:00Z";  // informational: resuming is fine
  EXPECT_NO_THROW(CostSampleWriter(path, other, ctx));
}

TEST(CostSampleFile, RejectsBadFilesNamingLineAndField) {
  const std::string path = temp_path("bad.jsonl");
  const Context ctx = quiet();
  { CostSampleWriter writer(path, compute_header(), ctx); }
  const std::string header = read_file(path);
  write_file_atomic(
      path,
      header +
          R"({"index": 1, "tables": [{"pool_id": 1, "dim": 4}], "fw_ms": 1, "bw_ms": 1, "fw_trimmed_ms": 1, "bw_trimmed_ms": 1})"
          "\n");
  EXPECT_NE(error_of([&] { (void)read_cost_samples(path, ctx); }).find("line 2: index: expected sample 0"),
            std::string::npos);
  write_file_atomic(
      path, header + R"({"index": 0, "tables": [], "fw_ms": 1, "bw_ms": 1, "fw_trimmed_ms": 1, "bw_trimmed_ms": 1})"
                     "\n");
  EXPECT_NE(error_of([&] { (void)read_cost_samples(path, ctx); }).find("line 2: tables"), std::string::npos);
  write_file_atomic(path, "");
  EXPECT_NE(error_of([&] { (void)read_cost_samples(path, ctx); }).find("empty file"), std::string::npos);
  write_file_atomic(path, "{\"format\": \"something else\"}\n");
  EXPECT_NE(error_of([&] { (void)read_cost_samples(path, ctx); }).find("line 1"), std::string::npos);
}

// ---- lazy tables and the shard bench --------------------------------------------------------------

TEST(LazyTable, FourGibibyteTableCostsOnlyTheTouchedPages) {
  const std::int64_t rows = std::int64_t{8} << 20;  // 8 Mi rows × 128 fp32 = 4 GiB
  LazyTable table(rows, 128, WeightType::kF32, /*with_momentum=*/true, 7);
  EXPECT_EQ(table.reserved_bytes(), rows * 128 * 4 + rows * 4);
  std::vector<std::int32_t> touched;
  for (std::int32_t r = 0; r < 1000; ++r) touched.push_back(static_cast<std::int32_t>(r * 8191 % rows));
  table.materialise(touched);
  EXPECT_LT(table.resident_bytes(), std::int64_t{16} << 20);
  EXPECT_GE(table.resident_bytes(), 1000 * 512);
  const auto view = table.view();
  const auto* w = static_cast<const float*>(view.weights);
  EXPECT_NE(w[static_cast<std::size_t>(touched[5]) * 128], 0.0f);
  EXPECT_LT(std::abs(w[static_cast<std::size_t>(touched[5]) * 128 + 3]), 1.0f / 64);
}

PoolTable small_model(std::int64_t rows, double pooling, std::uint64_t seed) {
  PoolTable t;
  t.num_rows = rows;
  t.active_rows = rows / 2;
  t.pooling_factor = pooling;
  t.coverage = 0.9;
  t.zipf_alpha = 0.9;
  t.seed = seed;
  return t;
}

TEST(ShardTimer, KeepsOnlyTheRowRangeAndDuplicatesColumnShards) {
  const PoolTable model = small_model(1000, 4.0, 11);
  const std::int64_t batch = 256;
  const TableBatch full = materialise_table(model, batch, 0);
  const auto in_range =
      std::count_if(full.indices.begin(), full.indices.end(), [](std::int64_t r) { return r >= 100 && r < 600; });
  ShardTimer rows({{model, 8, WeightType::kF32, 100, 600}}, batch, 0, kernels::EmbeddingBagImpl::kCpu);
  EXPECT_EQ(rows.num_lookups(), in_range);
  ShardTimer halves({{model, 4}, {model, 4}}, batch, 0, kernels::EmbeddingBagImpl::kCpu);
  EXPECT_EQ(halves.num_lookups(), 2 * static_cast<std::int64_t>(full.indices.size()));
  const ShardTiming t = halves.measure({0, 2, true, 0.0});
  EXPECT_EQ(t.fw.samples_ms.size(), 2u);
  EXPECT_GT(t.fw.median_ms, 0.0);  // both halves measured (a timer of no tables returns 0)
  EXPECT_GT(t.bw.median_ms, 0.0);
  EXPECT_LE(t.fw.min_ms, t.fw.median_ms);
  EXPECT_NE(error_of([&] {
              ShardTimer b({{model, 4, WeightType::kF32, 600, 100}}, batch, 0, kernels::EmbeddingBagImpl::kCpu);
            }).find("bad row range"),
            std::string::npos);
}

TEST(ShardTimer, MeasuresAFourGibibyteShardFrugally) {
  PoolTable model = small_model(std::int64_t{8} << 20, 8.0, 5);  // 4 GiB at dim 128
  ShardTimer bench({{model, 128}}, 2048, 0, kernels::EmbeddingBagImpl::kCpu);
  const ShardTiming t = bench.measure({1, 1, true, 0.0});
  EXPECT_EQ(t.reserved_bytes, std::int64_t{4} << 30);
  EXPECT_LT(t.resident_bytes, std::int64_t{256} << 20);
  EXPECT_GT(t.fw.median_ms, 0.0);
}

// ---- compute sampler ----------------------------------------------------------------------------------

TEST(ComputeSampler, DrawsNeuroShardShardsDeterministically) {
  const Pool pool = Pool::generate(0);
  ComputeSamplerParams params;
  std::set<std::size_t> counts;
  for (std::int64_t i = 0; i < 200; ++i) {
    const auto tables = draw_compute_sample(pool, params, 9, i);
    EXPECT_EQ(tables, draw_compute_sample(pool, params, 9, i));
    counts.insert(tables.size());
    std::int64_t bytes = 0;
    for (const SampleTable& t : tables) {
      EXPECT_TRUE(std::find(params.dims.begin(), params.dims.end(), t.dim) != params.dims.end());
      bytes += pool.table(t.pool_id).num_rows * t.dim * 4;
    }
    EXPECT_LE(bytes, params.max_bytes);
  }
  EXPECT_EQ(*counts.begin(), 1u);
  EXPECT_EQ(*counts.rbegin(), 15u);
  EXPECT_NE(draw_compute_sample(pool, params, 9, 0), draw_compute_sample(pool, params, 10, 0));
}

/** A quick collection run: small shards (at most `max_tables` tables, 64 MiB), one repeat. */
ComputeProfileRun small_run(int max_tables, std::int64_t batch, std::int64_t samples) {
  ComputeProfileRun run;
  run.sampler.max_tables = max_tables;
  run.sampler.max_bytes = std::int64_t{64} << 20;
  run.batch_size = batch;
  run.num_samples = samples;
  run.measure = {0, 1, false, 0.0};
  return run;
}

TEST(ComputeSampler, CollectsAndResumesWithoutLosingOrDuplicating) {
  const Pool pool = Pool::generate(0);
  ComputeProfileRun run = small_run(3, 64, 2);
  const std::string path = temp_path("collect.jsonl");
  const Context ctx = quiet();
  EXPECT_EQ(collect_compute_samples(pool, run, path, ctx), 2);
  const auto first = read_cost_samples(path, ctx).compute;
  run.num_samples = 3;
  EXPECT_EQ(collect_compute_samples(pool, run, path, ctx), 3);
  const auto all = read_cost_samples(path, ctx).compute;
  ASSERT_EQ(all.size(), 3u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(all[i].tables, first[i].tables);
  EXPECT_EQ(all[2].tables, draw_compute_sample(pool, run.sampler, run.seed, 2));
}

TEST(ComputeSampler, SamplesSetUpAheadInParallelAreTheSameSamplesInOrder) {
  const Pool pool = Pool::generate(0);
  ComputeProfileRun run = small_run(4, 32, 5);
  run.prepare_ahead = 3;  // chunks of 3, 2: the last chunk is short
  Context ctx = quiet();
  ctx.num_threads = 3;
  const std::string path = temp_path("ahead.jsonl");
  EXPECT_EQ(collect_compute_samples(pool, run, path, ctx), 5);
  run.num_samples = 7;  // resumed from sample 5, again ahead
  EXPECT_EQ(collect_compute_samples(pool, run, path, ctx), 7);
  const auto all = read_cost_samples(path, ctx).compute;
  ASSERT_EQ(all.size(), 7u);
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].index, static_cast<std::int64_t>(i));
    EXPECT_EQ(all[i].tables, draw_compute_sample(pool, run.sampler, run.seed, static_cast<std::int64_t>(i)));
    EXPECT_GT(all[i].fw_ms, 0.0);  // a real measurement (a timer of no tables returns 0)
    EXPECT_GT(all[i].bw_ms, 0.0);
  }
}

// ---- lookup models from statistics ------------------------------------------------------------------

TEST(ModelFromStats, ReproducesTheDistinctCountOfPoolTables) {
  const Pool pool = Pool::generate(0);
  for (std::int64_t id : {3, 100, 400, 777}) {
    const TableStats want = pool.expected_stats(id, 65536);
    const PoolTable model = model_from_stats(want, 1);
    const TableStats got = expected_table_stats(model, 65536);
    EXPECT_EQ(got.num_rows, want.num_rows);
    EXPECT_EQ(got.num_indices, want.num_indices);
    EXPECT_NEAR(static_cast<double>(got.num_distinct), static_cast<double>(want.num_distinct),
                0.02 * static_cast<double>(want.num_distinct) + 2)
        << "pool table " << id;
  }
}

}  // namespace
}  // namespace embshard
