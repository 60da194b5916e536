#pragma once
/**
 * @file torch_nets.h
 * @brief libtorch twins of the plain C++ layers (nn/mlp.h), private to the learn module:
 *        build a `Sequential` with the same layout and parameter names, export it back.
 */
#include <torch/nn/modules/container/sequential.h>

#include <string>
#include <vector>

#include "embshard/nn/mlp.h"

namespace embshard::learn {

/** Linear, ReLU, Linear, …: widths {in, hidden…, out}; ReLU after the last layer iff `relu_last`. */
[[nodiscard]] torch::nn::Sequential make_sequential(const std::vector<int>& widths, bool relu_last);
/** The trained `seq` as a plain-C++ Mlp named `prefix` (nn/mlp.h). */
[[nodiscard]] Mlp export_mlp(const std::string& prefix, const torch::nn::Sequential& seq, bool relu_last);
/** A tensor's values (contiguous, float32). */
[[nodiscard]] std::vector<float> tensor_values(const torch::Tensor& t);
/**
 * Drops the gradients of `parameters` (PyTorch ≥ 2.0's zero_grad(set_to_none=True)), so that an
 * optimiser step moves only the parameters the last loss reached. libtorch 1.13's zero_grad
 * zeroes them instead, and Adam then keeps moving every parameter that ever had a gradient by
 * its momentum — which also makes a resumed run differ from an uninterrupted one.
 */
void clear_gradients(const std::vector<torch::Tensor>& parameters);
/** Detached copies of `parameters` (best-checkpoint keeping). */
[[nodiscard]] std::vector<torch::Tensor> snapshot(const std::vector<torch::Tensor>& parameters);
/** Copies `saved` back into `parameters`. */
void restore(std::vector<torch::Tensor>& parameters, const std::vector<torch::Tensor>& saved);

}  // namespace embshard::learn
