#pragma once
/**
 * @file torchrec_reservation.h
 * @brief TorchRec's storage reservation (HeuristicalStorageReservation, storage_reservations.py;
 *        digest torchrec-planner.md §1.7), written once: what the `torchrec` sharder holds back of
 *        each rank's HBM, and what Python's EmbshardPlanner takes off a TorchRec topology before
 *        any sharder sees it (python/embshard/torchrec.py calls these through the bindings).
 *
 *   kjt    = ⌈⌈ids · 8⌉ · 20⌉      ids = Σ_f pooling_f · B_rank, 8-byte ids, 2 pipelined batches ×
 *                                  10 copies
 *   budget = ⌊memory · (1 − share)⌋ − 6 · dense − kjt
 *
 * share: the percentage held back (0.15 by default; of HBM only: 0 for a CPU's DDR); dense: the
 * bytes of the model's parameters that are not embedding tables, × 6 for the parameter, ~2×
 * optimizer state and ~3× DDP buffers (a Task has no dense parameters: 0).
 */
#include <cstdint>

namespace embshard {

inline constexpr double kTorchrecReservationShare = 0.15;  ///< HeuristicalStorageReservation's percentage
inline constexpr double kTorchrecKjtCopies = 20.0;         ///< 2 pipelined batches × 10 copies
inline constexpr int kTorchrecDenseMultiplier = 6;         ///< parameter + ~2× optimizer + ~3× DDP

/** The KJT estimate of one rank that looks up `ids_per_rank` ids a batch. Error when out of range. */
[[nodiscard]] std::int64_t torchrec_kjt_reservation_bytes(double ids_per_rank);

/** What a rank of `memory_bytes` leaves its tables (the file comment's budget; may be ≤ 0). */
[[nodiscard]] std::int64_t torchrec_table_budget_bytes(std::int64_t memory_bytes, double share,
                                                       std::int64_t dense_bytes, std::int64_t kjt_bytes);

}  // namespace embshard
