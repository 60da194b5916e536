// AutoShard's trainer against libtorch and against the IMPALA formulas: the plain C++ LSTM and
// torch's, V-trace against a slow reference written from the paper's definition, a tiny training
// run whose policy the sharder reads, resuming, and the errors before training.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>

#include "embshard/data/data_io.h"
#include "embshard/eval/evaluator.h"
#include "embshard/eval/task_gen.h"
#include "embshard/learn/policy_training.h"
#include "embshard/policy/autoshard_policy.h"
#include "embshard/shard/sharder.h"
#include "learn/autoshard_net.h"
#include "learn/torch_nets.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;

TEST(AutoShardTorch, TorchLstmAndPlainLstmAgree) {
  torch::manual_seed(7);
  torch::NoGradGuard no_grad;
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(64, 64).num_layers(2));
  for (auto& p : lstm->parameters()) p.uniform_(-0.5, 0.5);  // larger than the default: saturating gates
  const auto params = lstm->named_parameters(false);
  std::vector<LstmLayer> layers;
  for (int k = 0; k < 2; ++k) {
    const std::string s = std::to_string(k);
    LstmLayer l;
    l.in = 64;
    l.hidden = 64;
    l.weight_ih = learn::tensor_values(params["weight_ih_l" + s]);
    l.weight_hh = learn::tensor_values(params["weight_hh_l" + s]);
    l.bias_ih = learn::tensor_values(params["bias_ih_l" + s]);
    l.bias_hh = learn::tensor_values(params["bias_hh_l" + s]);
    layers.push_back(std::move(l));
  }
  const Lstm plain("lstm", std::move(layers));
  const torch::Tensor x = torch::randn({9, 1, 64});
  auto [out, state] = lstm->forward(x);
  LstmState st = plain.zero_state();
  std::vector<float> h(64);
  for (int t = 0; t < 9; ++t) {
    const std::vector<float> in = learn::tensor_values(x[t][0]);
    plain.step(in, st, h);
    const std::vector<float> want = learn::tensor_values(out[t][0]);
    for (int j = 0; j < 64; ++j)
      ASSERT_NEAR(h[static_cast<std::size_t>(j)], want[static_cast<std::size_t>(j)], 1e-5) << "t " << t;
  }
  const std::vector<float> hn = learn::tensor_values(std::get<0>(state));  // [2, 1, 64]
  const std::vector<float> cn = learn::tensor_values(std::get<1>(state));
  for (std::size_t j = 0; j < 128; ++j) {
    EXPECT_NEAR(st.h[j], hn[j], 1e-5);
    EXPECT_NEAR(st.c[j], cn[j], 1e-5);
  }
}

TEST(AutoShardTorch, ExportAndImportKeepEveryWeight) {
  torch::manual_seed(3);
  learn::AutoShardTorch a;
  const AutoShardNet net = a->export_net();
  learn::AutoShardTorch b;
  b->import_net(net);
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& item : pa) EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();
  EXPECT_TRUE(pa.contains("lstm.weight_hh_l1"));
  EXPECT_TRUE(pa.contains("policy_fc.6.bias"));
}

/** V-trace straight from IMPALA's definition (eq. 1), as sums, in double precision. */
void slow_vtrace(const std::vector<double>& log_rho, const std::vector<double>& discount,
                 const std::vector<double>& reward, const std::vector<double>& value, double bootstrap, int steps,
                 double rho_bar, double c_bar, std::vector<double>& vs, std::vector<double>& adv) {
  auto v_at = [&](int t) { return t == steps ? bootstrap : value[static_cast<std::size_t>(t)]; };
  auto rho = [&](int t) { return std::min(rho_bar, std::exp(log_rho[static_cast<std::size_t>(t)])); };
  auto c = [&](int t) { return std::min(c_bar, std::exp(log_rho[static_cast<std::size_t>(t)])); };
  vs.assign(static_cast<std::size_t>(steps), 0.0);
  adv.assign(static_cast<std::size_t>(steps), 0.0);
  for (int s = 0; s < steps; ++s) {
    double total = v_at(s);
    double weight = 1.0;  // Π_{i=s}^{t−1} γ_i c_i
    for (int t = s; t < steps; ++t) {
      const auto ts = static_cast<std::size_t>(t);
      const double delta = rho(t) * (reward[ts] + discount[ts] * v_at(t + 1) - v_at(t));
      total += weight * delta;
      weight *= discount[ts] * c(t);
    }
    vs[static_cast<std::size_t>(s)] = total;
  }
  for (int s = 0; s < steps; ++s) {
    const auto ss = static_cast<std::size_t>(s);
    const double next = s + 1 < steps ? vs[ss + 1] : bootstrap;
    adv[ss] = rho(s) * (reward[ss] + discount[ss] * next - value[ss]);
  }
}

void check_vtrace(double rho_bar, double c_bar) {
  torch::manual_seed(11);
  const int steps = 7;
  const int batch = 3;
  const int actions = 5;
  const torch::Tensor mu = torch::randn({steps, batch, actions});
  const torch::Tensor pi = mu + 0.8 * torch::randn({steps, batch, actions});
  const torch::Tensor a = torch::randint(0, actions, {steps, batch}, torch::kLong);
  const torch::Tensor done = (torch::rand({steps, batch}) < 0.25).to(torch::kFloat);
  const torch::Tensor discounts = (1.0 - done) * 0.9;
  const torch::Tensor rewards = torch::randn({steps, batch});
  const torch::Tensor values = torch::randn({steps, batch});
  const torch::Tensor bootstrap = torch::randn({batch});
  const learn::VTraceReturns got =
      learn::vtrace_from_logits(mu, pi, a, discounts, rewards, values, bootstrap, rho_bar, c_bar);
  ASSERT_EQ(got.vs.sizes(), torch::IntArrayRef({steps, batch}));
  const torch::Tensor log_rho = torch::log_softmax(pi, -1).gather(-1, a.unsqueeze(-1)).squeeze(-1) -
                                torch::log_softmax(mu, -1).gather(-1, a.unsqueeze(-1)).squeeze(-1);
  for (int b = 0; b < batch; ++b) {
    auto column = [&](const torch::Tensor& t) {
      std::vector<double> v;
      for (int s = 0; s < steps; ++s) v.push_back(t[s][b].item<double>());
      return v;
    };
    std::vector<double> vs;
    std::vector<double> adv;
    slow_vtrace(column(log_rho), column(discounts), column(rewards), column(values), bootstrap[b].item<double>(), steps,
                rho_bar, c_bar, vs, adv);
    for (int s = 0; s < steps; ++s) {
      EXPECT_NEAR(got.vs[s][b].item<double>(), vs[static_cast<std::size_t>(s)], 1e-5) << "s " << s << " b " << b;
      EXPECT_NEAR(got.pg_advantages[s][b].item<double>(), adv[static_cast<std::size_t>(s)], 1e-5) << "s " << s;
    }
  }
}

TEST(AutoShardVTrace, MatchesTheDefinitionWithTheDefaultClipping) { check_vtrace(1.0, 1.0); }
TEST(AutoShardVTrace, MatchesTheDefinitionWithOtherClipping) { check_vtrace(1.7, 0.6); }

TEST(AutoShardVTrace, OnPolicyWithoutDiscountIsTheReturn) {
  // μ = π, γ = 1, one episode ending at the last step: v_s is the sum of the remaining rewards.
  const torch::Tensor logits = torch::randn({4, 1, 3});
  const torch::Tensor a = torch::zeros({4, 1}, torch::kLong);
  const torch::Tensor rewards = torch::tensor({0.0F, 0.0F, 0.0F, 0.75F}).view({4, 1});
  torch::Tensor discounts = torch::ones({4, 1});
  discounts[3][0] = 0.0F;
  const learn::VTraceReturns r = learn::vtrace_from_logits(logits, logits, a, discounts, rewards, torch::randn({4, 1}),
                                                           torch::randn({1}), 1.0, 1.0);
  for (int s = 0; s < 4; ++s) EXPECT_NEAR(r.vs[s][0].item<double>(), 0.75, 1e-6);
}

struct TinySetup {
  std::string dir;
  PolicyTrainSetup setup;
  Task test_task;
};

TinySetup tiny_setup(const std::string& name) {
  TinySetup t;
  t.dir = test_util::temp_file("autoshard-train", name);
  std::filesystem::create_directories(t.dir);
  const auto gen = make_task_generator("autoshard:devices=2,tables_per_device=2");
  const TableSource source = TableSource::from_pool(0, gen->batch_size());
  for (int i = 0; i < 2; ++i) {
    const std::string path = t.dir + "/task" + std::to_string(i) + ".json";
    write_task_file(path, gen->generate(source, 100 + static_cast<std::uint64_t>(i), i));
    t.setup.task_paths.push_back(path);
    t.setup.tasks.push_back(read_task_file(path));
  }
  t.test_task = gen->generate(source, 999, 0);
  t.setup.tasks_spec = t.dir;
  t.setup.judge = plan_judge(kSimJudge, t.setup.tasks.front());  // sim
  t.setup.out = t.dir + "/policy.json";
  t.setup.seed = 5;
  return t;
}

AutoShardTrainOptions tiny_options(std::int64_t updates) {
  AutoShardTrainOptions o;
  o.unroll = 6;
  o.learner_batch = 2;
  o.actors = 2;
  o.env_steps = updates * o.unroll * o.learner_batch;
  o.cost_updates = 2;
  o.cost_batch = 16;
  o.checkpoint_every = 1;
  return o;
}

TEST(AutoShardTraining, TinyRunWritesAPolicyTheSharderPlansWith) {
  TinySetup t = tiny_setup("tiny");
  const Context ctx = test_util::quiet_context();
  EXPECT_EQ(train_autoshard(t.setup, tiny_options(1), ctx), t.setup.out);
  const AutoShardPolicy one = read_autoshard_policy(t.setup.out);
  EXPECT_EQ(one.training.iterations, 1);
  EXPECT_EQ(one.training.env_steps, 12);
  EXPECT_GT(one.training.real_evaluations, 0);  // 4-table episodes: 3 per 12 steps
  EXPECT_EQ(one.training.backend,
            "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4,exchanges=fused");
  EXPECT_EQ(one.training.seed, 5U);
  // The first batch was acted with the initial weights, which the learner also holds: its forward
  // pass on the recorded unrolls reproduces the actors' plain C++ logits.
  EXPECT_LT(one.training.metrics.at("max_log_rho"), 1e-5);
  EXPECT_TRUE(std::isfinite(one.training.metrics.at("total_loss")));
  const ShardResult r = plan_task("autoshard:policy=" + t.setup.out, t.test_task, nullptr, ctx);
  ASSERT_EQ(r.status, ShardStatus::kOk) << r.reason;
  EXPECT_EQ(find_error_in_plan(t.test_task, r.plan), "");
  EXPECT_TRUE(std::filesystem::exists(t.setup.out + ".ckpt/state.json"));

  // A resume with other options, or another trainer's checkpoint, is refused naming the option.
  t.setup.resume = true;
  AutoShardTrainOptions other_unroll = tiny_options(3);
  other_unroll.unroll += 1;
  EXPECT_NE(error_of([&] { (void)train_autoshard(t.setup, other_unroll, ctx); })
                .find("the checkpoint was made with unroll = " + std::to_string(tiny_options(3).unroll) +
                      ", this run has " + std::to_string(other_unroll.unroll) + "; resume with the same"),
            std::string::npos);
  PolicyTrainSetup other_seed = t.setup;
  other_seed.seed += 1;
  EXPECT_NE(error_of([&] {
              (void)train_autoshard(other_seed, tiny_options(3), ctx);
            }).find("the checkpoint was made with seed = 5"),
            std::string::npos);
  // Resume to 3 updates: the counters go on, and the result is the uninterrupted run's.
  (void)train_autoshard(t.setup, tiny_options(3), ctx);
  const AutoShardPolicy resumed = read_autoshard_policy(t.setup.out);
  EXPECT_EQ(resumed.training.iterations, 3);
  EXPECT_EQ(resumed.training.env_steps, 36);
  EXPECT_GT(resumed.training.real_evaluations, one.training.real_evaluations);
  EXPECT_GE(resumed.training.wall_s, one.training.wall_s);

  TinySetup straight = tiny_setup("straight");
  (void)train_autoshard(straight.setup, tiny_options(3), ctx);
  const AutoShardPolicy s = read_autoshard_policy(straight.setup.out);
  EXPECT_EQ(s.training.real_evaluations, resumed.training.real_evaluations);
  const auto& wa = s.net.policy_fc.layers()[0].weight;
  const auto& wb = resumed.net.policy_fc.layers()[0].weight;
  ASSERT_EQ(wa.size(), wb.size());
  for (std::size_t i = 0; i < wa.size(); i += 97) ASSERT_NEAR(wa[i], wb[i], 1e-5) << i;
  EXPECT_NE(s.net.policy_fc.layers()[0].weight, one.net.policy_fc.layers()[0].weight);  // it did learn
  std::filesystem::remove_all(t.dir);
  std::filesystem::remove_all(straight.dir);
}

TEST(AutoShardTraining, BadInputFailsBeforeTraining) {
  const Context ctx = test_util::quiet_context();
  AutoShardTrainOptions bad = tiny_options(1);
  bad.unroll = 0;
  EXPECT_NE(find_error_in_options(bad), "");
  EXPECT_EQ(find_error_in_options(AutoShardTrainOptions{}), "");

  TinySetup t = tiny_setup("bad");
  EXPECT_NE(error_of([&] { (void)train_autoshard(t.setup, bad, ctx); }).find("unroll"), std::string::npos);

  PolicyTrainSetup empty = t.setup;
  empty.tasks.clear();
  empty.task_paths.clear();
  EXPECT_NE(error_of([&] { (void)train_autoshard(empty, tiny_options(1), ctx); }).find("no training task"),
            std::string::npos);

  PolicyTrainSetup huge = t.setup;
  TableSpec& big = huge.tasks[1].workload.tables[0];
  big.stats.num_rows = huge.tasks[1].topology.devices[0].hbm_bytes / (big.dim * bytes_per_element(big.dtype)) + 1;
  const std::string e = error_of([&] { (void)train_autoshard(huge, tiny_options(1), ctx); });
  EXPECT_NE(e.find("'" + big.name + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("every action would be illegal"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(huge.out));

  PolicyTrainSetup resume = t.setup;
  resume.resume = true;
  EXPECT_NE(error_of([&] { (void)train_autoshard(resume, tiny_options(1), ctx); }).find("no checkpoint"),
            std::string::npos);
  std::filesystem::remove_all(t.dir);
}

}  // namespace
}  // namespace embshard
