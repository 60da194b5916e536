#include "embshard/core/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>

#include "embshard/core/error.h"

namespace embshard {

namespace fs = std::filesystem;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/** What kind of non-regular file `mode` is, for messages. */
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO, not a regular file";
  if (S_ISCHR(mode)) return "is a character device, not a regular file";
  if (S_ISBLK(mode)) return "is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

/** `path` with every symlink on it resolved, also when the last link dangles. */
std::string resolve_links(const std::string& path) {
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p.string();
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) return p.string();
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  EMBSHARD_THROW(path, ": too many levels of symbolic links");
}

/** A file's identity for `refuse_if_same_file`, or nullopt when it cannot clash (`-`, a device). */
std::optional<std::string> identity(const std::string& path) {
  if (path.empty() || path == "-") return std::nullopt;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode)) return std::nullopt;
    return "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(fs::absolute(resolve_links(path)), ec);
  if (ec) return "path " + path;
  // `dir/missing/../x` names the existing `dir/x` once normalised
  if (::stat(canonical.c_str(), &st) == 0) return identity(canonical.string());
  return "path " + canonical.string();
}

/** Removes `name.tmp-PID-*` beside `target` left by processes that no longer exist. */
void remove_stale_temporaries(const fs::path& target) {
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      fs::remove(entry.path(), ec);
    }
  }
}

mode_t current_umask() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  const mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

void write_all(int fd, const std::string& content, const std::string& path) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    EMBSHARD_CHECK(n > 0, path, ": write failed (", std::strerror(n < 0 ? errno : ENOSPC), ")");
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

// ---- reads and checks -------------------------------------------------------------------------

std::string find_input_file_problem(const std::string& path) {
  if (path.empty()) return "empty path";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "no such file";
    return std::string("cannot access (") + std::strerror(errno) + ")";
  }
  return S_ISREG(st.st_mode) ? "" : kind_of(st.st_mode);
}

void check_input_file(const std::string& path, const std::string& option) {
  const std::string problem = find_input_file_problem(path);
  EMBSHARD_CHECK(problem.empty(), option.empty() ? "" : option + ": ", path, ": ", problem);
}

std::string read_file(const std::string& path) {
  check_input_file(path, "");
  std::ifstream in(path, std::ios::binary);
  EMBSHARD_CHECK(in.good(), path, ": cannot open (", std::strerror(errno), ")");
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  EMBSHARD_CHECK(!ec, path, ": cannot read its size (", ec.message(), ")");
  check_fits_in_memory(size, path + ": reading the file");
  std::string text(static_cast<std::size_t>(size), '\0');  // one allocation for what stat says
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(in.gcount()));
  // Then to the end: a file that grew since stat (an appended cost-sample file) or one whose size
  // stat does not know (procfs) is read whole.
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) text.append(chunk, static_cast<std::size_t>(in.gcount()));
  EMBSHARD_CHECK(!in.bad(), path, ": read failed");
  return text;
}

void refuse_if_same_file(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  std::vector<std::pair<std::string, NamedPath>> seen;  // identity, who named it
  for (const NamedPath& in : inputs) {
    std::error_code ec;
    if (!in.path.empty() && fs::is_directory(in.path, ec)) {
      for (const auto& entry : fs::directory_iterator(in.path, ec)) {
        if (!entry.is_regular_file(ec)) continue;
        if (auto id = identity(entry.path().string())) seen.push_back({*id, {in.option, entry.path().string()}});
      }
    } else if (auto id = identity(in.path)) {
      seen.push_back({*id, in});
    }
  }
  const std::size_t num_inputs = seen.size();
  for (const NamedPath& out : outputs) {
    const auto id = identity(out.path);
    if (!id) continue;
    for (std::size_t i = 0; i < seen.size(); ++i) {
      if (seen[i].first != *id) continue;
      const NamedPath& other = seen[i].second;
      EMBSHARD_THROW(out.option, " ", out.path, " is the same file as ", other.option, " ", other.path,
                     i < num_inputs ? "; refusing to overwrite an input" : "; give each output its own path");
    }
    seen.push_back({*id, out});
  }
}

// ---- resources --------------------------------------------------------------------------------

namespace {

/** The first number in `path` (a cgroup file), or nothing ("max", missing, unreadable). */
std::optional<std::uint64_t> number_in(const char* path) {
  std::ifstream in(path);
  std::uint64_t value = 0;
  if (in >> value) return value;
  return std::nullopt;
}

}  // namespace

std::uint64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  std::optional<std::uint64_t> available, swap_free;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") available = kib * 1024;
    if (key == "SwapFree:") swap_free = kib * 1024;
  }
  std::uint64_t bytes = UINT64_MAX;
  if (available) {
    bytes = *available + swap_free.value_or(0);  // an allocation may page out: slow, not fatal
  } else {
    const long pages = ::sysconf(_SC_AVPHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  }
  // A container's limit (cgroup v2) ends a process before the machine runs out.
  const auto limit = number_in("/sys/fs/cgroup/memory.max");
  const auto used = number_in("/sys/fs/cgroup/memory.current");
  if (limit && used) bytes = std::min(bytes, *limit > *used ? *limit - *used : 0);
  return bytes;
}

std::uint64_t available_disk_bytes(const std::string& path) {
  fs::path p = fs::absolute(path);
  std::error_code ec;
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct statvfs vfs {};
  if (::statvfs(p.c_str(), &vfs) != 0) return UINT64_MAX;
  return static_cast<std::uint64_t>(vfs.f_bavail) * static_cast<std::uint64_t>(vfs.f_frsize);
}

std::string find_memory_shortfall(std::uint64_t bytes, const std::string& what) {
  const std::uint64_t available = available_memory_bytes();
  if (bytes <= available) return "";
  return detail::concat(what, " needs about ", static_cast<double>(bytes) / kGiB, " GiB of memory but ",
                        static_cast<double>(available) / kGiB, " GiB is available");
}

void check_fits_in_memory(std::uint64_t bytes, const std::string& what) {
  const std::string shortfall = find_memory_shortfall(bytes, what);
  EMBSHARD_CHECK(shortfall.empty(), shortfall);
}

void check_fits_on_disk(const std::string& path, std::uint64_t bytes, const std::string& what) {
  const std::uint64_t free_bytes = available_disk_bytes(path);
  EMBSHARD_CHECK(bytes <= free_bytes, what, " needs about ", static_cast<double>(bytes) / kGiB, " GiB on disk at ",
                 path, " but ", static_cast<double>(free_bytes) / kGiB, " GiB is free");
}

// ---- OutputFile -------------------------------------------------------------------------------

struct OutputFile::Impl {
  std::string path;        // as given
  std::string target;      // symlinks resolved
  std::string write_path;  // temporary, device / FIFO, or /dev/stdout
  bool through = false;
  bool committed = false;
  int fd = -1;

  ~Impl() {
    if (fd > 2) ::close(fd);
    if (!through && !committed && !write_path.empty()) ::unlink(write_path.c_str());
  }
};

OutputFile::OutputFile(const std::string& path) : impl_(std::make_unique<Impl>()) {
  Impl& f = *impl_;
  f.path = path;
  EMBSHARD_CHECK(!path.empty(), "empty output path");
  if (path == "-") {
    f.through = true;
    f.write_path = "/dev/stdout";
    f.fd = 1;
    return;
  }
  f.target = resolve_links(path);
  struct stat st {};
  const bool exists = ::stat(f.target.c_str(), &st) == 0;
  if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    f.through = true;  // opened on the first write: a FIFO blocks here until it has a reader
    f.write_path = f.target;
    return;
  }
  EMBSHARD_CHECK(!exists || S_ISREG(st.st_mode), path, ": ", kind_of(st.st_mode), "; cannot write an output there");
  const fs::path target(f.target);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  remove_stale_temporaries(target);
  std::string name = f.target + ".tmp-" + std::to_string(::getpid()) + "-XXXXXX";
  f.fd = ::mkstemp(name.data());
  EMBSHARD_CHECK(f.fd >= 0, path, ": cannot write (", std::strerror(errno), ")");
  f.write_path = name;
  ::fchmod(f.fd, exists ? (st.st_mode & 07777) : (0666 & ~current_umask()));
}

OutputFile::~OutputFile() = default;
OutputFile::OutputFile(OutputFile&&) noexcept = default;
OutputFile& OutputFile::operator=(OutputFile&&) noexcept = default;

const std::string& OutputFile::path() const { return impl_->path; }
const std::string& OutputFile::write_path() const { return impl_->write_path; }
bool OutputFile::written_through() const { return impl_->through; }

void OutputFile::write(const std::string& content) {
  Impl& f = *impl_;
  if (f.fd == 1) {
    std::cout.flush();
    std::fflush(stdout);
  }
  if (f.fd < 0) {
    f.fd = ::open(f.write_path.c_str(), O_WRONLY | O_CLOEXEC);
    EMBSHARD_CHECK(f.fd >= 0, f.path, ": cannot write (", std::strerror(errno), ")");
  }
  write_all(f.fd, content, f.path);
  if (f.through) return;  // devices, FIFOs and pipes cannot be synced
  EMBSHARD_CHECK(::fsync(f.fd) == 0, f.path, ": write failed (", std::strerror(errno), ")");
}

void OutputFile::commit() {
  Impl& f = *impl_;
  if (f.through) return;
  if (f.fd >= 0) {
    const int rc = ::close(f.fd);
    f.fd = -1;
    EMBSHARD_CHECK(rc == 0, f.path, ": write failed (", std::strerror(errno), ")");
  }
  EMBSHARD_CHECK(::rename(f.write_path.c_str(), f.target.c_str()) == 0, f.path, ": cannot replace (",
                 std::strerror(errno), ")");
  f.committed = true;
}

// ---- OutputSet --------------------------------------------------------------------------------

void OutputSet::add(const std::string& path, std::string content) { items_.emplace_back(path, std::move(content)); }

void OutputSet::commit() {
  std::vector<OutputFile> files;  // destroyed on any error: every temporary removed
  files.reserve(items_.size());
  for (const auto& item : items_) files.emplace_back(item.first);
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!files[i].written_through()) files[i].write(items_[i].second);
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].written_through()) files[i].write(items_[i].second);
  }
  for (OutputFile& f : files) f.commit();
  items_.clear();
}

void write_file_atomic(const std::string& path, const std::string& content) {
  OutputSet set;
  set.add(path, content);
  set.commit();
}

}  // namespace embshard
