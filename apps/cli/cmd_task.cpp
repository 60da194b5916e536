// embshard task gen | check
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "embshard/data/data_io.h"
#include "embshard/eval/task_gen.h"
#include "embshard/plan/plan.h"
#include "embshard/plan/plan_io.h"

namespace embshard::cli {

namespace {

/** More task files than any protocol uses (NeuroShard: 100 per setting); a typo beyond it. */
constexpr std::int64_t kMaxTaskCount = 100000;

/** The protocol spec with --devices / --max-dim folded in as parameters. */
std::string protocol_spec(Args& args) {
  Spec spec = parse_spec(args.require("protocol"));
  if (auto v = args.get("devices")) set_spec_value(spec, "devices", *v);
  if (auto v = args.get("max-dim")) set_spec_value(spec, "max_dim", *v);
  return format_spec(spec);
}

/** A task set is never mixed with another: DIR must hold no task files (`*.json`) yet. */
void refuse_a_directory_with_tasks(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::int64_t found = 0;
  std::string example;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    if (found++ == 0) example = entry.path().filename().string();
  }
  EMBSHARD_CHECK(found == 0, "embshard task gen: --out ", dir, " already holds ", found, " task file",
                 found == 1 ? "" : "s", " (", example,
                 "); compare --tasks would mix them with the new set: "
                 "choose a new directory or remove them");
}

}  // namespace

int run_task(Args& args, const Context& ctx) {
  EMBSHARD_CHECK(args.positional().size() == 1 && args.positional()[0] == "gen",
                 "embshard task: the only sub-verb is 'gen' (embshard task gen --protocol ...)");
  const auto gen = make_task_generator(protocol_spec(args));
  const auto count = args.get_int("count");
  const auto seed = static_cast<std::uint64_t>(args.get_int("seed"));
  const std::string out = args.require("out");
  const auto tables = args.get("tables");
  const auto pool_seed = static_cast<std::uint64_t>(args.get_int("pool-seed"));
  EMBSHARD_CHECK(count >= 1 && count <= kMaxTaskCount, "embshard task gen: --count must lie in [1, ", kMaxTaskCount,
                 "], got ", count);
  args.finish(1);
  std::vector<NamedPath> outputs;
  for (std::int64_t i = 0; i < count; ++i) outputs.push_back({"--out", task_file_path(out, static_cast<int>(i))});
  check_paths({{"--tables", tables.value_or("")}}, {}, outputs);
  refuse_a_directory_with_tasks(out);
  const TableSource source =
      tables ? TableSource::from_stats(read_stats_file(*tables)) : TableSource::from_pool(pool_seed, gen->batch_size());
  const auto first_size = task_to_json(gen->generate(source, seed, 0)).size();
  check_fits_on_disk(out, static_cast<std::uint64_t>(first_size) * static_cast<std::uint64_t>(count),
                     detail::concat("embshard task gen --count ", count));
  const auto paths = write_tasks(*gen, source, seed, static_cast<int>(count), out);
  ctx.info("wrote " + std::to_string(paths.size()) + " tasks (" + gen->spec() + ") to " + out);
  return 0;
}

int run_check(Args& args, const Context& ctx) {
  const std::string task_path = args.require("task");
  const std::string plan_path = args.require("plan");
  args.finish();
  check_paths({{"--task", task_path}, {"--plan", plan_path}}, {}, {});
  const Task task = read_task_file(task_path);
  const Plan plan = read_plan_file(plan_path);
  const std::string err = find_error_in_plan(task, plan);
  if (!err.empty()) {
    std::cerr << "error: " << plan_path << ": " << err << "\n";
    return 1;
  }
  ctx.info(plan_path + ": valid plan for " + task_path);
  return 0;
}

}  // namespace embshard::cli
