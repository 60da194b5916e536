#pragma once
/**
 * @file machine_calibration.h
 * @brief Calibrations of the `sim` model installed for a machine, which the `cpu` preset's
 *        built-in coefficients give way to on that machine.
 *
 * `embshard profile calibrate --samples S --install` writes the fit of CPU samples to
 * DIR/sim-cpu-KEY.json, where DIR is `machine_calibration_dir()` and KEY is a hash of the
 * measuring machine's CPU model and last-level cache (the parts of its fingerprint that the
 * built-in model's mismatch warning compares). `sim:coefficients=builtin` on a task of `cpu`
 * devices then takes the file of *this* machine when there is one — its spec names the file, so
 * a plan's provenance says which coefficients it was planned with — and the built-in
 * coefficients, with the mismatch warning, when there is none.
 */
#include <optional>
#include <string>

#include "embshard/core/fingerprint.h"

namespace embshard {

/** The environment variable that names the directory of installed calibrations. */
inline constexpr const char* kCalibrationsEnv = "EMBSHARD_CALIBRATIONS";

/**
 * $EMBSHARD_CALIBRATIONS, else $XDG_CACHE_HOME/embshard/calibrations, else
 * $HOME/.cache/embshard/calibrations. Throws Error when none can be formed (no HOME) or the
 * directory's path holds a ',' (spec strings could not name the files in it).
 */
[[nodiscard]] std::string machine_calibration_dir();

/** Where the calibration of `machine`'s CPU is installed (file comment). */
[[nodiscard]] std::string machine_calibration_path(const HardwareFingerprint& machine);

/** This machine's CPU fingerprint (`this_machine("cpu", 0)`), read once per process: every sim
 *  model built for a cpu task asks for it, some once per evaluation. */
[[nodiscard]] const HardwareFingerprint& this_cpu();

/** This machine's installed CPU calibration, if there is one. */
[[nodiscard]] std::optional<std::string> installed_calibration_of_this_machine();

}  // namespace embshard
