#pragma once
/**
 * @file file_io.h
 * @brief Whole-file reads and crash-safe writes.
 *
 * Every file embshard writes goes through `write_file_atomic`: the bytes go to a temporary file
 * in the same directory, which is flushed and then renamed over the target, so a crash or a
 * full disk never leaves a half-written plan, task or table file where a good one was.
 */
#include <string>

namespace embshard {

/** The whole content of `path`; throws Error naming the file if it cannot be read. */
[[nodiscard]] std::string read_file(const std::string& path);

/** Writes `content` to `path` atomically (temp file + rename); creates missing parent dirs. */
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace embshard
