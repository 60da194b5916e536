#include "embshard/eval/task_gen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <optional>

#include "embshard/data/data_io.h"
#include "embshard/data/pool.h"
#include "embshard/data/random.h"

namespace embshard {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::int64_t kDatasetBatch = 65536;
constexpr std::uint64_t kMaxRedraws = 10000;

/** Parameters every protocol shares. */
std::vector<ParamSpec> common_params(int devices, int max_dim, const char* mem_gib, const char* dtype) {
  return {
      {"devices", ParamType::kInt, std::to_string(devices), 1, kMaxDevices, {}, "devices per task"},
      {"max_dim", ParamType::kInt, std::to_string(max_dim), 4, 2048, {}, "largest embedding dim (a multiple of 4)"},
      {"mem_gib", ParamType::kFloat, mem_gib, 0.0, 1e6, {}, "memory per device available to embeddings, GiB"},
      {"dtype", ParamType::kString, dtype, {}, {}, {"fp32", "fp16"}, "weight precision"},
      {"preset",
       ParamType::kString,
       "v100",
       {},
       {},
       topology_preset_names(),
       "hardware preset the devices are taken from"},
      {"batch_size", ParamType::kInt, std::to_string(kDatasetBatch), 1, 1 << 24, {}, "global batch size"},
  };
}

/** Shared machinery: topology, naming, table materialisation. */
class ProtocolBase : public TaskGenerator {
 public:
  ProtocolBase(std::string name, Params params) : name_(std::move(name)), params_(std::move(params)) {
    EMBSHARD_CHECK(max_dim() % 4 == 0, name_, ": max_dim = ", max_dim(), " must be a multiple of 4");
  }
  [[nodiscard]] std::string spec() const override { return canonical_spec(name_, params_); }
  [[nodiscard]] std::int64_t batch_size() const override { return params_.get_int("batch_size"); }

 protected:
  [[nodiscard]] int devices() const { return static_cast<int>(params_.get_int("devices")); }
  [[nodiscard]] int max_dim() const { return static_cast<int>(params_.get_int("max_dim")); }
  [[nodiscard]] WeightType dtype() const { return parse_weight_type(params_.get_string("dtype"), name_); }
  [[nodiscard]] double mem_bytes() const { return params_.get_float("mem_gib") * kGiB; }

  [[nodiscard]] Topology topology() const {
    const std::string preset = params_.get_string("preset");
    std::string spec = preset;
    if (preset == "cpu") {
      spec += ":devices=" + std::to_string(devices()) + ",mem_gib=" + params_.text("mem_gib");
    } else {
      const int per_node = std::min(devices(), 8);
      const int nodes = (devices() + per_node - 1) / per_node;
      EMBSHARD_CHECK(nodes * per_node == devices(), name_, ": ", devices(), " devices do not fill whole ", preset,
                     " nodes of ", per_node);
      spec += ":nodes=" + std::to_string(nodes) + ",gpus_per_node=" + std::to_string(per_node) +
              ",hbm_gib=" + params_.text("mem_gib");
    }
    return make_topology(spec);
  }

  /** A task over `ids` (indices into the source) with `dims`; names are unique per slot. */
  [[nodiscard]] Task make_task(const TableSource& source, std::uint64_t seed, int index,
                               const std::vector<std::size_t>& ids, const std::vector<int>& dims) const {
    Task task;
    char id[128];
    std::snprintf(id, sizeof id, "%s-d%d-m%d-%03d", name_.c_str(), devices(), max_dim(), index);
    task.id = id;
    task.protocol = spec();
    task.seed = seed;
    task.pool_seed = source.pool_seed();
    task.workload.batch_size = batch_size();
    task.topology = topology();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      TableSpec t;
      t.name = "t" + std::to_string(i) + "_" + std::to_string(ids[i]);
      t.dim = dims[i];
      t.dtype = dtype();
      t.source_id = source.from_pool() ? static_cast<std::int64_t>(ids[i]) : -1;
      t.stats = source.stats(ids[i]);
      task.workload.tables.push_back(std::move(t));
    }
    check_task(task, task.id);
    return task;
  }

  /** Dims {M, M/2, ...} while divisible by 4 (NeuroShard's grid). */
  [[nodiscard]] std::vector<int> dim_grid() const {
    std::vector<int> grid;
    for (int d = max_dim(); d >= 4 && d % 4 == 0; d /= 2) grid.push_back(d);
    return grid;
  }

  std::string name_;
  Params params_;
};

/** Tables with replacement, random dims, redrawn until the total fits 4·D − 1 GiB (paper 003). */
class NeuroShardProtocol : public ProtocolBase {
 public:
  using ProtocolBase::ProtocolBase;
  [[nodiscard]] Task generate(const TableSource& source, std::uint64_t seed, int index) const override {
    Rng rng(derive_seed(seed, static_cast<std::uint64_t>(index)));
    const auto exact = static_cast<std::uint64_t>(params_.get_int("tables"));
    const auto lo =
        exact > 0 ? exact : static_cast<std::uint64_t>(params_.get_int("min_tables_per_device") * devices() / 2);
    const auto hi =
        exact > 0 ? exact + 1 : static_cast<std::uint64_t>(params_.get_int("max_tables_per_device") * devices());
    EMBSHARD_CHECK(hi > lo, name_, ": empty range of table counts");
    const auto grid = dim_grid();
    const double budget = mem_bytes() * devices() - kGiB;
    for (std::uint64_t attempt = 0; attempt < kMaxRedraws; ++attempt) {
      const auto count = static_cast<std::size_t>(lo + rng.below(hi - lo));
      std::vector<std::size_t> ids(count);
      std::vector<int> dims(count);
      double bytes = 0;
      for (std::size_t i = 0; i < count; ++i) {
        ids[i] = static_cast<std::size_t>(rng.below(source.size()));
        dims[i] = grid[rng.below(grid.size())];
        bytes += static_cast<double>(source.num_rows(ids[i])) * dims[i] * bytes_per_element(dtype());
      }
      if (bytes <= budget) return make_task(source, seed, index, ids, dims);
    }
    EMBSHARD_THROW(name_, ": no task within ", budget / kGiB, " GiB after ", kMaxRedraws, " draws");
  }
};

/**
 * The source's ids shuffled by `split_seed` and cut in halves {first, second}. The halves follow
 * `split_seed`, never the task seed: test tasks drawn with another seed than the training tasks
 * still see only tables training never saw (issue 19).
 */
std::pair<std::vector<std::size_t>, std::vector<std::size_t>> pool_halves(std::size_t size, std::int64_t split_seed) {
  std::vector<std::size_t> all(size);
  std::iota(all.begin(), all.end(), 0);
  Rng split_rng(derive_seed(static_cast<std::uint64_t>(split_seed), 0xD5));
  for (std::size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[split_rng.below(i)]);
  const auto half = static_cast<std::ptrdiff_t>(all.size() / 2);
  return {{all.begin(), all.begin() + half}, {all.begin() + half, all.end()}};
}

/** The first `n` of `ids` after a partial Fisher–Yates shuffle by `rng` (without replacement). */
std::vector<std::size_t> draw_without_replacement(std::vector<std::size_t> ids, std::size_t n, Rng& rng) {
  for (std::size_t i = 0; i < n; ++i) std::swap(ids[i], ids[i + rng.below(ids.size() - i)]);
  ids.resize(n);
  return ids;
}

/** Shuffled pool split in halves; N tables without replacement from the train or test half. */
class DreamShardProtocol : public ProtocolBase {
 public:
  using ProtocolBase::ProtocolBase;
  [[nodiscard]] Task generate(const TableSource& source, std::uint64_t seed, int index) const override {
    const bool test = params_.get_string("split") == "test";
    auto [train_half, test_half] = pool_halves(source.size(), params_.get_int("split_seed"));
    const std::vector<std::size_t>& pool = test ? test_half : train_half;
    const auto n = static_cast<std::size_t>(params_.get_int("tables"));
    EMBSHARD_CHECK(n <= pool.size(), name_, ": ", n, " tables asked, the ", test ? "test" : "train", " half has ",
                   pool.size());
    Rng rng(derive_seed(seed, (test ? 1000000u : 0u) + static_cast<std::uint64_t>(index)));
    return make_task(source, seed, index, draw_without_replacement(pool, n, rng), std::vector<int>(n, max_dim()));
  }
};

/**
 * 10 tables per device without replacement; each pool table has a dim in {M/2, M}, drawn from the
 * task seed (train / test) or from split_seed (train_half / test_half). Splits train / test draw
 * from the whole pool; train_half / test_half are paper 001 §5.5's unseen-table setting: the pool in
 * halves (pool_halves), training tables from the first, and a test task's tables
 * round(unseen_ratio · N) from the second, the rest from the first.
 */
class AutoShardProtocol : public ProtocolBase {
 public:
  AutoShardProtocol(std::string name, Params params) : ProtocolBase(std::move(name), std::move(params)) {
    const std::string split = params_.get_string("split");
    const double unseen = params_.get_float("unseen_ratio");
    EMBSHARD_CHECK(split == "test_half" || unseen == 1.0, name_, ": unseen_ratio = ", unseen,
                   " applies to split=test_half only (split is ", split, ")");
  }

  [[nodiscard]] Task generate(const TableSource& source, std::uint64_t seed, int index) const override {
    const std::string split = params_.get_string("split");
    const bool halves = split == "train_half" || split == "test_half";
    // With halves a table is the same (pool table, dim) in training and test tasks of any seed.
    Rng dim_rng(derive_seed(halves ? static_cast<std::uint64_t>(params_.get_int("split_seed")) : seed, 0xA5));
    std::vector<int> table_dim(source.size());
    for (auto& d : table_dim) d = dim_rng.below(2) == 0 ? max_dim() / 2 : max_dim();
    const auto n = static_cast<std::size_t>(params_.get_int("tables_per_device") * devices());
    const bool test = split == "test" || split == "test_half";
    Rng rng(derive_seed(seed, (test ? 1000000u : 0u) + static_cast<std::uint64_t>(index)));
    const std::vector<std::size_t> ids =
        halves ? from_halves(source.size(), n, rng) : whole_pool(source.size(), n, rng);
    std::vector<int> dims;
    for (auto id : ids) dims.push_back(table_dim[id]);
    return make_task(source, seed, index, ids, dims);
  }

 private:
  [[nodiscard]] std::vector<std::size_t> whole_pool(std::size_t size, std::size_t n, Rng& rng) const {
    EMBSHARD_CHECK(n <= size, name_, ": ", n, " tables asked, the source has ", size);
    std::vector<std::size_t> all(size);
    std::iota(all.begin(), all.end(), 0);
    return draw_without_replacement(std::move(all), n, rng);
  }

  [[nodiscard]] std::vector<std::size_t> from_halves(std::size_t size, std::size_t n, Rng& rng) const {
    const auto [seen, unseen] = pool_halves(size, params_.get_int("split_seed"));
    const bool test = params_.get_string("split") == "test_half";
    const auto n_unseen =
        test ? static_cast<std::size_t>(std::llround(params_.get_float("unseen_ratio") * static_cast<double>(n))) : 0;
    EMBSHARD_CHECK(n - n_unseen <= seen.size() && n_unseen <= unseen.size(), name_, ": ", n - n_unseen,
                   " tables asked from the first half (", seen.size(), ") and ", n_unseen, " from the second (",
                   unseen.size(), ")");
    std::vector<std::size_t> ids = draw_without_replacement(seen, n - n_unseen, rng);
    const std::vector<std::size_t> fresh = draw_without_replacement(unseen, n_unseen, rng);
    ids.insert(ids.end(), fresh.begin(), fresh.end());
    return ids;
  }
};

/** Paper 004 Table 2: total hash sizes of RM1, RM2, RM3 (397 tables, dim 64 each). */
constexpr std::int64_t kRecShardTotalRows[] = {1331656544, 2661369917, 5320796628};
constexpr int kRecShardTables = 397;

/**
 * RecShard's RM1/RM2/RM3 (task_gen.h documents the draws). Per-table draws depend only on (seed,
 * index), not on the model, so RM2 and RM3 are RM1 with every hash size about doubled and
 * quadrupled: the same features (values, skew, pooling, coverage) hashed into larger tables.
 */
class RecShardProtocol final : public TaskGenerator {
 public:
  RecShardProtocol(std::string name, Params params) : name_(std::move(name)), params_(std::move(params)) {}
  [[nodiscard]] std::string spec() const override { return canonical_spec(name_, params_); }
  [[nodiscard]] std::int64_t batch_size() const override { return params_.get_int("batch_size"); }

  [[nodiscard]] Task generate(const TableSource&, std::uint64_t seed, int index) const override {
    const std::string model = params_.get_string("model");
    const int which = model == "rm1" ? 0 : model == "rm2" ? 1 : 2;
    const double scale = params_.get_float("scale");
    const auto n = static_cast<std::size_t>(params_.get_int("tables"));
    const int devices = static_cast<int>(params_.get_int("devices"));
    const std::int64_t batch = batch_size();
    const auto total = static_cast<std::int64_t>(std::llround(static_cast<double>(kRecShardTotalRows[which]) * scale *
                                                              static_cast<double>(n) / kRecShardTables));
    EMBSHARD_CHECK(total >= 2 * static_cast<std::int64_t>(n) * kMinTableRows, name_, ": scale ", scale, " leaves ",
                   total, " rows for ", n, " tables; at least ", 2 * static_cast<std::int64_t>(n) * kMinTableRows,
                   " are needed");
    const double rm1_total =
        static_cast<double>(kRecShardTotalRows[0]) * scale * static_cast<double>(n) / kRecShardTables;

    const std::uint64_t task_seed = derive_seed(seed, static_cast<std::uint64_t>(index));
    Rng size_rng(derive_seed(task_seed, 1)), values_rng(derive_seed(task_seed, 2)), skew_rng(derive_seed(task_seed, 3)),
        pooling_rng(derive_seed(task_seed, 4)), coverage_rng(derive_seed(task_seed, 5));
    std::vector<double> weight(n), value_ratio(n), alpha(n), pooling(n), coverage(n);
    std::vector<std::int64_t> offset(n);
    double weight_sum = 0;
    for (std::size_t j = 0; j < n; ++j) {
      weight[j] = std::pow(10.0, 4.0 + 4.0 * size_rng.uniform());
      weight_sum += weight[j];
      value_ratio[j] = std::pow(10.0, std::log10(0.25) + std::log10(6.0) * values_rng.uniform());
      const bool flat = skew_rng.uniform() < 0.08;
      alpha[j] = flat ? 0.5 * skew_rng.uniform() : 0.8 + 0.5 * skew_rng.uniform();
      offset[j] = std::llround(std::pow(10.0, 2.0 * skew_rng.uniform())) - 1;
      const bool one_hot = pooling_rng.uniform() < 0.25;
      const double normal = pooling_rng.normal();
      pooling[j] = one_hot ? 1.0 : std::clamp(12.0 * std::exp(normal), 1.0, 200.0);
      coverage[j] = coverage_rng.uniform() < 0.4 ? 0.9 + 0.1 * coverage_rng.uniform()
                                                 : std::pow(10.0, -2.3 + 2.3 * coverage_rng.uniform());
    }
    // Hash sizes: proportional to the weights, at least kMinTableRows, summing exactly to total.
    std::vector<std::int64_t> rows(n);
    std::int64_t sum = 0;
    std::size_t largest = 0;
    for (std::size_t j = 0; j < n; ++j) {
      rows[j] = std::max<std::int64_t>(kMinTableRows,
                                       static_cast<std::int64_t>(static_cast<double>(total) * weight[j] / weight_sum));
      sum += rows[j];
      if (rows[j] > rows[largest]) largest = j;
    }
    rows[largest] += total - sum;
    EMBSHARD_CHECK(rows[largest] >= kMinTableRows, name_, ": scale ", scale, " is too small");

    Task task;
    char id[128];
    std::snprintf(id, sizeof id, "recshard-%s-s%g-%03d", model.c_str(), scale, index);
    task.id = id;
    task.protocol = spec();
    task.seed = seed;
    task.workload.batch_size = batch;
    task.constraints.allow_uvm = true;
    task.topology = topology(scale, devices);
    const std::int64_t profile = batch * params_.get_int("profile_batches");
    for (std::size_t j = 0; j < n; ++j) {
      // The feature's distinct values (in RM1 hash units) land on H·(1 − e^(−values/H)) of the
      // H rows (birthday paradox, paper 004 §3.4): larger hash sizes leave more rows unused.
      const double values = value_ratio[j] * rm1_total * weight[j] / weight_sum;
      const auto hash = static_cast<double>(rows[j]);
      PoolTable model_table;
      model_table.id = static_cast<std::int64_t>(j);
      model_table.num_rows = rows[j];
      model_table.pooling_factor = pooling[j] * coverage[j];
      model_table.coverage = coverage[j];
      model_table.active_rows = std::clamp<std::int64_t>(std::llround(hash * -std::expm1(-values / hash)), 1, rows[j]);
      model_table.zipf_alpha = alpha[j];
      model_table.zipf_offset = offset[j];
      model_table.length_shape = 2.0;
      model_table.seed = derive_seed(task_seed, 1000 + j);
      TableSpec t;
      t.name = "emb" + std::to_string(j);
      t.dim = static_cast<int>(params_.get_int("dim"));
      t.dtype = WeightType::kF32;
      t.stats = expected_table_stats(model_table, batch);
      // RecShard profiles the skew on a sample of the training data (§4.1), not on one batch.
      t.stats.icdf = expected_table_stats(model_table, profile).icdf;
      task.workload.tables.push_back(std::move(t));
    }
    check_task(task, task.id);
    return task;
  }

 private:
  [[nodiscard]] Topology topology(double scale, int devices) const {
    const int per_node = std::min(devices, 16);
    EMBSHARD_CHECK(devices % per_node == 0, name_, ": ", devices, " devices do not fill whole nodes of 16");
    Topology t = make_topology("a100:nodes=" + std::to_string(devices / per_node) +
                               ",gpus_per_node=" + std::to_string(per_node));
    for (Device& d : t.devices) {
      d.hbm_bytes = std::llround(params_.get_float("hbm_gib") * scale * kGiB);
      d.uvm_bytes = std::llround(params_.get_float("host_gib") * scale * kGiB);
      d.uvm_gbps = params_.get_float("uvm_gbps");
    }
    t.name = "custom";
    return t;
  }

  std::string name_;
  Params params_;
};

template <typename Protocol>
Registry<TaskGenerator>::Factory factory_of(const char* name) {
  return [name](const Params& p, const Context&) { return std::make_unique<Protocol>(name, p); };
}

Registry<TaskGenerator> build_registry() {
  Registry<TaskGenerator> r("task protocol");
  auto neuro = common_params(4, 128, "4", "fp32");
  neuro.push_back({"min_tables_per_device",
                   ParamType::kInt,
                   "5",
                   1,
                   10000,
                   {},
                   "tables per task at least this x devices / 2 (10 on 4 devices)"});
  neuro.push_back({"max_tables_per_device",
                   ParamType::kInt,
                   "15",
                   1,
                   10000,
                   {},
                   "tables per task below this x devices (60 on 4 devices)"});
  neuro.push_back({"tables",
                   ParamType::kInt,
                   "0",
                   0,
                   65536,
                   {},
                   "exactly this many tables per task (0: drawn between the per-device bounds; the scale suite)"});
  r.add({"neuroshard", "NeuroShard Table 5: 10-60 (4 dev) / 20-120 (8 dev) tables, dims 4..max_dim", neuro},
        factory_of<NeuroShardProtocol>("neuroshard"));
  auto dream = common_params(4, 16, "5", "fp16");
  dream.push_back({"tables", ParamType::kInt, "50", 1, 100000, {}, "tables per task (DLRM-N)"});
  dream.push_back({"split",
                   ParamType::kString,
                   "train",
                   {},
                   {},
                   {"train", "test"},
                   "which half of the shuffled pool the tables come from"});
  dream.push_back({"split_seed",
                   ParamType::kInt,
                   "0",
                   0,
                   1e15,
                   {},
                   "seed of the pool's shuffle into halves, independent of the task seed"});
  r.add({"dreamshard", "DreamShard DLRM-N (D): disjoint train/test table halves, dim max_dim, fp16", dream},
        factory_of<DreamShardProtocol>("dreamshard"));
  auto autos = common_params(8, 32, "7", "fp16");
  autos.push_back({"tables_per_device", ParamType::kInt, "10", 1, 10000, {}, "tables per device (80 on 8 devices)"});
  autos.push_back({"split",
                   ParamType::kString,
                   "train",
                   {},
                   {},
                   {"train", "test", "train_half", "test_half"},
                   "train / test: independent draws from the whole pool; train_half / test_half: the "
                   "unseen-table setting (paper 001 5.5), the pool in halves by split_seed"});
  autos.push_back({"unseen_ratio",
                   ParamType::kFloat,
                   "1",
                   0.0,
                   1.0,
                   {},
                   "split=test_half: the share of a task's tables from the second half (the rest from the first)"});
  autos.push_back({"split_seed",
                   ParamType::kInt,
                   "0",
                   0,
                   1e15,
                   {},
                   "seed of the pool's shuffle into halves (train_half / test_half), independent of the task seed"});
  r.add({"autoshard", "AutoShard: 10 tables per device (80 on 8 .. 800 on 80), dims max_dim/2 or max_dim", autos},
        factory_of<AutoShardProtocol>("autoshard"));
  r.add({"recshard",
         "RecShard RM1/RM2/RM3 (paper 004 §5): 397 tables of dim 64, 1.33/2.66/5.32 B rows x scale, "
         "16 A100s with 24 GiB HBM and 128 GiB host memory each x scale, batch 16384",
         {{"model",
           ParamType::kString,
           "rm1",
           {},
           {},
           {"rm1", "rm2", "rm3"},
           "which model: total hash size 1,331,656,544 / 2,661,369,917 / 5,320,796,628 rows"},
          {"scale",
           ParamType::kFloat,
           "1",
           1e-6,
           1.0,
           {},
           "multiplies every hash size and both memory capacities (the HBM-vs-total pressure stays)"},
          {"tables",
           ParamType::kInt,
           "397",
           1,
           100000,
           {},
           "sparse features; the total hash size scales with tables / 397"},
          {"dim", ParamType::kInt, "64", 4, 2048, {}, "embedding dim of every table"},
          {"devices", ParamType::kInt, "16", 1, 4096, {}, "GPUs (16 per node)"},
          {"hbm_gib", ParamType::kFloat, "24", 0.0, 1e6, {}, "HBM per GPU reserved for embeddings at scale 1, GiB"},
          {"host_gib", ParamType::kFloat, "128", 0.0, 1e7, {}, "host DRAM per GPU for UVM at scale 1, GiB"},
          {"uvm_gbps",
           ParamType::kFloat,
           "15.75",
           0.001,
           1e6,
           {},
           "UVM bandwidth per GPU, GB/s (PCIe 3.0 x16, the paper's system)"},
          {"batch_size", ParamType::kInt, "16384", 1, 1 << 24, {}, "global batch size"},
          {"profile_batches",
           ParamType::kInt,
           "1024",
           1,
           1 << 20,
           {},
           "the ICDF is profiled over this many batches of samples (paper 004 §4.1)"}}},
        factory_of<RecShardProtocol>("recshard"));
  return r;
}

}  // namespace

/** Expected statistics of pool tables, computed once each. */
struct TableSource::Cache {
  std::mutex mutex;
  std::vector<std::optional<TableStats>> stats;
};

TableSource TableSource::from_pool(std::uint64_t seed, std::int64_t batch_size) {
  TableSource s;
  s.pool_ = std::make_shared<const Pool>(Pool::generate(seed));
  s.batch_size_ = batch_size;
  s.cache_ = std::make_shared<Cache>();
  s.cache_->stats.resize(s.pool_->tables().size());
  return s;
}

TableSource TableSource::from_stats(std::vector<TableStats> tables) {
  EMBSHARD_CHECK(!tables.empty(), "the statistics file lists no tables");
  TableSource s;
  s.tables_ = std::move(tables);
  return s;
}

std::size_t TableSource::size() const { return pool_ ? pool_->tables().size() : tables_.size(); }

std::int64_t TableSource::num_rows(std::size_t i) const {
  return pool_ ? pool_->table(static_cast<std::int64_t>(i)).num_rows : tables_.at(i).num_rows;
}

TableStats TableSource::stats(std::size_t i) const {
  if (!pool_) return tables_.at(i);
  {
    const std::lock_guard<std::mutex> lock(cache_->mutex);
    if (const auto& hit = cache_->stats.at(i)) return *hit;
  }
  TableStats s = pool_->expected_stats(static_cast<std::int64_t>(i), batch_size_);
  const std::lock_guard<std::mutex> lock(cache_->mutex);
  cache_->stats[i] = s;
  return s;
}

const Registry<TaskGenerator>& task_protocol_registry() {
  static const Registry<TaskGenerator> registry = build_registry();
  return registry;
}

std::unique_ptr<TaskGenerator> make_task_generator(const std::string& spec) {
  return task_protocol_registry().create(spec, Context{});
}

std::string task_file_path(const std::string& dir, int index) {
  char name[32];
  std::snprintf(name, sizeof name, "/%03d.json", index);
  return dir + name;
}

std::vector<std::string> write_tasks(const TaskGenerator& gen, const TableSource& source, std::uint64_t seed, int count,
                                     const std::string& dir) {
  std::vector<std::string> paths;
  for (int i = 0; i < count; ++i) {
    paths.push_back(task_file_path(dir, i));
    write_task_file(paths.back(), gen.generate(source, seed, i));
  }
  return paths;
}

Task default_task() {
  const auto gen = make_task_generator("neuroshard");
  return gen->generate(TableSource::from_pool(0, gen->batch_size()), 0, 0);
}

}  // namespace embshard
