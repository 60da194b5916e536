#pragma once
/**
 * @file nn_json.h
 * @brief Network parameters in weights files (private to the library): PyTorch state-dict names
 *        mapped to `{"shape": [..], "data": [..]}`, read strictly.
 *
 * Shared by the neural cost models (cost/neural_weights.h) and the RL policies
 * (policy/dreamshard_policy.h, policy/autoshard_policy.h). Readers check every shape against
 * the architecture the caller expects and record each name they consume in `used`, so that
 * `reject_unused` can refuse parameters the architecture does not have.
 */
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "embshard/nn/mlp.h"

namespace embshard::detail {

/** parameters[name] = {"shape": shape, "data": data}. */
void add_tensor(nlohmann::json& parameters, const std::string& name, const std::vector<int>& shape,
                const std::vector<float>& data);
/** Every layer of `mlp` under its PyTorch names. */
void add_mlp(nlohmann::json& parameters, const Mlp& mlp);

/** An array of exactly `size` finite numbers ≥ `min`. */
[[nodiscard]] std::vector<double> read_numbers(const JsonNode& n, std::size_t size, double min = -INFINITY);
/** parameters[name] with exactly `shape`; appends `name` to `used`. */
[[nodiscard]] std::vector<float> read_tensor(const JsonNode& parameters, const std::string& name,
                                             const std::vector<int>& shape, std::vector<std::string>& used);
/** Layers `prefix`.0, .2, … with the given widths (inputs first, outputs last). */
[[nodiscard]] Mlp read_mlp(const JsonNode& parameters, const std::string& prefix, const std::vector<int>& widths,
                           bool relu_last, std::vector<std::string>& used);
/** Fails naming the first parameter not in `used`. */
void reject_unused(const JsonNode& parameters, const std::vector<std::string>& used);

}  // namespace embshard::detail
