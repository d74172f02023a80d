// Private: parallel loops that can run without a fork/join each.
//
// A decode step is ~60 small parallel loops (one per weight group, attention, lm_head), each of
// 10-200 us, and a prompt's step a few hundred longer ones. As separate OpenMP regions under
// passive waiting, every loop would wake the other threads from sleep, and they join late: a fast
// (int8) step loses a large share of its time that way. A team keeps the threads in one region
// for the whole step, spinning between loops for a bounded time, then sleeping as before.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>

namespace ordo::detail {

// Runs body on the calling thread as the leader of one OpenMP region of ensure_threads() threads;
// the other threads serve the parallel_items() calls body makes, and wait between them (spin up
// to kTeamSpinMicros, then sleep). Runs body alone when one thread is configured or the caller is
// already in a parallel region or a team. body must not start OpenMP regions of its own that
// need threads (oneDNN or OpenBLAS GEMMs would run on one): it is meant for steps, whose parallel
// work is all parallel_items() (a prompt's GEMMs run one per item). An exception from body
// propagates after the region.
void run_as_team(const std::function<void()>& body);

// Calls fn(ctx, i) once for every i in [0, n), the items taken dynamically, one at a time. When
// `parallel` (the caller judged the work worth threads), by the team's threads if the caller
// leads a team and is not inside one of its items, else by a new OpenMP region unless the caller
// is already in one; otherwise by the caller alone, in order. Returns once every item has run.
// The first exception thrown by an item is rethrown (the other items still run).
void parallel_items(int64_t n, bool parallel, void (*fn)(void* ctx, int64_t i), void* ctx);

template <class F>
void parallel_items(int64_t n, bool parallel, F&& f) {
  using Fn = std::remove_reference_t<F>;
  parallel_items(
      n, parallel, [](void* c, int64_t i) { (*static_cast<Fn*>(c))(i); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

// How long a team thread spins for the next loop before it sleeps: longer than the serial
// stretches inside a step (norms, rotary, residuals: 1-20 us), short enough that a thread left
// waiting by a slow caller gives its core back.
constexpr int64_t kTeamSpinMicros = 200;

}  // namespace ordo::detail
