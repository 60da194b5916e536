// embshard train ...: handed over to embshard-train (the learn module, linked to libtorch), which
// sits beside this binary, so that planning never loads libtorch.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "commands.h"
#include "embshard/core/error.h"

namespace embshard::cli {

int exec_train(const std::vector<std::string>& words) {
  char self[PATH_MAX] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  EMBSHARD_CHECK(length > 0, "embshard train: cannot find this binary (/proc/self/exe): ", std::strerror(errno));
  const std::string trainer =
      (std::filesystem::path(std::string(self, static_cast<std::size_t>(length))).parent_path() / "embshard-train")
          .string();
  EMBSHARD_CHECK(access(trainer.c_str(), X_OK) == 0, "embshard train: ", trainer,
                 " is missing: this embshard was built without the learn module (libtorch); install "
                 "libtorch-dev libopenblas0 (scripts/setup.sh does) and rebuild");
  std::vector<char*> argv{const_cast<char*>(trainer.c_str())};
  for (const std::string& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  execv(trainer.c_str(), argv.data());
  EMBSHARD_THROW("embshard train: cannot run ", trainer, ": ", std::strerror(errno));
}

}  // namespace embshard::cli
