#pragma once
/**
 * @file parallel.h
 * @brief `parallel_for`: run independent iterations on a few threads, exceptions included.
 */
#include <cstddef>
#include <functional>

namespace embshard {

/**
 * Calls `body(i)` for i = 0 .. n-1 on up to `threads` threads (interleaved: thread w takes
 * w, w + threads, ...). The first exception thrown by any iteration is rethrown on the calling
 * thread after all threads have stopped; iterations not yet started are skipped.
 */
void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& body);

}  // namespace embshard
