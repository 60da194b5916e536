// The plain C++ LSTM (lstm.h).
#include "embshard/nn/lstm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "embshard/core/error.h"

namespace embshard {
namespace {

float sigmoid(float x) { return 1.0F / (1.0F + std::exp(-x)); }

}  // namespace

Lstm::Lstm(std::string prefix, std::vector<LstmLayer> layers) : prefix_(std::move(prefix)), layers_(std::move(layers)) {
  EMBSHARD_CHECK(!layers_.empty(), "LSTM '", prefix_, "': no layers");
  const int hidden = layers_.front().hidden;
  EMBSHARD_CHECK(hidden > 0 && layers_.front().in > 0, "LSTM '", prefix_, "': sizes must be positive");
  for (std::size_t k = 0; k < layers_.size(); ++k) {
    const LstmLayer& l = layers_[k];
    EMBSHARD_CHECK(l.hidden == hidden, "LSTM '", prefix_, "': layer ", k, " has hidden size ", l.hidden,
                   ", layer 0 has ", hidden);
    EMBSHARD_CHECK(k == 0 || l.in == hidden, "LSTM '", prefix_, "': layer ", k, " reads ", l.in,
                   " inputs, expected the hidden size ", hidden);
    const auto g = static_cast<std::size_t>(4 * hidden);
    EMBSHARD_CHECK(l.weight_ih.size() == g * static_cast<std::size_t>(l.in) &&
                       l.weight_hh.size() == g * static_cast<std::size_t>(hidden) && l.bias_ih.size() == g &&
                       l.bias_hh.size() == g,
                   "LSTM '", prefix_, "': layer ", k, " has tensors of the wrong size");
  }
}

std::string Lstm::parameter_name(int layer, const char* which) const {
  return detail::concat(prefix_, ".", which, "_l", layer);
}

LstmState Lstm::zero_state() const {
  const auto n = static_cast<std::size_t>(num_layers() * hidden_size());
  return {std::vector<float>(n, 0.0F), std::vector<float>(n, 0.0F)};
}

void Lstm::step(std::span<const float> x, LstmState& state, std::span<float> out) const {
  const auto hidden = static_cast<std::size_t>(hidden_size());
  EMBSHARD_ASSERT(!layers_.empty());
  EMBSHARD_ASSERT(x.size() == static_cast<std::size_t>(input_size()));
  EMBSHARD_ASSERT(out.size() == hidden);
  EMBSHARD_ASSERT(state.h.size() == hidden * layers_.size() && state.c.size() == hidden * layers_.size());
  std::vector<float> z(4 * hidden);
  std::vector<float> input(x.begin(), x.end());
  for (std::size_t k = 0; k < layers_.size(); ++k) {
    const LstmLayer& l = layers_[k];
    const auto in = static_cast<std::size_t>(l.in);
    float* h = state.h.data() + k * hidden;
    float* c = state.c.data() + k * hidden;
    for (std::size_t r = 0; r < 4 * hidden; ++r) {
      const float* wi = l.weight_ih.data() + r * in;
      const float* wh = l.weight_hh.data() + r * hidden;
      float a = 0.0F;
      for (std::size_t j = 0; j < in; ++j) a += wi[j] * input[j];
      float b = 0.0F;
      for (std::size_t j = 0; j < hidden; ++j) b += wh[j] * h[j];
      z[r] = a + l.bias_ih[r] + b + l.bias_hh[r];
    }
    for (std::size_t j = 0; j < hidden; ++j) {
      const float i = sigmoid(z[j]);
      const float f = sigmoid(z[hidden + j]);
      const float g = std::tanh(z[2 * hidden + j]);
      const float o = sigmoid(z[3 * hidden + j]);
      c[j] = f * c[j] + i * g;
      h[j] = o * std::tanh(c[j]);
    }
    input.assign(h, h + hidden);
  }
  std::copy(input.begin(), input.end(), out.begin());
}

}  // namespace embshard
