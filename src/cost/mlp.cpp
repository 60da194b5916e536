// Plain C++ Linear / ReLU stacks with PyTorch's names and layouts (mlp.h).
#include "embshard/cost/mlp.h"

#include <algorithm>

#include "embshard/core/error.h"

namespace embshard {

Mlp::Mlp(std::string prefix, std::vector<Linear> layers, bool relu_last)
    : prefix_(std::move(prefix)), layers_(std::move(layers)), relu_last_(relu_last) {
  EMBSHARD_CHECK(!layers_.empty(), prefix_, ": an MLP needs at least one layer");
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Linear& l = layers_[i];
    EMBSHARD_CHECK(l.in > 0 && l.out > 0, parameter_name(i, "weight"), ": empty shape [", l.out, ", ", l.in, "]");
    EMBSHARD_CHECK(l.weight.size() == static_cast<std::size_t>(l.in) * static_cast<std::size_t>(l.out),
                   parameter_name(i, "weight"), ": ", l.weight.size(), " values for shape [", l.out, ", ", l.in, "]");
    EMBSHARD_CHECK(l.bias.size() == static_cast<std::size_t>(l.out), parameter_name(i, "bias"), ": ",
                   l.bias.size(), " values for shape [", l.out, "]");
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
      const float* w = l.weight.data() + static_cast<std::size_t>(o) * static_cast<std::size_t>(l.in);
      float sum = 0.0f;
      for (int k = 0; k < l.in; ++k) sum += w[k] * a[k];
      sum += l.bias[static_cast<std::size_t>(o)];
      b[o] = relu ? std::max(sum, 0.0f) : sum;
    }
    std::swap(a, b);
  }
  std::copy(a, a + out(), y.begin());
}

}  // namespace embshard
