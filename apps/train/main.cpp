// embshard-train: the learn module's command (`embshard train ...` hands over to it), so that only
// training pays libtorch's start-up. Verbs: cost (NeuroShard's cost models), dreamshard and
// autoshard (the RL placement policies).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/args.h"
#include "cli/verbs.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/evaluator.h"
#include "embshard/learn/cost_training.h"
#include "embshard/learn/policy_training.h"
#include "embshard/report/fit_report.h"

namespace {

using namespace embshard;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

void print_accuracy(const std::string& model, const TrainingProvenance& t) {
  std::printf("%-9s %-15s %12s %9s %8s %6s\n", model.c_str(), "estimator", "MSE ms²", "MAPE", "R²", "n");
  for (const auto& [name, a] : t.accuracy) {
    std::printf("%-9s %-15s %12.4g %8.1f%% %8.3f %6lld\n", "", name.c_str(), a.mse, 100 * a.mape, a.r2,
                static_cast<long long>(a.count));
  }
}

/** A sample file read and checked, before anything trains on it. */
struct SampleInput {
  std::string path;
  CostSampleFile samples;
};

/** Reads every --samples file and checks each can train (kind, count, devices) before any training. */
std::vector<SampleInput> read_training_inputs(const std::vector<std::string>& files, const CostTrainOptions& options,
                                              const Context& ctx) {
  EMBSHARD_CHECK(!files.empty() && files.size() <= 2, "--samples: one compute file and/or one comm file");
  std::vector<SampleInput> inputs;
  int compute = 0;
  for (const std::string& file : files) {
    inputs.push_back({file, read_cost_samples(file, ctx)});
    check_training_samples(file, inputs.back().samples, options);
    compute += inputs.back().samples.header.kind == SampleKind::kCompute ? 1 : 0;
  }
  EMBSHARD_CHECK(compute <= 1 && static_cast<int>(files.size()) - compute <= 1, "--samples: two ",
                 compute > 1 ? "compute" : "comm", " sample files (give one of each kind)");
  return inputs;
}

/** Trains every model of `inputs`; each comes with its held-out points for the report. */
std::vector<TrainedModelFit> train_models(const std::vector<SampleInput>& inputs, const CostTrainOptions& options,
                                          NeuralWeights& weights, const Context& ctx) {
  std::vector<TrainedModelFit> fits;
  for (const SampleInput& in : inputs) {
    if (in.samples.header.kind == SampleKind::kCompute) {
      TrainedCompute trained = train_compute_model(in.path, in.samples, options, ctx);
      fits.push_back({"compute", "compute fw+bw, held out", trained.net.training, std::move(trained.test_points)});
      weights.compute = std::move(trained.net);
    } else {
      TrainedComm trained = train_comm_models(in.path, in.samples, options, ctx);
      fits.push_back({"fw_comm", "forward all-to-all per device, held out", trained.forward.training,
                      std::move(trained.forward_points)});
      fits.push_back({"bw_comm", "backward all-to-all per device, held out", trained.backward.training,
                      std::move(trained.backward_points)});
      weights.fw_comm = std::move(trained.forward);
      weights.bw_comm = std::move(trained.backward);
    }
  }
  return fits;
}

int train_cost(cli::Args& args, const Context& ctx) {
  const std::vector<std::string> files = split_list(args.require("samples"));
  const std::string out = args.require("out");
  CostTrainOptions options;
  options.epochs = static_cast<int>(args.get_int("epochs"));
  options.seed = static_cast<std::uint64_t>(args.get_int("seed"));
  options.compute_outputs = static_cast<int>(args.get_int("outputs"));
  options.batch_size = static_cast<int>(args.get_int("batch"));
  options.learning_rate = args.get_double("lr");
  const std::string stem = out.size() > 5 && out.ends_with(".json") ? out.substr(0, out.size() - 5) : out;
  const std::string report = args.get_or("report", stem + ".html");
  const bool force = args.flag("force");
  args.finish(1);
  std::vector<NamedPath> named_inputs;
  for (const std::string& file : files) {
    check_input_file(file, "--samples");
    named_inputs.push_back({"--samples", file});
  }
  refuse_if_same_file(named_inputs, {{"--out", out}, {"--report", report}});
  const std::vector<SampleInput> inputs = read_training_inputs(files, options, ctx);
  NeuralWeights weights;
  const std::vector<TrainedModelFit> fits = train_models(inputs, options, weights, ctx);
  std::printf("held-out accuracy (test split):\n");
  std::vector<std::string> refusals;
  for (const TrainedModelFit& fit : fits) {
    print_accuracy(fit.name, fit.training);
    const std::string reason = find_worse_than_baseline(fit.name, fit.training);
    if (!reason.empty()) refusals.push_back(reason);
  }
  std::string why;
  for (const std::string& reason : refusals) why += "\n  " + reason;
  EMBSHARD_CHECK(refusals.empty() || force, "train cost: not writing ", out, ", the model is worse than nothing:", why,
                 "\ncollect more samples or train longer (--epochs), or pass --force to write it anyway");
  if (!refusals.empty()) ctx.warn("train cost: writing " + out + " anyway (--force):" + why);
  OutputSet outputs;  // the weights and their report are replaced together or not at all
  outputs.add(out, neural_weights_json(weights));
  outputs.add(report, fit_report_html(neural_training_report(fits, out)));
  outputs.commit();
  std::printf("weights: %s\nreport: %s\n", out.c_str(), report.c_str());
  return 0;
}

PolicyTrainSetup policy_setup(cli::Args& args) {
  PolicyTrainSetup setup;
  setup.tasks_spec = args.require("tasks");
  setup.out = args.require("out");
  setup.task_paths = find_task_files(setup.tasks_spec);
  std::vector<NamedPath> inputs;
  for (const std::string& path : setup.task_paths) inputs.push_back({"--tasks", path});
  refuse_if_same_file(inputs, {{"--out", setup.out}});
  for (const std::string& path : setup.task_paths) setup.tasks.push_back(read_task_file(path));
  // A measured judge runs at batch 8192 unless told (sim and other models: the task's).
  std::string judge = args.value("backend");
  judge = args.given("batch") ? set_judge_value(judge, "batch", args.require("batch"))
                              : with_judge_default(judge, "batch", "8192");
  EMBSHARD_CHECK(!setup.tasks.empty(), "train: no training task in ", setup.tasks_spec);
  setup.judge = plan_judge(judge, setup.tasks.front());  // an unknown backend fails here
  setup.resume = args.flag("resume");
  setup.seed = static_cast<std::uint64_t>(args.get_int("seed"));
  return setup;
}

int train_dreamshard_verb(cli::Args& args, Context& ctx) {
  PolicyTrainSetup setup = policy_setup(args);
  DreamShardTrainOptions o;
  o.iterations = static_cast<int>(args.get_int("iterations"));
  o.collect_episodes = static_cast<int>(args.get_int("collect"));
  o.cost_steps = static_cast<int>(args.get_int("cost-steps"));
  o.rl_batches = static_cast<int>(args.get_int("rl-batches"));
  o.rl_episodes = static_cast<int>(args.get_int("episodes"));
  o.learning_rate = args.get_double("lr");
  const std::string features = args.value("features");
  EMBSHARD_CHECK(features == "per_task" || features == "training_set",
                 "--features: expected per_task or training_set, got '", features, "'");
  o.features = parse_feature_scaling(features);
  o.cost_patience = static_cast<int>(args.get_int("cost-patience"));
  o.reward = parse_dreamshard_reward(args.value("reward"));
  o.keep = parse_dreamshard_keep(args.value("keep"));
  args.finish(1);
  ctx.seed = setup.seed;
  std::printf("policy: %s\n", train_dreamshard(setup, o, ctx).c_str());
  return 0;
}

int train_autoshard_verb(cli::Args& args, Context& ctx) {
  PolicyTrainSetup setup = policy_setup(args);
  AutoShardTrainOptions o;
  o.env_steps = args.get_int("env-steps");
  o.actors = static_cast<int>(args.get_int("actors"));
  o.unroll = static_cast<int>(args.get_int("unroll"));
  o.learner_batch = static_cast<int>(args.get_int("learner-batch"));
  o.learning_rate = args.get_double("lr");
  o.entropy_weight = args.get_double("entropy");
  o.cost_updates = static_cast<int>(args.get_int("cost-updates"));
  o.checkpoint_every = static_cast<int>(args.get_int("checkpoint-every"));
  args.finish(1);
  ctx.seed = setup.seed;
  std::printf("policy: %s\n", train_autoshard(setup, o, ctx).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  try {
    if (words.empty()) {  // as --help, but a failed call
      (void)cli::resolve_verb("train", {"--help"}, std::cout);
      return 1;
    }
    const cli::VerbDoc* doc = cli::resolve_verb("train", words, std::cout);
    if (doc == nullptr) return 0;  // help was asked for and printed
    const std::string& verb = words[0];
    cli::Args args(*doc, words);
    Context ctx;
    cli::apply_common_options(args, ctx);
    if (verb == "dreamshard") return train_dreamshard_verb(args, ctx);
    if (verb == "autoshard") return train_autoshard_verb(args, ctx);
    return train_cost(args, ctx);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cerr << e.what() << "\nplease report this bug\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
