// `ordo bench`'s machine probes: memory read bandwidth, peak sgemm, ordo's linear kernels on weights
// in cache, and the process's peak memory. Each limit probe is cheap enough to run again beside
// every timed repetition, so a row is measured against the limits of its own moment.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "ordo/ordo.hpp"
#include "ordo/quantize.hpp"

namespace ordo::cli {

using BenchClock = std::chrono::steady_clock;
double seconds_since(BenchClock::time_point t0);

double median(std::vector<double> v);

// Peak resident set (VmHWM) in MiB, 0 if unknown.
double peak_rss_mib();
// Resets VmHWM to the current RSS (Linux >= 4.0), so the 1 GiB bandwidth buffer and the previous
// dtype's model do not count toward the next model's peak.
void reset_peak_rss();

// Memory read bandwidth with all threads: each thread sums its contiguous share of a buffer with
// AVX2 loads, as 4 far-apart linear streams (like the decode matvec's row streams; more streams
// in flight reach a higher bandwidth than one). The buffer is allocated and first-touched
// once, so the probe can run again beside every timed repetition.
class ReadProbe {
 public:
  explicit ReadProbe(size_t bytes);
  ~ReadProbe();
  double mib() const { return static_cast<double>(n_ * sizeof(float)) / (1 << 20); }
  ReadProbe(const ReadProbe&) = delete;
  ReadProbe& operator=(const ReadProbe&) = delete;

  // Best GB/s of `reps` passes over the buffer.
  double gb_s(int reps);

 private:
  size_t n_;
  float* buf_ = nullptr;
  volatile float sink_ = 0;
};

// Peak sgemm GFLOP/s of one backend: C[n, n] = A · Bᵀ, best of reps after one warm-up.
double measure_sgemm_gflop_s(Backend be, int64_t n, int reps);

// GFLOP/s of ordo's own linear kernels (those of a decode step) for one weight dtype and M rows
// (a step's sequences), on weights that stay in cache: the arithmetic limit of a decode step, as
// the read probe is its memory limit. Each thread multiplies the rows by a weight of its own (1 MB
// F32, 256 KB int8: within a core's share of L2 and L3), so no call waits on another thread.
class LinearProbe {
 public:
  LinearProbe(DType dt, int threads);
  // Best of `reps` passes, each about `gflop` GFLOP per thread.
  double gflop_s(Backend be, int64_t M, double gflop, int reps) const;

 private:
  static constexpr int64_t kN = 1024, kK = 256;
  std::vector<Linear> ws_;
};

// The machine's limits: read bandwidth and the best backend's peak sgemm, measured before and after
// the model runs (the best of both is the roofline: on a shared machine one measurement can catch
// a busy moment), plus probes run beside each timed repetition, ordo's linear kernels' peak per
// weight dtype and row count among them.
struct BenchMachine {
  ReadProbe read_probe;  // 256 MiB: well beyond the caches, small enough to probe every rep
  int64_t sgemm_n;
  bool quick;
  std::vector<Backend> backends;
  double read_gb_s = 0, peak = 0;
  nlohmann::json sgemm_by = nlohmann::json::object();
  std::map<DType, LinearProbe> linear_probes;  // built on first use
  // "<dtype> x<rows>" -> GFLOP/s of the linear kernels (best seen)
  nlohmann::json linear_by = nlohmann::json::object();

  BenchMachine(bool q, std::vector<Backend> bes);
  void measure();
  // The kernels' peak for M rows beside one repetition (also kept as the best seen).
  double linear_now(DType dt, int64_t M);
  // The peak beside one repetition: the best backend's sgemm, whichever runs the model.
  double peak_now();
};

}  // namespace ordo::cli
