// The registry of cost models and judges (cost_model_registry.h).
#include "embshard/eval/cost_model_registry.h"

#include "embshard/cost/neural_cost.h"
#include "eval/measured_model.h"

namespace embshard {
namespace {

void register_default(CostModelRegistry& registry) {
  registry.add({"default",
                "neural with the built-in weights where they were measured on the task's kind of device, else sim",
                {}},
               [](const Params&, const Context& ctx, const Task& task) {
                 return cost_model_registry().create(builtin_weights_fit(task) ? "neural" : "sim", ctx, task);
               });
}

}  // namespace

const CostModelRegistry& cost_model_registry() {
  static const CostModelRegistry registry = [] {
    CostModelRegistry r("cost model");
    register_sim_cost_model(r);
    register_neural_cost_model(r);
    register_default(r);
    detail::register_measured_cost_model(r);
    return r;
  }();
  return registry;
}

std::unique_ptr<CostModel> make_cost_model(const std::string& spec, const Task& task, const Context& ctx) {
  return cost_model_registry().create(spec, ctx, task);
}

}  // namespace embshard
