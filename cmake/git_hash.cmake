# Writes OUT, a header defining EMBSHARD_GIT_HASH as the short hash of SOURCE_DIR's HEAD ("" outside
# a git checkout), at every build and only when the hash changed: the version a binary reports
# (core/version.h) and every plan records is the commit it was built from, not the one configured.
execute_process(COMMAND git rev-parse --short HEAD WORKING_DIRECTORY "${SOURCE_DIR}"
                OUTPUT_VARIABLE hash OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
set(text "#pragma once\n#define EMBSHARD_GIT_HASH \"${hash}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
