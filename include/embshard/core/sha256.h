#pragma once
/**
 * @file sha256.h
 * @brief SHA-256 (FIPS 180-4) of bytes and files, as lowercase hex: the training-data hash that
 *        neural weight files record.
 */
#include <string>
#include <string_view>

namespace embshard {

/** SHA-256 of `bytes`, 64 lowercase hex digits. */
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

/** SHA-256 of a whole file; throws Error naming the file if it cannot be read. */
[[nodiscard]] std::string sha256_file_hex(const std::string& path);

}  // namespace embshard
