#pragma once
/**
 * @file error.h
 * @brief The two error tiers of embshard.
 *
 * 1. **User and input errors** (a corrupt file, an unknown sharder, a negative field) throw
 *    `embshard::Error` through `EMBSHARD_CHECK(cond, parts...)` or `EMBSHARD_THROW(parts...)`.
 *    The message is meant for the person at the terminal: it names the file, table or field and
 *    what is wrong with it. The CLI prints `error: <message>` and exits with status 1.
 * 2. **Internal invariants** (a bug in embshard itself) use `EMBSHARD_ASSERT(cond)`, which throws
 *    `embshard::InternalError` with file and line; the CLI prints it as a bug report and exits 2.
 *
 * Expected outcomes (an infeasible task, a time limit) are *not* errors: they are status values
 * returned by the component that produces them.
 */
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace embshard {

/** A user or input error; `what()` is a complete, readable one-line message. */
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/** A violated internal invariant: a bug in embshard, never the user's fault. */
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

namespace detail {
/** Concatenates any streamable values into one string. */
template <typename... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}
[[noreturn]] void throw_internal(const char* condition, const char* file, int line);
/** `text` with control characters and DEL written as \xNN, so a message naming it stays one line. */
[[nodiscard]] std::string one_line(std::string_view text);
}  // namespace detail

}  // namespace embshard

/** Throws embshard::Error with the concatenation of `parts` (strings, numbers, ...). */
#define EMBSHARD_THROW(...) throw ::embshard::Error(::embshard::detail::concat(__VA_ARGS__))

/** If `cond` is false, throws embshard::Error with the concatenation of the remaining arguments. */
#define EMBSHARD_CHECK(cond, ...)  \
  do {                             \
    if (!(cond)) {                 \
      EMBSHARD_THROW(__VA_ARGS__); \
    }                              \
  } while (0)

/** Internal invariant; a failure is a bug in embshard. */
#define EMBSHARD_ASSERT(cond)                                        \
  do {                                                               \
    if (!(cond)) {                                                   \
      ::embshard::detail::throw_internal(#cond, __FILE__, __LINE__); \
    }                                                                \
  } while (0)
