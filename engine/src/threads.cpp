// One thread count for OpenMP kernels, OpenBLAS and oneDNN (which Debian builds on OpenMP).
#include <cblas.h>
#include <omp.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "ordo/ops.hpp"

namespace ordo {

namespace {
std::atomic<int> g_threads{0};  // 0 = not yet initialised
std::mutex g_mu;

int all_cores() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}
}  // namespace

void set_num_threads(int n) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (n <= 0) n = all_cores();
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
  g_threads.store(n, std::memory_order_release);
}

int num_threads() {
  int n = g_threads.load(std::memory_order_acquire);
  if (n == 0) {
    set_num_threads(0);
    n = g_threads.load(std::memory_order_acquire);
  }
  return n;
}

}  // namespace ordo
