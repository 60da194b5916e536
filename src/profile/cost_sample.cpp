// The append-only cost-sample file (format in cost_sample.h).
#include "embshard/profile/cost_sample.h"

#include "core/fingerprint_json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/json_reader.h"
#include "embshard/core/clock.h"
#include "embshard/core/error.h"
#include "embshard/core/file_io.h"
#include "embshard/core/spec.h"

namespace embshard {
namespace {

using Json = nlohmann::json;
using detail::fingerprint_json;
using detail::JsonNode;
using detail::read_fingerprint;

constexpr const char* kFormatName = "embshard-cost-samples";

// ---- this machine ------------------------------------------------------------------------------

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

std::int64_t physical_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024;
    meminfo.ignore(256, '\n');
  }
  return 0;
}

/** Overrides `f` with the keys of `text` (see this_machine); the real values are the defaults. */
void apply_fake_fingerprint(const std::string& text, HardwareFingerprint& f) {
  const std::string owner = std::string("environment variable ") + kFakeFingerprintVariable;
  Spec spec;
  try {
    spec = parse_spec(text);
  } catch (const Error& e) {
    EMBSHARD_THROW(owner, ": ", e.what());
  }
  EMBSHARD_CHECK(spec.name == "host", owner, ": expected 'host:key=value,...', got '", text, "'");
  const std::vector<ParamSpec> declared = {
      {"cpu_model", ParamType::kString, f.cpu_model, {}, {}, {}, "the CPU's model name"},
      {"logical_cpus", ParamType::kInt, std::to_string(f.logical_cpus), 1, 1 << 20, {}, "logical CPUs"},
      {"llc_bytes", ParamType::kInt, std::to_string(f.llc_bytes), 1, 1e15, {}, "last-level cache, bytes"},
      {"memory_bytes", ParamType::kInt, std::to_string(f.memory_bytes), 0, 1e18, {}, "memory, bytes"},
  };
  const Params p = bind_params(owner, declared, spec.pairs);
  f.cpu_model = p.get_string("cpu_model");
  f.logical_cpus = static_cast<int>(p.get_int("logical_cpus"));
  f.llc_bytes = p.get_int("llc_bytes");
  f.memory_bytes = p.get_int("memory_bytes");
}

// ---- JSON of the header and samples ----------------------------------------------------------

Json header_json(const CostSampleHeader& h) {
  Json measure = {{"warmup", h.measure.warmup},
                  {"repeats", h.measure.repeats},
                  {"flush_cache", h.measure.flush_cache},
                  {"trim", h.measure.trim}};
  Json j;
  j["format"] = kFormatName;
  j["version"] = kCostSampleVersion;
  j["kind"] = to_string(h.kind);
  j["backend"] = h.backend;
  j["sampler"] = h.sampler;
  j["seed"] = h.seed;
  j["pool_seed"] = h.pool_seed;
  j["batch_size"] = h.batch_size;
  j["precision"] = h.precision;
  j["measure"] = measure;
  j["fingerprint"] = fingerprint_json(h.fingerprint);
  j["embshard_version"] = h.embshard_version;
  j["created_utc"] = h.created_utc;
  return j;
}

CostSampleHeader read_header(const JsonNode& n) {
  n.only_keys({"format", "version", "kind", "backend", "sampler", "seed", "pool_seed", "batch_size", "precision",
               "measure", "fingerprint", "embshard_version", "created_utc"});
  if (n.at("format").as_string() != kFormatName) n.at("format").fail("not a cost-sample file");
  if (n.at("version").as_int() != kCostSampleVersion) {
    n.at("version").fail(detail::concat("version ", n.at("version").as_int(), " is not supported (this build reads ",
                                        kCostSampleVersion, ")"));
  }
  CostSampleHeader h;
  const std::string kind = n.at("kind").as_string();
  if (kind != "compute" && kind != "comm") n.at("kind").fail("expected \"compute\" or \"comm\"");
  h.kind = kind == "compute" ? SampleKind::kCompute : SampleKind::kComm;
  h.backend = n.at("backend").as_string();
  h.sampler = n.at("sampler").as_string();
  h.seed = n.at("seed").as_uint64();
  h.pool_seed = n.at("pool_seed").as_uint64();
  h.batch_size = n.at("batch_size").as_int(1);
  h.precision = n.at("precision").as_string();
  const JsonNode m = n.at("measure");
  m.only_keys({"warmup", "repeats", "flush_cache", "trim"});
  h.measure.warmup = static_cast<int>(m.at("warmup").as_int(0, 1 << 20));
  h.measure.repeats = static_cast<int>(m.at("repeats").as_int(1, 1 << 20));
  h.measure.flush_cache = m.at("flush_cache").as_bool();
  h.measure.trim = m.at("trim").as_double(0.0);
  h.fingerprint = read_fingerprint(n.at("fingerprint"));
  h.embshard_version = n.at("embshard_version").as_string();
  h.created_utc = n.at("created_utc").as_string();
  return h;
}

Json compute_json(const ComputeSample& s) {
  Json tables = Json::array();
  for (const SampleTable& t : s.tables) tables.push_back({{"pool_id", t.pool_id}, {"dim", t.dim}});
  return {{"index", s.index},
          {"tables", tables},
          {"fw_ms", s.fw_ms},
          {"bw_ms", s.bw_ms},
          {"fw_trimmed_ms", s.fw_trimmed_ms},
          {"bw_trimmed_ms", s.bw_trimmed_ms}};
}

ComputeSample read_compute(const JsonNode& n) {
  n.only_keys({"index", "tables", "fw_ms", "bw_ms", "fw_trimmed_ms", "bw_trimmed_ms"});
  ComputeSample s;
  s.index = n.at("index").as_int(0);
  const JsonNode tables = n.at("tables");
  tables.expect_array(1);
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const JsonNode t = tables.at(i);
    t.only_keys({"pool_id", "dim"});
    s.tables.push_back({t.at("pool_id").as_int(0), static_cast<int>(t.at("dim").as_int(1, 65536))});
  }
  s.fw_ms = n.at("fw_ms").as_double(0.0);
  s.bw_ms = n.at("bw_ms").as_double(0.0);
  s.fw_trimmed_ms = n.at("fw_trimmed_ms").as_double(0.0);
  s.bw_trimmed_ms = n.at("bw_trimmed_ms").as_double(0.0);
  return s;
}

Json comm_json(const CommSample& s) {
  return {
      {"index", s.index}, {"dim_sums", s.dim_sums}, {"sleep_ms", s.sleep_ms}, {"fw_ms", s.fw_ms}, {"bw_ms", s.bw_ms}};
}

template <class T>
std::vector<T> read_numbers(const JsonNode& n, std::size_t size) {
  n.expect_array(1);
  if (size != 0 && n.size() != size) {
    n.fail(detail::concat("expected ", size, " entries (one per device), got ", n.size()));
  }
  std::vector<T> values;
  for (std::size_t i = 0; i < n.size(); ++i) {
    if constexpr (std::is_integral_v<T>) {
      values.push_back(n.at(i).as_int(0));
    } else {
      values.push_back(n.at(i).as_double(0.0));
    }
  }
  return values;
}

CommSample read_comm(const JsonNode& n) {
  n.only_keys({"index", "dim_sums", "sleep_ms", "fw_ms", "bw_ms"});
  CommSample s;
  s.index = n.at("index").as_int(0);
  s.dim_sums = read_numbers<std::int64_t>(n.at("dim_sums"), 0);
  s.sleep_ms = read_numbers<double>(n.at("sleep_ms"), s.dim_sums.size());
  s.fw_ms = read_numbers<double>(n.at("fw_ms"), s.dim_sums.size());
  s.bw_ms = read_numbers<double>(n.at("bw_ms"), s.dim_sums.size());
  return s;
}

// ---- scanning a file -----------------------------------------------------------------------------

/** A file split into complete lines; `torn` is set when the last line has no newline. */
struct ScannedFile {
  CostSampleFile file;
  std::int64_t complete_bytes = 0;  ///< length of the header and the good sample lines
  bool torn = false;
};

ScannedFile scan(const std::string& path) {
  const std::string text = read_file(path);
  ScannedFile scanned;
  std::size_t begin = 0;
  std::int64_t line_number = 0;
  while (begin < text.size()) {
    const std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) {  // the last line was cut short by a crash
      EMBSHARD_CHECK(line_number >= 1, path,
                     ": the header line is cut short (a run was stopped while "
                     "creating the file, before any sample); delete ",
                     path, " to start again");
      scanned.torn = true;
      break;
    }
    ++line_number;
    const std::string where = detail::concat(path, ": line ", line_number);
    const Json doc = detail::parse_json(text.substr(begin, end - begin), where);
    const JsonNode node(doc, where);
    CostSampleFile& file = scanned.file;
    if (line_number == 1) {
      file.header = read_header(node);
    } else {
      const std::int64_t expected = line_number - 2;
      const std::int64_t index = node.at("index").as_int(0);
      if (index != expected) {
        node.at("index").fail(
            detail::concat("expected sample ", expected, ", got ", index, " (samples must be numbered 0, 1, 2, ...)"));
      }
      if (file.header.kind == SampleKind::kCompute) {
        file.compute.push_back(read_compute(node));
      } else {
        file.comm.push_back(read_comm(node));
      }
    }
    begin = end + 1;
    scanned.complete_bytes = static_cast<std::int64_t>(begin);
  }
  EMBSHARD_CHECK(line_number >= 1, path,
                 ": empty file, no cost-sample header line (a run stopped "
                 "before writing it; run the same profile command again to start the file)");
  return scanned;
}

// ---- one writer per file ---------------------------------------------------------------------------
//
// Two locks on two disjoint bytes past any real file's end. The exclusive one is an open-file-
// description lock (F_OFD_SETLK): it belongs to the writer's descriptor, so a second writer in
// the same process is refused too and reading the file does not drop it. OFD locks do not say
// who holds them, so the writer also takes a classic POSIX lock (F_SETLK) whose F_GETLK gives
// the holder's pid.

constexpr off_t kExclusiveByte = off_t{1} << 62;
constexpr off_t kHolderByte = kExclusiveByte + 1;

struct flock lock_of_byte(off_t byte) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = byte;
  lock.l_len = 1;
  return lock;
}

void lock_for_writing(int fd, const std::string& path) {
  struct flock exclusive = lock_of_byte(kExclusiveByte);
  if (::fcntl(fd, F_OFD_SETLK, &exclusive) == 0) return;
  EMBSHARD_CHECK(errno == EAGAIN || errno == EACCES, path, ": cannot lock for writing: ", std::strerror(errno));
  struct flock holder = lock_of_byte(kHolderByte);
  const bool known = ::fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK;
  EMBSHARD_THROW(path, ": another writer is adding samples to this file (",
                 known ? detail::concat("process ", holder.l_pid) : std::string("in this process"),
                 "); wait for it to finish, or give this run another --out file");
}

void name_holder(int fd) {
  struct flock holder = lock_of_byte(kHolderByte);
  (void)::fcntl(fd, F_SETLK, &holder);  // best effort: only used to name us in another's error
}

}  // namespace

const char* to_string(SampleKind kind) { return kind == SampleKind::kCompute ? "compute" : "comm"; }

HardwareFingerprint this_machine(const std::string& device_kind, int threads) {
  HardwareFingerprint f;
  f.device_kind = device_kind;
  f.cpu_model = cpu_model_name();
  f.logical_cpus = static_cast<int>(std::thread::hardware_concurrency());
  f.threads = threads;
  f.llc_bytes = static_cast<std::int64_t>(last_level_cache_bytes());
  f.memory_bytes = physical_memory_bytes();
  if (const char* fake = std::getenv(kFakeFingerprintVariable)) apply_fake_fingerprint(fake, f);
  return f;
}

std::string find_header_mismatch(const CostSampleHeader& existing, const CostSampleHeader& wanted) {
  Json a = header_json(existing);
  Json b = header_json(wanted);
  for (const char* informational : {"embshard_version", "created_utc"}) {
    a.erase(informational);
    b.erase(informational);
  }
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (a[it.key()] != it.value()) {
      return detail::concat(it.key(), " is ", a[it.key()].dump(), " in the file but ", it.value().dump(),
                            " in this run");
    }
  }
  return "";
}

CostSampleFile read_cost_samples(const std::string& path, const Context& ctx) {
  ScannedFile scanned = scan(path);
  if (scanned.torn) ctx.warn(path + ": ignoring a torn last line (an interrupted write)");
  return std::move(scanned.file);
}

CostSampleWriter::CostSampleWriter(std::string path, const CostSampleHeader& header, const Context& ctx)
    : path_(std::move(path)), kind_(header.kind) {
  if (std::filesystem::exists(path_)) {  // a directory or FIFO is named before it is opened
    const std::string problem = find_input_file_problem(path_);
    EMBSHARD_CHECK(problem.empty(), path_, ": ", problem);
  }
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  EMBSHARD_CHECK(fd_ >= 0, path_, ": cannot open for writing: ", std::strerror(errno));
  try {
    lock_for_writing(fd_, path_);
    struct stat st {};
    EMBSHARD_CHECK(::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode), path_, ": not a regular file");
    if (st.st_size == 0) {  // new, or created by a run that stopped before its header
      append_line(header_json(header).dump() + "\n");
    } else {
      resume(header, ctx);
    }
    name_holder(fd_);  // after resume's reads: closing any descriptor drops this (POSIX) lock
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

void CostSampleWriter::resume(const CostSampleHeader& header, const Context& ctx) {
  const ScannedFile scanned = scan(path_);
  const std::string mismatch = find_header_mismatch(scanned.file.header, header);
  EMBSHARD_CHECK(mismatch.empty(), path_, ": cannot resume: ", mismatch, " (use another --out file)");
  if (scanned.torn) {
    ctx.warn(path_ + ": dropping a torn last line (an interrupted write)");
    EMBSHARD_CHECK(::ftruncate(fd_, static_cast<off_t>(scanned.complete_bytes)) == 0, path_,
                   ": cannot drop the torn last line: ", std::strerror(errno));
  }
  next_index_ =
      static_cast<std::int64_t>(kind_ == SampleKind::kCompute ? scanned.file.compute.size() : scanned.file.comm.size());
  if (next_index_ > 0) ctx.info(detail::concat(path_, ": resuming at sample ", next_index_));
}

CostSampleWriter::~CostSampleWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void CostSampleWriter::append(const ComputeSample& sample) {
  EMBSHARD_ASSERT(kind_ == SampleKind::kCompute && sample.index == next_index_);
  append_line(compute_json(sample).dump() + "\n");
  ++next_index_;
}

void CostSampleWriter::append(const CommSample& sample) {
  EMBSHARD_ASSERT(kind_ == SampleKind::kComm && sample.index == next_index_);
  append_line(comm_json(sample).dump() + "\n");
  ++next_index_;
}

void CostSampleWriter::append_line(const std::string& line) {
  const ssize_t written = ::write(fd_, line.data(), line.size());
  EMBSHARD_CHECK(written == static_cast<ssize_t>(line.size()), path_, ": cannot append a line: ", std::strerror(errno));
  ::fdatasync(fd_);
}

}  // namespace embshard
