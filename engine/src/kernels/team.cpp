// The decode step's thread team (team.hpp): one parallel region whose threads run many loops.
#include "team.hpp"

#include <omp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "gemm_backend.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ORDO_PAUSE() _mm_pause()
#else
#define ORDO_PAUSE() ((void)0)
#endif

namespace ordo::detail {

namespace {

using Clock = std::chrono::steady_clock;

// One parallel_items() call. Lives on its caller's stack.
struct Job {
  void (*fn)(void*, int64_t);
  void* ctx;
  int64_t n;
  std::atomic<int64_t> next{0};  // next item to take
  std::atomic<int64_t> done{0};  // items finished
  std::mutex error_mu;
  std::exception_ptr error;
};

// Takes items until none is left. Never throws: an item's exception is kept for the caller.
void work(Job& j) {
  for (int64_t i; (i = j.next.fetch_add(1, std::memory_order_relaxed)) < j.n;) {
    try {
      j.fn(j.ctx, i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(j.error_mu);
      if (!j.error) j.error = std::current_exception();
    }
    j.done.fetch_add(1, std::memory_order_acq_rel);
  }
}

struct Team {
  explicit Team(int n) : n_threads(n), in_job(new std::atomic<Job*>[static_cast<size_t>(n)]) {
    for (int t = 0; t < n; ++t) in_job[t].store(nullptr, std::memory_order_relaxed);
  }
  const int n_threads;
  std::atomic<Job*> job{nullptr};     // the leader's current loop, null between loops
  std::atomic<uint64_t> posted{0};    // bumped for every new loop and for the end
  std::atomic<bool> finished{false};  // the leader's body has returned
  std::atomic<int> sleepers{0};
  std::mutex mu;
  std::condition_variable wake;
  // Thread t's hazard slot: the job it is about to take items from. The leader may only let a
  // job go out of scope once no slot names it.
  std::unique_ptr<std::atomic<Job*>[]> in_job;
};

thread_local Team* t_led_team = nullptr;  // set on a leader while its body runs
thread_local bool t_in_item = false;      // set on the leader while it runs items itself

// Spins until ready() holds: pause, then after kTeamSpinMicros yield the core each round.
template <class Ready>
void spin_until(Ready ready) {
  const auto yield_after = Clock::now() + std::chrono::microseconds(kTeamSpinMicros);
  for (unsigned round = 1; !ready(); ++round) {
    ORDO_PAUSE();
    if (round % 64 == 0 && Clock::now() > yield_after) std::this_thread::yield();
  }
}

// A non-leader's loop: wait for a job (spin, then sleep), take its items, repeat until the end.
void serve(Team& team, int tid) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t now = team.posted.load(std::memory_order_acquire);
    if (now == seen) {
      const auto sleep_at = Clock::now() + std::chrono::microseconds(kTeamSpinMicros);
      for (unsigned round = 1; (now = team.posted.load(std::memory_order_acquire)) == seen; ++round) {
        ORDO_PAUSE();
        if (round % 64 == 0 && Clock::now() > sleep_at) {
          std::unique_lock<std::mutex> lock(team.mu);
          team.sleepers.fetch_add(1, std::memory_order_seq_cst);
          team.wake.wait(lock, [&] { return team.posted.load(std::memory_order_seq_cst) != seen; });
          team.sleepers.fetch_sub(1, std::memory_order_relaxed);
        }
      }
    }
    seen = now;
    if (team.finished.load(std::memory_order_acquire)) return;
    Job* j = team.job.load(std::memory_order_seq_cst);
    if (!j) continue;
    // Announce, then check the job is still current: either the leader sees the announcement and
    // waits for us, or we see it has moved on (the job may already be gone) and leave it alone.
    team.in_job[tid].store(j, std::memory_order_seq_cst);
    if (team.job.load(std::memory_order_seq_cst) == j) work(*j);
    team.in_job[tid].store(nullptr, std::memory_order_release);
  }
}

void post(Team& team) {
  team.posted.fetch_add(1, std::memory_order_seq_cst);
  if (team.sleepers.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(team.mu);
    team.wake.notify_all();
  }
}

void run_on_team(Team& team, Job& j) {
  team.job.store(&j, std::memory_order_seq_cst);
  post(team);
  t_in_item = true;
  work(j);
  t_in_item = false;
  spin_until([&] { return j.done.load(std::memory_order_acquire) == j.n; });
  team.job.store(nullptr, std::memory_order_seq_cst);
  for (int t = 1; t < team.n_threads; ++t)
    spin_until([&] { return team.in_job[t].load(std::memory_order_seq_cst) != &j; });
}

}  // namespace

void run_as_team(const std::function<void()>& body) {
  const int nt = ensure_threads();
  if (nt <= 1 || omp_in_parallel() || t_led_team) return body();
  Team team(nt);
  std::exception_ptr error;
#pragma omp parallel num_threads(nt)
  {
    const int tid = omp_get_thread_num();
    if (tid == 0) {
      t_led_team = &team;
      try {
        body();
      } catch (...) {
        error = std::current_exception();
      }
      t_led_team = nullptr;
      team.finished.store(true, std::memory_order_release);
      post(team);
    } else if (tid < team.n_threads) {
      serve(team, tid);
    }
  }
  if (error) std::rethrow_exception(error);
}

void parallel_items(int64_t n, bool parallel, void (*fn)(void*, int64_t), void* ctx) {
  if (n <= 0) return;
  Job j;
  j.fn = fn;
  j.ctx = ctx;
  j.n = n;
  if (parallel && n > 1 && t_led_team && !t_in_item) {
    run_on_team(*t_led_team, j);
  } else if (parallel && n > 1 && !omp_in_parallel()) {
    const int nt = ensure_threads();
#pragma omp parallel num_threads(nt)
    work(j);
  } else {
    work(j);
  }
  if (j.error) std::rethrow_exception(j.error);
}

}  // namespace ordo::detail
