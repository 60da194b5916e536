#include "embshard/core/file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "embshard/core/error.h"

namespace embshard {

std::string read_file(const std::string& path) {
  std::error_code ec;
  EMBSHARD_CHECK(std::filesystem::is_regular_file(path, ec), path, ": no such file");
  std::ifstream in(path, std::ios::binary);
  EMBSHARD_CHECK(in.good(), path, ": cannot open (", std::strerror(errno), ")");
  std::ostringstream out;
  out << in.rdbuf();
  EMBSHARD_CHECK(!in.bad(), path, ": read failed");
  return out.str();
}

void write_file_atomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    EMBSHARD_CHECK(out.good(), path, ": cannot write (", std::strerror(errno), ")");
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out.good()) {
      std::remove(tmp.c_str());
      EMBSHARD_THROW(path, ": write failed (disk full?)");
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::remove(tmp.c_str());
    EMBSHARD_THROW(path, ": cannot replace (", ec.message(), ")");
  }
}

}  // namespace embshard
