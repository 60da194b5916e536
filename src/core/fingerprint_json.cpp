// The JSON form of a HardwareFingerprint (fingerprint_json.h).
#include "core/fingerprint_json.h"

namespace embshard::detail {

nlohmann::json fingerprint_json(const HardwareFingerprint& f) {
  return {{"device_kind", f.device_kind}, {"cpu_model", f.cpu_model}, {"logical_cpus", f.logical_cpus},
          {"threads", f.threads},         {"llc_bytes", f.llc_bytes}, {"memory_bytes", f.memory_bytes}};
}

HardwareFingerprint read_fingerprint(const JsonNode& n) {
  n.only_keys({"device_kind", "cpu_model", "logical_cpus", "threads", "llc_bytes", "memory_bytes"});
  HardwareFingerprint f;
  f.device_kind = n.at("device_kind").as_string();
  f.cpu_model = n.at("cpu_model").as_string();
  f.logical_cpus = static_cast<int>(n.at("logical_cpus").as_int(0, 1 << 20));
  f.threads = static_cast<int>(n.at("threads").as_int(0, 1 << 20));
  f.llc_bytes = n.at("llc_bytes").as_int(0);
  f.memory_bytes = n.at("memory_bytes").as_int(0);
  return f;
}

}  // namespace embshard::detail
