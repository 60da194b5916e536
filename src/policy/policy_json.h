#pragma once
/**
 * @file policy_json.h
 * @brief The envelope of policy files (policy/policy_file.h), private to the library: each kind
 *        writes and reads its own "parameters" and delegates the rest here.
 */
#include <nlohmann/json.hpp>
#include <string>

#include "core/json_reader.h"
#include "embshard/policy/policy_file.h"

namespace embshard::detail {

/** The whole document for `kind` with the given parameters object. */
[[nodiscard]] nlohmann::json policy_document(const std::string& kind, const FeatureScaler& features,
                                             nlohmann::json parameters, const PolicyTraining& training);

/** A parsed policy file whose envelope has been checked; nodes stay valid while it lives. */
struct PolicyDocument {
  nlohmann::json json;
  std::string where;
  FeatureScaler features;
  PolicyTraining training;
  [[nodiscard]] JsonNode parameters() const;
};

/**
 * Parses `text` (from `where`) and checks format, version, `kind`, the feature set (version and
 * names of this build) and that the scaling is `scaling`; Error naming `where` and the field.
 */
[[nodiscard]] PolicyDocument parse_policy_document(const std::string& text, const std::string& where,
                                                   const std::string& kind,
                                                   const std::vector<FeatureScaling>& scalings);

}  // namespace embshard::detail
