// One thread count for our OpenMP kernels, OpenBLAS and oneDNN. Everything runs on the one
// OpenMP pool: oneDNN (built on OpenMP in Debian) follows omp_get_max_threads() of the calling
// thread, and the pthread OpenBLAS is kept at one thread per call, its GEMMs being split over
// the OpenMP threads by gemm_openblas.cpp (its own pool would spin against OpenMP's).
#include <cblas.h>
#include <omp.h>
#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "address_space.hpp"
#include "gemm_backend.hpp"
#include "ordo/ops.hpp"

namespace ordo {

namespace {
std::atomic<int> g_threads{0};          // 0 = not yet initialised
std::atomic<uint64_t> g_generation{0};  // bumped by every set_num_threads()
std::mutex g_mu;
thread_local uint64_t t_seen_generation = 0;

int all_cores() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

#ifdef __SANITIZE_THREAD__
// ThreadSanitizer cannot see libgomp's fork/join (Debian's libgomp is not instrumented), so every
// OpenMP region would be reported as racing. A TSan build runs each call on its caller's thread:
// what it checks is what the API promises, threads sharing one Model.
constexpr bool kOneThreadPerCaller = true;
#else
constexpr bool kOneThreadPerCaller = false;
#endif
// Under an address-space limit, the most of n threads whose stacks fit: libgomp ends the process
// when it cannot create a thread, so a team too big for the limit is made smaller instead (one
// thread always fits: the caller's). Each thread reserves its stack (RLIMIT_STACK, or glibc's
// 32 MiB when that is unlimited) and a little more; room is kept for the work itself.
int threads_that_fit(int n) {
  if (n <= 1 || !detail::address_space_limited()) return n;
  rlimit st{};
  size_t stack = size_t(32) << 20;
  if (getrlimit(RLIMIT_STACK, &st) == 0 && st.rlim_cur != RLIM_INFINITY) stack = static_cast<size_t>(st.rlim_cur);
  const size_t per_thread = stack + (size_t(1) << 20), margin = size_t(16) << 20;
  while (n > 1 && !detail::address_space_room(static_cast<size_t>(n - 1) * per_thread + margin)) --n;
  return n;
}

// Under a limit, every thread allocates from glibc's main arena. A thread's own arena reserves
// 64 MiB of address space, and where that does not fit glibc tries again on each of the thread's
// mallocs: one that fits at last takes the room another thread was just found to have, and
// oneDNN, whose JIT code buffer then cannot be mapped, crashes (OpenBLAS retries forever).
void one_malloc_arena() {
#ifdef __GLIBC__
  mallopt(M_ARENA_MAX, 1);  // idempotent; a failure leaves glibc's default, as without a limit
#endif
}

}  // namespace

void set_num_threads(int n) {
  if (n < 0 || n > kMaxThreads)
    throw Error("threads must be between 0 (all cores) and " + std::to_string(kMaxThreads) + ", got " +
                std::to_string(n));
  std::lock_guard<std::mutex> lock(g_mu);
  if (n <= 0) n = all_cores();
  if (kOneThreadPerCaller) n = 1;
  if (detail::address_space_limited()) one_malloc_arena();
  n = threads_that_fit(n);
  openblas_set_num_threads(1);
  g_threads.store(n, std::memory_order_release);
  uint64_t gen = g_generation.fetch_add(1, std::memory_order_acq_rel) + 1;
  // omp_set_num_threads() only sets the calling thread's ICV; other threads pick the new
  // count up in detail::ensure_threads().
  if (!omp_in_parallel()) {
    omp_set_num_threads(n);
    t_seen_generation = gen;
    // Under a limit, start the team now, while its stacks were just found to fit: libgomp keeps
    // the threads for later regions, so allocations made before the first region (a 64 MiB
    // bench buffer) cannot leave it without room and end the process.
    if (n > 1 && detail::address_space_limited()) {
#pragma omp parallel num_threads(n)
      (void)omp_get_thread_num();
    }
  }
}

int num_threads() { return detail::ensure_threads(); }

namespace detail {

int ensure_threads() {
  int n = g_threads.load(std::memory_order_acquire);
  if (n == 0) {
    std::unique_lock<std::mutex> lock(g_mu);
    n = g_threads.load(std::memory_order_acquire);
    if (n == 0) {
      lock.unlock();
      set_num_threads(0);
      n = g_threads.load(std::memory_order_acquire);
    }
  }
  uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (t_seen_generation != gen && !omp_in_parallel()) {
    omp_set_num_threads(n);
    t_seen_generation = gen;
  }
  return n;
}

}  // namespace detail
}  // namespace ordo
