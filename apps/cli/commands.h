#pragma once
// One function per CLI verb; each is a thin wrapper around one library call.
#include <string>
#include <vector>

#include "args.h"
#include "embshard/core/context.h"
#include "embshard/core/file_io.h"
#include "embshard/cost/breakdown.h"
#include "embshard/eval/evaluator.h"
#include "embshard/profile/measure.h"

namespace embshard::cli {

int run_stats(Args& args, const Context& ctx);              ///< embshard stats --data FILE --out FILE
int run_pool(Args& args, const Context& ctx);               ///< embshard pool [--seed N] --out FILE | --check
int run_task(Args& args, const Context& ctx);               ///< embshard task gen ...
int run_check(Args& args, const Context& ctx);              ///< embshard check --task T --plan P
int run_list(Args& args, const Context& ctx);               ///< embshard list
int run_profile(Args& args, const Context& ctx);            ///< embshard profile compute|comm ...
int run_profile_compute(Args& args, const Context& ctx);    ///< embshard profile compute ...
int run_profile_comm(Args& args, const Context& ctx);       ///< embshard profile comm ... (MPI)
int run_profile_calibrate(Args& args, const Context& ctx);  ///< embshard profile calibrate ...
int run_plan(Args& args, const Context& ctx);               ///< embshard plan --task T --sharder S ...
int run_eval(Args& args, const Context& ctx);               ///< embshard eval --task T --plan P ...
int run_compare(Args& args, const Context& ctx);            ///< embshard compare --tasks DIR --sharders ...
int run_report(Args& args, const Context& ctx);   ///< embshard report --task T --plan P | --compare R.csv --out R.html
int run_size(Args& args, const Context& ctx);     ///< embshard size --task T --target-step MS ...
int run_fit(Args& args, const Context& ctx);      ///< embshard fit --task T ...
int run_replan(Args& args, const Context& ctx);   ///< embshard replan --task NEW --from OLD_PLAN ...
int run_default(Args& args, const Context& ctx);  ///< embshard (no verb): the main job
int run_help(Args& args, const Context& ctx);     ///< embshard help [--markdown]
/** embshard train ...: replaces this process with embshard-train (the learn module). */
[[noreturn]] int exec_train(const std::vector<std::string>& words);

/** Files named by the values of `spec` (`policy=FILE`, `weights=FILE`) that exist, as inputs. */
std::vector<NamedPath> spec_inputs(const std::string& option, const std::string& spec);

/**
 * Before any work: every one of `files` is a regular file (else "--opt: PATH: is a directory" ...),
 * and no output is an input or another output (`refuse_if_same_file`; `dirs` are input
 * directories, standing for their files). Empty paths (options not given) are skipped.
 */
void check_paths(const std::vector<NamedPath>& files, const std::vector<NamedPath>& dirs,
                 const std::vector<NamedPath>& outputs);

/** --objective step|max_sum|balance (default step); an unknown name is an error naming --objective. */
Objective objective_option(Args& args);

/** --warmup, --repeats and --no-flush folded into `defaults`. */
MeasureOptions measure_options(Args& args, const MeasureOptions& defaults);

/**
 * The judge spec of --backend (any judge spec, eval/evaluator.h), with the judge options the
 * user gave (--batch, --draw, --warmup, --repeats, --no-flush, --remap, --input-comm,
 * --exchanges) set in it where the judge takes them; an unknown judge is an error naming it.
 */
std::string judge_option(Args& args);

}  // namespace embshard::cli
