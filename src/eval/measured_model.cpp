#include "eval/measured_model.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/core/spec.h"
#include "embshard/cost/link_model.h"
#include "embshard/data/remap.h"
#include "embshard/kernels/cuda_embedding_bag.h"
#include "embshard/profile/measure.h"

namespace embshard::detail {

MeasuredShards::MeasuredShards(const Task& task) : models_(task_lookup_models(task)) {}

const std::vector<std::int64_t>& MeasuredShards::access_counts(const Task& task, std::size_t t, std::int64_t batch_size,
                                                               std::uint64_t batch_number, bool held_out) {
  const auto key = std::make_tuple(t, batch_size, batch_number, held_out);
  auto it = counts_.find(key);
  if (it != counts_.end()) return it->second;
  const PoolTable& model = models_[t];
  std::vector<TableBatch> profile;
  if (!held_out) {
    profile.push_back(materialise_table(model, batch_size, batch_number));  // ShardTimer's draw
  } else {
    // The task's batch; draw numbers derived from (never equal to) the measured draw's.
    for (int i = 0; i < kRemapProfileBatches; ++i) {
      std::uint64_t number = derive_seed(batch_number, 0x7265636d6170ULL + static_cast<std::uint64_t>(i));
      if (number == batch_number) ++number;
      profile.push_back(materialise_table(model, task.workload.batch_size, number));
    }
  }
  return counts_.emplace(key, count_row_accesses(profile, model.num_rows)).first->second;
}

std::vector<ShardTableSpec> MeasuredShards::specs(const Task& task, std::span<const PlacedShard> shards,
                                                  std::int64_t batch_size, std::uint64_t batch_number, bool held_out) {
  std::vector<ShardTableSpec> specs;
  for (const PlacedShard& p : shards) {
    const auto t = static_cast<std::size_t>(p.table);
    const TableSpec& table = task.workload.tables[t];
    ShardTableSpec spec{models_[t], p.shard.num_cols(), table.dtype, p.shard.row_begin, p.shard.row_end};
    spec.pooled = table.pooled;
    if (p.shard.hbm_rows >= 0 && p.shard.hbm_rows < p.shard.num_rows()) {
      spec.hbm_rows = p.shard.hbm_rows;
      spec.remap = std::make_shared<const RowRemap>(
          build_remap(table.name, access_counts(task, t, batch_size, batch_number, held_out), p.shard.hbm_rows,
                      p.shard.row_begin, p.shard.row_end));
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::int64_t measured_batch_size(const Task& task, std::int64_t batch) {
  return batch > 0 ? batch : task.workload.batch_size;
}

DeviceCalls device_calls(std::span<const PlacedShard> shards, std::int64_t batch_size) {
  DeviceCalls calls;
  for (const PlacedShard& p : shards) (p.is_replica() ? calls.copies : calls.shards).push_back(p);
  calls.copy_batch =
      calls.copies.empty() ? batch_size : std::max<std::int64_t>(1, batch_size / calls.copies.front().replicas);
  return calls;
}

namespace {

/**
 * About the most a fused call of `shards` at `batch` holds at once (profile/shard_timer.h): each
 * table's drawn batch (int64 indices and offsets), the int32 indices kept for the shard, and the
 * fp32 output and its gradient (a sequence table's: a row per lookup, TableSpec::output_width). Checked before
 * measuring, so a batch too big is an error with the estimate, not std::bad_alloc.
 */
std::uint64_t fused_call_bytes(const Task& task, std::span<const PlacedShard> shards, std::int64_t batch) {
  double bytes = 0.0;
  for (const PlacedShard& p : shards) {
    const TableSpec& table = task.workload.tables[static_cast<std::size_t>(p.table)];
    const double lookups = table.stats.pooling_factor * static_cast<double>(batch);
    const double width = table.output_width(p.shard.num_cols(), table.row_share(p.shard.num_rows()));
    bytes += lookups * (8 + 4) + static_cast<double>(batch) * (8 + 8) + static_cast<double>(batch) * width * 4 * 2;
  }
  return bytes >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(bytes);
}

class MeasuredModel final : public ComputeModel {
 public:
  MeasuredModel(const Task& task, kernels::EmbeddingBagImpl impl, const MeasuredOptions& options)
      : impl_(impl), options_(options), shards_(task) {
    options_.batch = measured_batch_size(task, options_.batch);
  }

  [[nodiscard]] std::string spec() const override {
    return concat("measured:impl=", kernels::to_string(impl_), ",batch=", options_.batch);
  }
  [[nodiscard]] std::int64_t batch_size() const { return options_.batch; }
  [[nodiscard]] CostSource source() const override { return CostSource::kMeasured; }
  [[nodiscard]] std::string detail() const override {
    return concat(kernels::to_string(impl_), " kernels, batch ", options_.batch, ", median of ",
                  options_.measure.repeats, " after ", options_.measure.warmup, " warm-up",
                  options_.measure.flush_cache ? ", cache flushed" : "");
  }

  /** The device's shards as one fused call; its copies of data-parallel tables as a second one
   *  over its share of the batch, then their dense optimizer step (evaluator.h). */
  [[nodiscard]] DeviceCompute device_compute(const Task& task, std::span<const PlacedShard> shards,
                                             const Context&) override {
    const DeviceCalls calls = device_calls(shards, options_.batch);
    const DeviceCompute c = time_fused(task, calls.shards, options_.batch);
    if (calls.copies.empty()) return c;
    const DeviceCompute replicas = time_fused(task, calls.copies, calls.copy_batch);
    std::int64_t elements = 0;  // fp32 elements of the same bytes (the timers update floats)
    for (const PlacedShard& p : calls.copies)
      elements += (task.workload.tables[static_cast<std::size_t>(p.table)].weight_bytes() + 3) / 4;
    const double update_ms =
        impl_ == kernels::EmbeddingBagImpl::kCuda
            ? summarise(kernels::cuda_dense_update_ms(elements, options_.measure.repeats), options_.measure.trim)
                  .median_ms
            : measure_dense_update(elements, options_.measure).median_ms;
    return {c.fw_ms + replicas.fw_ms, c.bw_ms + replicas.bw_ms + update_ms};
  }

 private:
  DeviceCompute time_fused(const Task& task, std::span<const PlacedShard> shards, std::int64_t batch) {
    if (shards.empty()) return {};
    check_fits_in_memory(fused_call_bytes(task, shards, batch),
                         concat("measuring ", shards.size(), " shards at batch ", batch, " (eval --batch)"));
    ShardTimer bench(shards_.specs(task, shards, batch, options_.draw, options_.remap_held_out), batch, options_.draw,
                     impl_);
    const ShardTiming timing = bench.measure(options_.measure);
    return {timing.fw.median_ms, timing.bw.median_ms};
  }

  kernels::EmbeddingBagImpl impl_;
  MeasuredOptions options_;
  MeasuredShards shards_;
};

const std::vector<ParamSpec>& measured_params() {
  static const std::vector<ParamSpec> params = with_input_comm_params(
      {{"impl",
        ParamType::kString,
        "cpu",
        {},
        {},
        {"reference", "cpu", "cuda"},
        "kernels to time (cuda: where built, with a GPU)"},
       {"batch", ParamType::kInt, "0", 0, 1 << 24, {}, "batch to run; 0: the task's"},
       {"warmup", ParamType::kInt, "2", 0, 1000, {}, "unmeasured runs before the measured ones"},
       {"repeats", ParamType::kInt, "5", 1, 100000, {}, "measured runs; the median is the cost"},
       {"flush", ParamType::kBool, "true", {}, {}, {}, "flush the caches before every run"},
       {"trim", ParamType::kFloat, "0.2", 0, 0.49, {}, "share dropped from each end for the trimmed mean"},
       {"draw", ParamType::kInt, "0", 0, 1e15, {}, "which draw of each table's lookups"},
       {"remap",
        ParamType::kString,
        "in_sample",
        {},
        {},
        {"in_sample", "held_out"},
        "rank rows for RecShard's remap by the measured draw itself, or by other draws"}});
  return params;
}

kernels::EmbeddingBagImpl built_impl(const std::string& name) {
  for (const kernels::EmbeddingBagImpl impl : kernels::embedding_bag_impls()) {
    if (name != kernels::to_string(impl)) continue;
    EMBSHARD_CHECK(impl != kernels::EmbeddingBagImpl::kCuda || kernels::cuda_device_available(),
                   "measured: impl 'cuda' is built but no GPU is visible");
    return impl;
  }
  EMBSHARD_THROW("measured: impl '", name, "' is not available: embshard was built without it");
}

/** The kernels of `impl` timed here for compute, the link model at the same batch for comm. */
class MeasuredCostModel final : public CostModel {
 public:
  MeasuredCostModel(const Task& task, const MeasuredOptions& options, Params params)
      : compute_(task, built_impl(options.impl), options),
        comm_(make_link_comm_model(task.topology, compute_.batch_size(), input_comm_options(params))),
        params_(std::move(params)) {}

  [[nodiscard]] std::string spec() const override {
    Spec spec = parse_spec(canonical_spec("measured", params_));
    set_spec_value(spec, "batch", std::to_string(compute_.batch_size()));  // 0 resolved
    return format_spec(spec);
  }
  [[nodiscard]] ComputeModel& compute() override { return compute_; }
  [[nodiscard]] CommModel& comm() override { return *comm_; }
  [[nodiscard]] std::optional<double> lower_bound(const Task&, Objective) const override { return std::nullopt; }
  [[nodiscard]] std::int64_t batch_size(const Task&) const override { return compute_.batch_size(); }
  [[nodiscard]] bool measures() const override { return true; }

 private:
  MeasuredModel compute_;
  std::unique_ptr<CommModel> comm_;
  Params params_;
};

}  // namespace

MeasuredOptions measured_options(const Params& p) {
  MeasuredOptions options;
  options.impl = p.get_string("impl");
  options.batch = p.get_int("batch");
  options.measure = {static_cast<int>(p.get_int("warmup")), static_cast<int>(p.get_int("repeats")), p.get_bool("flush"),
                     p.get_float("trim")};
  const std::string problem = find_error_in_measure_options(options.measure);
  EMBSHARD_CHECK(problem.empty(), "measured: ", problem);
  options.draw = static_cast<std::uint64_t>(p.get_int("draw"));
  options.remap_held_out = p.get_string("remap") == "held_out";
  return options;
}

MeasuredOptions measured_options_of(const std::string& judge_spec) {
  const Spec spec = parse_spec(judge_spec);
  if (spec.name != "measured") return measured_options(bind_params("measured", measured_params(), {}));
  return measured_options(bind_params("measured", measured_params(), spec.pairs));
}

void register_measured_cost_model(CostModelRegistry& registry) {
  registry.add({"measured",
                "each device's shards timed on this machine's kernels, plus the link model (the judge of eval "
                "--backend cpu|reference|cuda)",
                measured_params()},
               [](const Params& p, const Context&, const Task& task) -> std::unique_ptr<CostModel> {
                 return std::make_unique<MeasuredCostModel>(task, measured_options(p), p);
               });
}

}  // namespace embshard::detail
