#pragma once
/**
 * @file file_io.h
 * @brief Whole-file reads, crash-safe writes, and the checks every CLI verb makes on its paths.
 *
 * Writes. Every file embshard writes goes through `OutputFile` (directly, or through
 * `write_file_atomic` / `OutputSet`). What a path names decides how it is written:
 *  - `-`: standard output;
 *  - an existing character device or FIFO (`/dev/null`, `/dev/full`, a named pipe): written
 *    through, never replaced; a failed write (`/dev/full`) is an Error naming the path;
 *  - a symlink: its target (resolved through every link) is replaced atomically; the link stays;
 *  - anything else (a regular file, or a path that does not exist yet): the bytes go to a unique
 *    temporary file beside the target, `TARGET.tmp-PID-XXXXXX` (mkstemp; concurrent writers of one
 *    path never share a temporary), which is flushed, synced and then renamed over the target, so
 *    a crash or a full disk never leaves a half-written file where a good one was. Temporaries are
 *    removed on every error; one left by a killed process (SIGKILL, power loss) is removed by the
 *    next write of the same target once its PID is gone. Missing parent directories are created.
 *
 * Checks. `check_input_file` says at once why an input is unusable ("no such file", "is a
 * directory", "is a FIFO, not a regular file", ...) without opening it (a FIFO never hangs);
 * `refuse_if_same_file` refuses a command whose output names one of its inputs (or another output)
 * under any name: `x` vs `./x`, a hard link, a symlink. `check_fits_in_memory` and
 * `check_fits_on_disk` refuse work whose estimated size exceeds what the machine has.
 */
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace embshard {

/**
 * The whole content of `path`; throws Error naming the file if it cannot be read, or, before
 * allocating, if it is bigger than the memory available (`path: reading the file needs about …`).
 */
[[nodiscard]] std::string read_file(const std::string& path);

/** Writes `content` to `path` as described in the file comment (one-file `OutputSet`). */
void write_file_atomic(const std::string& path, const std::string& content);

/**
 * Why `path` cannot be read as an input file, or "" when it is a regular file (after symlinks).
 * Never opens the path. Examples: "no such file", "is a directory", "is a FIFO, not a regular file".
 */
[[nodiscard]] std::string find_input_file_problem(const std::string& path);

/** Throws Error "`option`: `path`: <problem>" when `find_input_file_problem` finds one. */
void check_input_file(const std::string& path, const std::string& option);

/** A path and the option that named it (for messages), e.g. {"--out", "plan.json"}. */
struct NamedPath {
  std::string option;
  std::string path;
};

/**
 * Throws Error before any work when an output names an input, or two outputs name one file, under
 * any name (same device + inode when it exists; the same canonical path when it does not yet).
 * The message names both options and paths. Inputs that are directories stand for the regular
 * files directly inside them. `-` and character devices (`/dev/null`) are never the same file as
 * anything. Empty paths are skipped (an option not given).
 */
void refuse_if_same_file(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

/** Bytes of memory available to a new allocation: /proc/meminfo's MemAvailable plus SwapFree
 *  (sysconf's free pages without it), capped by the container's cgroup v2 limit less its use. */
[[nodiscard]] std::uint64_t available_memory_bytes();

/** Bytes free for an unprivileged writer on the file system that would hold `path` (statvfs). */
[[nodiscard]] std::uint64_t available_disk_bytes(const std::string& path);

/** "`what` needs about N GiB of memory but M GiB is available" when it does not fit, else "". */
[[nodiscard]] std::string find_memory_shortfall(std::uint64_t bytes, const std::string& what);
/** Throws Error with find_memory_shortfall's message when it does not fit. */
void check_fits_in_memory(std::uint64_t bytes, const std::string& what);

/** Throws Error "`what` needs about N GiB on disk at PATH but M GiB is free" when it does not fit. */
void check_fits_on_disk(const std::string& path, std::uint64_t bytes, const std::string& what);

/**
 * One output being written (see the file comment). `write_path()` is where bytes go now (the
 * temporary, the device or FIFO, or `/dev/stdout`); `commit()` renames the temporary over the
 * target (nothing for a written-through path). Destroyed uncommitted, it removes its temporary.
 */
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&&) noexcept;
  OutputFile& operator=(OutputFile&&) noexcept;

  [[nodiscard]] const std::string& path() const;        ///< as given (for messages)
  [[nodiscard]] const std::string& write_path() const;  ///< where the bytes go before commit
  [[nodiscard]] bool written_through() const;           ///< `-`, a device or a FIFO
  /** Writes all of `content` at the current position and syncs; Error naming path() on failure. */
  void write(const std::string& content);
  /** Renames the temporary over the target; Error naming path() on failure (temporary removed). */
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/**
 * Several outputs committed together or not at all: `commit` writes every temporary first, then
 * the written-through outputs, then renames all; any failure before the renames removes every
 * temporary and leaves every target as it was.
 */
class OutputSet {
 public:
  void add(const std::string& path, std::string content);
  void commit();

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

}  // namespace embshard
