#pragma once
/**
 * @file mlp.h
 * @brief The few PyTorch layers the neural cost models need, in plain C++ (no libtorch): a
 *        stack of `Linear` layers with ReLU between them, named and laid out as PyTorch's.
 *
 * `Linear(in, out)` holds `weight` as PyTorch does, row-major [out][in], and `bias` [out];
 * y = W x + b. An `Mlp` named `prefix` is PyTorch's `nn::Sequential` of Linear, ReLU, Linear,
 * ReLU, …, Linear: its parameters are `prefix.0.weight`, `prefix.0.bias`, `prefix.2.weight`, …
 * (ReLUs take the odd indices), ReLU after every layer but the last unless `relu_last`.
 *
 * Arithmetic is float32: each output is a dot product (eight interleaved partial sums, so that it
 * vectorises) plus the bias — what libtorch's CPU Linear computes up to summation order (tests
 * compare with it to 1e-5 relative).
 */
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace embshard {

struct Linear {
  int in = 0;
  int out = 0;
  std::vector<float> weight;  ///< [out][in], row-major
  std::vector<float> bias;    ///< [out]
};

class Mlp {
 public:
  Mlp() = default;
  /** Layers in order; throws Error (naming `prefix`) if their shapes do not chain. */
  Mlp(std::string prefix, std::vector<Linear> layers, bool relu_last);

  [[nodiscard]] const std::string& prefix() const { return prefix_; }
  [[nodiscard]] const std::vector<Linear>& layers() const { return layers_; }
  [[nodiscard]] bool relu_last() const { return relu_last_; }
  [[nodiscard]] int in() const { return layers_.empty() ? 0 : layers_.front().in; }
  [[nodiscard]] int out() const { return layers_.empty() ? 0 : layers_.back().out; }
  /** PyTorch's state-dict name of layer i's weight or bias ("prefix.2.weight"). */
  [[nodiscard]] std::string parameter_name(std::size_t layer, const char* which) const;

  /** y = mlp(x); x.size() == in(), y.size() == out(). */
  void forward(std::span<const float> x, std::span<float> y) const;

 private:
  std::string prefix_;
  std::vector<Linear> layers_;
  bool relu_last_ = false;
  std::size_t widest_ = 0;
};

}  // namespace embshard
