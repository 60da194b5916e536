// embshard: plan how a DLRM's embedding tables are split and placed across devices.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>


#include "commands.h"
#include "embshard/core/error.h"
#include "embshard/kernels/embedding_bag.h"
#include "embshard/profile/cost_sample.h"

namespace {

constexpr const char* kUsage =
    "usage: embshard [VERB] [--threads N] [--quiet] [options]\n"
    "verbs:\n"
    "  (none)   [--report R.html]   the main job on the built-in default workload (and the report of its plans)\n"
    "  stats    --data FILE.pt[.gz] --out tables.json     reference statistics of a dataset file\n"
    "  pool     [--seed N] --out pool.json [--batch B] | --check [--measure K]\n"
    "           | --write-pt FILE[.gz] [--tables N] [--batch B]   raw batches in the dataset format\n"
    "  task gen --protocol neuroshard|dreamshard|autoshard[:k=v,..] --devices D --max-dim M\n"
    "           --count N --seed S --out DIR [--tables stats.json]\n"
    "  plan     --task T.json --sharder SPEC [--cost default|sim|neural:..] [--objective O] [--seed S] --out P.json\n"
    "           [--format embshard|torchrec]   plan a task (sharders: embshard list); torchrec:\n"
    "           the ShardingPlan JSON embshard.torchrec.load_sharding_plan loads\n"
    "  check    --task T.json --plan P.json                validate a plan against its task\n"
    "  profile compute --out S.jsonl [--samples N] [--batch B] [--seed S] ...\n"
    "           measure random fused shards on this machine's kernels (cost samples)\n"
    "  profile comm --out S.jsonl [--samples N] [--batch B] ...   (under mpirun -n D)\n"
    "           measure all-to-alls of random placements over MPI ranks\n"
    "  profile calibrate --samples S.jsonl [--test-every K] [--out C.json] [--report R.html]\n"
    "           fit the sim model to compute samples; error on held-out samples\n"
    "  eval     --task T.json --plan P.json [--backend sim|cpu|cuda] [--objective step|max_sum|balance]\n"
    "           [--out R.json] [--comm model|mpi]         per-device cost of a plan\n"
    "  compare  --tasks DIR --sharders 'S1;S2;...' [--cost default] [--backend B] --out R.csv\n"
    "           [--summary R.md] [--chart R.svg [--chart-task ID]] [--report R.html [--reference S]]\n"
    "           every sharder on every task\n"
    "  report   --task T.json --plan 'P1.json[;P2.json]' [--backend B] --out R.html\n"
    "           | --compare R.csv [--reference SPEC] --out R.html   an HTML report to look at\n"
    "  train cost --samples S.jsonl[,C.jsonl] --out MODEL.json [--epochs N] [--report R.html] [--force]\n"
    "           train the neural cost models (embshard-train, libtorch); held-out accuracy\n"
    "  list                                               registered plug-ins and parameters\n";

using Runner = int (*)(embshard::cli::Args&, const embshard::Context&);

/** The usage lines of `verb` (its line in kUsage and the indented lines after it), then where its figures are defined. */
std::string verb_usage(const std::string& verb) {
  std::istringstream all(kUsage);
  std::string line, out = "usage: embshard " + verb + " [--threads N] [--quiet] [options]\n";
  bool inside = false;
  while (std::getline(all, line)) {
    const bool starts_entry = line.size() > 2 && line[0] == ' ' && line[1] == ' ' && line[2] != ' ';
    if (starts_entry) inside = line.rfind("  " + verb + " ", 0) == 0;
    if (inside) out += line + "\n";
  }
  if (verb == "eval" || verb == "compare" || verb == "plan" || verb == "report") {
    out += "The figures printed (step, max_sum, balance, fw_wait, gap, UVM share) are defined, with\n"
           "formulas and a worked example, in docs/metrics.md.\n";
  }
  return out;
}

bool asks_for_help(const std::vector<std::string>& words) {
  return std::any_of(words.begin(), words.end(), [](const std::string& w) { return w == "--help" || w == "-h"; });
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  if (!words.empty() && (words[0] == "-h" || words[0] == "--help" || words[0] == "help")) {
    std::cout << kUsage;
    return 0;
  }
  const std::map<std::string, Runner> verbs = {
      {"stats", embshard::cli::run_stats}, {"pool", embshard::cli::run_pool},
      {"task", embshard::cli::run_task},   {"check", embshard::cli::run_check},
      {"list", embshard::cli::run_list},   {"profile", embshard::cli::run_profile},
      {"eval", embshard::cli::run_eval},   {"plan", embshard::cli::run_plan},
      {"compare", embshard::cli::run_compare}, {"report", embshard::cli::run_report}};
  if (!words.empty() && words[0] == "train") {
    try {
      embshard::cli::exec_train({words.begin() + 1, words.end()});
    } catch (const embshard::Error& e) {
      std::cerr << "error: " << e.what() << "\n";
      return 1;
    }
  }
  std::string verb;
  Runner runner = embshard::cli::run_default;
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
    if (asks_for_help(words)) {
      std::cout << verb_usage(verb);
      return 0;
    }
  }
  try {
    embshard::cli::Args args(verb.empty() ? "(main)" : verb, words, {"quiet", "verbose", "check", "fit", "no-flush", "no-sleep"});
    embshard::Context ctx;
    // One worker per logical CPU of the fingerprint (EMBSHARD_FAKE_FINGERPRINT can set it).
    ctx.num_threads = static_cast<int>(
        args.get_int("threads", std::max(1, embshard::this_machine("cpu", 1).logical_cpus)));
    EMBSHARD_CHECK(ctx.num_threads >= 1, "--threads must be at least 1");
    embshard::kernels::set_cpu_kernel_threads(ctx.num_threads);
    embshard::cli::apply_log_options(args, ctx);
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
