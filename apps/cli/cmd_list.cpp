// embshard list: every registered plug-in with its parameters; embshard help: every verb.
#include <cstdio>

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

}  // namespace

int run_list(Args& args, const Context&) {
  args.finish();
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
