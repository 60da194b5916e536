// What one cost-model query costs inside a search: a device's whole shard of k tables asked of the
// built-in neural model (per-table encodings cached after the first query, then one sum and the
// head) and of the analytic sim model, on tasks of the `cpu` topology. CSV rows:
//   model,tables,kind,median_ns,queries
// kind "warm": the same shard asked again (what a search mostly does); "cold": the first query of a
// fresh model (encodes every table). Usage: build/bin/embshard_neural_bench [REPEATS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "embshard/cost/cost_model.h"
#include "embshard/data/pool.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/task_gen.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<embshard::PlacedShard> whole_tables(const embshard::Task& task, int k) {
  std::vector<embshard::PlacedShard> shards;
  for (int t = 0; t < k; ++t) {
    const embshard::TableSpec& spec = task.workload.tables[static_cast<std::size_t>(t)];
    embshard::Shard s;
    s.row_end = spec.num_rows();
    s.col_end = spec.dim;
    shards.push_back({t, s});
  }
  return shards;
}

void bench(const char* model, const embshard::Task& task, int k, int repeats, const embshard::Context& ctx) {
  const auto shards = whole_tables(task, k);
  std::vector<double> cold, warm;
  volatile double sink = 0;
  for (int r = 0; r < repeats; ++r) {
    auto cost = embshard::make_cost_model(model, task);
    auto start = Clock::now();
    sink = sink + cost->compute().device_compute(task, shards, ctx).fw_ms;
    cold.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count());
    constexpr int kBatch = 1000;
    start = Clock::now();
    for (int i = 0; i < kBatch; ++i) sink = sink + cost->compute().device_compute(task, shards, ctx).fw_ms;
    warm.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kBatch);
  }
  std::printf("%s,%d,cold,%.0f,%d\n%s,%d,warm,%.0f,%d\n", model, k, median(cold), repeats, model, k, median(warm),
              repeats * 1000);
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 21;
  const auto gen = embshard::make_task_generator("neuroshard:devices=4,max_dim=128,preset=cpu,min_tables_per_device=8");
  const auto source = embshard::TableSource::from_pool(0, gen->batch_size());
  const embshard::Task task = gen->generate(source, 0, 0);
  embshard::Context ctx;
  ctx.verbosity = embshard::LogLevel::kQuiet;
  std::printf("model,tables,kind,median_ns,queries\n");
  for (const char* model : {"neural:weights=builtin", "sim"}) {
    for (int k : {1, 5, 15}) bench(model, task, k, repeats, ctx);
  }
  return 0;
}
