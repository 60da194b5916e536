#include "eval/measured_model.h"

#include <optional>

#include "embshard/core/error.h"
#include "embshard/data/pool.h"
#include "embshard/profile/shard_bench.h"

namespace embshard::detail {
namespace {

class MeasuredModel final : public ComputeModel {
 public:
  MeasuredModel(const Task& task, kernels::EmbeddingBagImpl impl, const EvalOptions& options)
      : impl_(impl), options_(options) {
    if (options_.batch_size <= 0) options_.batch_size = task.workload.batch_size;
    for (std::size_t t = 0; t < task.workload.tables.size(); ++t) {
      models_.push_back(lookup_model(task, t));
    }
  }

  [[nodiscard]] std::string spec() const override {
    return concat(kernels::to_string(impl_), ":batch=", options_.batch_size,
                  ",repeats=", options_.measure.repeats, ",warmup=", options_.measure.warmup);
  }
  [[nodiscard]] CostSource source() const override { return CostSource::kMeasured; }
  [[nodiscard]] std::string detail() const override {
    return concat(kernels::to_string(impl_), " kernels, batch ", options_.batch_size, ", median of ",
                  options_.measure.repeats, " after ", options_.measure.warmup, " warm-up",
                  options_.measure.flush_cache ? ", cache flushed" : "");
  }

  [[nodiscard]] DeviceCompute device_compute(const Task& task, std::span<const PlacedShard> shards,
                                             const Context&) override {
    std::vector<ShardTableSpec> specs;
    for (const PlacedShard& p : shards) {
      const TableSpec& table = task.workload.tables[static_cast<std::size_t>(p.table)];
      specs.push_back({models_[static_cast<std::size_t>(p.table)], p.shard.num_cols(), table.dtype,
                       p.shard.row_begin, p.shard.row_end});
    }
    ShardBench bench(std::move(specs), options_.batch_size, options_.batch_number, impl_);
    const ShardTiming timing = bench.measure(options_.measure);
    return {timing.fw.median_ms, timing.bw.median_ms};
  }

 private:
  /** The pool table a task table came from, else a model fitted to its statistics. */
  PoolTable lookup_model(const Task& task, std::size_t t) {
    const TableSpec& table = task.workload.tables[t];
    if (table.source_id < 0) return model_from_stats(table.stats, derive_seed(task.seed, t));
    if (!pool_) pool_ = Pool::generate(task.pool_seed);
    EMBSHARD_CHECK(table.source_id < static_cast<std::int64_t>(pool_->tables().size()),
                   "task table '", table.name, "': pool_id ", table.source_id, " is not in pool ",
                   task.pool_seed);
    const PoolTable& model = pool_->table(table.source_id);
    EMBSHARD_CHECK(model.num_rows == table.num_rows(), "task table '", table.name,
                   "': pool_id ", table.source_id, " of pool ", task.pool_seed, " has ",
                   model.num_rows, " rows but the task says ", table.num_rows(),
                   " (was the task made from another pool?)");
    return model;
  }

  kernels::EmbeddingBagImpl impl_;
  EvalOptions options_;
  std::optional<Pool> pool_;
  std::vector<PoolTable> models_;
};

}  // namespace

std::unique_ptr<ComputeModel> make_measured_model(const Task& task, kernels::EmbeddingBagImpl impl,
                                                  const EvalOptions& options) {
  return std::make_unique<MeasuredModel>(task, impl, options);
}

}  // namespace embshard::detail
