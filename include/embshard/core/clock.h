#pragma once
/**
 * @file clock.h
 * @brief Wall-clock stamps for provenance (plans, cost-sample files). Timing uses steady_clock
 *        (`profile/measure.h`), never this.
 */
#include <string>

namespace embshard {

/** The current UTC time as ISO 8601, e.g. "2026-11-21T09:30:00Z". */
[[nodiscard]] std::string utc_timestamp();

/** A duration as "H:MM:SS" (for progress and ETA lines). */
[[nodiscard]] std::string format_duration(double seconds);

}  // namespace embshard
