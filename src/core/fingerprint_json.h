#pragma once
// The JSON form of a HardwareFingerprint (core/fingerprint.h), shared by cost-sample files,
// sim coefficient files and neural weight files (private to the library: nlohmann/json stays out
// of the public headers).
#include <nlohmann/json.hpp>

#include "core/json_reader.h"
#include "embshard/core/fingerprint.h"

namespace embshard::detail {

[[nodiscard]] nlohmann::json fingerprint_json(const HardwareFingerprint& fingerprint);
/** Reads a fingerprint strictly (every field required, no others). */
[[nodiscard]] HardwareFingerprint read_fingerprint(const JsonNode& node);

}  // namespace embshard::detail
