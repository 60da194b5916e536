#pragma once
// Helpers shared by the test files.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/data/table.h"

namespace embshard::test_util {

/** A context that logs warnings only. */
inline Context quiet_context() {
  Context ctx;
  ctx.verbosity = LogLevel::kWarning;
  return ctx;
}

/** `name` in the temp directory, prefixed with `prefix` and this process id (not created). */
inline std::string temp_file(const std::string& prefix, const std::string& name) {
  return (std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()) + "-" + name)).string();
}

/** Runs `f`; returns the message of the embshard::Error it throws, if it throws one. */
inline std::optional<std::string> caught_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

/** The message of the embshard::Error `f` throws, or "(no error)". */
inline std::string error_or_none(const std::function<void()>& f) {
  return caught_error(f).value_or("(no error)");
}

/** Runs `f`, which must throw embshard::Error; returns its message ("" and a failure if not). */
inline std::string error_of(const std::function<void()>& f) {
  const auto message = caught_error(f);
  if (!message) ADD_FAILURE() << "expected embshard::Error";
  return message.value_or("");
}

/** Every field of two statistics is equal (bins and ICDF exactly). */
inline void expect_same_stats(const TableStats& got, const TableStats& want) {
  EXPECT_EQ(got.num_rows, want.num_rows);
  EXPECT_EQ(got.pooling_factor, want.pooling_factor);
  EXPECT_EQ(got.coverage, want.coverage);
  EXPECT_EQ(got.batch_size, want.batch_size);
  EXPECT_EQ(got.num_indices, want.num_indices);
  EXPECT_EQ(got.num_distinct, want.num_distinct);
  for (int j = 0; j < kNumReuseBins; ++j) EXPECT_EQ(got.bins[j], want.bins[j]) << "bin " << j;
  EXPECT_EQ(got.icdf, want.icdf);
}

/** Exit status and combined stdout + stderr of a shell command. */
struct CommandResult {
  int status = -1;
  std::string out;
};

/** Runs `command` through the shell, capturing stdout and stderr together. */
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) r.out += buf.data();
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

}  // namespace embshard::test_util
