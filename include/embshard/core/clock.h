#pragma once
/**
 * @file clock.h
 * @brief Time: wall-clock stamps for provenance (plans, cost-sample files), `now_ms` (the steady
 *        clock every timing and planning-time figure uses) and durations as people read them.
 */
#include <cstdint>
#include <string>

namespace embshard {

/** Milliseconds since an arbitrary epoch (steady clock): differences of two calls are durations. */
[[nodiscard]] double now_ms();

/** The current UTC time as ISO 8601, e.g. "2026-11-21T09:30:00Z". */
[[nodiscard]] std::string utc_timestamp();

/**
 * A duration in milliseconds as a person reads it: three significant digits below 1 ms
 * ("0.0280 ms"), one decimal up to a second ("38.1 ms"), seconds with two decimals above
 * ("2.35 s").
 */
[[nodiscard]] std::string readable_ms(double ms);

/** A duration as "H:MM:SS" (for progress and ETA lines). */
[[nodiscard]] std::string format_duration(double seconds);

/**
 * "elapsed H:MM:SS, ETA H:MM:SS" for a run that has `done` of `total` items, `done_at_start` of
 * them before this process began (a resumed run), after `elapsed_s` seconds of this process.
 */
[[nodiscard]] std::string format_progress(std::int64_t done, std::int64_t total, std::int64_t done_at_start,
                                          double elapsed_s);

}  // namespace embshard
