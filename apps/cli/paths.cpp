// The path checks every verb makes before any work (commands.h).
#include <filesystem>

#include "commands.h"
#include "embshard/core/spec.h"

namespace embshard::cli {

std::vector<NamedPath> spec_inputs(const std::string& option, const std::string& spec) {
  std::vector<NamedPath> files;
  std::error_code ec;
  for (const auto& [key, value] : parse_spec(spec).pairs) {
    if (std::filesystem::is_regular_file(value, ec)) files.push_back({option + " " + key, value});
  }
  return files;
}

void check_paths(const std::vector<NamedPath>& files, const std::vector<NamedPath>& dirs,
                 const std::vector<NamedPath>& outputs) {
  for (const NamedPath& f : files) {
    if (!f.path.empty()) check_input_file(f.path, f.option);
  }
  for (const NamedPath& out : outputs) {
    std::error_code ec;
    EMBSHARD_CHECK(out.path.empty() || !std::filesystem::is_directory(out.path, ec), out.option, ": ", out.path,
                   ": is a directory; give a file name");
  }
  std::vector<NamedPath> inputs = files;
  inputs.insert(inputs.end(), dirs.begin(), dirs.end());
  refuse_if_same_file(inputs, outputs);
}

}  // namespace embshard::cli
