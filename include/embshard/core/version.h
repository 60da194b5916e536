#pragma once
/**
 * @file version.h
 * @brief The library's version, recorded in every file embshard writes (plans, cost samples,
 *        weights, policies, reports) as provenance.
 */
#include <string>

namespace embshard {

/** "0.1.0+<git hash>" (the hash of the source tree at configure time; just "0.1.0" outside git). */
[[nodiscard]] std::string embshard_version();

}  // namespace embshard
