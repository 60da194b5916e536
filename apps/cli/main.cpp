// embshard: plan how a DLRM's embedding tables are split and placed across devices.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "embshard/core/error.h"
#include "embshard/core/markup.h"
#include "embshard/core/version.h"
#include "verbs.h"

namespace {

using Runner = int (*)(embshard::cli::Args&, const embshard::Context&);

}  // namespace

int main(int argc, char** argv) {
  using namespace embshard::cli;
  std::vector<std::string> words(argv + 1, argv + argc);
  if (!words.empty() && (words[0] == "-h" || words[0] == "--help")) {
    std::cout << usage();
    return 0;
  }
  if (words.size() == 1 && words[0] == "--version") {
    std::cout << "embshard " << embshard::embshard_version() << "\n";
    return 0;
  }
  const std::map<std::string, Runner> verbs = {{"stats", run_stats},   {"pool", run_pool},    {"task", run_task},
                                               {"check", run_check},   {"list", run_list},    {"profile", run_profile},
                                               {"eval", run_eval},     {"plan", run_plan},    {"compare", run_compare},
                                               {"report", run_report}, {"help", run_help},    {"size", run_size},
                                               {"fit", run_fit},       {"replan", run_replan}};
  if (!words.empty() && words[0] == "train") {
    try {
      const std::vector<std::string> rest(words.begin() + 1, words.end());
      // Help is declared here too, so it needs no learn module; the rest is embshard-train's.
      if (std::any_of(rest.begin(), rest.end(), [](const std::string& w) { return w == "--help" || w == "-h"; })) {
        (void)resolve_verb("train", rest, std::cout);
        return 0;
      }
      exec_train(rest);
    } catch (const embshard::Error& e) {
      std::cerr << "error: " << embshard::one_line(e.what()) << "\n";
      return 1;
    }
  }
  try {
    std::string verb;
    Runner runner = run_default;
    if (!words.empty() && words[0].rfind("--", 0) != 0) {
      verb = words[0];
      auto it = verbs.find(verb);
      if (it == verbs.end()) {
        std::string known;
        for (const auto& [name, run] : verbs) known += name + ", ";
        std::cerr << "error: unknown verb '" << embshard::one_line(verb) << "' (verbs: " << known
                  << "train; embshard --help shows them all)\n";
        return 1;
      }
      runner = it->second;
      words.erase(words.begin());
    }
    const VerbDoc* doc = resolve_verb(verb, words, std::cout);
    if (doc == nullptr) return 0;  // help was asked for and printed
    Args args(*doc, words);
    embshard::Context ctx;
    apply_common_options(args, ctx);
    return runner(args, ctx);
  } catch (const embshard::Error& e) {
    std::cerr << "error: " << embshard::one_line(e.what()) << "\n";
    return 1;
  } catch (const embshard::InternalError& e) {
    std::cerr << embshard::one_line(e.what()) << "\nplease report this bug\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << embshard::one_line(e.what()) << "\n";
    return 1;
  }
}
