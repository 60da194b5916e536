// RecShard's MILP (milp/recshard_milp.h) solved by CBC on a synthetic instance shaped like the
// paper's RM3 (397 tables over 16 GPUs, ~1.33e9 rows at scale 1). Prints one JSON row:
//   solve seconds, status, objective (max per-GPU cost, ms), best bound, relative gap, nodes, the
//   greedy warm start's objective, the model's size and the instance's parameters.
// Usage: build/bin/embshard_milp_bench [--seed N] [--scale S] [--time-limit SEC] [--tables N]
//          [--gpus N] [--steps K] [--hbm-gib G] [--host-gib G] [--hbm-gbps B] [--uvm-gbps B]
//          [--batch B] [--strategy default|plain] [--symmetry ordered_loads|table_index|none]
//          [--gap G] [--no-warm-start] [--log] [--cbc-arg ARG]... (e.g. --cbc-arg -preprocess --cbc-arg off)
// Instance (all from --seed): dim 64, fp32; rows log-uniform in [1e3, 1e8], rescaled so they sum
// to 1.33e9 × scale (at least 100 each); pooling log-uniform in [1, 60]; coverage uniform in
// [0.05, 1]; ICDF icdf(q) = u · q^g with u (share of rows ever accessed) uniform in [0.2, 1] and g
// log-uniform in [1.5, 12] (skewed: the hottest rows serve most accesses). GPU defaults: 16 GiB
// HBM at 900 GB/s, 64 GiB of host memory each through UVM at 16 GB/s, batch 65,536.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "embshard/core/error.h"
#include "embshard/data/random.h"
#include "embshard/milp/recshard_milp.h"

namespace {

struct Args {
  std::uint64_t seed = 0;
  double scale = 1.0;
  double time_limit_s = 60.0;
  int tables = 397;
  int gpus = 16;
  int steps = 100;
  double hbm_gib = 16.0;
  double host_gib = 64.0;
  double hbm_gbps = 900.0;
  double uvm_gbps = 16.0;
  std::int64_t batch = 65536;
  double gap = 1e-4;
  std::string strategy = "default";
  std::string symmetry = "ordered_loads";
  bool warm_start = true;
  bool log = false;
  std::vector<std::string> cbc_args;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int k = 1; k < argc; ++k) {
    const std::string flag = argv[k];
    auto value = [&]() -> std::string {
      EMBSHARD_CHECK(k + 1 < argc, flag, " needs a value");
      return argv[++k];
    };
    if (flag == "--seed")
      a.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (flag == "--scale")
      a.scale = std::atof(value().c_str());
    else if (flag == "--time-limit")
      a.time_limit_s = std::atof(value().c_str());
    else if (flag == "--tables")
      a.tables = std::atoi(value().c_str());
    else if (flag == "--gpus")
      a.gpus = std::atoi(value().c_str());
    else if (flag == "--steps")
      a.steps = std::atoi(value().c_str());
    else if (flag == "--hbm-gib")
      a.hbm_gib = std::atof(value().c_str());
    else if (flag == "--host-gib")
      a.host_gib = std::atof(value().c_str());
    else if (flag == "--hbm-gbps")
      a.hbm_gbps = std::atof(value().c_str());
    else if (flag == "--uvm-gbps")
      a.uvm_gbps = std::atof(value().c_str());
    else if (flag == "--batch")
      a.batch = std::atoll(value().c_str());
    else if (flag == "--gap")
      a.gap = std::atof(value().c_str());
    else if (flag == "--strategy")
      a.strategy = value();
    else if (flag == "--symmetry")
      a.symmetry = value();
    else if (flag == "--no-warm-start")
      a.warm_start = false;
    else if (flag == "--log")
      a.log = true;
    else if (flag == "--cbc-arg")
      a.cbc_args.push_back(value());
    else
      EMBSHARD_THROW("unknown option ", flag);
  }
  EMBSHARD_CHECK(a.tables > 0 && a.gpus > 0 && a.steps > 0 && a.scale > 0, "bad sizes");
  return a;
}

double log_uniform(embshard::Rng& rng, double lo, double hi) {
  return std::exp(std::log(lo) + rng.uniform() * (std::log(hi) - std::log(lo)));
}

embshard::RecShardInput instance(const Args& a) {
  embshard::Rng rng(a.seed);
  embshard::RecShardInput in;
  std::vector<double> raw(static_cast<std::size_t>(a.tables));
  double sum = 0;
  for (double& r : raw) sum += (r = log_uniform(rng, 1e3, 1e8));
  const double target = 1.33e9 * a.scale;
  for (int j = 0; j < a.tables; ++j) {
    embshard::RecShardTable t;
    t.name = "t" + std::to_string(j);
    t.rows = std::max<std::int64_t>(100, std::llround(raw[static_cast<std::size_t>(j)] * target / sum));
    t.dim = 64;
    t.bytes_per_element = 4;
    t.pooling = log_uniform(rng, 1.0, 60.0);
    t.coverage = 0.05 + 0.95 * rng.uniform();
    const double used = 0.2 + 0.8 * rng.uniform();
    const double skew = log_uniform(rng, 1.5, 12.0);
    for (int i = 0; i <= a.steps; ++i) t.icdf.push_back(used * std::pow(static_cast<double>(i) / a.steps, skew));
    in.tables.push_back(t);
  }
  const double gib = 1024.0 * 1024.0 * 1024.0;
  in.gpus.assign(static_cast<std::size_t>(a.gpus),
                 {static_cast<std::int64_t>(a.hbm_gib * gib), static_cast<std::int64_t>(a.host_gib * gib)});
  in.hbm_bytes_per_s = a.hbm_gbps * 1e9;
  in.uvm_bytes_per_s = a.uvm_gbps * 1e9;
  in.batch_size = a.batch;
  return in;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    const embshard::RecShardInput in = instance(a);
    embshard::RecShardOptions options;
    options.warm_start = a.warm_start;
    if (a.symmetry == "none")
      options.symmetry = embshard::RecShardSymmetry::kNone;
    else if (a.symmetry == "table_index")
      options.symmetry = embshard::RecShardSymmetry::kTableIndex;
    else
      EMBSHARD_CHECK(a.symmetry == "ordered_loads", "unknown --symmetry ", a.symmetry);
    embshard::CbcOptions cbc;
    cbc.time_limit_s = a.time_limit_s;
    cbc.relative_gap = a.gap;
    cbc.log = a.log;
    cbc.extra_args = a.cbc_args;
    if (a.strategy == "plain")
      cbc.strategy = embshard::CbcStrategy::kPlain;
    else
      EMBSHARD_CHECK(a.strategy == "default", "unknown --strategy ", a.strategy);

    std::int64_t total_rows = 0, total_bytes = 0;
    for (const auto& t : in.tables) {
      total_rows += t.rows;
      total_bytes += t.rows * t.dim * t.bytes_per_element;
    }
    const embshard::RecShardResult r = embshard::solve_recshard(in, options, cbc);
    const double decoded = r.solution ? r.solution->max_cost_ms : NAN;
    std::printf(
        "{\"tables\":%d,\"gpus\":%d,\"steps\":%d,\"seed\":%llu,\"scale\":%s,\"total_rows\":%lld,"
        "\"total_gib\":%s,\"hbm_gib\":%s,\"host_gib\":%s,\"variables\":%d,\"constraints\":%d,"
        "\"strategy\":\"%s\",\"symmetry\":\"%s\",\"time_limit_s\":%s,\"solve_s\":%s,"
        "\"status\":\"%s\",\"objective_ms\":%s,\"bound_ms\":%s,\"gap\":%s,\"nodes\":%lld,"
        "\"warm_start_ms\":%s,\"warm_start\":\"%s\",\"decoded_max_ms\":%s,\"capacity_error\":\"%s\","
        "\"message\":\"%s\"}\n",
        a.tables, a.gpus, a.steps, static_cast<unsigned long long>(a.seed), num(a.scale).c_str(),
        static_cast<long long>(total_rows), num(static_cast<double>(total_bytes) / (1024.0 * 1024.0 * 1024.0)).c_str(),
        num(a.hbm_gib).c_str(), num(a.host_gib).c_str(), r.num_variables, r.num_constraints, a.strategy.c_str(),
        embshard::to_string(options.symmetry), num(a.time_limit_s).c_str(), num(r.milp.wall_seconds).c_str(),
        embshard::to_string(r.milp.status), num(r.milp.objective).c_str(), num(r.milp.best_bound).c_str(),
        num(r.milp.relative_gap).c_str(), static_cast<long long>(r.milp.nodes),
        num(r.warm_start ? r.warm_start->max_cost_ms : NAN).c_str(), r.milp.warm_start.c_str(), num(decoded).c_str(),
        r.solution ? r.solution->capacity_error.c_str() : "", r.milp.message.c_str());
    return 0;
  } catch (const embshard::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
