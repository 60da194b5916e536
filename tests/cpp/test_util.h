#pragma once
// Helpers shared by the test files.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <thread>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/data/table.h"

namespace embshard::test_util {

/**
 * While alive, writes that would grow a file beyond `bytes` fail with EFBIG (RLIMIT_FSIZE,
 * SIGXFSZ ignored): a full disk, also for root.
 */
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small{bytes, old_.rlim_max};
    setrlimit(RLIMIT_FSIZE, &small);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

/**
 * Makes a FIFO at `path` and reads it to its end on a thread; `join` returns what was read. Call
 * `join` after the writer is done: a writer that never came is stood in for (an empty open and
 * close), so the test never hangs.
 */
class FifoReader {
 public:
  explicit FifoReader(std::string path) : path_(std::move(path)) {
    EXPECT_EQ(::mkfifo(path_.c_str(), 0600), 0) << path_;
    thread_ = std::thread([this] {
      std::ifstream in(path_, std::ios::binary);
      received_.assign(std::istreambuf_iterator<char>(in), {});
      done_ = true;
    });
  }
  ~FifoReader() {
    if (thread_.joinable()) (void)join();
  }
  FifoReader(const FifoReader&) = delete;
  FifoReader& operator=(const FifoReader&) = delete;
  std::string join() {
    while (!done_) {  // the reader may still wait in open(): give it a writer that writes nothing
      const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) {
        ::close(fd);
        break;
      }
      ::usleep(1000);
    }
    thread_.join();
    return received_;
  }

 private:
  std::string path_;
  std::atomic<bool> done_{false};
  std::thread thread_;
  std::string received_;
};

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
inline std::string error_or_none(const std::function<void()>& f) { return caught_error(f).value_or("(no error)"); }

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

#ifdef EMBSHARD_CLI_PATH
/** `embshard task gen --quiet --protocol neuroshard` of `count` tasks into DIR/tasks (the CLI). */
inline CommandResult generate_cli_tasks(const std::string& dir, int devices, int max_dim, int count,
                                        std::uint64_t seed) {
  return run_command(std::string(EMBSHARD_CLI_PATH) + " task gen --quiet --protocol neuroshard --devices " +
                     std::to_string(devices) + " --max-dim " + std::to_string(max_dim) + " --count " +
                     std::to_string(count) + " --seed " + std::to_string(seed) + " --out " + dir + "/tasks");
}
#endif

}  // namespace embshard::test_util
