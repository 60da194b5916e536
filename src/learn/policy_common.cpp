// What the policy trainers share (policy_common.h), and find_task_files (policy_training.h).
#include "learn/policy_common.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/core/sha256.h"
#include "embshard/plan/plan.h"

namespace embshard {

std::vector<std::string> find_task_files(const std::string& spec) {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(item, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(item)) {
        if (entry.is_regular_file() && entry.path().extension() == ".json") found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      EMBSHARD_CHECK(!found.empty(), "--tasks: directory '", item, "' holds no task file (*.json)");
      paths.insert(paths.end(), found.begin(), found.end());
    } else {
      EMBSHARD_CHECK(fs::is_regular_file(item, ec), "--tasks: '", item, "' is neither a task file nor a directory");
      paths.push_back(item);
    }
  }
  EMBSHARD_CHECK(!paths.empty(), "--tasks: no training task given ('", spec, "')");
  return paths;
}

namespace learn {

PolicyTraining start_provenance(const PolicyTrainSetup& setup) {
  EMBSHARD_CHECK(!setup.tasks.empty(), "train: no training task");
  PolicyTraining t;
  t.tasks = setup.tasks_spec;
  std::string hashes;
  for (const std::string& path : setup.task_paths) hashes += sha256_file_hex(path);
  t.tasks_sha256 = sha256_hex(hashes);
  t.num_tasks = static_cast<int>(setup.tasks.size());
  t.protocol = setup.tasks.front().protocol;
  t.device_kind = setup.tasks.front().topology.device_kind;
  for (const Task& task : setup.tasks) {
    EMBSHARD_CHECK(task.topology.device_kind == t.device_kind, "train: task '", task.id, "' has '",
                   task.topology.device_kind, "' devices but task '", setup.tasks.front().id, "' has '", t.device_kind,
                   "': train one policy per kind of device");
    t.devices = std::max(t.devices, task.topology.num_devices());
  }
  t.backend = setup.judge.backend;
  t.batch_size = setup.judge.batch_size;
  t.seed = setup.seed;
  t.created_utc = utc_timestamp();
  t.embshard_version = embshard_version();
  return t;
}

std::string why_no_plan_fits(const Task& task) {
  if (task.workload.tables.empty()) return "the task has no tables";
  std::int64_t largest = 0, total = 0;
  for (const Device& d : task.topology.devices) {
    largest = std::max(largest, d.hbm_bytes);
    total += d.hbm_bytes;
  }
  for (const TableSpec& t : task.workload.tables) {
    if (t.size_bytes() > largest) {
      return detail::concat("table '", t.name, "' (", t.size_bytes(),
                            " bytes) is larger than every device's HBM (the "
                            "largest holds ",
                            largest, " bytes): every action would be illegal");
    }
  }
  if (task.workload.total_bytes() > total) {
    return detail::concat("the tables (", task.workload.total_bytes(), " bytes) exceed the devices' HBM (", total,
                          " bytes): every plan would overflow");
  }
  return "";
}

std::string checkpoint_dir(const std::string& out) { return out + ".ckpt"; }

void write_checkpoint_state(const std::string& out, const std::string& kind, const std::string& tasks_sha256,
                            const std::map<std::string, std::string>& options, nlohmann::json state) {
  state["kind"] = kind;
  state["tasks_sha256"] = tasks_sha256;
  state["options"] = options;
  write_file_atomic(checkpoint_dir(out) + "/state.json", state.dump() + "\n");
}

nlohmann::json read_checkpoint_state(const std::string& out, const std::string& kind, const std::string& tasks_sha256,
                                     const std::map<std::string, std::string>& options) {
  const std::string dir = checkpoint_dir(out);
  EMBSHARD_CHECK(std::filesystem::exists(dir + "/state.json"), "--resume: no checkpoint at ", dir);
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(read_file(dir + "/state.json"));
    EMBSHARD_CHECK(state.value("kind", "") == kind, dir, ": not a ", kind, " checkpoint");
    EMBSHARD_CHECK(state.at("tasks_sha256") == tasks_sha256, dir, ": the checkpoint was made for other training tasks");
    if (!state.contains("options")) return state;
    const auto saved = state.at("options").get<std::map<std::string, std::string>>();
    for (const auto& [name, value] : options) {
      const auto it = saved.find(name);
      EMBSHARD_CHECK(it == saved.end() || it->second == value, dir, ": the checkpoint was made with ", name, " = ",
                     it->second, ", this run has ", value, "; resume with the same");
    }
  } catch (const nlohmann::json::exception& e) {
    EMBSHARD_THROW(dir, "/state.json: corrupt checkpoint: ", e.what());
  }
  return state;
}

}  // namespace learn
}  // namespace embshard
