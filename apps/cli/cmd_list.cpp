// embshard list: every registered plug-in with its parameters; embshard help: every verb.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "embshard/data/topology.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/task_gen.h"
#include "embshard/shard/sharder.h"
#include "verbs.h"

namespace embshard::cli {

namespace {

template <typename T, typename... FactoryArgs>
void print_registry(const Registry<T, FactoryArgs...>& registry) {
  std::printf("%s:\n", registry.family().c_str());
  for (const auto& entry : registry.list()) {
    std::printf("  %-12s %s\n", entry.name.c_str(), entry.describe.c_str());
    for (const auto& p : entry.params) {
      std::string bounds;
      auto num = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v);
        return std::string(buf);
      };
      if (p.min_value || p.max_value) {
        bounds = " [" + (p.min_value ? num(*p.min_value) : std::string("-inf")) + ", " +
                 (p.max_value ? num(*p.max_value) : std::string("inf")) + "]";
      }
      for (std::size_t i = 0; i < p.choices.size(); ++i)
        bounds += (i == 0 ? " {" : "|") + p.choices[i] + (i + 1 == p.choices.size() ? "}" : "");
      std::printf("      %-22s %-6s = %-8s%s  %s\n", p.name.c_str(), to_string(p.type), p.default_value.c_str(),
                  bounds.c_str(), p.doc.c_str());
    }
  }
}

/** One registry as JSON: its entries, each with its parameters (`embshard list --json`). */
template <typename T, typename... FactoryArgs>
nlohmann::json registry_json(const Registry<T, FactoryArgs...>& registry) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& entry : registry.list()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : entry.params) {
      nlohmann::json param = {
          {"name", p.name}, {"type", to_string(p.type)}, {"default", p.default_value}, {"doc", p.doc}};
      if (p.min_value) param["min"] = *p.min_value;
      if (p.max_value) param["max"] = *p.max_value;
      if (!p.choices.empty()) param["choices"] = p.choices;
      params.push_back(std::move(param));
    }
    entries.push_back({{"name", entry.name}, {"describe", entry.describe}, {"params", std::move(params)}});
  }
  return entries;
}

/** What a preset builds at its defaults: its links and device 0's figures. */
nlohmann::json preset_hardware_json(const std::string& name) {
  const Topology t = make_topology(name);
  const Device& d = t.devices.front();
  return {
      {"device_kind", t.device_kind},
      {"devices_per_host", t.devices_per_host},
      {"intra_host_gbps", t.intra_host_gbps},
      {"inter_host_gbps", t.inter_host_gbps},
      {"a2a_latency_us", t.a2a_latency_us},
      {"device",
       {{"hbm_bytes", d.hbm_bytes}, {"uvm_bytes", d.uvm_bytes}, {"hbm_gbps", d.hbm_gbps}, {"uvm_gbps", d.uvm_gbps}}}};
}

void print_json() {
  nlohmann::json topologies = registry_json(topology_registry());
  for (nlohmann::json& entry : topologies) entry["hardware"] = preset_hardware_json(entry["name"]);
  const nlohmann::json out = {{"topologies", std::move(topologies)},
                              {"task_protocols", registry_json(task_protocol_registry())},
                              {"sharders", registry_json(sharder_registry())},
                              {"cost_models", registry_json(cost_model_registry())}};
  std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

int run_list(Args& args, const Context&) {
  const bool json = args.flag("json");
  args.finish();
  if (json) {
    print_json();
    return 0;
  }
  print_registry(topology_registry());
  print_registry(task_protocol_registry());
  print_registry(sharder_registry());
  print_registry(cost_model_registry());
  return 0;
}

int run_help(Args& args, const Context&) {
  const bool markdown = args.flag("markdown");
  std::string verb;  // `embshard help task gen`: one verb's help
  for (const std::string& word : args.positional()) verb += (verb.empty() ? "" : " ") + word;
  args.finish(args.positional().size());
  if (!verb.empty()) {
    const VerbDoc* doc = find_verb_doc(verb);
    EMBSHARD_CHECK(doc != nullptr, "embshard help: no verb '", verb, "' (embshard help lists them)");
    std::printf("%s", verb_help(*doc).c_str());
    return 0;
  }
  std::printf("%s", markdown ? cli_markdown().c_str() : usage().c_str());
  return 0;
}

}  // namespace embshard::cli
