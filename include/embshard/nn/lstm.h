#pragma once
/**
 * @file lstm.h
 * @brief A multi-layer LSTM in plain C++ (no libtorch), named and laid out as PyTorch's
 *        `nn.LSTM(input_size, hidden_size, num_layers)` and stepped one input at a time.
 *
 * Layer k holds PyTorch's four tensors, row-major, gates stacked in PyTorch's order i, f, g, o:
 *
 *   weight_ih_l{k}  [4H, in_k]   (in_0 = input_size, in_k = H for k > 0)
 *   weight_hh_l{k}  [4H, H]
 *   bias_ih_l{k}    [4H]
 *   bias_hh_l{k}    [4H]
 *
 * One step of layer k with input x (the layer below's new h for k > 0) and state (h, c):
 *
 *   z = W_ih x + b_ih + W_hh h + b_hh        (4H values: z_i, z_f, z_g, z_o)
 *   i = σ(z_i)   f = σ(z_f)   g = tanh(z_g)   o = σ(z_o)
 *   c' = f ⊙ c + i ⊙ g        h' = o ⊙ tanh(c')
 *
 * The step's output is the last layer's h'. State is explicit (`LstmState`: h and c of every
 * layer, layer-major, zero at the start of a sequence) so that callers can keep it across
 * steps, reset it at episode boundaries, or store it with a trajectory, as IMPALA's actors do.
 * Arithmetic is float32; it matches libtorch's CPU LSTM to ~1e-6 (tests/learn compare them).
 * In an `Lstm` named `prefix` the parameters are `prefix.weight_ih_l0`, … (a state-dict name).
 */
#include <span>
#include <string>
#include <vector>

namespace embshard {

struct LstmLayer {
  int in = 0;
  int hidden = 0;
  std::vector<float> weight_ih;  ///< [4·hidden][in]
  std::vector<float> weight_hh;  ///< [4·hidden][hidden]
  std::vector<float> bias_ih;    ///< [4·hidden]
  std::vector<float> bias_hh;    ///< [4·hidden]
};

/** h and c of every layer, layer-major: h[k·H + j]. */
struct LstmState {
  std::vector<float> h;
  std::vector<float> c;
};

class Lstm {
 public:
  Lstm() = default;
  /**
   * Layers in order; throws Error (naming `prefix`) unless every layer has the same hidden size,
   * layer k > 0 reads hidden-size inputs and every tensor has its layer's shape.
   */
  Lstm(std::string prefix, std::vector<LstmLayer> layers);

  [[nodiscard]] const std::string& prefix() const { return prefix_; }
  [[nodiscard]] const std::vector<LstmLayer>& layers() const { return layers_; }
  [[nodiscard]] int num_layers() const { return static_cast<int>(layers_.size()); }
  [[nodiscard]] int input_size() const { return layers_.empty() ? 0 : layers_.front().in; }
  [[nodiscard]] int hidden_size() const { return layers_.empty() ? 0 : layers_.front().hidden; }
  /** "prefix.weight_ih_l1" for (1, "weight_ih"). */
  [[nodiscard]] std::string parameter_name(int layer, const char* which) const;

  /** All zeros (the start of a sequence). */
  [[nodiscard]] LstmState zero_state() const;
  /**
   * One time step: reads x (input_size()), updates `state` in place and writes the last layer's
   * new h to `out` (hidden_size()). Sizes are checked (EMBSHARD_ASSERT: a caller's bug).
   */
  void step(std::span<const float> x, LstmState& state, std::span<float> out) const;

 private:
  std::string prefix_;
  std::vector<LstmLayer> layers_;
};

}  // namespace embshard
