#include "embshard/core/context.h"

#include <cstdio>
#include <iostream>

#include "embshard/core/error.h"
#include "embshard/core/markup.h"

namespace embshard {

namespace detail {
std::string one_line(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    }
  }
  return out;
}

void throw_internal(const char* condition, const char* file, int line) {
  throw InternalError(concat("internal error (a bug in embshard): ", condition, " failed at ", file, ":", line));
}
}  // namespace detail

void Context::log(LogLevel level, const std::string& message) const {
  if (level < verbosity || verbosity == LogLevel::kQuiet) return;
  if (sink) {
    sink(level, message);
    return;
  }
  static const char* const kNames[] = {"debug", "info", "warning"};
  std::cerr << "[" << kNames[static_cast<int>(level)] << "] " << one_line(message) << "\n";
}

bool Context::past_deadline() const { return deadline && std::chrono::steady_clock::now() >= *deadline; }

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace embshard
