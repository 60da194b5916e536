#include "embshard/profile/shard_timer.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
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
  std::optional<std::size_t> pooled_call;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    ShardTableSpec& spec = tables[t];
    if (spec.row_end < 0) spec.row_end = spec.model.num_rows;
    EMBSHARD_CHECK(spec.row_begin >= 0 && spec.row_begin < spec.row_end && spec.row_end <= spec.model.num_rows,
                   "shard bench: table ", t, ": bad row range [", spec.row_begin, ", ", spec.row_end, ") of ",
                   spec.model.num_rows, " rows");
    EMBSHARD_CHECK(spec.row_end - spec.row_begin <= std::numeric_limits<std::int32_t>::max(), "shard bench: table ", t,
                   ": ", spec.row_end - spec.row_begin,
                   " rows need int64 indices, which the measured kernels are not set up for");
    const std::int64_t rows = spec.row_end - spec.row_begin;
    EMBSHARD_CHECK(spec.hbm_rows <= rows, "shard bench: table ", t, ": hbm_rows ", spec.hbm_rows, " above its ", rows,
                   " rows");
    if (spec.pooled && !pooled_call) {
      pooled_call = calls_.size();
      calls_.emplace_back().bags = batch_size;
    }
    const std::size_t c = spec.pooled ? *pooled_call : calls_.size();
    if (!spec.pooled) calls_.emplace_back();
    Call& call = calls_[c];
    where_.emplace_back(c, call.views.size());
    const std::size_t first = call.indices.size();
    append_lookups(spec, batch_number, call);
    LazyTable& table = tables_.emplace_back(rows, spec.dim, spec.dtype, adagrad, derive_seed(spec.model.seed, 0x7ab1e));
    std::vector<std::int32_t> touched(call.indices.begin() + static_cast<std::ptrdiff_t>(first), call.indices.end());
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    table.materialise(touched);
    touched_rows_.push_back(std::move(touched));
    call.hbm_rows.push_back(spec.hbm_rows < 0 ? -1 : spec.hbm_rows);
    call.views.push_back(table.view());
    call.total_dim += spec.dim;
  }
  std::size_t output_floats = 0;
  for (const Call& call : calls_) output_floats = std::max(output_floats, call.output_floats());
  out_.assign(output_floats, 0.0f);
  grad_out_.assign(output_floats, 1e-3f);
}

void ShardTimer::append_lookups(const ShardTableSpec& spec, std::uint64_t batch_number, Call& call) const {
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
        call.indices.push_back(static_cast<std::int32_t>(row - spec.row_begin));
        if (!spec.pooled) call.offsets.push_back(static_cast<std::int64_t>(call.indices.size()));
      }
    }
    if (spec.pooled) call.offsets.push_back(static_cast<std::int64_t>(call.indices.size()));
  }
  if (!spec.pooled) call.bags = static_cast<std::int64_t>(call.indices.size());
}

std::int64_t ShardTimer::num_lookups() const {
  std::int64_t n = 0;
  for (const Call& call : calls_) n += static_cast<std::int64_t>(call.indices.size());
  return n;
}

std::span<const std::int32_t> ShardTimer::table_lookups(std::size_t t) const {
  EMBSHARD_CHECK(t < tables_.size(), "shard bench: table ", t, " of ", tables_.size());
  const Call& call = calls_[where_[t].first];
  const auto bags = static_cast<std::size_t>(call.bags);
  const auto begin = static_cast<std::size_t>(call.offsets[where_[t].second * bags]);
  const auto end = static_cast<std::size_t>(call.offsets[(where_[t].second + 1) * bags]);
  return std::span<const std::int32_t>(call.indices).subspan(begin, end - begin);
}

std::int64_t ShardTimer::output_rows(std::size_t t) const {
  EMBSHARD_CHECK(t < tables_.size(), "shard bench: table ", t, " of ", tables_.size());
  return calls_[where_[t].first].bags;
}

void ShardTimer::check(const kernels::KernelStatus& status, const char* what) const {
  if (!status.ok()) {  // the lookups were generated in range: a failure is a bug
    throw InternalError(
        detail::concat("shard bench: ", what, " failed: ", kernels::to_string(status.error), " at ", status.position));
  }
}

void ShardTimer::flush_operands() const {
  const auto vector_bytes = [](const auto& v) { return v.size() * sizeof(v[0]); };
  evict_lines(out_.data(), vector_bytes(out_));
  evict_lines(grad_out_.data(), vector_bytes(grad_out_));
  for (const Call& call : calls_) {
    evict_lines(call.indices.data(), vector_bytes(call.indices));
    evict_lines(call.offsets.data(), vector_bytes(call.offsets));
  }
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    const kernels::TableView& view = calls_[where_[t].first].views[where_[t].second];
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
  if (impl_ == kernels::EmbeddingBagImpl::kCuda) return measure_on_gpu(options, timing);
  const auto output = [this](const Call& call) { return std::span<float>(out_).first(call.output_floats()); };
  const auto gradient = [this](const Call& call) {
    return std::span<const float>(grad_out_).first(call.output_floats());
  };
  timing.fw = embshard::measure(
      [&] {
        for (const Call& call : calls_)
          check(kernels::embedding_bag_forward(impl_, call.views, call.batch(), output(call)), "forward");
      },
      options, [this] { flush_operands(); });
  timing.bw = embshard::measure(
      [&] {
        for (const Call& call : calls_)
          check(kernels::embedding_bag_backward(impl_, call.views, call.batch(), gradient(call), optimizer_),
                "backward");
      },
      options, [this] { flush_operands(); });
  return timing;
}

ShardTiming ShardTimer::measure_on_gpu(const MeasureOptions& options, ShardTiming timing) {
  // Uploads tables and lookups once; a tiered table's rows from hbm_rows on go to mapped host memory.
  std::vector<std::unique_ptr<kernels::CudaEmbeddingBag>> gpu;
  for (const Call& call : calls_) {
    if (call.bags == 0) continue;  // a sequence row piece that serves no lookup of this batch
    gpu.push_back(std::make_unique<kernels::CudaEmbeddingBag>(call.views, call.batch(), call.hbm_rows));
    gpu.back()->set_grad_output(std::span<const float>(grad_out_).first(call.output_floats()));
  }
  const auto timed = [&](auto pass) {
    return measure_self_timed(
        [&] {
          double ms = 0.0;
          for (auto& g : gpu) ms += g->elapsed_ms([&] { pass(*g); });
          return ms;
        },
        options);
  };
  timing.fw = timed([&](kernels::CudaEmbeddingBag& g) { check(g.forward(), "forward"); });
  timing.bw = timed([&](kernels::CudaEmbeddingBag& g) { check(g.backward(optimizer_), "backward"); });
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
