// The neural cost model's plain C++ side: layers against a slow reference, the weights file,
// the cost model's assembly and its refusals. (tests/learn compares with libtorch itself.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "embshard/core/file_io.h"
#include "embshard/core/sha256.h"
#include "embshard/cost/link_model.h"
#include "embshard/cost/neural_cost.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/shard/sharder.h"
#include "neural_test_util.h"
#include "plan_test_util.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;
using test_util::random_weights;

Context quiet() { return test_util::quiet_context(); }

/** The MLP in double precision, written out plainly: y = W x + b, ReLU between layers. */
std::vector<double> reference_forward(const Mlp& mlp, std::vector<double> x) {
  for (std::size_t i = 0; i < mlp.layers().size(); ++i) {
    const Linear& l = mlp.layers()[i];
    std::vector<double> y(static_cast<std::size_t>(l.out));
    for (int o = 0; o < l.out; ++o) {
      double sum = l.bias[static_cast<std::size_t>(o)];
      for (int k = 0; k < l.in; ++k)
        sum += double{l.weight[static_cast<std::size_t>(o * l.in + k)]} * x[static_cast<std::size_t>(k)];
      const bool relu = mlp.relu_last() || i + 1 < mlp.layers().size();
      y[static_cast<std::size_t>(o)] = relu ? std::max(sum, 0.0) : sum;
    }
    x = std::move(y);
  }
  return x;
}

std::string temp_path(const std::string& name) { return test_util::temp_file("embshard-neural", name); }

/** The neural cost model of `weights` for `task`, through a weights file `name` removed after loading. */
std::unique_ptr<CostModel> neural_model(const NeuralWeights& weights, const std::string& name, const Task& task) {
  const std::string path = temp_path(name);
  write_neural_weights(path, weights);
  auto cost = make_cost_model("neural:weights=" + path, task);
  std::filesystem::remove(path);
  return cost;
}

Task cpu_task(int devices, std::uint64_t seed = 1) {
  const int dims[] = {8, 16, 32, 64};
  return test_util::pool_task(12, "cpu:devices=" + std::to_string(devices), seed, dims);
}

TEST(Sha256, MatchesTheStandardTestVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Mlp, EqualsAPlainDoublePrecisionReference) {
  Rng rng(3);
  for (bool relu_last : {false, true}) {
    const Mlp mlp = test_util::random_mlp("net", {20, 128, 32, 7}, relu_last, rng);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> x(20);
      for (float& v : x) v = static_cast<float>(4 * rng.uniform() - 2);
      std::vector<float> y(7);
      mlp.forward(x, y);
      const std::vector<double> want = reference_forward(mlp, {x.begin(), x.end()});
      for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i])));
    }
  }
  EXPECT_EQ(test_util::random_mlp("head", {32, 64, 1}, false, rng).parameter_name(1, "weight"), "head.2.weight");
}

TEST(Mlp, RejectsLayersThatDoNotChain) {
  Rng rng(1);
  Mlp a = test_util::random_mlp("x", {4, 8}, false, rng);
  Mlp b = test_util::random_mlp("x", {6, 2}, false, rng);
  EXPECT_NE(error_of([&] {
              Mlp("bad", {a.layers()[0], b.layers()[0]}, false);
            }).find("bad.2.weight: takes 6 inputs but the layer before gives 8"),
            std::string::npos);
  Linear broken = a.layers()[0];
  broken.weight.pop_back();
  EXPECT_NE(error_of([&] { Mlp("bad", {broken}, false); }).find("bad.0.weight: 31 values for shape [8, 4]"),
            std::string::npos);
}

TEST(Normaliser, ConstantColumnsOnlySubtractTheMean) {
  const std::vector<std::vector<double>> rows{{1, 5, 0}, {3, 5, 0}, {5, 5, 0}};
  const Normaliser n = Normaliser::fit({"a", "b", "c"}, rows);
  EXPECT_DOUBLE_EQ(n.mean[0], 3.0);
  EXPECT_DOUBLE_EQ(n.std[0], 2.0);  // sample std (ddof 1)
  EXPECT_EQ(n.std[1], 1.0);
  EXPECT_EQ(n.std[2], 1.0);
  std::vector<float> x{3, 7, 1};
  n.apply(x);
  EXPECT_EQ(x, (std::vector<float>{0, 2, 1}));
  std::vector<float> bad{1, NAN, 0};
  EXPECT_NE(error_of([&] { n.apply(bad); }).find("input 'b' is not finite"), std::string::npos);
}

TEST(NeuralWeights, RoundTripThroughTheFileGivesTheSamePredictions) {
  const NeuralWeights w = random_weights(7, 2, 4);
  const std::string path = temp_path("round.json");
  write_neural_weights(path, w);
  const NeuralWeights back = read_neural_weights(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(back.compute && back.fw_comm && back.bw_comm);
  EXPECT_EQ(back.fw_comm->devices, 4);
  const Pool pool = Pool::generate(0);
  for (std::int64_t id : {3, 40, 500}) {
    const TableFeatures f = table_features(pool.expected_stats(id, 8192), 32);
    EXPECT_EQ(encode_table(*w.compute, f), encode_table(*back.compute, f));
  }
  const std::vector<double> inputs{128, 64, 256, 32, 0, 3, 1, 0};
  EXPECT_EQ(predict_comm(*w.fw_comm, inputs), predict_comm(*back.fw_comm, inputs));
  EXPECT_EQ(back.compute->training.fingerprint, w.compute->training.fingerprint);
}

TEST(NeuralWeights, CorruptFilesAreRejectedNamingTheField) {
  const std::string good = neural_weights_json(random_weights(1, 1, 4));
  const auto error_for = [](std::string text) { return error_of([&] { (void)parse_neural_weights(text, "w.json"); }); };
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  EXPECT_NE(error_for("{").find("w.json: malformed JSON"), std::string::npos);
  EXPECT_NE(error_for(replaced("\"embshard-neural-cost\"", "\"x\"")).find("not a neural weights file"),
            std::string::npos);
  EXPECT_NE(error_for(replaced("\"version\":1", "\"version\":9")).find("the file is version 9"), std::string::npos);
  EXPECT_NE(error_for(replaced("\"shape\":[128,20]", "\"shape\":[128,21]"))
                .find("table_mlp.0.weight.shape: expected [128, 20]"),
            std::string::npos);
  EXPECT_NE(error_for(replaced("\"devices\":4", "\"devices\":5")).find("expected the inputs"), std::string::npos);
  EXPECT_NE(error_for(replaced("\"comp_ms\"", "\"ms\"")).find("outputs"), std::string::npos);
  // A truncated file (crash while copying) is malformed, not a smaller model.
  EXPECT_NE(error_for(good.substr(0, good.size() / 2)).find("malformed JSON"), std::string::npos);
  EXPECT_NE(error_of([] { (void)read_neural_weights("/nonexistent/w.json"); }).find("/nonexistent/w.json"),
            std::string::npos);
}

TEST(NeuralCostModel, ComputeIsTheHeadOnTheSumOfTableEncodings) {
  const Task task = cpu_task(4);
  const NeuralWeights w = random_weights(11, 2, 4);
  const auto cost = neural_model(w, "compute.json", task);
  EXPECT_EQ(cost->spec(),
            "neural:weights=" + temp_path("compute.json") +
                ",comm=auto,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4,exchanges=fused");
  const ShardResult r = plan_task("greedy:balance=lookup", task, nullptr, quiet());
  ASSERT_EQ(r.status, ShardStatus::kOk);
  const CostBreakdown b = cost->estimate(task, r.plan, quiet());
  const auto by_device = shards_by_device(task, r.plan);
  for (std::size_t d = 0; d < by_device.size(); ++d) {
    std::vector<float> sum(32, 0.0f);
    for (const PlacedShard& p : by_device[d]) {
      const TableSpec& t = task.workload.tables[static_cast<std::size_t>(p.table)];
      const std::vector<float> e = encode_table(*w.compute, table_features(t.stats, p.shard.num_cols()));
      for (std::size_t i = 0; i < 32; ++i) sum[i] += e[i];
    }
    const ComputePrediction want = by_device[d].empty() ? ComputePrediction{} : predict_from_encoding(*w.compute, sum);
    EXPECT_NEAR(b.devices[d].fw_comp_ms, want.fw_ms, 1e-9);
    EXPECT_NEAR(b.devices[d].bw_comp_ms, want.bw_ms, 1e-9);
  }
  // The comm models of the file, with the straggler wait taken back out of the forward one.
  const auto dims = device_dim_sums(by_device);
  std::vector<double> fw_inputs(dims.begin(), dims.end());
  double earliest = INFINITY, latest = 0;
  for (const DeviceCost& c : b.devices)
    earliest = std::min(earliest, c.fw_comp_ms), latest = std::max(latest, c.fw_comp_ms);
  for (const DeviceCost& c : b.devices) fw_inputs.push_back(c.fw_comp_ms - earliest);
  const std::vector<double> fw = predict_comm(*w.fw_comm, fw_inputs);
  const std::vector<double> bw = predict_comm(*w.bw_comm, std::vector<double>(dims.begin(), dims.end()));
  for (std::size_t d = 0; d < dims.size(); ++d) {
    EXPECT_NEAR(b.devices[d].fw_comm_ms, std::max(0.0, fw[d] - (latest - b.devices[d].fw_comp_ms)), 1e-9);
    EXPECT_NEAR(b.devices[d].bw_comm_ms, bw[d], 1e-9);
  }
  EXPECT_FALSE(cost->lower_bound(task, Objective::kStep).has_value());
}

TEST(NeuralCostModel, EmptyDevicesCostNothingAndOneOutputSplitsByTheFwShare) {
  const Task task = cpu_task(4);
  const auto cost = neural_model(random_weights(5, 1, 0), "one.json", task);
  const PlacedShard one{0, test_util::shard(0, 0, task.workload.tables[0].num_rows(), 0, task.workload.tables[0].dim)};
  const DeviceCompute c = cost->compute().device_compute(task, std::span<const PlacedShard>(&one, 1), quiet());
  EXPECT_NEAR(c.fw_ms, 0.3 / 0.7 * c.bw_ms, 1e-9 * std::max(1.0, c.bw_ms));
  const DeviceCompute none = cost->compute().device_compute(task, {}, quiet());
  EXPECT_EQ(none.fw_ms, 0.0);
  EXPECT_EQ(none.bw_ms, 0.0);
  EXPECT_EQ(cost->comm().spec(), "link");  // no comm models in the file
}

TEST(NeuralCostModel, RefusesModelsForAnotherDeviceCountOrHardware) {
  const std::string path = temp_path("four.json");
  write_neural_weights(path, random_weights(2, 2, 4));
  const Task eight = cpu_task(8);
  EXPECT_NE(error_of([&] {
              (void)make_cost_model("neural:weights=" + path + ",comm=neural", eight);
            }).find("trained for 4 devices but the task has 8"),
            std::string::npos);
  EXPECT_EQ(make_cost_model("neural:weights=" + path, eight)->comm().spec(), "link");  // comm=auto
  Task gpu = cpu_task(4);
  gpu.topology = make_topology("v100:gpus_per_node=4");
  EXPECT_NE(error_of([&] {
              (void)make_cost_model("neural:weights=" + path, gpu);
            }).find("measured on 'cpu' devices but the task's topology has 'V100"),
            std::string::npos);
  EXPECT_EQ(make_cost_model("neural:weights=" + path + ",hardware=any", gpu)->comm().spec(), "neural");
  EXPECT_NE(error_of([&] { (void)make_cost_model("neural:weights=" + path + ",comm=sometimes", gpu); }).find("comm"),
            std::string::npos);
  std::filesystem::remove(path);
  EXPECT_NE(error_of([&] { (void)make_cost_model("neural:weights=" + path, gpu); }).find(path), std::string::npos);
  EXPECT_NE(
      error_of([&] { (void)make_cost_model("nonsense", gpu); }).find("known: sim, analytic, neural, default, measured"),
      std::string::npos);
}

TEST(NeuralCostModel, NonFiniteTableStatisticsAreAnErrorNamingTheTable) {
  Task task = cpu_task(4);
  task.workload.tables[2].stats.pooling_factor = NAN;
  const auto cost = neural_model(random_weights(2, 2, 4), "nan.json", task);
  const PlacedShard p{2, test_util::shard(0, 0, task.workload.tables[2].num_rows(), 0, task.workload.tables[2].dim)};
  const std::string error =
      error_of([&] { (void)cost->compute().device_compute(task, std::span<const PlacedShard>(&p, 1), quiet()); });
  EXPECT_NE(error.find("table '" + task.workload.tables[2].name + "'"), std::string::npos) << error;
  EXPECT_NE(error.find("pooling_factor"), std::string::npos) << error;
}

TEST(NeuralCostModel, DefaultIsTheBuiltInModelOnItsHardwareAndSimElsewhere) {
  Task gpu = cpu_task(4);
  gpu.topology = make_topology("v100:gpus_per_node=4");
  EXPECT_EQ(make_cost_model("default", gpu)->spec(),
            "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4,exchanges=fused");
  const auto on_cpu = make_cost_model("default", cpu_task(4));
  EXPECT_EQ(on_cpu->spec(), builtin_weights_text().empty()
                                ? "sim"
                                : "neural:weights=builtin,comm=auto,hardware=match,input_comm=exposed,index_bytes=8,"
                                  "length_bytes=4,exchanges=fused");
}

}  // namespace
}  // namespace embshard
