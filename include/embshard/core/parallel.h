#pragma once
/**
 * @file parallel.h
 * @brief `parallel_for`: run independent iterations on a few threads, exceptions included.
 */
#include <cstddef>
#include <functional>

namespace embshard {

/**
 * Calls `body(i)` for i = 0 .. n-1 on up to `threads` threads (the calling thread is one of
 * them). Indices are handed out in increasing order, one at a time, to whichever thread is free.
 * If iterations throw, the exception of the lowest failing index is rethrown on the calling
 * thread once all threads have stopped — the same error a serial loop would report — and indices
 * above a failure that have not started are skipped.
 */
void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& body);

}  // namespace embshard
