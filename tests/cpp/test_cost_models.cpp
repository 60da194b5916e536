// Tests of the registry of cost models and judges (eval/cost_models.h): every member's spec
// builds the same model again, `default` resolves by hardware, the evaluator's judge is a member,
// and unknown names or keys list what exists.
#include <gtest/gtest.h>

#include <string>

#include "embshard/cost/neural_cost.h"
#include "embshard/eval/cost_models.h"
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
  EvalOptions options;
  EXPECT_EQ(judge_spec(options), "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4");
  options.backend = "reference";
  options.measure = {0, 1, false, 0.0};
  EXPECT_EQ(judge_spec(options),
            "measured:impl=reference,batch=0,warmup=0,repeats=1,flush=false,trim=0,draw=0,remap=in_sample,input_comm=exposed,index_bytes=8,length_bytes=4");
  const EvalResult result = evaluate_plan(task, planned.plan, options, quiet_context());
  EXPECT_EQ(result.backend,
            "measured:impl=reference,batch=4096,warmup=0,repeats=1,flush=false,trim=0,draw=0,remap=in_sample,input_comm=exposed,index_bytes=8,length_bytes=4");
  EXPECT_EQ(make_cost_model(result.backend, task)->spec(), result.backend);
  options.backend = "tpu";
  EXPECT_NE(error_of([&] { (void)judge_spec(options); }).find("unknown backend 'tpu'"), std::string::npos);
}

TEST(CostModels, UnknownNamesKeysAndValuesListWhatExists) {
  const Task task = cpu_task();
  EXPECT_NE(error_of([&] { (void)make_cost_model("nonsense", task); })
                .find("unknown cost model 'nonsense'; known: sim, analytic, neural, default, measured"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)make_cost_model("measured:imp=cpu", task); })
                .find("accepted: impl, batch, warmup, repeats, flush, trim, draw, remap"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)make_cost_model("measured:impl=tpu", task); }).find("tpu"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)make_cost_model("sim:batch=3", task); }).find("unknown parameter 'batch'"),
            std::string::npos);
}

TEST(CostModels, DefaultIsNeuralWhereTheBuiltInWeightsFitElseSim) {
  Task gpu = cpu_task();
  gpu.topology = make_topology("v100:gpus_per_node=2");
  EXPECT_FALSE(builtin_weights_fit(gpu));
  EXPECT_EQ(make_cost_model("default", gpu)->spec(), "sim:coefficients=builtin,hardware=match,input_comm=exposed,index_bytes=8,length_bytes=4");
  EXPECT_EQ(builtin_weights_fit(cpu_task()), !builtin_weights_text().empty());
}

}  // namespace
}  // namespace embshard
