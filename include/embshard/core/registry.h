#pragma once
/**
 * @file registry.h
 * @brief `Registry<T>`: named plug-ins that declare their parameters and build from spec strings.
 *
 * Each family of plug-ins (topology presets, task protocols, sharders, cost models and judges)
 * has one registry. Registration is explicit (`register_*` functions called by whoever builds the
 * registry), never by static initialisation. `create("name:key=value", ctx, args...)` finds the
 * entry (an unknown name fails and lists the registered ones), binds the parameters (an unknown
 * key fails and lists the accepted ones) and calls the factory with the bound `Params`, the
 * `Context` and the family's own arguments (`FactoryArgs`: a cost model is built for a `Task`).
 * The canonical spec of what was built is `canonical_spec(name, params)`.
 */
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/core/spec.h"

namespace embshard {

/** Description of one registered plug-in, as `embshard list` prints it. */
struct RegistryEntryInfo {
  std::string name;
  std::string describe;           ///< one line
  std::vector<ParamSpec> params;  ///< in declaration order
};

template <typename T, typename... FactoryArgs>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<T>(const Params&, const Context&, FactoryArgs...)>;

  /** `family` names what the registry holds ("topology", "task protocol") in messages. */
  explicit Registry(std::string family) : family_(std::move(family)) {}

  /** Adds an entry; a repeated name is a bug. */
  void add(RegistryEntryInfo info, Factory factory) {
    EMBSHARD_ASSERT(find(info.name) == nullptr);
    entries_.push_back({std::move(info), std::move(factory)});
  }

  /** Parses `spec_text` and binds its parameters without building anything. */
  [[nodiscard]] Params bind(const Spec& spec) const {
    return bind_params(spec.name, entry(spec.name).info.params, spec.pairs);
  }

  /** Builds the plug-in named by `spec_text`; see the file comment for the errors. */
  [[nodiscard]] std::unique_ptr<T> create(const std::string& spec_text, const Context& ctx, FactoryArgs... args) const {
    const Spec spec = parse_spec(spec_text);
    return entry(spec.name).factory(bind(spec), ctx, args...);
  }

  /** The canonical form of `spec_text` (all parameters, defaults included). */
  [[nodiscard]] std::string canonical(const std::string& spec_text) const {
    const Spec spec = parse_spec(spec_text);
    return canonical_spec(spec.name, bind(spec));
  }

  /**
   * The shortest spec of the same configuration, for people to read: the name and only the
   * parameters whose canonical value differs from the default ("greedy:balance=lookup").
   */
  [[nodiscard]] std::string short_spec(const std::string& spec_text) const {
    const Spec spec = parse_spec(canonical(spec_text));
    std::string out = spec.name;
    char separator = ':';
    for (const auto& [key, value] : spec.pairs) {
      const ParamSpec* declared = nullptr;
      for (const ParamSpec& p : entry(spec.name).info.params) {
        if (p.name == key) declared = &p;
      }
      if (declared != nullptr && declared->default_value == value) continue;
      out += separator + key + "=" + value;
      separator = ',';
    }
    return out;
  }

  /** The values the plug-in `name` allows for its parameter `param`: empty when it declares no
   *  such parameter or allows any value (an unknown name is an error). */
  [[nodiscard]] std::vector<std::string> choices(const std::string& name, const std::string& param) const {
    for (const ParamSpec& p : entry(name).info.params) {
      if (p.name == param) return p.choices;
    }
    return {};
  }

  [[nodiscard]] std::vector<RegistryEntryInfo> list() const {
    std::vector<RegistryEntryInfo> out;
    for (const auto& e : entries_) out.push_back(e.info);
    return out;
  }
  [[nodiscard]] const std::string& family() const { return family_; }

 private:
  struct Entry {
    RegistryEntryInfo info;
    Factory factory;
  };
  [[nodiscard]] const Entry* find(const std::string& name) const {
    for (const auto& e : entries_) {
      if (e.info.name == name) return &e;
    }
    return nullptr;
  }
  [[nodiscard]] const Entry& entry(const std::string& name) const {
    if (const Entry* e = find(name)) return *e;
    std::string known;
    for (const auto& e : entries_) known += (known.empty() ? "" : ", ") + e.info.name;
    EMBSHARD_THROW("unknown ", family_, " '", name, "'; known: ", known);
  }

  std::string family_;
  std::vector<Entry> entries_;
};

}  // namespace embshard
