#include "embshard/profile/shard_timer.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/kernels/cuda_embedding_bag.h"

namespace embshard {

ShardTimer::ShardTimer(std::vector<ShardTableSpec> tables, std::int64_t batch_size, std::uint64_t batch_number,
                       kernels::EmbeddingBagImpl impl, kernels::OptimizerConfig optimizer)
    : batch_size_(batch_size), impl_(impl), optimizer_(optimizer) {
  EMBSHARD_CHECK(batch_size > 0, "shard bench: batch size must be positive, got ", batch_size);
  const bool adagrad = optimizer.kind == kernels::OptimizerKind::kRowwiseAdagrad;
  std::int64_t total_dim = 0;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    ShardTableSpec& spec = tables[t];
    if (spec.row_end < 0) spec.row_end = spec.model.num_rows;
    EMBSHARD_CHECK(spec.row_begin >= 0 && spec.row_begin < spec.row_end && spec.row_end <= spec.model.num_rows,
                   "shard bench: table ", t, ": bad row range [", spec.row_begin, ", ", spec.row_end, ") of ",
                   spec.model.num_rows, " rows");
    EMBSHARD_CHECK(spec.row_end - spec.row_begin <= std::numeric_limits<std::int32_t>::max(), "shard bench: table ", t,
                   ": ", spec.row_end - spec.row_begin,
                   " rows need int64 indices, which the measured kernels are not set up for");
    const std::size_t first = indices_.size();
    append_lookups(spec, batch_number);
    LazyTable& table = tables_.emplace_back(spec.row_end - spec.row_begin, spec.dim, spec.dtype, adagrad,
                                            derive_seed(spec.model.seed, 0x7ab1e));
    std::vector<std::int32_t> touched(indices_.begin() + static_cast<std::ptrdiff_t>(first), indices_.end());
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    table.materialise(touched);
    touched_rows_.push_back(std::move(touched));
    const std::int64_t rows = spec.row_end - spec.row_begin;
    EMBSHARD_CHECK(spec.hbm_rows <= rows, "shard bench: table ", t, ": hbm_rows ", spec.hbm_rows, " above its ", rows,
                   " rows");
    hbm_rows_.push_back(spec.hbm_rows < 0 ? -1 : spec.hbm_rows);
    views_.push_back(table.view());
    total_dim += spec.dim;
  }
  const auto output_floats = static_cast<std::size_t>(batch_size * total_dim);
  out_.assign(output_floats, 0.0f);
  grad_out_.assign(output_floats, 1e-3f);
}

void ShardTimer::append_lookups(const ShardTableSpec& spec, std::uint64_t batch_number) {
  TableBatch batch = materialise_table(spec.model, batch_size_, batch_number);
  if (spec.remap) {
    EMBSHARD_CHECK(spec.remap->num_rows() == spec.model.num_rows, "shard bench: remap of table '", spec.remap->table,
                   "' has ", spec.remap->num_rows(), " rows, the table ", spec.model.num_rows);
    apply_remap(*spec.remap, batch);
  }
  for (std::int64_t b = 0; b < batch_size_; ++b) {
    for (std::int64_t p = batch.offsets[b]; p < batch.offsets[b + 1]; ++p) {
      const std::int64_t row = batch.indices[static_cast<std::size_t>(p)];
      if (row >= spec.row_begin && row < spec.row_end) {
        indices_.push_back(static_cast<std::int32_t>(row - spec.row_begin));
      }
    }
    offsets_.push_back(static_cast<std::int64_t>(indices_.size()));
  }
}

std::span<const std::int32_t> ShardTimer::table_lookups(std::size_t t) const {
  EMBSHARD_CHECK(t < tables_.size(), "shard bench: table ", t, " of ", tables_.size());
  const auto begin = static_cast<std::size_t>(offsets_[t * static_cast<std::size_t>(batch_size_)]);
  const auto end = static_cast<std::size_t>(offsets_[(t + 1) * static_cast<std::size_t>(batch_size_)]);
  return std::span<const std::int32_t>(indices_).subspan(begin, end - begin);
}

void ShardTimer::check(const kernels::KernelStatus& status, const char* what) const {
  if (!status.ok()) {  // the lookups were generated in range: a failure is a bug
    throw InternalError(
        detail::concat("shard bench: ", what, " failed: ", kernels::to_string(status.error), " at ", status.position));
  }
}

void ShardTimer::flush_operands() const {
  const auto vector_bytes = [](const auto& v) { return v.size() * sizeof(v[0]); };
  evict_lines(indices_.data(), vector_bytes(indices_));
  evict_lines(offsets_.data(), vector_bytes(offsets_));
  evict_lines(out_.data(), vector_bytes(out_));
  evict_lines(grad_out_.data(), vector_bytes(grad_out_));
  for (std::size_t t = 0; t < views_.size(); ++t) {
    const kernels::TableView& view = views_[t];
    const std::size_t row_bytes =
        static_cast<std::size_t>(view.dim) * static_cast<std::size_t>(kernels::weight_bytes(view.dtype));
    for (const std::int32_t row : touched_rows_[t]) {
      evict_lines(static_cast<const char*>(view.weights) + static_cast<std::size_t>(row) * row_bytes, row_bytes);
      if (view.momentum != nullptr) evict_lines(view.momentum + row, sizeof(float));
    }
  }
}

ShardTiming ShardTimer::measure(const MeasureOptions& options) {
  ShardTiming timing;
  timing.num_lookups = num_lookups();
  for (const LazyTable& t : tables_) {
    timing.reserved_bytes += t.reserved_bytes();
    timing.resident_bytes += t.resident_bytes();
  }
  if (tables_.empty()) {
    timing.fw = summarise({0.0}, 0.0);
    timing.bw = timing.fw;
    return timing;
  }
  const kernels::BagBatch batch = kernels::BagBatch::of(batch_size_, offsets_, indices_);
  if (impl_ == kernels::EmbeddingBagImpl::kCuda) return measure_on_gpu(batch, options, timing);
  timing.fw = embshard::measure([&] { check(kernels::embedding_bag_forward(impl_, views_, batch, out_), "forward"); },
                                options, [this] { flush_operands(); });
  timing.bw = embshard::measure(
      [&] { check(kernels::embedding_bag_backward(impl_, views_, batch, grad_out_, optimizer_), "backward"); }, options,
      [this] { flush_operands(); });
  return timing;
}

ShardTiming ShardTimer::measure_on_gpu(const kernels::BagBatch& batch, const MeasureOptions& options,
                                       ShardTiming timing) {
  // Uploads tables and lookups once; a tiered table's rows from hbm_rows on go to mapped host memory.
  kernels::CudaEmbeddingBag gpu(views_, batch, hbm_rows_);
  gpu.set_grad_output(grad_out_);
  timing.fw = measure_self_timed([&] { return gpu.elapsed_ms([&] { check(gpu.forward(), "forward"); }); }, options);
  timing.bw =
      measure_self_timed([&] { return gpu.elapsed_ms([&] { check(gpu.backward(optimizer_), "backward"); }); }, options);
  return timing;
}

Timing measure_dense_update(std::int64_t elements, const MeasureOptions& options) {
  if (elements <= 0) return summarise({0.0}, options.trim);
  std::vector<float> weights(static_cast<std::size_t>(elements), 0.5f);
  std::vector<float> gradient(static_cast<std::size_t>(elements), 0.0f);
  const std::size_t bytes = gradient.size() * sizeof(float);
  const auto flush = [&] {
    evict_lines(weights.data(), bytes);
    evict_lines(gradient.data(), bytes);
  };
  return measure(
      [&] {
        for (std::size_t i = 0; i < gradient.size(); ++i) {
          weights[i] -= 0.01f * gradient[i];
          gradient[i] = 0.0f;
        }
      },
      options, options.flush_cache ? std::function<void()>(flush) : std::function<void()>());
}

}  // namespace embshard
