// libtorch twins of the plain C++ layers (torch_nets.h).
#include "learn/torch_nets.h"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>

namespace embshard::learn {

torch::nn::Sequential make_sequential(const std::vector<int>& widths, bool relu_last) {
  torch::nn::Sequential seq;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    seq->push_back(torch::nn::Linear(widths[i], widths[i + 1]));
    if (relu_last || i + 2 < widths.size()) seq->push_back(torch::nn::ReLU());
  }
  return seq;
}

std::vector<float> tensor_values(const torch::Tensor& t) {
  const torch::Tensor c = t.detach().to(torch::kFloat).contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

Mlp export_mlp(const std::string& prefix, const torch::nn::Sequential& seq, bool relu_last) {
  std::vector<Linear> layers;
  for (const auto& module : seq->children()) {
    const auto* linear = module->as<torch::nn::LinearImpl>();
    if (linear == nullptr) continue;
    Linear l;
    l.out = static_cast<int>(linear->weight.size(0));
    l.in = static_cast<int>(linear->weight.size(1));
    l.weight = tensor_values(linear->weight);
    l.bias = tensor_values(linear->bias);
    layers.push_back(std::move(l));
  }
  return Mlp(prefix, std::move(layers), relu_last);
}

void clear_gradients(const std::vector<torch::Tensor>& parameters) {
  for (const torch::Tensor& p : parameters) p.mutable_grad().reset();
}

std::vector<torch::Tensor> snapshot(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> copy;
  for (const torch::Tensor& p : parameters) copy.push_back(p.detach().clone());
  return copy;
}

void restore(std::vector<torch::Tensor>& parameters, const std::vector<torch::Tensor>& saved) {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < parameters.size(); ++i) parameters[i].copy_(saved[i]);
}

}  // namespace embshard::learn
