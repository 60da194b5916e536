// Tests of the registry of cost models and judges (eval/cost_model_registry.h): every member's spec
// builds the same model again, `default` resolves by hardware, the evaluator's judge is a member,
// and unknown names or keys list what exists.
#include <gtest/gtest.h>

#include <string>

#include "embshard/cost/link_model.h"
#include "embshard/cost/neural_cost.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/evaluator.h"
#include "embshard/shard/sharder.h"
#include "shard_test_util.h"
#include "test_util.h"

namespace embshard {
namespace {

using test_util::error_of;
using test_util::quiet_context;

Task cpu_task() {
  const int dims[] = {8, 16, 32};
  return test_util::pool_task(6, "cpu:devices=2", 3, dims);
}

/** A spec of each registered member that builds on `cpu_task` quickly. */
std::string quick_spec(const std::string& name) {
  return name == "measured" ? "measured:impl=reference,batch=64,warmup=0,repeats=1,flush=false" : name;
}

TEST(CostModels, EveryMembersSpecBuildsTheSameModelAgain) {
  const Task task = cpu_task();
  const ShardResult planned = plan_task("greedy:balance=lookup", task, nullptr, quiet_context());
  ASSERT_EQ(planned.status, ShardStatus::kOk) << planned.reason;
  const auto members = cost_model_registry().list();
  ASSERT_GE(members.size(), 5u);
  for (const auto& member : members) {
    SCOPED_TRACE(member.name);
    if (member.name == "neural" && builtin_weights_text().empty()) continue;  // needs weights=FILE
    const auto model = make_cost_model(quick_spec(member.name), task);
    const std::string spec = model->spec();
    EXPECT_EQ(cost_model_registry().canonical(spec), spec) << "a built model's spec is canonical";
    const auto again = make_cost_model(spec, task);
    EXPECT_EQ(again->spec(), spec);
    if (model->compute().source() == CostSource::kModelled) {  // measured times differ run to run
      EXPECT_EQ(model->estimate(task, planned.plan, quiet_context()).devices[0].fw_comp_ms,
                again->estimate(task, planned.plan, quiet_context()).devices[0].fw_comp_ms);
    }
  }
}

TEST(CostModels, TheJudgeOfEvalIsAMemberWhoseSpecSaysItsBatch) {
  const Task task = cpu_task();
  const ShardResult planned = plan_task("greedy:balance=lookup", task, nullptr, quiet_context());
  ASSERT_EQ(planned.status, ShardStatus::kOk) << planned.reason;
  EXPECT_EQ(judge_spec(kSimJudge),
            "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4,exchanges=fused");
  std::string options = "reference";  // short for measured:impl=reference
  for (const auto& [key, value] : {std::pair{"warmup", "0"}, {"repeats", "1"}, {"flush", "false"}, {"trim", "0"}})
    options = set_judge_value(options, key, value);
  EXPECT_EQ(judge_spec(options),
            "measured:impl=reference,batch=0,warmup=0,repeats=1,flush=false,trim=0,draw=0,remap=in_sample,input_comm="
            "exposed,index_bytes=8,length_bytes=4,exchanges=fused");
  const EvalResult result = evaluate_plan(task, planned.plan, options, quiet_context());
  EXPECT_EQ(result.backend,
            "measured:impl=reference,batch=4096,warmup=0,repeats=1,flush=false,trim=0,draw=0,remap=in_sample,input_"
            "comm=exposed,index_bytes=8,length_bytes=4,exchanges=fused");
  EXPECT_EQ(make_cost_model(result.backend, task)->spec(), result.backend);
  // The measured options leave a judge that does not take them as it is; a bad judge is named.
  EXPECT_EQ(set_judge_value(kSimJudge, "batch", "512"), kSimJudge);
  EXPECT_EQ(with_judge_default("measured:impl=reference,batch=64", "batch", "8192"),
            "measured:impl=reference,batch=64");
  EXPECT_EQ(with_judge_default("reference", "batch", "8192"), "measured:impl=reference,batch=8192");
  EXPECT_NE(error_of([&] { (void)judge_spec("tpu"); }).find("unknown judge 'tpu'"), std::string::npos);
}

TEST(CostModels, UnknownNamesKeysAndValuesListWhatExists) {
  const Task task = cpu_task();
  EXPECT_NE(error_of([&] {
              (void)make_cost_model("nonsense", task);
            }).find("unknown cost model 'nonsense'; known: sim, analytic, neural, default, measured"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              (void)make_cost_model("measured:imp=cpu", task);
            }).find("accepted: impl, batch, warmup, repeats, flush, trim, draw, remap"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)make_cost_model("measured:impl=tpu", task); }).find("tpu"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)make_cost_model("sim:batch=3", task); }).find("unknown parameter 'batch'"),
            std::string::npos);
}

TEST(CostModels, DefaultIsNeuralWhereTheBuiltInWeightsFitElseSim) {
  Task gpu = cpu_task();
  gpu.topology = make_topology("v100:gpus_per_node=2");
  EXPECT_FALSE(builtin_weights_fit(gpu));
  EXPECT_EQ(make_cost_model("default", gpu)->spec(),
            "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4,exchanges=fused");
  EXPECT_EQ(builtin_weights_fit(cpu_task()), !builtin_weights_text().empty());
}

}  // namespace
}  // namespace embshard

namespace embshard {
namespace {

TEST(CostModels, PerTypeExchangesPayTheLatencyOncePerFurtherShardingType) {
  // TorchRec runs an input and an output exchange per sharding type: under exchanges=per_type a
  // plan with table-wise and column-wise tables pays each exchange's latency once more on every
  // device; data-parallel copies exchange nothing and add no group; `fused` is unchanged.
  Task task = test_util::tiny_task(6, "v100:gpus_per_node=4", 2);
  task.workload.batch_size = 4096;
  const Context ctx = test_util::quiet();
  Plan plan = plan_task("greedy", task, nullptr, ctx).plan;
  ASSERT_FALSE(plan.tables.empty());
  const double latency = task.topology.a2a_latency_us / 1000.0;
  const auto breakdown = [&](const Plan& p, const std::string& spec) {
    return make_cost_model(spec, task, ctx)->estimate(task, p, ctx);
  };
  const auto same_but = [&](const Plan& p, double extra) {
    const CostBreakdown fused = breakdown(p, "sim");
    const CostBreakdown per_type = breakdown(p, "sim:exchanges=per_type");
    for (std::size_t d = 0; d < fused.devices.size(); ++d) {
      EXPECT_NEAR(per_type.devices[d].fw_comm_ms, fused.devices[d].fw_comm_ms + extra, 1e-12);
      EXPECT_NEAR(per_type.devices[d].bw_comm_ms, fused.devices[d].bw_comm_ms + extra, 1e-12);
      EXPECT_NEAR(per_type.devices[d].in_comm_ms, fused.devices[d].in_comm_ms + extra, 1e-12);
    }
    EXPECT_NEAR(objective_value(per_type, Objective::kStep), objective_value(fused, Objective::kStep) + 3 * extra,
                1e-9);
  };
  EXPECT_EQ(exchange_groups(plan), 1);
  same_but(plan, 0.0);  // table-wise only: one group
  // One table column-wise in two halves: two groups.
  TablePlacement& cw = plan.tables[0];
  const TableSpec& spec = task.workload.tables[0];
  ASSERT_GE(spec.dim, 8);
  cw.type = ShardingType::kColumnWise;
  cw.shards = {{0, 0, spec.num_rows(), 0, spec.dim / 2}, {1, 0, spec.num_rows(), spec.dim / 2, spec.dim}};
  ASSERT_EQ(find_error_in_plan(task, plan), "");
  EXPECT_EQ(exchange_groups(plan), 2);
  same_but(plan, latency);
  // Another table data-parallel: still two groups.
  TablePlacement& dp = plan.tables[1];
  const TableSpec& small = task.workload.tables[1];
  dp.type = ShardingType::kDataParallel;
  dp.shards.clear();
  for (int d = 0; d < 4; ++d) dp.shards.push_back({d, 0, small.num_rows(), 0, small.dim});
  if (find_error_in_plan(task, plan).empty()) {
    EXPECT_EQ(exchange_groups(plan), 2);
    same_but(plan, latency);
  }
  EXPECT_EQ(
      judge_spec(set_judge_value(kSimJudge, "exchanges", "per_type")),
      "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4,exchanges=per_type");
}

}  // namespace
}  // namespace embshard
