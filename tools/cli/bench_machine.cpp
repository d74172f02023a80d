// `ordo bench`'s machine probes: memory read bandwidth, peak sgemm, ordo's linear kernels on weights
// in cache, and the process's peak memory (bench_machine.hpp).
#include "bench_machine.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#include "common.hpp"
#include "ordo/input.hpp"
#include "ordo/synthetic.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ordo::cli {

using Clock = BenchClock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double peak_rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  return 0;
}

void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ReadProbe::ReadProbe(size_t bytes) : n_(bytes / sizeof(float) / 4096 * 4096) {
  buf_ = static_cast<float*>(std::aligned_alloc(64, n_ * sizeof(float)));
  if (!buf_) throw out_of_memory("the bandwidth probe's buffer", n_ * sizeof(float));
  const int nt = num_threads();
#pragma omp parallel for schedule(static) num_threads(nt)
  for (size_t i = 0; i < n_; ++i) buf_[i] = static_cast<float>(i & 7) * 0.25f;  // first touch by the reader
}

ReadProbe::~ReadProbe() { std::free(buf_); }

double ReadProbe::gb_s(int reps) {
  constexpr size_t kStreams = 4, kStep = 32;  // floats per stream per iteration (two cache lines)
  const int nt = num_threads();
  const size_t n = n_;
  const float* buf = buf_;
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    float total = 0;
    const auto t0 = Clock::now();
#pragma omp parallel num_threads(nt) reduction(+ : total)
    {
      const size_t parts = static_cast<size_t>(omp_get_num_threads()), me = static_cast<size_t>(omp_get_thread_num());
      const size_t share = n / parts / (kStreams * kStep) * (kStreams * kStep);
      const float* base = buf + me * share;
      const size_t len = share / kStreams;  // floats per stream
#if defined(__AVX2__)
      __m256 acc[kStreams][4];
      for (auto& a : acc)
        for (auto& v : a) v = _mm256_setzero_ps();
      for (size_t i = 0; i < len; i += kStep)
        for (size_t st = 0; st < kStreams; ++st) {
          const float* p = base + st * len + i;
          acc[st][0] = _mm256_add_ps(acc[st][0], _mm256_load_ps(p));
          acc[st][1] = _mm256_add_ps(acc[st][1], _mm256_load_ps(p + 8));
          acc[st][2] = _mm256_add_ps(acc[st][2], _mm256_load_ps(p + 16));
          acc[st][3] = _mm256_add_ps(acc[st][3], _mm256_load_ps(p + 24));
        }
      float lane[8];
      for (auto& a : acc) {
        _mm256_storeu_ps(lane, _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
        for (float v : lane) total += v;
      }
#else
      for (size_t i = 0; i < len * kStreams; ++i) total += base[i];
#endif
    }
    const double t = seconds_since(t0);
    sink_ = sink_ + total;
    // Bytes actually read: every thread's rounded-down share.
    const size_t parts = static_cast<size_t>(nt);
    const size_t read = n / parts / (kStreams * kStep) * (kStreams * kStep) * parts;
    best = std::max(best, static_cast<double>(read * sizeof(float)) / t / 1e9);
  }
  return best;
}

// Peak sgemm GFLOP/s of one backend: C[n, n] = A · Bᵀ, best of reps after one warm-up.
double measure_sgemm_gflop_s(Backend be, int64_t n, int reps) {
  std::vector<float> A(n * n), B(n * n), C(n * n);
  for (int64_t i = 0; i < n * n; ++i) {
    A[i] = static_cast<float>((i * 7) % 13) * 0.01f;
    B[i] = static_cast<float>((i * 5) % 11) * 0.01f;
  }
  double best = 0;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = Clock::now();
    gemm_nt(be, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
    const double t = seconds_since(t0);
    if (r > 0) best = std::max(best, 2.0 * n * n * n / t / 1e9);
  }
  return best;
}

LinearProbe::LinearProbe(DType dt, int threads) : ws_(static_cast<size_t>(threads)) {
  for (Linear& w : ws_) {
    w.weight = Tensor::uninitialized({kN, kK});
    float* wd = w.weight.f32();
    for (int64_t i = 0; i < kN * kK; ++i) wd[i] = static_cast<float>((i * 7) % 13 - 6) * 0.01f;
    if (dt == DType::Q4_K)
      w.weight = random_q4_k(kN, kK, 1, 0.05f);  // ordo writes no Q4_K: random blocks
    else if (dt != DType::F32)
      w = convert_linear(w, dt);
    pack_panels(w);
  }
}
double LinearProbe::gflop_s(Backend be, int64_t M, double gflop, int reps) const {
  const double per_call = 2.0 * static_cast<double>(M * kN * kK);
  const int calls = std::max(1, static_cast<int>(gflop * 1e9 / per_call));
  std::vector<float> x(static_cast<size_t>(M * kK));
  for (int64_t i = 0; i < M * kK; ++i) x[i] = static_cast<float>((i * 5) % 11 - 5) * 0.1f;
  const int threads = static_cast<int>(ws_.size());
  double best = 0;
  for (int r = 0; r <= reps; ++r) {  // the first pass warms the caches
    int ran = 0;                     // threads the runtime gave the region
    const auto t0 = Clock::now();
    std::exception_ptr error;  // carried out of the region (an exception there ends the process)
#pragma omp parallel num_threads(threads)
    {
#pragma omp master
      ran = omp_get_num_threads();
      try {
        std::vector<float> y(static_cast<size_t>(M * kN));
        const Linear& w = ws_[static_cast<size_t>(omp_get_thread_num())];
        for (int c = 0; c < calls; ++c) linear(be, x.data(), M, kK, w, y.data());
      } catch (...) {
#pragma omp critical(ordo_bench_error)
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    const double t = seconds_since(t0);
    if (r > 0) best = std::max(best, ran * calls * per_call / t / 1e9);
  }
  return best;
}

BenchMachine::BenchMachine(bool q, std::vector<Backend> bes)
    : read_probe(q ? (size_t(64) << 20) : (size_t(256) << 20)),
      sgemm_n(q ? 256 : 2048),
      quick(q),
      backends(std::move(bes)) {}

void BenchMachine::measure() {
  read_gb_s = std::max(read_gb_s, read_probe.gb_s(quick ? 2 : 8));
  for (Backend b : backends) {
    const double g = measure_sgemm_gflop_s(b, sgemm_n, quick ? 1 : 3);
    sgemm_by[backend_name(b)] = std::max(g, sgemm_by.value(backend_name(b), 0.0));
    peak = std::max(peak, g);
  }
}

double BenchMachine::linear_now(DType dt, int64_t M) {
  const LinearProbe& probe = linear_probes.try_emplace(dt, dt, num_threads()).first->second;
  const double g = probe.gflop_s(backends[0], M, quick ? 0.05 : 1.0, 1);
  const std::string name = std::string(weight_dtype_name(dt)) + " x" + std::to_string(M);
  linear_by[name] = std::max(g, linear_by.value(name, 0.0));
  return g;
}

double BenchMachine::peak_now() {
  double lim = 0;
  for (Backend pb : backends) lim = std::max(lim, measure_sgemm_gflop_s(pb, sgemm_n, 1));
  return lim;
}

}  // namespace ordo::cli
