// The papers' compute observations (DreamShard appendix A.3, NeuroShard §2) measured on this
// machine's cpu kernels. CSV on stdout, one row per measurement:
//
//   embshard_observations fused [shards=50] [batch=8192]
//       kind=fused: random 10-table shards (pool 0, dims from {4..128}); the fused call versus the
//       sum of its tables timed alone — fw_ms, bw_ms of both and their ratio
//   embshard_observations dim [batch=8192]
//       kind=dim: a few pool tables alone at dims 4..128
//   embshard_observations tasks [count=3] [batch=8192] [repeats=3]
//       kind=task: NeuroShard-protocol tasks (4 devices, max dim 128), the greedy:balance=size
//       plan, evaluated on the cpu backend (wall time of the evaluation) and on sim
//
// Each measurement: ShardTimer, 1 warm-up + 5 repeats, caches flushed, medians.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/data/pool.h"
#include "embshard/data/random.h"
#include "embshard/eval/evaluator.h"
#include "embshard/eval/task_gen.h"
#include "embshard/profile/shard_timer.h"
#include "embshard/shard/sharder.h"

namespace {

using embshard::ShardTableSpec;
using embshard::ShardTimer;

constexpr embshard::MeasureOptions kMeasure{1, 5, true, 0.2};
constexpr int kDims[] = {4, 8, 16, 32, 64, 128};

embshard::ShardTiming time_shard(std::vector<ShardTableSpec> tables, std::int64_t batch) {
  ShardTimer bench(std::move(tables), batch, 0, embshard::kernels::EmbeddingBagImpl::kCpu);
  return bench.measure(kMeasure);
}

std::vector<std::int64_t> busy_tables(const embshard::Pool& pool) {
  std::vector<std::int64_t> ids;
  for (const auto& t : pool.tables()) {
    if (t.pooling_factor > 0) ids.push_back(t.id);
  }
  return ids;
}

void fused_vs_singles(int shards, std::int64_t batch) {
  const embshard::Pool pool = embshard::Pool::generate(0);
  const auto ids = busy_tables(pool);
  std::printf("kind,shard,tables,batch,fused_fw_ms,fused_bw_ms,singles_fw_ms,singles_bw_ms,fused_over_singles\n");
  for (int s = 0; s < shards; ++s) {
    embshard::Rng rng(embshard::derive_seed(2024, static_cast<std::uint64_t>(s)));
    std::vector<ShardTableSpec> tables;
    double singles_fw = 0;
    double singles_bw = 0;
    for (int k = 0; k < 10; ++k) {
      const auto id = ids[rng.below(ids.size())];
      const ShardTableSpec spec{pool.table(id), kDims[rng.below(6)]};
      tables.push_back(spec);
      const auto single = time_shard({spec}, batch);
      singles_fw += single.fw.median_ms;
      singles_bw += single.bw.median_ms;
    }
    const auto fused = time_shard(tables, batch);
    const double fused_total = fused.fw.median_ms + fused.bw.median_ms;
    std::printf("fused,%d,10,%lld,%.4f,%.4f,%.4f,%.4f,%.4f\n", s, static_cast<long long>(batch), fused.fw.median_ms,
                fused.bw.median_ms, singles_fw, singles_bw, fused_total / (singles_fw + singles_bw));
    std::fflush(stdout);
  }
}

void cost_vs_dim(std::int64_t batch) {
  const embshard::Pool pool = embshard::Pool::generate(0);
  std::printf("kind,pool_id,rows,pooling,dim,batch,fw_ms,bw_ms\n");
  for (const std::int64_t id : {3, 120, 400, 777}) {
    const auto& model = pool.table(id);
    for (const int dim : kDims) {
      const auto t = time_shard({{model, dim}}, batch);
      std::printf("dim,%lld,%lld,%.2f,%d,%lld,%.4f,%.4f\n", static_cast<long long>(id),
                  static_cast<long long>(model.num_rows), model.pooling_factor, dim, static_cast<long long>(batch),
                  t.fw.median_ms, t.bw.median_ms);
      std::fflush(stdout);
    }
  }
}

/** max_d fw_comp + max_d bw_comp: the compute part of the step objective. */
double compute_ms(const embshard::CostBreakdown& b) {
  double fw = 0;
  double bw = 0;
  for (const auto& d : b.devices) {
    fw = std::max(fw, d.fw_comp_ms);
    bw = std::max(bw, d.bw_comp_ms);
  }
  return fw + bw;
}

void evaluate_tasks(int count, std::int64_t batch, int repeats) {
  const auto gen = embshard::make_task_generator("neuroshard:devices=4,max_dim=128");
  const auto source = embshard::TableSource::from_pool(0, gen->batch_size());
  embshard::Context ctx;
  ctx.verbosity = embshard::LogLevel::kQuiet;
  const embshard::Pool pool = embshard::Pool::generate(0);
  std::printf(
      "kind,task,tables,batch,repeats,cpu_step_ms,cpu_max_sum_ms,cpu_wall_s,sim_step_ms,"
      "cpu_compute_ms,sim_cpu_compute_ms\n");
  for (int i = 0; i < count; ++i) {
    const embshard::Task task = gen->generate(source, 0, i);
    const embshard::Plan plan = embshard::plan_task("greedy:balance=size", task, nullptr, ctx).plan;
    const std::string cpu = embshard::detail::concat("measured:impl=cpu,batch=", batch, ",warmup=1,repeats=", repeats);
    const auto measured = embshard::evaluate_plan(task, plan, cpu, ctx);
    const auto modelled = embshard::evaluate_plan(task, plan, embshard::kSimJudge, ctx);
    // The same plan on the sim model of this machine (cpu preset) at the measured batch.
    embshard::Task on_cpu = task;
    on_cpu.topology = embshard::make_topology("cpu:devices=4");
    on_cpu.workload.batch_size = batch;
    for (auto& t : on_cpu.workload.tables) t.stats = pool.expected_stats(t.source_id, batch);
    const auto sim_cpu = embshard::evaluate_plan(on_cpu, plan, embshard::kSimJudge, ctx);
    std::printf("task,%d,%zu,%lld,%d,%.3f,%.3f,%.1f,%.3f,%.3f,%.3f\n", i, task.workload.tables.size(),
                static_cast<long long>(batch), repeats, measured.step_ms, measured.max_sum_ms,
                measured.wall_ms / 1000.0, modelled.step_ms, compute_ms(measured.breakdown),
                compute_ms(sim_cpu.breakdown));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "fused";
  if (what == "fused") {
    fused_vs_singles(argc > 2 ? std::atoi(argv[2]) : 50, argc > 3 ? std::atoll(argv[3]) : 8192);
  } else if (what == "dim") {
    cost_vs_dim(argc > 2 ? std::atoll(argv[2]) : 8192);
  } else if (what == "tasks") {
    evaluate_tasks(argc > 2 ? std::atoi(argv[2]) : 3, argc > 3 ? std::atoll(argv[3]) : 8192,
                   argc > 4 ? std::atoi(argv[4]) : 3);
  } else {
    std::fprintf(stderr,
                 "usage: embshard_observations fused [shards] [batch] | dim [batch] | "
                 "tasks [count] [batch] [repeats]\n");
    return 1;
  }
  return 0;
}
