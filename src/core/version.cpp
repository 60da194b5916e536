// The library's version (version.h): EMBSHARD_VERSION comes from CMake, EMBSHARD_GIT_HASH from
// the header cmake/git_hash.cmake writes at every build.
#include "embshard/core/version.h"

#include "git_hash.h"

namespace embshard {

std::string embshard_version() {
  const std::string hash = EMBSHARD_GIT_HASH;
  return hash.empty() ? std::string(EMBSHARD_VERSION) : std::string(EMBSHARD_VERSION) + "+" + hash;
}

}  // namespace embshard
