// ordo bench: prefill / decode throughput, time to first token and peak memory per GEMM backend and
// weight dtype, each as a fraction of the machine's own limits measured on the spot (a limit probe
// runs beside every timed repetition; the fraction is the median of the paired ratios, which
// holds still when a shared machine's speed drifts during the run):
//   * decode: the roofline step time ÷ the measured one. A step reads the weights once and each
//     sequence's cached keys and values, and does 2·(linear params + vocab·d) FLOPs per sequence
//     in ordo's linear kernels; its roofline time is the longer of bytes ÷ read bandwidth and
//     FLOPs ÷ those kernels' peak on weights in cache (one sequence: the bytes; enough sequences:
//     the arithmetic).
//   * prefill (compute-bound): achieved FLOP/s ÷ peak sgemm FLOP/s, FLOPs = 2·params·T + attention
// On a synthetic random-weight Llama-shaped model (--synthetic, default 110m) or a real one (-m).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_noise.hpp"
#include "common.hpp"
#include "ordo/input.hpp"
#include "progress.hpp"
#include "usage.hpp"
#include "ordo/quantize.hpp"
#include "ordo/synthetic.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ordo::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  for (char c : s + ",") {
    if (c == ',' || c == ' ') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

std::vector<int64_t> int_list(const std::string& s, const char* what) {
  std::vector<int64_t> v;
  for (const std::string& x : split_list(s)) {
    char* end = nullptr;
    long long n = std::strtoll(x.c_str(), &end, 10);
    if (*end != '\0' || n <= 0) throw Error(std::string(what) + ": '" + x + "' is not a positive integer");
    v.push_back(n);
  }
  return v;
}

// Peak resident set (VmHWM) in MiB, 0 if unknown.
double peak_rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  return 0;
}

// Resets VmHWM to the current RSS (Linux >= 4.0), so the 1 GiB bandwidth buffer and the previous
// dtype's model do not count toward the next model's peak.
void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median over repetitions of (work / time) / limit, each rep against the limit probed beside it
// (tokens per second per GB/s: speed with the machine's drift divided out).
double paired_fraction(double work, const std::vector<double>& times, const std::vector<double>& limits) {
  std::vector<double> f;
  for (size_t i = 0; i < times.size(); ++i) f.push_back(limits[i] > 0 ? work / times[i] / limits[i] : 0.0);
  return f.empty() ? 0.0 : median(f);
}

// Memory read bandwidth with all threads: each thread sums its contiguous share of a buffer with
// AVX2 loads, as 4 far-apart linear streams (like the decode matvec's row streams; more streams
// in flight reach a higher bandwidth than one). The buffer is allocated and first-touched
// once, so the probe can run again beside every timed repetition.
class ReadProbe {
 public:
  explicit ReadProbe(size_t bytes) : n_(bytes / sizeof(float) / 4096 * 4096) {
    buf_ = static_cast<float*>(std::aligned_alloc(64, n_ * sizeof(float)));
    if (!buf_) throw out_of_memory("the bandwidth probe's buffer", n_ * sizeof(float));
    const int nt = num_threads();
#pragma omp parallel for schedule(static) num_threads(nt)
    for (size_t i = 0; i < n_; ++i) buf_[i] = static_cast<float>(i & 7) * 0.25f;  // first touch by the reader
  }
  ~ReadProbe() { std::free(buf_); }
  double mib() const { return static_cast<double>(n_ * sizeof(float)) / (1 << 20); }
  ReadProbe(const ReadProbe&) = delete;
  ReadProbe& operator=(const ReadProbe&) = delete;

  // Best GB/s of `reps` passes over the buffer.
  double gb_s(int reps) {
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

 private:
  size_t n_;
  float* buf_ = nullptr;
  volatile float sink_ = 0;
};

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

// GFLOP/s of ordo's own linear kernels (those of a decode step) for one weight dtype and M rows
// (a step's sequences), on weights that stay in cache: the arithmetic limit of a decode step, as
// the read probe is its memory limit. Each thread multiplies the rows by a weight of its own (1 MB
// F32, 256 KB int8: within a core's share of L2 and L3), so no call waits on another thread.
class LinearProbe {
 public:
  LinearProbe(DType dt, int threads) : ws_(static_cast<size_t>(threads)) {
    for (Linear& w : ws_) {
      w.weight = Tensor::uninitialized({kN, kK});
      float* wd = w.weight.f32();
      for (int64_t i = 0; i < kN * kK; ++i) wd[i] = static_cast<float>((i * 7) % 13 - 6) * 0.01f;
      if (dt != DType::F32) w = convert_linear(w, dt);
      pack_panels(w);
    }
  }
  // Best of `reps` passes, each about `gflop` GFLOP per thread.
  double gflop_s(Backend be, int64_t M, double gflop, int reps) const {
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

 private:
  static constexpr int64_t kN = 1024, kK = 256;
  std::vector<Linear> ws_;
};

struct Row {
  std::string phase, backend, dtype;
  int64_t ctx = 0;
  int64_t batch = 1;  // sequences in flight; tokens_per_s is their aggregate
  double tokens_per_s = 0, tokens_per_s_best = 0, roofline_fraction = 0, seconds_median = 0, seconds_min = 0;
  double limit = 0;  // median of the limit probes run beside each repetition (GB/s or GFLOP/s)
  double tokens_per_limit = 0;  // median of tokens/s ÷ limit per repetition: speed with the machine's drift divided out
  double ttft_ms = 0, peak_rss_mib = 0, gflop_s = 0, gb_s = 0;  // peak RSS: since this dtype's model was built
  double spread = 0;  // slowest repetition ÷ fastest − 1 (bench_noise.hpp)
  // Decode, per step: bytes read (weights + caches), of them the caches', and the linear kernels'
  // FLOPs; their achieved FLOP/s against the dtype's kernel peak; which limit is the nearer.
  double bytes_per_step = 0, cache_bytes_per_step = 0, flops_per_step = 0, arith_fraction = 0;
  std::string bound;
  StepTimes parts;  // decode: summed over the timed repetitions' steps
};

struct BenchCommand : Command {
  std::string dir, synthetic, backends = "onednn,openblas", dtypes = "f32,int8", json_path;
  std::string prompts = "128,512", contexts = "128,1024", kv_dtype = "f32", batches = "1";
  int threads = 0, warmup = 1, reps = 5, steps = 16;
  uint64_t seed = 1;
  bool quick = false;

  CLI::App* add(CLI::App& app) override {
    CLI::App* c = app.add_subcommand(
        "bench", "Prefill/decode speed, TTFT and peak memory per backend and weight dtype, vs the machine's roofline");
    auto* m = c->add_option("-m,--model", dir, "Benchmark this model directory");
    c->add_option("--synthetic", synthetic,
                  "Random-weight Llama-shaped model: 110m, 1b or DIM,LAYERS,HEADS,KV_HEADS,FFN,VOCAB (default: 110m)")
        ->excludes(m);
    c->add_option("--backend", backends, "GEMM backends, comma-separated")->capture_default_str();
    c->add_option("--dtypes,--dtype", dtypes, "Weight dtypes, comma-separated: f32, f16, bf16, int8")
        ->capture_default_str();
    c->add_option("--kv-dtype", kv_dtype, "KV cache storage: f32, f16 or int8")
        ->capture_default_str()
        ->check(CLI::IsMember({"f32", "f16", "int8"}, CLI::ignore_case));
    c->add_option("--prompts", prompts, "Prefill prompt lengths")->capture_default_str();
    c->add_option("--ctx-lengths", contexts, "Decode context lengths")->capture_default_str();
    add_alias(c, "--contexts", contexts, "--ctx-lengths");
    add_alias(c, "--batch", batches, "--parallel");
    c->add_option("--parallel", batches,
                  "Sequences in flight, comma-separated (e.g. 1,4,16,64): each prefill row runs that many prompts in "
                  "one forward, each decode step advances that many sequences; tok/s is the aggregate")
        ->capture_default_str();
    c->add_option("--steps", steps, "Decode steps timed per repetition")->capture_default_str();
    c->add_option("--warmup", warmup, "Untimed warm-up runs")->capture_default_str();
    c->add_option("--reps", reps, "Timed repetitions (median and best reported)")->capture_default_str();
    c->add_option("-t,--threads", threads, "Threads (0: all cores)")->capture_default_str();
    c->add_option("-s,--seed", seed, "Synthetic weights seed")->capture_default_str();
    c->add_option("--json", json_path, "Also write the results as JSON to this file");
    c->add_flag("--quick", quick, "Tiny sizes, one repetition (smoke test; numbers are not meaningful)");
    return c;
  }

  // The machine's limits: read bandwidth and the best backend's peak sgemm, measured before and after
  // the model runs (the best of both is the roofline: on a shared machine one measurement can catch
  // a busy moment), plus probes run beside each timed repetition, ordo's linear kernels' peak per
  // weight dtype and row count among them.
  struct Machine {
    ReadProbe read_probe;  // 256 MiB: well beyond the caches, small enough to probe every rep
    int64_t sgemm_n;
    bool quick;
    std::vector<Backend> backends;
    double read_gb_s = 0, peak = 0;
    nlohmann::json sgemm_by = nlohmann::json::object();
    std::map<DType, LinearProbe> linear_probes;  // built on first use
    // "<dtype> x<rows>" -> GFLOP/s of the linear kernels (best seen)
    nlohmann::json linear_by = nlohmann::json::object();

    Machine(bool q, std::vector<Backend> bes)
        : read_probe(q ? (size_t(64) << 20) : (size_t(256) << 20)), sgemm_n(q ? 256 : 2048), quick(q),
          backends(std::move(bes)) {}
    void measure() {
      read_gb_s = std::max(read_gb_s, read_probe.gb_s(quick ? 2 : 8));
      for (Backend b : backends) {
        const double g = measure_sgemm_gflop_s(b, sgemm_n, quick ? 1 : 3);
        sgemm_by[backend_name(b)] = std::max(g, sgemm_by.value(backend_name(b), 0.0));
        peak = std::max(peak, g);
      }
    }
    // The kernels' peak for M rows beside one repetition (also kept as the best seen).
    double linear_now(DType dt, int64_t M) {
      const LinearProbe& probe = linear_probes.try_emplace(dt, dt, num_threads()).first->second;
      const double g = probe.gflop_s(backends[0], M, quick ? 0.05 : 1.0, 1);
      const std::string name = std::string(weight_dtype_name(dt)) + " x" + std::to_string(M);
      linear_by[name] = std::max(g, linear_by.value(name, 0.0));
      return g;
    }
    // The peak beside one repetition: the best backend's sgemm, whichever runs the model.
    double peak_now() {
      double lim = 0;
      for (Backend pb : backends) lim = std::max(lim, measure_sgemm_gflop_s(pb, sgemm_n, 1));
      return lim;
    }
  };

  // The model under test, as loaded for one weight dtype.
  struct Subject {
    std::unique_ptr<Model> model;
    std::unique_ptr<Transformer> owned;
    Transformer& tf() { return owned ? *owned : model->engine(); }
  };

  Subject load(DType dt, const std::vector<Backend>& bes, const std::vector<int64_t>& prompt_lens,
               const std::vector<int64_t>& ctx_lens) const {
    Subject m;
    if (dir.empty()) {
      SyntheticShape shape = parse_synthetic_shape(synthetic.empty() ? "110m" : synthetic);
      int64_t longest = 2048;
      for (int64_t T : prompt_lens) longest = std::max(longest, T);
      for (int64_t C : ctx_lens) longest = std::max(longest, C + steps + 1);
      shape.max_positions = longest;
      ModelSpec spec = synthetic_llama(shape, dt, seed);
      m.owned = std::make_unique<Transformer>(std::move(spec), bes[0]);
    } else {
      ModelOptions o;
      o.backend = bes[0];
      o.threads = threads;
      o.dtype = dt;
      o.load_tokenizer = false;
      check_model_dir("-m", dir);
      m.model = std::make_unique<Model>(Model::load(dir, o));
    }
    return m;
  }

  // A result row from per-repetition times, the limits probed beside them and each repetition's
  // roofline time (what it would take at those limits): the roofline fraction is the median of
  // roofline time ÷ time.
  static Row timed_row(const char* phase, int64_t ctx, int64_t batch, Backend be, DType dt, double tokens,
                       const std::vector<double>& times, const std::vector<double>& limits,
                       const std::vector<double>& roofline_s, const Machine& mach) {
    Row row;
    row.phase = phase;
    row.ctx = ctx;
    row.batch = batch;
    row.backend = backend_name(be);
    row.dtype = weight_dtype_name(dt);
    row.seconds_median = median(times);
    row.seconds_min = *std::min_element(times.begin(), times.end());
    row.tokens_per_s = tokens / row.seconds_median;
    row.tokens_per_s_best = tokens / row.seconds_min;
    row.limit = median(limits);
    std::vector<double> fractions;
    for (size_t i = 0; i < times.size(); ++i) fractions.push_back(roofline_s[i] / times[i]);
    row.roofline_fraction = median(fractions);
    row.tokens_per_limit = paired_fraction(tokens, times, limits);
    row.spread = repetition_spread(times);
    row.peak_rss_mib = peak_rss_mib() - mach.read_probe.mib();  // the probe buffer is not the model's
    return row;
  }

  static std::vector<int32_t> ids_of_len(int64_t n, int64_t vocab) {
    std::vector<int32_t> ids(n);
    for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7919 + 13) % vocab);
    return ids;
  }

  // B prompts of T tokens in one forward.
  Row prefill(Transformer& tf, Backend be, DType dt, int64_t B, int64_t T, Machine& mach) const {
    const ModelSpec& s = tf.spec();
    const std::vector<int32_t> ids = ids_of_len(T, s.vocab_size);
    std::vector<double> times, limits;
    for (int r = 0; r < warmup + reps; ++r) {
      // The peak probe runs right before each timed rep: on a shared machine the two then see the
      // same conditions, and the row's fraction is the median of the paired ratios.
      const double lim = r >= warmup ? mach.peak_now() : 0.0;
      std::vector<Sequence> seqs;
      std::vector<DecodeRequest> reqs;
      for (int64_t b = 0; b < B; ++b) seqs.push_back(tf.new_sequence(T));
      for (Sequence& q : seqs) reqs.push_back(DecodeRequest{&q, ids, {}, LogitsFor::Last});
      const auto t0 = Clock::now();
      tf.decode_batch(reqs);
      const double t = seconds_since(t0);
      if (r >= warmup) {
        times.push_back(t);
        limits.push_back(lim);
      }
    }
    const double L = static_cast<double>(s.decoder.layers.size());
    const double flops = B * (2.0 * static_cast<double>(decoder_linear_params(s)) * T + 2.0 * s.d_model * s.vocab_size +
                              2.0 * L * s.n_heads * s.head_dim * double(T) * double(T + 1));
    std::vector<double> roofline_s;  // the FLOPs at the sgemm peak probed beside each repetition
    for (double lim : limits) roofline_s.push_back(lim > 0 ? flops / 1e9 / lim : 0.0);
    Row row = timed_row("prefill", T, B, be, dt, double(B * T), times, limits, roofline_s, mach);
    row.ttft_ms = row.seconds_median * 1e3;
    row.gflop_s = flops / row.seconds_median / 1e9;
    return row;
  }

  // B sequences at context C, one token each per step.
  Row decode(Transformer& tf, Backend be, DType dt, int64_t B, int64_t C, Machine& mach) const {
    const double weight_bytes = static_cast<double>(decode_weight_bytes(tf.spec()));
    const std::vector<int32_t> ids = ids_of_len(C + steps, tf.spec().vocab_size);
    std::vector<Sequence> seqs;
    for (int64_t b = 0; b < B; ++b) {
      seqs.push_back(tf.new_sequence(C + steps + 1));
      tf.decode(seqs.back(), std::vector<int32_t>(ids.begin(), ids.begin() + C), {}, LogitsFor::Last);
    }
    std::vector<DecodeRequest> reqs;
    for (Sequence& q : seqs) reqs.push_back(DecodeRequest{&q, {0}, {}, LogitsFor::Last});
    std::vector<double> times, limits, peaks;
    StepTimes parts, ignored;
    for (int r = 0; r < warmup + reps; ++r) {
      const double lim = r >= warmup ? mach.read_probe.gb_s(2) : 0.0;  // paired probes, as for prefill
      if (r >= warmup) peaks.push_back(mach.linear_now(dt, B));
      for (Sequence& q : seqs) q.truncate(C);                          // back to the prefilled context
      const StepTimes::Recording recording(r >= warmup ? parts : ignored);
      const auto t0 = Clock::now();
      for (int k = 0; k < steps; ++k) {
        if (B == 1) {
          tf.decode(seqs[0], {ids[C + k]}, {}, LogitsFor::Last);
        } else {
          for (DecodeRequest& q : reqs) q.ids[0] = ids[C + k];
          tf.decode_batch(reqs);
        }
      }
      const double t = seconds_since(t0);
      if (r >= warmup) {
        times.push_back(t);
        limits.push_back(lim);
      }
    }
    // Step k reads C + k + 1 cached rows per sequence (its own included): the mean over the steps.
    const ModelSpec& s = tf.spec();
    const DType kv = tf.kv_dtype();
    const double rows_read = static_cast<double>(C) + 0.5 * static_cast<double>(steps + 1);
    const double row_bytes = 2.0 * static_cast<double>(s.decoder.layers.size() * s.n_kv_heads) *
                             static_cast<double>(s.head_dim * static_cast<int64_t>(dtype_size(kv)) +
                                                 (kv == DType::I8 ? 4 : 0));  // + an I8 row's scale
    const double cache_bytes = static_cast<double>(B) * row_bytes * rows_read;
    const double bytes = weight_bytes + cache_bytes;
    const double flops = 2.0 * static_cast<double>(B) *
                         static_cast<double>(decoder_linear_params(s) + s.vocab_size * s.d_model);
    // Each repetition's roofline: the longer of its bytes at the bandwidth and its FLOPs at the
    // kernels' peak, both probed beside it.
    std::vector<double> roofline_s;
    for (size_t i = 0; i < times.size(); ++i) {
      const double mem_s = limits[i] > 0 ? bytes / (limits[i] * 1e9) : 0.0;
      const double arith_s = peaks[i] > 0 ? flops / (peaks[i] * 1e9) : 0.0;
      roofline_s.push_back(steps * std::max(mem_s, arith_s));
    }
    Row row = timed_row("decode", C, B, be, dt, double(steps * B), times, limits, roofline_s, mach);
    const double peak = median(peaks);
    row.bytes_per_step = bytes;
    row.cache_bytes_per_step = cache_bytes;
    row.flops_per_step = flops;
    row.gb_s = row.tokens_per_s / B * bytes / 1e9;
    row.gflop_s = row.tokens_per_s / B * flops / 1e9;
    row.arith_fraction = peak > 0 ? row.gflop_s / peak : 0.0;
    row.bound = peak > 0 && flops / peak > bytes / row.limit ? "arithmetic" : "memory";
    row.parts = parts;
    return row;
  }

  void validate() const override {
    check_flag_range("-t/--threads", threads, 0, kMaxThreads);
    if (steps < 1) throw Error("--steps must be at least 1, got " + std::to_string(steps));
    if (warmup < 0) throw Error("--warmup must be >= 0, got " + std::to_string(warmup));
    if (reps < 1) throw Error("--reps must be at least 1, got " + std::to_string(reps));
    int_list(prompts, "--prompts");
    int_list(contexts, "--ctx-lengths");
    int_list(batches, "--parallel");
  }

  int run() override {
    validate();
    set_num_threads(threads);
    if (quick) {
      if (prompts == "128,512") prompts = "16,32";
      if (contexts == "128,1024") contexts = "16,48";
      steps = std::min(steps, 4);
      reps = 1;
      warmup = 0;
    }
    const std::vector<int64_t> prompt_lens = int_list(prompts, "--prompts"), ctx_lens = int_list(contexts, "--ctx-lengths");
    const std::vector<int64_t> batch_sizes = int_list(batches, "--parallel");
    if (prompt_lens.empty() && ctx_lens.empty()) throw Error("bench: nothing to measure (empty --prompts and --ctx-lengths)");
    std::vector<Backend> bes;
    for (const std::string& b : split_list(backends)) bes.push_back(parse_backend(b));
    std::vector<DType> dts;
    for (const std::string& d : split_list(dtypes)) dts.push_back(parse_weight_dtype(d));
    if (bes.empty() || dts.empty()) throw Error("bench: empty --backend or --dtypes list");
    const DType kv = parse_weight_dtype(kv_dtype);
    if (!json_path.empty()) check_output_path(json_path, {dir});  // before the run: written at its end

    load_before = load_average();
    std::cerr << "[bench] measuring machine limits (" << num_threads() << " threads)...\n";
    Machine mach(quick, bes);
    mach.measure();
    std::cerr << "[bench] read bandwidth " << fixed(mach.read_gb_s, 1) << " GB/s, peak sgemm " << fixed(mach.peak, 1)
              << " GFLOP/s (first measurement)\n";

    nlohmann::json model_json;
    std::vector<Row> rows;
    Progress pg("ordo bench", dts.size() * bes.size() * batch_sizes.size() * (prompt_lens.size() + ctx_lens.size()));
    size_t k = 0;
    for (DType dt : dts) {
      reset_peak_rss();
      const auto tl = Clock::now();
      Subject subject = load(dt, bes, prompt_lens, ctx_lens);
      Transformer& tf = subject.tf();
      tf.set_kv_dtype(kv);
      const ModelSpec& s = tf.spec();
      if (s.graph != GraphKind::Decoder) throw Error("bench: " + s.architecture + " is not a decoder-only model");
      pg.note("[bench] " + std::string(weight_dtype_name(dt)) + " model ready in " + fixed(seconds_since(tl), 1) + " s (" +
              fixed(static_cast<double>(decode_weight_bytes(s)) / 1e6, 1) + " MB of weights per decode token)");
      model_json = {{"name", dir.empty() ? (synthetic.empty() ? "110m" : synthetic) : dir},
                    {"synthetic", dir.empty()},
                    {"parameters", s.parameter_count()},
                    {"d_model", s.d_model},
                    {"layers", s.decoder.layers.size()},
                    {"heads", s.n_heads},
                    {"kv_heads", s.n_kv_heads},
                    {"vocab", s.vocab_size}};
      const int64_t max_pos = s.position.max_positions > 0 ? s.position.max_positions : INT64_MAX;
      for (Backend be : bes) {
        tf.set_backend(be);
        for (int64_t B : batch_sizes) {
          for (int64_t T : prompt_lens) {
            if (T > max_pos) {
              pg.note("[bench] skipping prompt " + std::to_string(T) + ": model max positions " + std::to_string(max_pos));
              continue;
            }
            pg.step(++k, row_name("prefill", T, B, be, dt));
            rows.push_back(prefill(tf, be, dt, B, T, mach));
            pg.note(progress(rows.back()));
          }
          for (int64_t C : ctx_lens) {
            if (C + steps > max_pos) {
              pg.note("[bench] skipping decode at ctx " + std::to_string(C) + ": model max positions " +
                      std::to_string(max_pos));
              continue;
            }
            pg.step(++k, row_name("decode", C, B, be, dt));
            rows.push_back(decode(tf, be, dt, B, C, mach));
            pg.note(progress(rows.back()));
          }
        }
      }
    }
    pg.finish();
    mach.measure();
    print_machine(mach, kv);
    for (const Row& r : rows) print_row(r);
    print_trust();
    print_step_parts(rows);
    print_summary(rows, ctx_lens);
    if (!json_path.empty()) write_json(mach, kv, model_json, rows);
    return 0;
  }

  void print_machine(const Machine& mach, DType kv) const {
    auto values = [](const nlohmann::json& by) {  // "name v, name v"
      std::string out;
      for (auto it = by.begin(); it != by.end(); ++it)
        out += (out.empty() ? "" : ", ") + it.key() + " " + fixed(it.value().get<double>(), 1);
      return out;
    };
    std::cout
        << "machine: read bandwidth " << fixed(mach.read_gb_s, 1) << " GB/s, peak sgemm "
        << fixed(mach.peak, 1) << " GFLOP/s (" << values(mach.sgemm_by)
        << "), ordo's linear kernels from cache by dtype and rows " << values(mach.linear_by) << " GFLOP/s, "
        << num_threads() << " threads, kernels " << kernel_isa() << ", oneDNN " << onednn_isa()
        << ", OpenMP wait policy " << wait_policy() << ", KV cache " << weight_dtype_name(kv)
        << " (bandwidth and sgemm: best of before and after, linear kernels: best of the probes beside the "
        << "repetitions; each row's roofline is the median of its repetitions against the probes run beside "
        << "them)\n"
        << std::flush;
  }

  void write_json(const Machine& mach, DType kv, const nlohmann::json& model_json, const std::vector<Row>& rows) const {
    nlohmann::json j;
    j["machine"] = {{"read_gb_s", mach.read_gb_s},
                    {"sgemm_gflop_s", mach.peak},
                    {"threads", num_threads()},
                    {"sgemm_gflop_s_by_backend", mach.sgemm_by},
                    {"linear_gflop_s_by_dtype_rows", mach.linear_by},
                    {"kernel_isa", kernel_isa()},
                    {"onednn_isa", onednn_isa()},
                    {"wait_policy", wait_policy()}};
    j["model"] = model_json;
    j["settings"] = {{"warmup", warmup}, {"reps", reps}, {"decode_steps", steps}, {"quick", quick},
                     {"kv_dtype", weight_dtype_name(kv)}};
    j["results"] = nlohmann::json::array();
    for (const Row& r : rows) {
      const bool dec = r.phase == "decode";
      auto decode_only = [&](auto v) { return dec ? nlohmann::json(v) : nlohmann::json(nullptr); };
      j["results"].push_back(
          {{"phase", r.phase},
           {"ctx", r.ctx},
           {"batch", r.batch},
           {"step_ms", decode_only(r.seconds_median / steps * 1e3)},
           {"backend", r.backend},
           {"dtype", r.dtype},
           {"tokens_per_s", r.tokens_per_s},
           {"tokens_per_s_best", r.tokens_per_s_best},
           {"roofline_fraction", r.roofline_fraction},
           {"seconds_median", r.seconds_median},
           {"seconds_min", r.seconds_min},
           {"ttft_ms", dec ? nlohmann::json(nullptr) : nlohmann::json(r.ttft_ms)},
           {"achieved", dec ? r.gb_s : r.gflop_s},
           {"achieved_unit", dec ? "GB/s" : "GFLOP/s"},
           {"limit", r.limit},
           {"peak_rss_mib", r.peak_rss_mib},
           {"step_parts_ms", dec ? parts_json(r.parts) : nlohmann::json(nullptr)},
           {"bytes_per_step", decode_only(r.bytes_per_step)},
           {"cache_bytes_per_step", decode_only(r.cache_bytes_per_step)},
           {"flops_per_step", decode_only(r.flops_per_step)},
           {"gflop_s", r.gflop_s},
           {"arith_fraction", decode_only(r.arith_fraction)},
           {"bound", decode_only(r.bound)}});
    }
    write_file_atomic(json_path, j.dump(2) + "\n");
  }

  // Mean ms per step of each part (StepTimes) over the timed steps.
  struct PartsMs {
    double total, linears, attention, rope_and_cache, lm_head, other;
  };
  static PartsMs parts_ms(const StepTimes& t) {
    const double k = t.steps > 0 ? 1e3 / static_cast<double>(t.steps) : 0.0;
    return {t.total * k, t.linears * k, t.attention * k, t.rope_and_cache * k, t.lm_head * k, t.other() * k};
  }
  static nlohmann::json parts_json(const StepTimes& t) {
    const PartsMs p = parts_ms(t);
    return {{"total", p.total},     {"linears", p.linears}, {"attention", p.attention},
            {"rope_and_cache", p.rope_and_cache}, {"lm_head", p.lm_head}, {"other", p.other}};
  }

  // Idle OpenMP threads sleep (passive, the CLI's default) or spin. A decode step keeps its threads
  // in one region (engine/src/kernels/team.hpp), so this now matters mostly for prefill and between steps.
  static std::string wait_policy() {
    if (const char* sc = std::getenv("GOMP_SPINCOUNT")) return std::string("GOMP_SPINCOUNT=") + sc;
    const char* p = std::getenv("OMP_WAIT_POLICY");
    std::string v = p ? p : "default";
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    return v;
  }

  static std::string fixed(double v, int prec) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
  }

  static std::string row_name(const char* phase, int64_t ctx, int64_t batch, Backend be, DType dt) {
    return std::string("rows: ") + phase + " ctx " + std::to_string(ctx) + " batch " + std::to_string(batch) + " " +
           backend_name(be) + " " + weight_dtype_name(dt);
  }

  static std::string progress(const Row& r) {
    return "[bench] " + r.phase + " ctx " + std::to_string(r.ctx) + " batch " + std::to_string(r.batch) + " " +
           r.backend + " " + r.dtype + ": " + fixed(r.tokens_per_s, 2) + " tok/s";
  }

  bool header_done = false, over_roofline = false;
  std::vector<std::string> noisy_rows;
  double load_before = -1;

  // After the table: plainly, when the figures above cannot be trusted.
  std::string machine_busy;  // busy_reason of the load average before and after, "" when idle

  void print_trust() {
    const double load = std::max(load_before, load_average());
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    const std::string machine = machine_busy = busy_reason(0, load, cores);
    if (!machine.empty())
      std::printf("warning: the machine was busy (%s): the speeds and roofline fractions above do not mean much; "
                  "run again on an idle machine\n",
                  machine.c_str());
    if (!noisy_rows.empty()) {
      std::string list;
      for (const std::string& n : noisy_rows) list += (list.empty() ? "" : ", ") + n;
      std::printf("warning: %zu row(s) too noisy to compare (repetitions differ by more than %.0f%%): %s\n",
                  noisy_rows.size(), 100.0 * kNoisySpread, list.c_str());
    }
    if (over_roofline)
      std::printf("warning: a roofline fraction over 100%% is a measurement problem (the limit probes beside the "
                  "repetitions ran slower than the model did, e.g. on a busy machine), not a speed\n");
  }

  void print_row(const Row& r) {
    if (!header_done) {
      std::printf("%-8s %6s %5s %-9s %-5s %11s %11s %9s %-10s %12s %12s %6s %9s %9s\n", "phase", "ctx",
                  "batch", "backend", "dtype", "tok/s(med)", "tok/s(best)", "roofline", "bound", "achieved",
                  "limit", "arith", "ttft_ms", "rss_MiB");
      header_done = true;
    }
    const bool dec = r.phase == "decode";
    const char* unit = dec ? " GB/s" : " GF/s";
    const std::string ach = fixed(dec ? r.gb_s : r.gflop_s, 1) + unit;
    const std::string lim = fixed(r.limit, 1) + unit;
    // Decode: achieved and limit are bytes (weights + caches); arith is the linear kernels' FLOP/s
    // against their peak from cache.
    const std::string arith = dec ? fixed(100.0 * r.arith_fraction, 0) + "%" : "-";
    // Above 100% of the roofline is a measurement problem, not a speed: shown as such (note below).
    const std::string roof = r.roofline_fraction > 1.0 ? "over 100?" : fixed(100.0 * r.roofline_fraction, 1) + "%";
    over_roofline = over_roofline || r.roofline_fraction > 1.0;
    if (!busy_reason(r.spread, 0, 0).empty()) noisy_rows.push_back(r.phase + " ctx " + std::to_string(r.ctx));
    std::printf("%-8s %6lld %5lld %-9s %-5s %11.2f %11.2f %9s %-10s %12s %12s %6s %9s %9.0f\n",
                r.phase.c_str(), static_cast<long long>(r.ctx), static_cast<long long>(r.batch),
                r.backend.c_str(), r.dtype.c_str(), r.tokens_per_s, r.tokens_per_s_best,
                roof.c_str(), dec ? r.bound.c_str() : "arithmetic", ach.c_str(), lim.c_str(),
                arith.c_str(), dec ? "-" : fixed(r.ttft_ms, 1).c_str(), r.peak_rss_mib);
    std::fflush(stdout);
  }

  // Where each decode row's step goes: the mean over its timed steps (the table above gives the
  // median repetition), from StepTimes.
  static void print_step_parts(const std::vector<Row>& rows) {
    bool header = false;
    for (const Row& r : rows) {
      if (r.phase != "decode" || r.parts.steps == 0) continue;
      if (!header) {
        std::printf("decode step, ms (mean of the timed steps):\n%6s %5s %-9s %-5s %8s %8s %9s %10s %8s %8s\n", "ctx",
                    "batch", "backend", "dtype", "step", "linears", "attention", "rope+cache", "lm_head", "other");
        header = true;
      }
      const PartsMs p = parts_ms(r.parts);
      std::printf("%6lld %5lld %-9s %-5s %8.2f %8.2f %9.2f %10.2f %8.2f %8.2f\n", static_cast<long long>(r.ctx),
                  static_cast<long long>(r.batch), r.backend.c_str(), r.dtype.c_str(), p.total, p.linears, p.attention,
                  p.rope_and_cache, p.lm_head, p.other);
    }
  }

  void print_summary(const std::vector<Row>& rows, const std::vector<int64_t>& ctx_lens) const {
    auto find = [&](const std::string& be, const std::string& dt, int64_t ctx, int64_t batch) -> const Row* {
      for (const Row& r : rows)
        if (r.phase == "decode" && r.backend == be && r.dtype == dt && r.ctx == ctx && r.batch == batch) return &r;
      return nullptr;
    };
    if (ctx_lens.empty()) return;
    const int64_t c0 = ctx_lens.front(), c1 = ctx_lens.back();
    for (const Row& r : rows) {
      if (r.phase != "decode" || r.batch != 1 || r.ctx != c0) continue;
      if (c1 != c0)
        if (const Row* far = find(r.backend, r.dtype, c1, 1))
          std::printf("%s %s: %s\n", r.backend.c_str(), r.dtype.c_str(),
                      speed_comparison("decode at ctx " + std::to_string(c1), far->tokens_per_s, r.tokens_per_s,
                                       "at ctx " + std::to_string(c0), far->spread, r.spread, machine_busy)
                          .c_str());
      if (r.dtype != "f32")
        if (const Row* f = find(r.backend, "f32", c0, 1)) {
          if (!machine_busy.empty())
            std::printf("%s %s: decode against f32 not comparable, the machine was busy (%s)\n", r.backend.c_str(),
                        r.dtype.c_str(), machine_busy.c_str());
          else
            std::printf("%s %s: decode at ctx %lld is %.2fx f32 (%.2fx per unit of probed bandwidth)\n",
                        r.backend.c_str(), r.dtype.c_str(), static_cast<long long>(c0),
                        r.tokens_per_s / f->tokens_per_s, r.tokens_per_limit / f->tokens_per_limit);
        }
    }
    for (const Row& r : rows) {
      if (r.phase != "decode" || r.batch == 1) continue;
      if (const Row* one = find(r.backend, r.dtype, r.ctx, 1)) {
        std::printf("%s %s: decode at ctx %lld, %lld sequences: %.2fx the aggregate tok/s of one (%.2fx per unit of "
                    "probed bandwidth), %.1f ms per step against %.1f",
                    r.backend.c_str(), r.dtype.c_str(), static_cast<long long>(r.ctx), static_cast<long long>(r.batch),
                    r.tokens_per_s / one->tokens_per_s, r.tokens_per_limit / one->tokens_per_limit,
                    r.seconds_median / steps * 1e3, one->seconds_median / steps * 1e3);
        if (r.parts.steps > 0 && one->parts.steps > 0) {  // which parts the extra sequences cost
          const PartsMs a = parts_ms(r.parts), b = parts_ms(one->parts);
          std::printf("; mean step parts against one sequence: linears %+.1f ms, attention %+.1f, rope and cache "
                      "writes %+.1f, lm_head %+.1f, other %+.1f",
                      a.linears - b.linears, a.attention - b.attention, a.rope_and_cache - b.rope_and_cache,
                      a.lm_head - b.lm_head, a.other - b.other);
        }
        // What holds the batched step: its bytes (weights once, every sequence's cache) at the
        // probed bandwidth, or its linear FLOPs at the kernels' peak from cache.
        std::printf(
            "; bound by %s: %.0f MB per step (%.0f MB of caches) at %.0f%% of the probed bandwidth, linear "
            "arithmetic at %.0f%% of the %s kernels' peak",
            r.bound.c_str(), r.bytes_per_step / 1e6, r.cache_bytes_per_step / 1e6, 100.0 * r.gb_s / r.limit,
            100.0 * r.arith_fraction, r.dtype.c_str());
        std::printf("\n");
      }
    }
  }
};

}  // namespace

std::unique_ptr<Command> make_bench() { return std::make_unique<BenchCommand>(); }

}  // namespace ordo::cli
