// AutoShard's network in libtorch and IMPALA's V-trace (autoshard_net.h).
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "embshard/core/error.h"
#include "learn/autoshard_net.h"
#include "learn/torch_nets.h"

namespace embshard::learn {
namespace {

constexpr int kF = kNumTableFeatures;
constexpr int kS = kAutoShardState;

void import_mlp(torch::nn::Sequential& seq, const Mlp& mlp) {
  torch::NoGradGuard no_grad;
  std::size_t i = 0;
  for (const auto& module : seq->children()) {
    auto* linear = module->as<torch::nn::LinearImpl>();
    if (linear == nullptr) continue;
    EMBSHARD_ASSERT(i < mlp.layers().size());
    const Linear& l = mlp.layers()[i++];
    EMBSHARD_ASSERT(linear->weight.size(0) == l.out && linear->weight.size(1) == l.in);
    linear->weight.copy_(torch::from_blob(const_cast<float*>(l.weight.data()), {l.out, l.in}, torch::kFloat));
    linear->bias.copy_(torch::from_blob(const_cast<float*>(l.bias.data()), {l.out}, torch::kFloat));
  }
  EMBSHARD_ASSERT(i == mlp.layers().size());
}

}  // namespace

AutoShardTorchImpl::AutoShardTorchImpl() {
  t_fc = register_module("t_fc", make_sequential({kF, kAutoShardTableHidden, kAutoShardEmbed}, true));
  state_other_fc = register_module("state_other_fc", make_sequential({1, kAutoShardEmbed}, true));
  lstm = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(kS, kS).num_layers(kAutoShardLstmLayers)));
  action_other_fc = register_module("action_other_fc", make_sequential({2, kAutoShardEmbed}, true));
  policy_fc = register_module("policy_fc", make_sequential({kAutoShardPolicyInput, 128, 128, 64, 1}, false));
  value_fc = register_module("value_fc", make_sequential({kS, 64, 1}, false));
  cost_fc = register_module("cost_fc", make_sequential({kAutoShardEmbed, 64, 1}, false));
}

AutoShardNet AutoShardTorchImpl::export_net() const {
  AutoShardNet net;
  net.t_fc = export_mlp("t_fc", t_fc, true);
  net.state_other_fc = export_mlp("state_other_fc", state_other_fc, true);
  net.action_other_fc = export_mlp("action_other_fc", action_other_fc, true);
  net.policy_fc = export_mlp("policy_fc", policy_fc, false);
  net.value_fc = export_mlp("value_fc", value_fc, false);
  net.cost_fc = export_mlp("cost_fc", cost_fc, false);
  const auto params = lstm->named_parameters(false);
  std::vector<LstmLayer> layers;
  for (int k = 0; k < kAutoShardLstmLayers; ++k) {
    const std::string s = std::to_string(k);
    LstmLayer l;
    l.in = kS;
    l.hidden = kS;
    l.weight_ih = tensor_values(params["weight_ih_l" + s]);
    l.weight_hh = tensor_values(params["weight_hh_l" + s]);
    l.bias_ih = tensor_values(params["bias_ih_l" + s]);
    l.bias_hh = tensor_values(params["bias_hh_l" + s]);
    layers.push_back(std::move(l));
  }
  net.lstm = Lstm("lstm", std::move(layers));
  return net;
}

void AutoShardTorchImpl::import_net(const AutoShardNet& net) {
  import_mlp(t_fc, net.t_fc);
  import_mlp(state_other_fc, net.state_other_fc);
  import_mlp(action_other_fc, net.action_other_fc);
  import_mlp(policy_fc, net.policy_fc);
  import_mlp(value_fc, net.value_fc);
  import_mlp(cost_fc, net.cost_fc);
  torch::NoGradGuard no_grad;
  auto params = lstm->named_parameters(false);
  for (int k = 0; k < kAutoShardLstmLayers; ++k) {
    const std::string s = std::to_string(k);
    const LstmLayer& l = net.lstm.layers()[static_cast<std::size_t>(k)];
    auto put = [&](const std::string& name, const std::vector<float>& v) {
      torch::Tensor& p = params[name];
      EMBSHARD_ASSERT(p.numel() == static_cast<std::int64_t>(v.size()));
      p.copy_(torch::from_blob(const_cast<float*>(v.data()), p.sizes(), torch::kFloat));
    };
    put("weight_ih_l" + s, l.weight_ih);
    put("weight_hh_l" + s, l.weight_hh);
    put("bias_ih_l" + s, l.bias_ih);
    put("bias_hh_l" + s, l.bias_hh);
  }
}

AutoShardOutput autoshard_forward(AutoShardTorch& net, const AutoShardBatch& batch, const torch::Tensor& task_inputs) {
  const std::int64_t steps = batch.next_x.size(0);
  const std::int64_t b = batch.next_x.size(1);
  const std::int64_t devices = batch.membership.size(2);
  const std::int64_t n = batch.membership.size(3);
  // Action representations: Σ t_fc over each device's tables, plus t_fc(0) (the zero row), and
  // action_other_fc of what the actor saw.
  const torch::Tensor encodings = net->t_fc->forward(task_inputs);                     // [K, N, 32]
  const torch::Tensor per_step = encodings.index_select(0, batch.task.reshape({-1}));  // [S·B, N, 32]
  const torch::Tensor zero_row = net->t_fc->forward(torch::zeros({1, kF}));
  const torch::Tensor tables = torch::bmm(batch.membership.reshape({steps * b, devices, n}), per_step) + zero_row;
  const torch::Tensor others = net->action_other_fc->forward(batch.action_other.reshape({steps * b, devices, 2}));
  const torch::Tensor a = torch::cat({tables, others}, -1).reshape({steps, b, devices, kS});
  // State: [t_fc(x_next), state_other_fc(progress)] through the LSTM, reset at episode starts.
  const torch::Tensor s =
      torch::cat({net->t_fc->forward(batch.next_x), net->state_other_fc->forward(batch.progress)}, -1);
  torch::Tensor h = batch.h0;
  torch::Tensor c = batch.c0;
  std::vector<torch::Tensor> outs;
  outs.reserve(static_cast<std::size_t>(steps));
  for (std::int64_t t = 0; t < steps; ++t) {
    const torch::Tensor keep = (1.0 - batch.reset[t]).view({1, b, 1});
    h = h * keep;
    c = c * keep;
    auto [out, state] = net->lstm->forward(s[t].unsqueeze(0), std::make_tuple(h, c));
    h = std::get<0>(state);
    c = std::get<1>(state);
    outs.push_back(out[0]);
  }
  const torch::Tensor hs = torch::stack(outs);  // [S, B, 64]
  const torch::Tensor hx = hs.unsqueeze(2).expand({steps, b, devices, kS});
  AutoShardOutput o;
  o.logits = net->policy_fc->forward(torch::cat({hx, a, hx * a}, -1)).squeeze(-1);  // [S, B, D]
  o.values = net->value_fc->forward(hs).squeeze(-1);                                // [S, B]
  return o;
}

VTraceReturns vtrace_from_logits(const torch::Tensor& behaviour_logits, const torch::Tensor& target_logits,
                                 const torch::Tensor& actions, const torch::Tensor& discounts,
                                 const torch::Tensor& rewards, const torch::Tensor& values,
                                 const torch::Tensor& bootstrap, double rho_bar, double c_bar) {
  torch::NoGradGuard no_grad;
  const torch::Tensor index = actions.unsqueeze(-1);
  const torch::Tensor target = torch::log_softmax(target_logits, -1).gather(-1, index).squeeze(-1);
  const torch::Tensor behaviour = torch::log_softmax(behaviour_logits, -1).gather(-1, index).squeeze(-1);
  const torch::Tensor rhos = torch::exp(target - behaviour);
  const torch::Tensor clipped_rhos = torch::clamp_max(rhos, rho_bar);
  const torch::Tensor cs = torch::clamp_max(rhos, c_bar);
  const torch::Tensor v_next = torch::cat({values.slice(0, 1), bootstrap.unsqueeze(0)}, 0);
  const torch::Tensor deltas = clipped_rhos * (rewards + discounts * v_next - values);
  const std::int64_t steps = values.size(0);
  std::vector<torch::Tensor> diffs(static_cast<std::size_t>(steps));
  torch::Tensor acc = torch::zeros_like(bootstrap);
  for (std::int64_t t = steps - 1; t >= 0; --t) {
    acc = deltas[t] + discounts[t] * cs[t] * acc;
    diffs[static_cast<std::size_t>(t)] = acc;
  }
  VTraceReturns r;
  r.vs = torch::stack(diffs) + values;
  const torch::Tensor vs_next = torch::cat({r.vs.slice(0, 1), bootstrap.unsqueeze(0)}, 0);
  r.pg_advantages = clipped_rhos * (rewards + discounts * vs_next - values);
  return r;
}
}  // namespace embshard::learn
