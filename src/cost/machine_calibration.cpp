#include "embshard/cost/machine_calibration.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/profile/cost_sample.h"

namespace embshard {

std::string machine_calibration_dir() {
  std::string dir;
  if (const char* given = std::getenv(kCalibrationsEnv); given != nullptr && *given != '\0') {
    dir = given;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    dir = std::string(xdg) + "/embshard/calibrations";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    dir = std::string(home) + "/.cache/embshard/calibrations";
  } else {
    EMBSHARD_THROW("no directory for installed calibrations: set ", kCalibrationsEnv, " or HOME");
  }
  EMBSHARD_CHECK(dir.find(',') == std::string::npos, "the calibrations directory '", dir,
                 "' holds a ',', which a cost-model spec cannot name: set ", kCalibrationsEnv, " to another directory");
  return dir;
}

std::string machine_calibration_path(const HardwareFingerprint& machine) {
  std::uint64_t key = derive_seed(0x5eedca1ULL, static_cast<std::uint64_t>(machine.llc_bytes));
  for (const char c : machine.cpu_model) key = derive_seed(key, static_cast<unsigned char>(c));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  return machine_calibration_dir() + "/sim-cpu-" + std::string(hex, 12) + ".json";
}

const HardwareFingerprint& this_cpu() {
  static const HardwareFingerprint here = this_machine("cpu", 0);
  return here;
}

std::optional<std::string> installed_calibration_of_this_machine() {
  const std::string path = machine_calibration_path(this_cpu());
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return path;
  return std::nullopt;
}

}  // namespace embshard
