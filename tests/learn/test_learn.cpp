// The learn module against libtorch itself: the plain C++ layers give libtorch's outputs, and
// training on samples with a known cost law recovers it. One ctest entry (libtorch's start-up is
// paid once).
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <filesystem>

#include "embshard/core/sha256.h"
#include "embshard/cost/analytic.h"
#include "embshard/cost/link_model.h"
#include "embshard/cost/neural_cost.h"
#include "embshard/data/pool.h"
#include "embshard/learn/cost_training.h"
#include "embshard/profile/comm_sampler.h"
#include "embshard/profile/compute_sampler.h"
#include "neural_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;

Context quiet() { return test_util::quiet_context(); }

std::string temp_path(const std::string& name) { return test_util::temp_file("embshard-learn", name); }

/** Our layers loaded into a libtorch Sequential of Linear / ReLU. */
torch::nn::Sequential to_torch(const Mlp& mlp) {
  torch::nn::Sequential seq;
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < mlp.layers().size(); ++i) {
    const Linear& l = mlp.layers()[i];
    torch::nn::Linear linear(l.in, l.out);
    linear->weight.copy_(torch::from_blob(const_cast<float*>(l.weight.data()), {l.out, l.in}, torch::kFloat));
    linear->bias.copy_(torch::from_blob(const_cast<float*>(l.bias.data()), {l.out}, torch::kFloat));
    seq->push_back(linear);
    if (mlp.relu_last() || i + 1 < mlp.layers().size()) seq->push_back(torch::nn::ReLU());
  }
  return seq;
}

void expect_same_as_torch(const Mlp& mlp, Rng& rng) {
  torch::nn::Sequential seq = to_torch(mlp);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> x(static_cast<std::size_t>(mlp.in()));
    for (float& v : x) v = static_cast<float>(6 * rng.uniform() - 3);
    std::vector<float> y(static_cast<std::size_t>(mlp.out()));
    mlp.forward(x, y);
    const torch::Tensor want = seq->forward(torch::from_blob(x.data(), {1, mlp.in()}, torch::kFloat)).contiguous();
    for (int i = 0; i < mlp.out(); ++i) {
      const float w = want[0][i].item<float>();
      EXPECT_NEAR(y[static_cast<std::size_t>(i)], w, 1e-5 * std::max(1.0f, std::abs(w)))
          << mlp.prefix() << " output " << i;
    }
  }
}

TEST(Learn, PlainCppLayersGiveLibtorchsOutputs) {
  Rng rng(9);
  for (int outputs : {1, 2}) {
    const NeuralWeights w = test_util::random_weights(outputs, outputs, 4);
    expect_same_as_torch(w.compute->table_mlp, rng);
    expect_same_as_torch(w.compute->head, rng);
    expect_same_as_torch(w.fw_comm->mlp, rng);
    expect_same_as_torch(w.bw_comm->mlp, rng);
  }
}

CostSampleHeader header_for(SampleKind kind, const std::string& sampler, std::int64_t batch) {
  CostSampleHeader h;
  h.kind = kind;
  h.backend = kind == SampleKind::kCompute ? "cpu" : "mpi";
  h.sampler = sampler;
  h.seed = 4;
  h.batch_size = batch;
  h.fingerprint = this_machine("cpu", 1);
  h.embshard_version = "test";
  h.created_utc = "2026-11-21T00:00:00Z";
  return h;
}

/** Compute samples whose costs follow the calibrated cpu `sim` model exactly. */
std::string sim_compute_samples(int count) {
  const std::string path = temp_path("compute.jsonl");
  std::filesystem::remove(path);
  const Pool pool = Pool::generate(0);
  ComputeSamplerParams params;
  params.max_tables = 8;
  const std::int64_t batch = 8192;
  const SimHardware sim = sim_hardware_for(make_topology("cpu:devices=1"));
  // The samples follow the sim of a machine whose cache is the sim's, whatever this host has.
  CostSampleHeader header = header_for(SampleKind::kCompute, canonical_sampler_spec(params), batch);
  header.fingerprint.llc_bytes = sim.cache_bytes;
  CostSampleWriter writer(path, header, quiet());
  for (int i = 0; i < count; ++i) {
    ComputeSample s;
    s.index = i;
    s.tables = draw_compute_sample(pool, params, 4, i);
    std::vector<SimTable> tables;
    for (const SampleTable& t : s.tables) {
      SimTable st;
      st.stats = pool.expected_stats(t.pool_id, batch);
      st.cols = t.dim;
      tables.push_back(st);
    }
    const SimFeatures f = sim_features(tables, batch, sim.cache_bytes);
    s.fw_ms = s.fw_trimmed_ms = sim_pass_ms(sim.fw, f);
    s.bw_ms = s.bw_trimmed_ms = sim_pass_ms(sim.bw, f);
    writer.append(s);
  }
  return path;
}

/** Comm samples of 4 devices following the cpu link model, plus the wait for the latest. */
std::string link_comm_samples(int count) {
  const std::string path = temp_path("comm.jsonl");
  std::filesystem::remove(path);
  const CommSamplerParams params;
  const std::int64_t batch = 8192;
  const Topology topology = make_topology("cpu:devices=4");
  CostSampleWriter writer(path, header_for(SampleKind::kComm, canonical_comm_sampler_spec(params, 4), batch), quiet());
  for (int i = 0; i < count; ++i) {
    const CommDraw draw = draw_comm_sample(params, 4, i, 4);
    CommSample s;
    s.index = i;
    s.dim_sums = draw.placement.dim_sums;
    s.sleep_ms = draw.sleep_ms;
    const std::vector<double> link = all_to_all_ms(topology, s.dim_sums, batch);
    const double latest = *std::max_element(s.sleep_ms.begin(), s.sleep_ms.end());
    for (std::size_t d = 0; d < link.size(); ++d) {
      s.fw_ms.push_back(link[d] + latest - s.sleep_ms[d]);
      s.bw_ms.push_back(link[d]);
    }
    writer.append(s);
  }
  return path;
}

CostTrainOptions quick(std::uint64_t seed = 0) {
  CostTrainOptions o;
  o.epochs = 150;
  o.batch_size = 64;
  o.seed = seed;
  return o;
}

TEST(Learn, ComputeModelRecoversAKnownCostLawAndItsFileRunsInThePlanner) {
  const std::string samples = sim_compute_samples(400);
  const TrainedCompute a = train_compute_model(samples, read_cost_samples(samples, quiet()), quick(), quiet());
  const TrainingProvenance& t = a.net.training;
  EXPECT_EQ(t.samples_sha256, sha256_file_hex(samples));
  EXPECT_EQ(t.num_samples, 400);
  EXPECT_EQ(t.batch_size, 8192);
  ASSERT_TRUE(t.accuracy.count("model") && t.accuracy.count("sum_of_singles") && t.accuracy.count("sim"));
  EXPECT_EQ(t.accuracy.at("model").count, 40);
  EXPECT_GT(t.accuracy.at("model").r2, 0.9);   // the C++ inference of the exported weights
  EXPECT_LT(t.accuracy.at("sim").mape, 1e-9);  // the law itself
  EXPECT_EQ(a.test_points.size(), 40u);
  // Same seed, same weights; the weights file loads into the planner's cost model.
  const TrainedCompute b = train_compute_model(samples, read_cost_samples(samples, quiet()), quick(), quiet());
  EXPECT_EQ(a.net.table_mlp.layers()[0].weight, b.net.table_mlp.layers()[0].weight);
  EXPECT_EQ(a.net.head.layers()[1].bias, b.net.head.layers()[1].bias);
  NeuralWeights w;
  w.compute = a.net;
  const std::string weights = temp_path("w.json");
  write_neural_weights(weights, w);
  EXPECT_EQ(read_neural_weights(weights).compute->training.samples_sha256, t.samples_sha256);
  std::filesystem::remove(weights);
  std::filesystem::remove(samples);
}

TEST(Learn, CommModelsFitTheLinkLawWithTheWaitIncluded) {
  const std::string samples = link_comm_samples(400);
  CostTrainOptions o = quick();
  o.epochs = 300;
  const TrainedComm c = train_comm_models(samples, read_cost_samples(samples, quiet()), o, quiet());
  EXPECT_EQ(c.forward.devices, 4);
  EXPECT_TRUE(c.forward.forward);
  EXPECT_FALSE(c.backward.forward);
  EXPECT_GT(c.forward.training.accuracy.at("model").r2, 0.8);
  EXPECT_GT(c.backward.training.accuracy.at("model").r2, 0.8);
  EXPECT_LT(c.backward.training.accuracy.at("link").mape, 1e-9);
  EXPECT_EQ(c.forward_points.size(), 160u);  // 40 test samples × 4 devices
  std::filesystem::remove(samples);
}

TEST(Learn, AModelWorseThanNothingIsNamedWithItsFigure) {
  TrainingProvenance t;
  EXPECT_NE(find_worse_than_baseline("compute", t), "");  // no held-out figures at all
  t.accuracy["model"] = {0.5, 0.1, 0.7, 40};
  t.accuracy["sum_of_singles"] = {0.9, 0.2, 0.4, 40};
  EXPECT_EQ(find_worse_than_baseline("compute", t), "");
  t.accuracy["sum_of_singles"].mse = 0.4;  // the additive baseline beats the model
  EXPECT_NE(find_worse_than_baseline("compute", t).find("above the sum-of-singles baseline"), std::string::npos);
  t.accuracy.erase("sum_of_singles");
  EXPECT_EQ(find_worse_than_baseline("fw_comm", t), "");
  t.accuracy["model"].r2 = -0.38;
  const std::string why = find_worse_than_baseline("fw_comm", t);
  EXPECT_NE(why.find("fw_comm: held-out R² -0.38 is below 0"), std::string::npos) << why;
}

TEST(Learn, SampleFilesAreCheckedBeforeAnyTraining) {
  const std::string comm = link_comm_samples(9);
  EXPECT_NE(error_of([&] {
              check_training_samples(comm, read_cost_samples(comm, quiet()), quick());
            }).find(comm + ": 9 comm samples are too few"),
            std::string::npos);
  std::filesystem::remove(comm);
  const std::string compute = sim_compute_samples(20);
  CostSampleFile file = read_cost_samples(compute, quiet());
  EXPECT_NO_THROW(check_training_samples(compute, file, quick()));
  file.compute[3].tables[0].pool_id = 1 << 30;
  EXPECT_NE(error_of([&] { check_training_samples(compute, file, quick()); }).find("sample 3 names pool table"),
            std::string::npos);
  std::filesystem::remove(compute);
}

TEST(Learn, BadInputIsAClearError) {
  const std::string comm = link_comm_samples(20);
  EXPECT_NE(error_of([&] {
              (void)train_compute_model(comm, read_cost_samples(comm, quiet()), quick(), quiet());
            }).find("holds comm samples, expected compute"),
            std::string::npos);
  std::filesystem::remove(comm);
  const std::string few = sim_compute_samples(5);
  EXPECT_NE(error_of([&] {
              (void)train_compute_model(few, read_cost_samples(few, quiet()), quick(), quiet());
            }).find("too few"),
            std::string::npos);
  std::filesystem::remove(few);
  EXPECT_NE(error_of([] { (void)read_cost_samples("/nonexistent/s.jsonl", quiet()); }).find("/nonexistent/s.jsonl"),
            std::string::npos);
  CostTrainOptions bad = quick();
  bad.compute_outputs = 3;
  EXPECT_NE(error_of([&] { (void)train_compute_model("x", CostSampleFile{}, bad, quiet()); }).find("outputs must be 1"),
            std::string::npos);
}

}  // namespace
}  // namespace embshard
