// Plain C++ Linear / ReLU stacks with PyTorch's names and layouts (mlp.h).
#include "embshard/nn/mlp.h"

#include <algorithm>

#include "embshard/core/error.h"

namespace embshard {
namespace {

/**
 * Σ w[k]·x[k] in eight interleaved partial sums (k mod 8), added pairwise at the end: independent
 * chains the compiler turns into vector multiply-adds, where one running sum would be a serial
 * dependency chain (≈ 5× slower per layer on this VM).
 */
float dot(const float* w, const float* x, int n) {
  constexpr int kLanes = 8;
  float lane[kLanes] = {};
  int k = 0;
  for (; k + kLanes <= n; k += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] += w[k + j] * x[k + j];
  }
  float sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; k < n; ++k) sum += w[k] * x[k];
  return sum;
}

}  // namespace

Mlp::Mlp(std::string prefix, std::vector<Linear> layers, bool relu_last)
    : prefix_(std::move(prefix)), layers_(std::move(layers)), relu_last_(relu_last) {
  EMBSHARD_CHECK(!layers_.empty(), prefix_, ": an MLP needs at least one layer");
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Linear& l = layers_[i];
    EMBSHARD_CHECK(l.in > 0 && l.out > 0, parameter_name(i, "weight"), ": empty shape [", l.out, ", ", l.in, "]");
    EMBSHARD_CHECK(l.weight.size() == static_cast<std::size_t>(l.in) * static_cast<std::size_t>(l.out),
                   parameter_name(i, "weight"), ": ", l.weight.size(), " values for shape [", l.out, ", ", l.in, "]");
    EMBSHARD_CHECK(l.bias.size() == static_cast<std::size_t>(l.out), parameter_name(i, "bias"), ": ", l.bias.size(),
                   " values for shape [", l.out, "]");
    EMBSHARD_CHECK(i == 0 || layers_[i - 1].out == l.in, parameter_name(i, "weight"), ": takes ", l.in,
                   " inputs but the layer before gives ", layers_[i - 1].out);
    widest_ = std::max({widest_, static_cast<std::size_t>(l.in), static_cast<std::size_t>(l.out)});
  }
}

std::string Mlp::parameter_name(std::size_t layer, const char* which) const {
  return prefix_ + "." + std::to_string(2 * layer) + "." + which;
}

void Mlp::forward(std::span<const float> x, std::span<float> y) const {
  EMBSHARD_ASSERT(x.size() == static_cast<std::size_t>(in()) && y.size() == static_cast<std::size_t>(out()));
  // Two ping-pong buffers on the stack for the usual widths; the heap beyond that.
  constexpr std::size_t kStack = 256;
  float stack_a[kStack], stack_b[kStack];
  std::vector<float> heap_a, heap_b;
  float* a = stack_a;
  float* b = stack_b;
  if (widest_ > kStack) {
    heap_a.resize(widest_);
    heap_b.resize(widest_);
    a = heap_a.data();
    b = heap_b.data();
  }
  std::copy(x.begin(), x.end(), a);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Linear& l = layers_[i];
    const bool relu = relu_last_ || i + 1 < layers_.size();
    for (int o = 0; o < l.out; ++o) {
      const float sum = dot(l.weight.data() + static_cast<std::size_t>(o) * static_cast<std::size_t>(l.in), a, l.in) +
                        l.bias[static_cast<std::size_t>(o)];
      b[o] = relu ? std::max(sum, 0.0f) : sum;
    }
    std::swap(a, b);
  }
  std::copy(a, a + out(), y.begin());
}

}  // namespace embshard
