// Network parameters in weights files (nn_json.h).
#include "nn/nn_json.h"

#include <algorithm>

#include "embshard/core/error.h"

namespace embshard::detail {

void add_tensor(nlohmann::json& parameters, const std::string& name, const std::vector<int>& shape,
                const std::vector<float>& data) {
  parameters[name] = {{"shape", shape}, {"data", data}};
}

void add_mlp(nlohmann::json& parameters, const Mlp& mlp) {
  for (std::size_t i = 0; i < mlp.layers().size(); ++i) {
    const Linear& l = mlp.layers()[i];
    add_tensor(parameters, mlp.parameter_name(i, "weight"), {l.out, l.in}, l.weight);
    add_tensor(parameters, mlp.parameter_name(i, "bias"), {l.out}, l.bias);
  }
}

std::vector<double> read_numbers(const JsonNode& n, std::size_t size, double min) {
  n.expect_array();
  if (n.size() != size) n.fail(concat("expected ", size, " numbers, got ", n.size()));
  std::vector<double> values;
  values.reserve(size);
  for (std::size_t i = 0; i < size; ++i) values.push_back(n.at(i).as_double(min));
  return values;
}

std::vector<float> read_tensor(const JsonNode& parameters, const std::string& name, const std::vector<int>& shape,
                               std::vector<std::string>& used) {
  const JsonNode t = parameters.at(name);
  t.only_keys({"shape", "data"});
  const std::vector<double> got = read_numbers(t.at("shape"), shape.size(), 0);
  const auto list = [](const auto& values) {
    std::string text;
    for (const auto& v : values) text += (text.empty() ? "" : ", ") + concat(v);
    return "[" + text + "]";
  };
  std::size_t count = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (got[i] != shape[i]) t.at("shape").fail(concat("expected ", list(shape), ", got ", list(got)));
    count *= static_cast<std::size_t>(shape[i]);
  }
  std::vector<float> data;
  data.reserve(count);
  for (double v : read_numbers(t.at("data"), count)) data.push_back(static_cast<float>(v));
  used.push_back(name);
  return data;
}

Mlp read_mlp(const JsonNode& parameters, const std::string& prefix, const std::vector<int>& widths, bool relu_last,
             std::vector<std::string>& used) {
  std::vector<Linear> layers;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    Linear l;
    l.in = widths[i];
    l.out = widths[i + 1];
    const std::string base = prefix + "." + std::to_string(2 * i) + ".";
    l.weight = read_tensor(parameters, base + "weight", {l.out, l.in}, used);
    l.bias = read_tensor(parameters, base + "bias", {l.out}, used);
    layers.push_back(std::move(l));
  }
  return Mlp(prefix, std::move(layers), relu_last);
}

void reject_unused(const JsonNode& parameters, const std::vector<std::string>& used) {
  for (const auto& [name, value] : parameters.value().items()) {
    if (std::find(used.begin(), used.end(), name) == used.end()) {
      parameters.fail(concat("unexpected parameter '", name, "' for this architecture"));
    }
  }
}

}  // namespace embshard::detail
