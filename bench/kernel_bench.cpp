// embshard_kernel_bench: CPU (and, when built with CUDA and a GPU is visible, GPU) embedding-bag
// throughput, next to this machine's streaming-read and random-row-gather bandwidth so that the
// numbers normalise themselves.
//
// Prints CSV: kind,dim,batch,pooling,rows,dtype,impl,median_ms,gbps
//   kind = forward | forward_backward_sgd | gather | stream | hbm_peak
//   GPU rows: impl = cuda, timed with cudaEvents on the device-resident CudaEmbeddingBag (tables,
//   indices and grad_out uploaded once; the kernels alone are timed). Beside them: hbm_peak
//   (data-sheet 2 · memory clock · bus width, median_ms 0) and stream,impl=cuda_d2d_copy
//   (device-to-device cudaMemcpy of 1 GiB, GB/s = 2 · bytes / t).
// Setup: one fp32 table of rows = min(4M, 2^30 / (4·dim)) rows (≤ 1 GiB), B = 65536, pooling
// L = 16, uniform random int32 indices; dims 4, 16, 32, 64, 128.
// Bytes model (FBGEMM's, see docs fbgemm-dlrm-data.md §3.1), indices not counted:
//   bytes = out_bytes·B·D + w_bytes·B·D·L        (out_bytes = w_bytes = 4)
//   forward GB/s = bytes / t;  forward+backward GB/s = 3·bytes / t
//   (FBGEMM reports the backward alone as 2·bytes / t; the fused pair is counted 1 + 2 here.)
// gather: memcpy of the forward's rows (same indices, same threads) into a small per-thread ring
//   buffer; GB/s = w_bytes·B·D·L / t. stream: sum of a 1 GiB float array; GB/s = 2^30 / t.
// Usage: embshard_kernel_bench [dim ...] (default: all five dims).
// Timing: the profile layer's discipline (profile/measure.h): 2 warm-up runs, 7 timed repeats,
// median; before each run `CacheFlusher` streams twice this machine's last-level cache (GPU rows:
// cudaEvents, `measure_self_timed`). Threads: OpenMP's default team (OMP_NUM_THREADS).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "embshard/kernels/cuda_embedding_bag.h"
#include "embshard/kernels/embedding_bag.h"
#include "embshard/profile/measure.h"

namespace {

using namespace embshard::kernels;

constexpr std::int64_t kBatch = 65536;
constexpr int kPooling = 16;
constexpr int kWarmups = 2;
constexpr int kRepeats = 7;

volatile float g_sink = 0.0f;  // keeps results alive

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/** Sum with 16 independent lanes (vectorises without reassociation flags). */
float sum_floats(const float* data, std::int64_t n) {
  float total = 0.0f;
  const std::int64_t chunks = n / 4096;
#ifdef _OPENMP
#pragma omp parallel for reduction(+ : total) schedule(static)
#endif
  for (std::int64_t c = 0; c < chunks; ++c) {
    float lanes[16] = {};
    const float* p = data + c * 4096;
    for (std::int64_t i = 0; i < 4096; i += 16) {
      for (int j = 0; j < 16; ++j) lanes[j] += p[i + j];
    }
    for (const float lane : lanes) total += lane;
  }
  return total;
}

const embshard::MeasureOptions kMeasure{kWarmups, kRepeats, true, 0.2};

/** Median wall time in ms of `run` (profile/measure.h: warm-ups, a cache flush before each run). */
double median_ms(const std::function<void()>& run) {
  static embshard::CacheFlusher flusher;
  return embshard::measure(run, kMeasure, [] { flusher.flush(); }).median_ms;
}

void print_row(const char* kind, int dim, std::int64_t batch, int pooling, std::int64_t rows, const char* impl,
               double ms, double bytes) {
  std::printf("%s,%d,%lld,%d,%lld,fp32,%s,%.3f,%.2f\n", kind, dim, static_cast<long long>(batch), pooling,
              static_cast<long long>(rows), impl, ms, bytes / (ms * 1e6));
  std::fflush(stdout);
}

void gather_rows(const float* table, int dim, const std::vector<std::int32_t>& indices) {
  const auto n = static_cast<std::int64_t>(indices.size());
  const std::size_t row_bytes = static_cast<std::size_t>(dim) * sizeof(float);
  float checksum = 0.0f;
#ifdef _OPENMP
#pragma omp parallel reduction(+ : checksum)
#endif
  {
    std::vector<float> ring(static_cast<std::size_t>(dim) * 64);
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
    for (std::int64_t p = 0; p < n; ++p) {
      std::memcpy(ring.data() + (p % 64) * dim, table + static_cast<std::int64_t>(indices[p]) * dim, row_bytes);
    }
    checksum += ring[0];
  }
  g_sink = g_sink + checksum;
}

/** Median device time in ms of `enqueue` (cudaEvents around it), after warm-ups. */
double median_cuda_ms(CudaEmbeddingBag& device, const std::function<void()>& enqueue) {
  embshard::MeasureOptions options = kMeasure;
  options.flush_cache = false;  // device-resident data: the host caches do not matter
  const embshard::Timing t = embshard::measure_self_timed([&] { return device.elapsed_ms(enqueue); }, options);
  return t.median_ms;
}

void bench_cuda(const TableView& table, const BagBatch& batch, const std::vector<float>& grad,
                const OptimizerConfig& sgd, double bytes) {
  CudaEmbeddingBag device({&table, 1}, batch);
  device.set_grad_output(grad);
  const auto forward = [&] {
    if (!device.forward().ok()) std::abort();
  };
  const double fwd_ms = median_cuda_ms(device, forward);
  print_row("forward", table.dim, kBatch, kPooling, table.rows, "cuda", fwd_ms, bytes);
  const double fwd_bwd_ms = median_cuda_ms(device, [&] {
    forward();
    if (!device.backward(sgd).ok()) std::abort();
  });
  print_row("forward_backward_sgd", table.dim, kBatch, kPooling, table.rows, "cuda", fwd_bwd_ms, 3 * bytes);
}

void bench_dim(int dim, std::uint64_t& rng) {
  const std::int64_t rows = std::min<std::int64_t>(4'000'000, (std::int64_t{1} << 30) / (dim * 4));
  std::vector<float> weights(static_cast<std::size_t>(rows * dim));
  for (float& w : weights) w = static_cast<float>(splitmix(rng) >> 40) * 0x1p-24f;
  std::vector<std::int32_t> indices(static_cast<std::size_t>(kBatch * kPooling));
  for (std::int32_t& i : indices) i = static_cast<std::int32_t>(splitmix(rng) % static_cast<std::uint64_t>(rows));
  std::vector<std::int64_t> offsets(kBatch + 1);
  for (std::int64_t b = 0; b <= kBatch; ++b) offsets[b] = b * kPooling;
  std::vector<float> out(static_cast<std::size_t>(kBatch * dim));
  std::vector<float> grad(out.size(), 1e-3f);
  const TableView table{weights.data(), rows, dim, WeightDtype::kF32, nullptr};
  const BagBatch batch = BagBatch::of(kBatch, offsets, indices);
  const double bytes = 4.0 * kBatch * dim + 4.0 * kBatch * dim * kPooling;
  const OptimizerConfig sgd{OptimizerKind::kSgd, 1e-6f, 0.0f};

  const double gather_ms = median_ms([&] { gather_rows(weights.data(), dim, indices); });
  print_row("gather", dim, kBatch, kPooling, rows, "memcpy", gather_ms, 4.0 * kBatch * dim * kPooling);
  for (const EmbeddingBagImpl impl : {EmbeddingBagImpl::kCpu}) {
    const std::string name(to_string(impl));
    const double fwd_ms = median_ms([&] {
      if (!embedding_bag_forward(impl, {&table, 1}, batch, out).ok()) std::abort();
    });
    print_row("forward", dim, kBatch, kPooling, rows, name.c_str(), fwd_ms, bytes);
    const double fwd_bwd_ms = median_ms([&] {
      if (!embedding_bag_forward(impl, {&table, 1}, batch, out).ok()) std::abort();
      if (!embedding_bag_backward(impl, {&table, 1}, batch, grad, sgd).ok()) std::abort();
    });
    print_row("forward_backward_sgd", dim, kBatch, kPooling, rows, name.c_str(), fwd_bwd_ms, 3 * bytes);
  }
  if (cuda_device_available()) bench_cuda(table, batch, grad, sgd, bytes);
}

/** The GPU's bandwidth rows: data-sheet peak (when reported) and measured copy bandwidth. */
void print_cuda_bandwidth() {
  const CudaBandwidth bandwidth = cuda_bandwidth();
  if (bandwidth.hbm_peak_gbps > 0) {
    std::printf("hbm_peak,0,0,0,0,fp32,cuda,0.000,%.2f\n", bandwidth.hbm_peak_gbps);
  }
  std::printf("stream,0,0,0,0,fp32,cuda_d2d_copy,%.3f,%.2f\n",
              2.0 * static_cast<double>(std::size_t{1} << 30) / (bandwidth.copy_gbps * 1e6), bandwidth.copy_gbps);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("kind,dim,batch,pooling,rows,dtype,impl,median_ms,gbps\n");
  {
    std::vector<float> big(std::size_t{1} << 28, 1.0f);  // 1 GiB
    const double ms =
        median_ms([&] { g_sink = g_sink + sum_floats(big.data(), static_cast<std::int64_t>(big.size())); });
    print_row("stream", 0, 0, 0, static_cast<std::int64_t>(big.size()), "sum", ms,
              static_cast<double>(std::size_t{1} << 30));
  }
  if (cuda_device_available()) print_cuda_bandwidth();
  std::uint64_t rng = 12345;
  std::vector<int> dims{4, 16, 32, 64, 128};
  if (argc > 1) dims.clear();  // optional: the dims to run, e.g. `embshard_kernel_bench 4 128`
  for (int i = 1; i < argc; ++i) dims.push_back(std::atoi(argv[i]));
  for (const int dim : dims) bench_dim(dim, rng);
  return 0;
}
