// embshard: plan how a DLRM's embedding tables are split and placed across devices.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "commands.h"
#include "verbs.h"
#include "embshard/core/error.h"
#include "embshard/kernels/embedding_bag.h"
#include "embshard/profile/cost_sample.h"

namespace {

using Runner = int (*)(embshard::cli::Args&, const embshard::Context&);

bool asks_for_help(const std::vector<std::string>& words) {
  return std::any_of(words.begin(), words.end(), [](const std::string& w) { return w == "--help" || w == "-h"; });
}

/** The declared verb `words` name ("task gen" for `task gen ...`); prints help and returns null when asked. */
const embshard::cli::VerbDoc* declared_verb(const std::string& verb, const std::vector<std::string>& words,
                                            bool& printed_help) {
  using namespace embshard::cli;
  const std::vector<std::string> subs = sub_verbs(verb);
  std::string name = verb;
  if (!subs.empty()) {
    if (!words.empty() && std::find(subs.begin(), subs.end(), words[0]) != subs.end()) {
      name = verb + " " + words[0];
    } else {
      std::string list;
      for (const std::string& s : subs) list += (list.empty() ? "" : ", ") + s;
      if (asks_for_help(words)) {
        for (const std::string& s : subs) std::cout << verb_help(*find_verb_doc(verb + " " + s)) << "\n";
        printed_help = true;
        return nullptr;
      }
      EMBSHARD_THROW("embshard ", verb, ": expected a sub-verb: ", list, " (embshard ", verb, " ",
                     subs.front(), " --help)");
    }
  }
  const VerbDoc* doc = find_verb_doc(name);
  EMBSHARD_ASSERT(doc != nullptr);
  if (asks_for_help(words)) {
    std::cout << verb_help(*doc);
    printed_help = true;
    return nullptr;
  }
  return doc;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace embshard::cli;
  std::vector<std::string> words(argv + 1, argv + argc);
  if (!words.empty() && (words[0] == "-h" || words[0] == "--help")) {
    std::cout << usage();
    return 0;
  }
  const std::map<std::string, Runner> verbs = {
      {"stats", run_stats}, {"pool", run_pool},       {"task", run_task},       {"check", run_check},
      {"list", run_list},   {"profile", run_profile}, {"eval", run_eval},       {"plan", run_plan},
      {"compare", run_compare}, {"report", run_report}, {"help", run_help}};
  if (!words.empty() && words[0] == "train") {
    if (asks_for_help(words)) {  // declared here too: no need for the learn module to read it
      const auto subs = sub_verbs("train");
      const bool one = words.size() > 1 && std::find(subs.begin(), subs.end(), words[1]) != subs.end();
      for (const std::string& sub : subs)
        if (!one || sub == words[1]) std::cout << verb_help(*find_verb_doc("train " + sub)) << (one ? "" : "\n");
      return 0;
    }
    try {
      exec_train({words.begin() + 1, words.end()});
    } catch (const embshard::Error& e) {
      std::cerr << "error: " << e.what() << "\n";
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
        std::cerr << "error: unknown verb '" << verb << "' (verbs: " << known << "train; embshard --help shows them all)\n";
        return 1;
      }
      runner = it->second;
      words.erase(words.begin());
    }
    bool printed_help = false;
    const VerbDoc* doc = declared_verb(verb, words, printed_help);
    if (printed_help) return 0;
    Args args(*doc, words);
    embshard::Context ctx;
    // One worker per logical CPU of the fingerprint (EMBSHARD_FAKE_FINGERPRINT can set it).
    ctx.num_threads = static_cast<int>(
        args.get_int("threads", std::max(1, embshard::this_machine("cpu", 1).logical_cpus)));
    EMBSHARD_CHECK(ctx.num_threads >= 1, "--threads must be at least 1");
    embshard::kernels::set_cpu_kernel_threads(ctx.num_threads);
    apply_log_options(args, ctx);
    return runner(args, ctx);
  } catch (const embshard::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const embshard::InternalError& e) {
    std::cerr << e.what() << "\nplease report this bug\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
