// The library's version (version.h); EMBSHARD_VERSION and EMBSHARD_GIT_HASH come from CMake.
#include "embshard/core/version.h"

namespace embshard {

std::string embshard_version() {
  const std::string hash = EMBSHARD_GIT_HASH;
  return hash.empty() ? std::string(EMBSHARD_VERSION) : std::string(EMBSHARD_VERSION) + "+" + hash;
}

}  // namespace embshard
