#include "verbs.h"

#include <algorithm>
#include <sstream>

#include "embshard/core/error.h"
#include "embshard/data/features.h"
#include "embshard/data/pool.h"
#include "embshard/eval/evaluator.h"
#include "embshard/eval/replan.h"
#include "embshard/eval/what_if.h"
#include "embshard/learn/cost_training.h"
#include "embshard/learn/policy_training.h"
#include "embshard/profile/comm_profile.h"
#include "embshard/profile/compute_sampler.h"
#include "embshard/profile/measure.h"

namespace embshard::cli {
namespace {

const std::vector<OptionDoc> kMeasure = {
    {"warmup", "N", "", "unmeasured repeats before the measured ones"},
    {"repeats", "N", "", "measured repeats; the median is kept"},
    {"no-flush", "", "", "do not flush the caches between repeats"},
};

/** How a judge counts the exchanges (cost/link_model.h), for every verb that judges plans. */
const std::vector<OptionDoc> kExchangeOptions = {
    {"input-comm", "M", "exposed",
     "the input all-to-all: exposed | overlap (hidden under compute) | omit (the papers' benchmarks)"},
    {"exchanges", "E", "fused",
     "fused: one exchange set for the plan (the papers' benchmarks) | per_type: one per sharding type, as TorchRec "
     "runs them"},
};

/** `options` followed by the exchange options of a judge. */
std::vector<OptionDoc> with_exchanges(std::vector<OptionDoc> options) {
  options.insert(options.end(), kExchangeOptions.begin(), kExchangeOptions.end());
  return options;
}

/** A default as the help prints it, taken from the code's own struct: the one place of a default. */
std::string number(std::int64_t value) { return std::to_string(value); }
std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

/** `options` followed by the measurement options with this verb's defaults `measure` (`no-flush`
 *  only where the caches are flushed by default). */
std::vector<OptionDoc> with_measure(std::vector<OptionDoc> options, const MeasureOptions& measure) {
  for (OptionDoc o : kMeasure) {
    if (o.name == "warmup") o.fallback = number(std::int64_t{measure.warmup});
    if (o.name == "repeats") o.fallback = number(std::int64_t{measure.repeats});
    if (o.name == "no-flush" && !measure.flush_cache) continue;
    options.push_back(o);
  }
  return options;
}

/** The options every RL policy trainer takes (PolicyTrainSetup), then its own `options`. */
std::vector<OptionDoc> policy_training(std::vector<OptionDoc> options) {
  std::vector<OptionDoc> all = {
      {"tasks", "DIR|T.json[,...]", "", "the training tasks (required)"},
      {"out", "POLICY.json", "", "the policy file (required; checkpoints in POLICY.json.ckpt)"},
      {"backend", "J", kSimJudge,
       "the judge: sim | cpu | reference | cuda, or any judge spec (sim:coefficients=F.json, "
       "measured:impl=cpu,repeats=9)"},
      {"batch", "B", "", "measured backends: the batch (default 8192; sim: the task's)"},
      {"resume", "", "", "continue from the checkpoint"},
      {"seed", "S", "0", "seed of the run"}};
  all.insert(all.end(), options.begin(), options.end());
  return all;
}

std::vector<VerbDoc> make_docs() {
  const std::string metrics =
      "The figures printed (step, max_sum, balance, fw_wait, gap, UVM share) are defined, "
      "with formulas and a worked example, in docs/metrics.md.";
  return {
      {"",
       "the main job: the built-in pool, the default task planned by every sharder, the best plan's breakdown",
       {{"report", "R.html", "", "also write the plan report of every plan found"}},
       ""},
      {"stats",
       "reference statistics of every table of a dataset file (.pt, .pt.gz, legacy .pt)",
       {{"data", "FILE", "", "the dataset file (required)"},
        {"out", "tables.json", "", "the statistics file to write (required)"}},
       ""},
      {"pool",
       "the built-in synthetic pool: its expected statistics, a check against the published figures, or raw batches",
       {{"seed", "N", "0", "the pool's seed"},
        {"out", "pool.json", "", "write the pool's expected statistics"},
        {"batch", "B", number(kPublishedDlrm.batch_size), "the batch the statistics (or batches) are for"},
        {"check", "", "", "compare the generated figures with the published ones; non-zero exit if off"},
        {"measure", "K", "8", "with --check: tables whose batches are materialised and measured"},
        {"write-pt", "FILE[.gz]", "", "write raw batches in the dataset's own format"},
        {"tables", "N", number(kPublishedDlrm.num_tables), "with --write-pt: how many tables"},
        {"fit", "", "", "refit the pool's parameters to the published figures and print them"}},
       "Give one of --out, --check, --write-pt or --fit."},
      {"task gen",
       "tasks of a paper's protocol, one JSON file per task (DIR/000.json, ...)",
       {{"protocol", "NAME[:k=v,..]", "", "neuroshard, dreamshard, autoshard or recshard (embshard list; required)"},
        {"devices", "D", "", "the protocol's devices parameter"},
        {"max-dim", "M", "", "the protocol's max_dim parameter"},
        {"count", "N", "1", "tasks to write"},
        {"seed", "S", "0", "seed of the generator"},
        {"out", "DIR", "", "the directory to write (required; refused if it holds tasks)"},
        {"tables", "stats.json", "", "draw tables from this statistics file instead of the pool"},
        {"pool-seed", "N", "0", "the pool the tables come from"}},
       ""},
      {"plan",
       "plan a task with a sharder; prints the breakdown and the gap to a lower bound",
       {{"task", "T.json", "", "the task (without it: the main job)"},
        {"sharder", "SPEC", "joint",
         "a registered sharder spec (embshard list); with --format torchrec, joint plans as torchrec=true"},
        {"cost", "SPEC", "default", "the cost model sharders that search use"},
        {"objective", "O", "step",
         "step | max_sum | balance: what a sharder with an objective parameter (joint, neuroshard, exhaustive) "
         "optimises, and the figure printed"},
        {"out", "P.json", "", "the plan file to write"},
        {"report", "R.html", "", "also write the plan's report"},
        {"format", "F", "embshard",
         "embshard | torchrec (the ShardingPlan JSON embshard.torchrec.load_sharding_plan reads)"},
        {"torchrec-device", "D", "cuda", "with --format torchrec: cuda | cpu"},
        {"torchrec-module", "FQN", "sparse_arch.embedding_bag_collection",
         "with --format torchrec: the path of the EmbeddingBagCollection (or, for sequence tables, the "
         "EmbeddingCollection, which has no default) in the model given to DistributedModelParallel "
         "(torchrec.models.dlrm.DLRM's by default; '.' when the collection itself is the model)"},
        {"explain", "", "",
         "per table, its placement and what the best single change of it would cost (docs/what_if.md)"},
        {"colocate", "'A,B;C,D'", "",
         "groups of tables each placed whole on one device (added to the task's constraints.colocate)"},
        {"separate", "'A,B;C,D'", "", "groups of tables that share no device (added to constraints.separate)"},
        {"seed", "S", "0", "seed of randomised sharders"}},
       metrics},
      {"size", "capacity planning: the step at each device count, and the fewest devices that meet a target",
       with_exchanges({{"task", "T.json", "", "the task (required); its devices' kind, memory and batch are kept"},
                       {"target-step", "MS", "", "the step to meet, ms (without it: the curve alone)"},
                       {"devices", "MIN-MAX", "",
                        "the device counts to try (default 1 to 16 × the task's); the sizes the topology comes in "
                        "(mixed hardware: whole hosts of its last device's kind added or taken away)"},
                       {"sharder", "SPEC", WhatIfOptions{}.sharder, "the sharder that plans each count"},
                       {"cost", "SPEC", WhatIfOptions{}.cost, "its cost model"},
                       {"backend", "J", kSimJudge,
                        "the judge: sim | cpu | reference | cuda, or any judge spec (sim:coefficients=F.json, "
                        "measured:impl=cpu,repeats=9)"},
                       {"out", "C.csv", "", "the curve as CSV"},
                       {"report", "R.html", "", "the curve as an HTML report"},
                       {"seed", "S", "0", "seed of every plan made"}}),
       "Exits 1 when no count tried meets the target; the last line says why (docs/what_if.md)."},
      {"fit", "why a task does not fit, and the smallest changes that make it fit, each verified by planning",
       with_exchanges({{"task", "T.json", "", "the task (required)"},
                       {"sharder", "SPEC", WhatIfOptions{}.sharder, "the sharder that must plan the changed task"},
                       {"cost", "SPEC", WhatIfOptions{}.cost, "its cost model"},
                       {"backend", "J", kSimJudge,
                        "the judge: sim | cpu | reference | cuda, or any judge spec (sim:coefficients=F.json, "
                        "measured:impl=cpu,repeats=9)"},
                       {"out", "T2.json", "", "write a changed task (the first of the ranked list unless --apply)"},
                       {"apply", "K", "1", "with --out: which change to write"},
                       {"seed", "S", "0", "seed of every plan made"}}),
       "Changes: HBM per device, devices, UVM for the largest tables, row / column splits, any sharding type for "
       "constrained tables; ranked relaxations first, then by the hardware added (docs/what_if.md)."},
      {"replan",
       "re-plan a changed task moving little: the best plan within a movement budget, and the curve of step against "
       "bytes moved",
       with_exchanges(
           {{"task", "T.json", "", "the changed task (required): new statistics, tables, world size"},
            {"from", "P.json", "",
             "the plan running today (required); ranks keep their numbers, added ranks come last; a 2D plan is "
             "re-planned in its own layout and in 1D (--layout; docs/what_if.md)"},
            {"layout", "L", "best",
             "of a 2D plan: best (its own layout and 1D, the faster) | kept (its own layout: the job stays on "
             "DMPCollection) | 1d"},
            {"max-move", "M", "",
             "the most to move: a share of the task's table bytes (0.1, 10%: a plain number up to 1) or bytes (5e9, "
             "4GiB: a plain number above 1 is whole bytes); default: no limit"},
            {"sharder", "SPEC", ReplanOptions{}.sharder, "the from-scratch plan the curve ends at (1D)"},
            {"cost", "SPEC", ReplanOptions{}.cost, "its cost model"},
            {"reshard", "", "",
             "only plans TorchRec's DistributedModelParallel.reshard can run: the same ranks and tables, each table "
             "keeping its sharding type and shards (embshard.torchrec.reshard_delta builds its argument)"},
            {"backend", "J", kSimJudge,
             "the judge: sim | cpu | reference | cuda, or any judge spec (sim:coefficients=F.json, "
             "measured:impl=cpu,repeats=9)"},
            {"out", "P.json", "", "the chosen plan"},
            {"curve", "C.csv", "",
             "the curve: moved_bytes, moved_share, step_ms, tables_switched, price, chosen, rebuilt"},
            {"report", "R.html", "",
             "the re-plan's report: step against bytes moved, the budget, each device's traffic"},
            {"seed", "S", "0", "seed of every plan made"}}),
       "docs/what_if.md says what counts as moved and how the curve is searched."},
      {"check",
       "validate a plan against its task",
       {{"task", "T.json", "", "the task (required)"}, {"plan", "P.json", "", "the plan (required)"}},
       ""},
      {"eval", "judge a plan: per-device compute, communication, memory and the objectives",
       with_measure(with_exchanges({{"task", "T.json", "", "the task (required)"},
                                    {"plan", "P.json", "", "the plan (required)"},
                                    {"backend", "J", kSimJudge,
                                     "the judge: sim | cpu | reference | cuda, or any judge spec "
                                     "(sim:coefficients=F.json, measured:impl=cpu,repeats=9)"},
                                    {"batch", "B", "0", "measured backends: the batch to run (0: the task's)"},
                                    {"draw", "N", "0", "measured backends: which draw of the lookups"},
                                    {"objective", "O", "step", "step | max_sum | balance"},
                                    {"out", "R.json", "", "the evaluation as JSON"},
                                    {"comm", "C", "auto",
                                     "auto | model | mpi (measured all-to-alls, input one included; run under mpirun "
                                     "-n D). auto: mpi for a measured backend started by mpirun, else the link model"},
                                    {"remap", "R", "in_sample",
                                     "tiered shards: in_sample | held_out (which draw ranks the hot rows)"}}),
                    MeasureOptions{}),
       metrics},
      {"compare", "every sharder on every task of a directory, one judge",
       with_measure(
           with_exchanges({{"tasks", "DIR", "", "the task directory (required)"},
                           {"sharders", "'S1;S2;...'", "", "sharder specs (required)"},
                           {"cost", "SPEC", "default", "the cost model sharders that search use"},
                           {"backend", "J", kSimJudge,
                            "the judge: sim | cpu | reference | cuda, or any judge spec (sim:coefficients=F.json, "
                            "measured:impl=cpu,repeats=9)"},
                           {"batch", "B", "0", "measured backends: the batch to run (0: the task's)"},
                           {"out", "R.csv", "", "the comparison CSV (required)"},
                           {"summary", "R.md", "", "a NeuroShard-Table-1-shaped Markdown summary"},
                           {"chart", "R.svg", "", "per-device step bars of one task for every sharder"},
                           {"chart-task", "ID", "", "with --chart: which task (default: the first)"},
                           {"report", "R.html", "", "an HTML report of the comparison"},
                           {"reference", "SPEC", "", "with --report: the sharder the others are compared with"}}),
           MeasureOptions{}),
       metrics},
      {"report", "an HTML report: plans of one task, or a saved comparison",
       with_measure(
           with_exchanges({{"task", "T.json", "", "the task whose plans to show"},
                           {"plan", "'P1.json;P2.json'", "", "the plans (with --task)"},
                           {"backend", "J", kSimJudge,
                            "the judge: sim | cpu | reference | cuda, or any judge spec (sim:coefficients=F.json, "
                            "measured:impl=cpu,repeats=9)"},
                           {"batch", "B", "0", "measured backends: the batch to run (0: the task's)"},
                           {"compare", "R.csv", "", "a compare CSV to show instead"},
                           {"reference", "SPEC", "", "with --compare: the sharder the others are compared with"},
                           {"out", "R.html", "", "the report (required)"}}),
           MeasureOptions{}),
       "Give --task and --plan, or --compare."},
      {"profile compute", "measure random fused shards on this machine's kernels (cost samples, resumable)",
       with_measure(
           {{"out", "S.jsonl", "", "the sample file (appended to; required)"},
            {"samples", "N", number(ComputeProfileRun{}.num_samples), "the file holds this many samples when done"},
            {"batch", "B", number(ComputeProfileRun{}.batch_size), "samples per batch"},
            {"seed", "S", "0", "seed of the sampler"},
            {"pool-seed", "N", "0", "the pool the tables come from"},
            {"max-tables", "N", number(std::int64_t{ComputeProfileRun{}.sampler.max_tables}), "most tables in a shard"},
            {"max-bytes", "N", number(ComputeProfileRun{}.sampler.max_bytes), "most bytes of a shard"},
            {"backend", "B", "cpu", "the kernels: cpu | reference | cuda"},
            {"prepare-ahead", "N", "",
             "samples set up in parallel before they are timed in turn (default: --threads on cuda, 0 on the "
             "CPU, whose cores are measured)"}},
           ComputeProfileRun{}.measure),
       ""},
      {"profile comm", "measure the all-to-alls of random placements over MPI ranks (mpirun -n D)",
       with_measure(
           {{"out", "S.jsonl", "", "the sample file (appended to; required)"},
            {"samples", "N", number(CommProfileRun{}.num_samples), "the file holds this many samples when done"},
            {"batch", "B", number(CommProfileRun{}.batch_size), "samples per batch"},
            {"seed", "S", "0", "seed of the sampler"},
            {"max-tables", "N", number(std::int64_t{CommProfileRun{}.sampler.max_tables}),
             "most tables of a placement"},
            {"max-sleep-ms", "N", number(std::int64_t{CommProfileRun{}.sampler.max_sleep_ms}),
             "most a rank sleeps before joining"},
            {"no-sleep", "", "", "no rank sleeps"}},
           CommProfileRun{}.measure),
       ""},
      {"profile calibrate",
       "fit the sim model to measured compute samples (cpu, cuda, torchrec_cpu: TorchRec's CPU runtime) or to a GPU's "
       "published figures; held-out error",
       {{"samples", "S.jsonl[,T.jsonl]", "", "compute samples (files of other seeds are fitted together)"},
        {"test-every", "K", "3", "with --samples: every K-th sample is held out"},
        {"out", "C.json", "", "with --samples: the fitted coefficients"},
        {"install", "", "",
         "with --samples of a CPU's kernels (backend cpu): install the fit as the measuring machine's calibration, "
         "which sim's builtin coefficients give way to on that machine (cost/machine_calibration.h)"},
        {"report", "R.html", "", "with --samples: predicted against measured, held out"},
        {"figures", "F.json", "", "published figures of a GPU preset (models/calibration/2080ti-papers.json)"},
        {"tasks", "N", "20", "with --figures: tasks per protocol setting"},
        {"seed", "S", "1", "with --figures: seed of the tasks"},
        {"markdown", "R.md", "", "with --figures: the calibration table"}},
       "Give --samples or --figures."},
      {"train cost",
       "train NeuroShard's neural cost models (embshard-train, libtorch); held-out accuracy",
       {{"samples", "S.jsonl[,C.jsonl]", "", "compute and/or comm sample files (required)"},
        {"out", "MODEL.json", "", "the weights file (required)"},
        {"epochs", "N", number(std::int64_t{CostTrainOptions{}.epochs}), "training epochs"},
        {"seed", "S", "0", "seed of the split and the initialisation"},
        {"outputs", "N", number(std::int64_t{CostTrainOptions{}.compute_outputs}),
         "compute model outputs: 2 (fw and bw) or 1 (fw+bw)"},
        {"batch", "N", number(std::int64_t{CostTrainOptions{}.batch_size}), "samples per gradient step"},
        {"lr", "X", number(CostTrainOptions{}.learning_rate), "Adam's learning rate"},
        {"report", "R.html", "", "the training report (default: MODEL.html)"},
        {"force", "", "", "write weights even when worse than the baselines"}},
       "Trains the compute model on a compute sample file and the fw/bw comm models on a comm sample\n"
       "file (each file's header says which it is; both are checked before any training), prints\n"
       "held-out MSE, MAPE and R² beside the baselines and writes the weights (for --cost\n"
       "neural:weights=MODEL.json) with a report of predicted against measured times. A model worse\n"
       "than nothing (held-out R² < 0, or compute worse than the sum of singles) is not written\n"
       "unless --force."},
      {"train dreamshard", "train DreamShard's policy on a directory of tasks, plans judged on a backend",
       policy_training(
           {{"iterations", "N", number(std::int64_t{DreamShardTrainOptions{}.iterations}), "outer iterations"},
            {"collect", "N", number(std::int64_t{DreamShardTrainOptions{}.collect_episodes}),
             "real plans evaluated per iteration"},
            {"cost-steps", "N", number(std::int64_t{DreamShardTrainOptions{}.cost_steps}),
             "cost-network updates per iteration"},
            {"rl-batches", "N", number(std::int64_t{DreamShardTrainOptions{}.rl_batches}),
             "policy updates per iteration"},
            {"episodes", "N", number(std::int64_t{DreamShardTrainOptions{}.rl_episodes}),
             "estimated-MDP episodes per policy update"},
            {"lr", "X", number(DreamShardTrainOptions{}.learning_rate), "Adam's learning rate"},
            {"features", "per_task|training_set", to_string(DreamShardTrainOptions{}.features),
             "table features z-scored over each task (the authors' recipe) or over every training table "
             "(stored in the policy)"},
            {"cost-patience", "N", number(std::int64_t{DreamShardTrainOptions{}.cost_patience}),
             "0: N_cost cost updates per iteration (the authors'); N: up to 10 x N_cost, stopped after N "
             "held-out checks without gain"},
            {"reward", "overall|kernels", "overall",
             "the policy's reward: the cost network's overall head (the authors') or its fw/bw/comm heads "
             "composed as the judge composes a step"},
            {"keep", "last|best", "last",
             "the policy written: the last iteration's (the authors') or the iteration whose arg-max plans "
             "of the first training tasks judged best"}}),
       "Evaluates real plans on the backend (at --batch for measured backends), with a checkpoint in\n"
       "POLICY.json.ckpt after every iteration (--resume continues from it); plan with\n"
       "--sharder dreamshard:policy=POLICY.json."},
      {"train autoshard", "train AutoShard's policy (IMPALA actors, V-trace learner) on a directory of tasks",
       policy_training(
           {{"env-steps", "N", number(AutoShardTrainOptions{}.env_steps), "placement steps the actors take in all"},
            {"actors", "N", number(std::int64_t{AutoShardTrainOptions{}.actors}), "actor threads"},
            {"unroll", "N", number(std::int64_t{AutoShardTrainOptions{}.unroll}), "steps per unroll"},
            {"learner-batch", "N", number(std::int64_t{AutoShardTrainOptions{}.learner_batch}),
             "unrolls per learner update"},
            {"lr", "X", number(AutoShardTrainOptions{}.learning_rate), "Adam's learning rate"},
            {"entropy", "X", number(AutoShardTrainOptions{}.entropy_weight), "entropy weight"},
            {"cost-updates", "N", number(std::int64_t{AutoShardTrainOptions{}.cost_updates}),
             "cost-head updates after each learner update"},
            {"checkpoint-every", "N", number(std::int64_t{AutoShardTrainOptions{}.checkpoint_every}),
             "learner updates between checkpoints"}}),
       "Evaluates real plans on the backend (at --batch for measured backends), with a checkpoint in\n"
       "POLICY.json.ckpt every --checkpoint-every learner updates (--resume continues from it); plan\n"
       "with --sharder autoshard:policy=POLICY.json."},
      {"list",
       "every registered plug-in (topologies, protocols, sharders, cost models) with its parameters",
       {{"json", "", "",
         "print them as JSON: each family's entries and parameters, and what each topology preset builds at "
         "its defaults (links, device 0's memory and bandwidths)"}},
       ""},
      {"help",
       "this list; `embshard help --markdown` writes docs/cli.md",
       {{"markdown", "", "", "print the whole CLI reference as Markdown (docs/cli.md)"}},
       ""},
  };
}

/** `text` inside a Markdown table cell: a '|' would end the cell. */
std::string cell(const std::string& text) {
  std::string out;
  for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string usage_line(const VerbDoc& verb) {
  std::string line = "embshard" + (verb.name.empty() ? std::string() : " " + verb.name);
  for (const OptionDoc& o : verb.options) {
    const bool required = o.help.find("required") != std::string::npos;
    const std::string text = "--" + o.name + (o.value.empty() ? "" : " " + o.value);
    line += required ? " " + text : " [" + text + "]";
  }
  return line;
}

std::string option_line(const OptionDoc& o) {
  std::string left = "--" + o.name + (o.value.empty() ? "" : " " + o.value);
  std::ostringstream out;
  out << "  " << left << std::string(left.size() < 28 ? 28 - left.size() : 1, ' ') << o.help;
  if (!o.fallback.empty()) out << " (default " << o.fallback << ")";
  return out.str();
}

}  // namespace

const std::vector<OptionDoc>& common_options() {
  static const std::vector<OptionDoc> options = {
      {"threads", "N", "", "worker threads (default: the machine's logical CPUs)"},
      {"quiet", "", "",
       "no progress or info lines on stderr, only warnings and errors (results still go to stdout and files)"},
      {"verbose", "", "", "also the per-epoch / per-iteration detail of training"},
  };
  return options;
}

const std::vector<VerbDoc>& verb_docs() {
  static const std::vector<VerbDoc> docs = make_docs();
  return docs;
}

const VerbDoc* find_verb_doc(const std::string& name) {
  for (const VerbDoc& v : verb_docs())
    if (v.name == name) return &v;
  return nullptr;
}

std::vector<std::string> sub_verbs(const std::string& verb) {
  std::vector<std::string> subs;
  for (const VerbDoc& v : verb_docs())
    if (v.name.rfind(verb + " ", 0) == 0) subs.push_back(v.name.substr(verb.size() + 1));
  return subs;
}

const VerbDoc* resolve_verb(const std::string& verb, const std::vector<std::string>& words, std::ostream& help) {
  const bool asks_for_help =
      std::any_of(words.begin(), words.end(), [](const std::string& w) { return w == "--help" || w == "-h"; });
  const std::vector<std::string> subs = sub_verbs(verb);
  std::string name = verb;
  if (!subs.empty()) {
    if (words.empty() || std::find(subs.begin(), subs.end(), words[0]) == subs.end()) {
      if (asks_for_help) {
        for (const std::string& sub : subs) help << verb_help(*find_verb_doc(verb + " " + sub)) << "\n";
        return nullptr;
      }
      std::string list;
      for (const std::string& sub : subs) list += (list.empty() ? "" : ", ") + sub;
      throw Error("embshard " + verb + ": expected a sub-verb: " + list + " (embshard " + verb + " " + subs.front() +
                  " --help)");
    }
    name = verb + " " + words[0];
  }
  const VerbDoc* doc = find_verb_doc(name);
  if (doc == nullptr) throw InternalError("embshard: verb '" + name + "' is not declared in apps/cli/verbs.cpp");
  if (!asks_for_help) return doc;
  help << verb_help(*doc);
  return nullptr;
}

std::string verb_help(const VerbDoc& verb) {
  std::ostringstream out;
  out << "usage: " << usage_line(verb) << "\n" << verb.summary << "\n";
  if (!verb.options.empty()) {
    out << "options:\n";
    for (const OptionDoc& o : verb.options) out << option_line(o) << "\n";
  }
  out << "every verb:\n";
  for (const OptionDoc& o : common_options()) out << option_line(o) << "\n";
  if (!verb.notes.empty()) out << verb.notes << "\n";
  return out.str();
}

std::string usage() {
  std::ostringstream out;
  out << "usage: embshard [VERB] [options]   (embshard VERB --help or embshard help VERB: its options)\n"
      << "  " << usage_line(verb_docs().front()) << "   the main job\nverbs:\n";
  for (const VerbDoc& v : verb_docs()) {
    const std::string name = v.name.empty() ? "(none)" : v.name;
    out << "  " << name << std::string(name.size() < 19 ? 19 - name.size() : 1, ' ') << v.summary << "\n";
  }
  out << "every verb:";
  for (const OptionDoc& o : common_options()) out << " [--" << o.name << (o.value.empty() ? "" : " " + o.value) << "]";
  out << "\nembshard --version: the version and the git commit it was built from\n";
  return out.str();
}

std::string cli_markdown() {
  std::ostringstream out;
  out << "# The embshard command line\n\n"
      << "Generated by `build/bin/embshard help --markdown` from `apps/cli/verbs.cpp`, the one place\n"
      << "the verbs and their options are declared (`Cli.DocsCliMdIsCurrent` checks this file).\n"
      << "`embshard VERB --help` prints the same for one verb; `embshard --version` the version.\n\n"
      << "Every verb also takes:\n\n";
  for (const OptionDoc& o : common_options())
    out << "- `--" << o.name << (o.value.empty() ? "" : " " + o.value) << "`: " << o.help << "\n";
  for (const VerbDoc& v : verb_docs()) {
    out << "\n## `embshard" << (v.name.empty() ? "" : " " + v.name) << "`\n\n"
        << v.summary << ".\n\n"
        << "```\n"
        << usage_line(v) << "\n```\n";
    if (!v.options.empty()) {
      out << "\n| option | meaning | default |\n|---|---|---|\n";
      for (const OptionDoc& o : v.options)
        out << "| `--" << o.name << (o.value.empty() ? "" : " " + cell(o.value)) << "` | " << cell(o.help) << " | "
            << (o.fallback.empty() ? "" : "`" + o.fallback + "`") << " |\n";
    }
    if (!v.notes.empty()) out << "\n" << v.notes << "\n";
  }
  return out.str();
}

}  // namespace embshard::cli
