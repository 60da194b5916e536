// libFuzzer target: the strict JSON reader (src/core/json_reader.h) must build exactly what
// nlohmann's own parser builds, and refuse with embshard::Error only what nlohmann refuses or what
// it adds: a key named twice in one object, and nesting deeper than kMaxJsonDepth. Its fast path
// (simdjson) and its reference path (one SAX pass that checks and builds) must give the same
// document, number kinds included, or the same message. What it builds stays within the memory
// bound it is built under (kMostDomBytesPerTextByte).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json_reader.h"
#include "embshard/core/error.h"

namespace {

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json ours;
  std::string fast_error;
  try {
    ours = embshard::detail::parse_json(text, "fuzz");
  } catch (const embshard::Error& e) {
    fast_error = e.what();
  }
  try {
    const nlohmann::json reference = embshard::detail::parse_json_reference(text, "fuzz");
    if (!fast_error.empty() || !embshard::detail::identical_json(ours, reference))
      std::abort();  // the fast path differs
  } catch (const embshard::Error& e) {
    if (fast_error != e.what()) std::abort();  // the fast path took it, or refused it otherwise
  }
  if (!fast_error.empty()) {
    const std::string& why = fast_error;
    if (contains(why, "duplicate key") || contains(why, "nested deeper than")) return 0;  // its own rules
    if (nlohmann::json::accept(text)) std::abort();                                       // refused what nlohmann reads
    return 0;
  }
  if (ours != nlohmann::json::parse(text)) std::abort();  // built something else
  if (embshard::detail::json_dom_bytes(text, "fuzz") > text.size() * embshard::detail::kMostDomBytesPerTextByte + 16)
    std::abort();  // outgrew the bound it is built under (16: a single scalar's value)
  return 0;
}
