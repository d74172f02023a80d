// Kernel microbenchmarks: ordo::linear (the panel kernels) and GEMM backends for comparison, at
// decode (M = 1), batch and prefill (M = 128, 512) shapes, per weight dtype. Counters: GFLOP/s (2·M·N·K) and
// GB/s (weights + activations read/written once). `attention/...`: one decode step's attention
// of a layer over many sequences' KV caches (F32, F16, I8), GB/s of keys and values read.
//
// Decode benchmarks rotate through copies of the weight totalling >= 512 MB so every call
// streams its weight from DRAM, as in a real model whose layers do not fit in the LLC.
// Prefill benchmarks reuse one weight (compute-bound).
//
//   ordo_bench_kernels [--threads=N] [google benchmark flags, e.g. --benchmark_filter=decode]
//
// Environment that changes the results:
//   * On a shared/oversubscribed machine libgomp's default spin-wait (up to ~15 ms per idle
//     thread on recent Xeons) turns every parallel region into a scheduler-quantum stall;
//     measure with GOMP_SPINCOUNT=10000 (or OMP_WAIT_POLICY=passive) there.
//   * OpenBLAS 0.3.21 does not know CPUs newer than Ice Lake and falls back to its Haswell
//     (AVX2) kernels; OPENBLAS_CORETYPE=SkylakeX selects the AVX-512 ones (~2x on GEMM).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "attention_kernels.hpp"
#include "gemm_backend.hpp"
#include "ordo/ops.hpp"
#include "ordo/quantize.hpp"
#include "ordo/synthetic.hpp"
#include "team.hpp"

namespace {

using ordo::Backend;
using ordo::DType;
using ordo::Tensor;

constexpr size_t kColdBytes = size_t(512) << 20;

void fill_random(float* p, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) p[i] = d(rng);
}

ordo::Linear make_linear(int64_t N, int64_t K, DType dt, uint32_t seed) {
  std::vector<float> src(size_t(N * K));
  fill_random(src.data(), src.size(), seed);
  ordo::Linear l;
  l.weight = Tensor::zeros({N, K}, dt);
  switch (dt) {
    case DType::F32: std::memcpy(l.weight.data, src.data(), src.size() * 4); break;
    case DType::F16:
      for (size_t i = 0; i < src.size(); ++i) static_cast<uint16_t*>(l.weight.data)[i] = ordo::f32_to_f16(src[i]);
      break;
    case DType::BF16:
      for (size_t i = 0; i < src.size(); ++i) static_cast<uint16_t*>(l.weight.data)[i] = ordo::f32_to_bf16(src[i]);
      break;
    case DType::I8: {
      for (size_t i = 0; i < src.size(); ++i) static_cast<int8_t*>(l.weight.data)[i] = int8_t(src[i] * 127.0f);
      l.scales = Tensor::zeros({N});
      for (int64_t n = 0; n < N; ++n) l.scales.f32()[n] = 1.0f / 127.0f;
      break;
    }
    case DType::Q8_0:
    case DType::Q4_0: {
      ordo::Linear f;
      f.weight = Tensor::from({N, K}, src);
      l.weight = ordo::convert_linear(f, dt).weight;
      break;
    }
    case DType::Q4_K: l.weight = ordo::random_q4_k(N, K, seed, 0.05f); break;  // read from files only
  }
  l.bias = Tensor::zeros({N});
  fill_random(l.bias.f32(), size_t(N), seed + 1);
  return l;
}

// Copies of one weight: enough to exceed kColdBytes when `cold`, else one.
std::vector<ordo::Linear> make_ring(int64_t N, int64_t K, DType dt, bool cold) {
  const size_t bytes = size_t(N) * ordo::dtype_row_bytes(dt, K);
  size_t copies = cold ? (kColdBytes + bytes - 1) / bytes : 1;
  if (copies < 1) copies = 1;
  std::vector<ordo::Linear> ring;
  ring.push_back(make_linear(N, K, dt, 1));
  for (size_t i = 1; i < copies; ++i) {
    ordo::Linear l = ring[0];
    l.weight = Tensor::zeros(ring[0].weight.shape, dt);
    std::memcpy(l.weight.data, ring[0].weight.data, bytes);
    ring.push_back(l);
  }
  for (ordo::Linear& l : ring) ordo::pack_panels(l);  // as Transformer does: each copy streams its own
  return ring;
}

using Kernel = std::function<void(const float* x, int64_t M, int64_t K, const ordo::Linear& w, float* y)>;

void run(benchmark::State& state, int64_t M, int64_t N, int64_t K, DType dt, bool cold, const Kernel& k) {
  std::vector<ordo::Linear> ring = make_ring(N, K, dt, cold);
  std::vector<float> x(size_t(M * K)), y(size_t(M * N));
  fill_random(x.data(), x.size(), 9);
  k(x.data(), M, K, ring[0], y.data());  // warm-up (oneDNN primitive creation, page faults)
  size_t i = 0;
  for (auto _ : state) {
    k(x.data(), M, K, ring[i], y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    if (++i == ring.size()) i = 0;
  }
  const double flops = 2.0 * double(M) * double(N) * double(K);
  const double bytes = double(N) * double(ordo::dtype_row_bytes(dt, K)) + 4.0 * double(M * K + M * N + N);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// With --benchmark_repetitions, also report the fastest repetition: on a shared machine the
// minimum time is the steadiest estimate of what the kernel can do. (The min row of a rate
// counter is the lowest rate, not the rate of the fastest repetition: use its time.)
double min_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }

void reg(const std::string& name, int64_t M, int64_t N, int64_t K, DType dt, bool cold, Kernel k) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) { run(s, M, N, K, dt, cold, k); })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->ComputeStatistics("min", min_of);
}

std::string shape(int64_t M, int64_t N, int64_t K) {
  return "M=" + std::to_string(M) + "/N=" + std::to_string(N) + "/K=" + std::to_string(K);
}

const DType kDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::I8, DType::Q8_0, DType::Q4_0, DType::Q4_K};
const Backend kBackends[] = {Backend::OpenBLAS, Backend::OneDNN};

// The kernels compared, as Kernel functions.
void linear_onednn(const float* x, int64_t M, int64_t K, const ordo::Linear& w, float* y) {
  ordo::linear(Backend::OneDNN, x, M, K, w, y);
}
// The backends' F32 GEMM on the row-major weight (bias copied in first, as a fused bias would be).
void with_bias(const ordo::Linear& w, int64_t M, float* y) {
  const int64_t N = w.weight.dim(0);
  for (int64_t m = 0; m < M; ++m) std::memcpy(y + m * N, w.bias.f32(), size_t(N) * sizeof(float));
}
void openblas_sgemm(const float* x, int64_t M, int64_t K, const ordo::Linear& w, float* y) {
  const int64_t N = w.weight.dim(0);
  with_bias(w, M, y);
  ordo::detail::openblas_gemm(true, M, N, K, 1.0f, x, K, w.weight.f32(), K, 1.0f, y, N);
}
void onednn_sgemm(const float* x, int64_t M, int64_t K, const ordo::Linear& w, float* y) {
  const int64_t N = w.weight.dim(0);
  ordo::detail::onednn_gemm(true, M, N, K, 1.0f, x, K, w.weight.f32(), K, 0.0f, y, N);
}

void register_decode() {
  // (N, K): attention/out projection, MLP up, MLP down, LM head.
  const std::pair<int64_t, int64_t> decode_shapes[] = {{768, 768}, {3072, 768}, {768, 3072}, {32000, 768}};
  for (auto [N, K] : decode_shapes) {
    const std::string s = shape(1, N, K);
    for (DType dt : kDTypes)  // the public entry point (the panel kernels)
      reg("decode/linear/" + std::string(ordo::dtype_name(dt)) + "/" + s, 1, N, K, dt, true, linear_onednn);
    // The backends' F32 GEMM at M == 1, for comparison.
    reg("decode/variant/openblas_sgemm/F32/" + s, 1, N, K, DType::F32, true, openblas_sgemm);
    reg("decode/variant/onednn_sgemm/F32/" + s, 1, N, K, DType::F32, true, onednn_sgemm);
  }
}

// Batched decode: M sequences' rows through the panel kernels (weights read once), and a backend
// GEMM at the same M for comparison.
void register_batch() {
  for (int64_t M : {2, 4, 6, 8, 12, 16})
    for (auto [N, K] : {std::pair<int64_t, int64_t>{3072, 768}, {768, 3072}}) {
      const std::string s = shape(M, N, K);
      for (DType dt : {DType::F32, DType::I8, DType::Q8_0, DType::Q4_0, DType::Q4_K})
        reg("batch/linear/" + std::string(ordo::dtype_name(dt)) + "/" + s, M, N, K, dt, true, linear_onednn);
      reg("batch/variant/onednn_sgemm/F32/" + s, M, N, K, DType::F32, true, onednn_sgemm);
      for (DType dt : {DType::F32, DType::I8, DType::Q8_0,
                       DType::Q4_0})  // the same weight every call: the kernels' arithmetic alone
        reg("batch/hot/" + std::string(ordo::dtype_name(dt)) + "/" + s, M, N, K, dt, false, linear_onednn);
    }
}

void register_prefill() {
  const std::pair<int64_t, int64_t> prefill_shapes[] = {{768, 768}, {3072, 768}, {768, 3072}};
  for (int64_t M : {128, 512})
    for (auto [N, K] : prefill_shapes) {
      const std::string s = shape(M, N, K);
      for (Backend be : kBackends)
        for (DType dt : kDTypes)
          reg("prefill/linear/" + std::string(ordo::backend_name(be)) + "/" + ordo::dtype_name(dt) + "/" + s, M, N, K,
              dt, false, [be](const float* x, int64_t M, int64_t K, const ordo::Linear& w, float* y) {
                ordo::linear(be, x, M, K, w, y);
              });
      reg("prefill/variant/onednn_sgemm/F32/" + s, M, N, K, DType::F32, false, onednn_sgemm);
    }
}

// A GPT-2-sized MLP block, rmsnorm → up → GELU → down → residual: the panel kernels with the
// element-wise kernels between them, as in a real forward pass.
void mlp_block(benchmark::State& state, int64_t M) {
  const Backend be = Backend::OneDNN;  // not used by linear()
  const int64_t D = 768, F = 3072;
  ordo::Linear up = make_linear(F, D, DType::F32, 3), down = make_linear(D, F, DType::F32, 4);
  ordo::pack_panels(up);  // as Transformer does
  ordo::pack_panels(down);
  std::vector<float> x(size_t(M * D)), h(size_t(M * D)), a(size_t(M * F)), o(size_t(M * D)), g(size_t(D), 1.0f);
  fill_random(x.data(), x.size(), 5);
  for (auto _ : state) {
    ordo::rmsnorm(x.data(), g.data(), 1e-5f, M, D, h.data());
    ordo::linear(be, h.data(), M, D, up, a.data());
    ordo::activate(ordo::Activation::GeluErf, a.data(), M * F);
    ordo::linear(be, a.data(), M, F, down, o.data());
    ordo::add_inplace(o.data(), x.data(), M * D);
    benchmark::DoNotOptimize(o.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * double(M * D * F) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// One layer's keys and values for `seqs` sequences, as the decoder's cache lays them out: per
// sequence [heads, ctx, hd] for K and for V (I8 rows with one scale each).
template <class E>
struct LayerCaches {
  std::vector<E> k, v;
  std::vector<float> ks, vs;  // I8 only
};

template <class E>
LayerCaches<E> make_layer(int64_t rows, int64_t hd, uint32_t seed) {
  std::vector<float> src(size_t(rows * hd));
  LayerCaches<E> c;
  for (int kv = 0; kv < 2; ++kv) {
    fill_random(src.data(), src.size(), seed + kv);
    std::vector<E>& dst = kv ? c.v : c.k;
    dst.resize(src.size());
    if constexpr (std::is_same_v<E, float>) {
      dst = src;
    } else if constexpr (std::is_same_v<E, uint16_t>) {
      ordo::detail::to_f16(src.data(), int64_t(src.size()), dst.data());
    } else {
      std::vector<float>& rs = kv ? c.vs : c.ks;
      rs.resize(size_t(rows));
      for (int64_t r = 0; r < rows; ++r)
        rs[size_t(r)] = ordo::detail::to_i8(src.data() + r * hd, hd, dst.data() + r * hd);
    }
  }
  return c;
}

// Every (sequence, head) item of a decode step, handed to the threads as the decoder does (one
// team for the whole run): scores against ctx keys, softmax, weighted sum of ctx values. `cold`
// rotates through layers totalling >= kColdBytes, as the 12 layers of 16 sequences' caches do.
template <class E>
void attention_step(benchmark::State& state, int64_t seqs, int64_t ctx, bool cold) {
  constexpr int64_t H = 12, hd = 64;
  const int64_t rows = seqs * H * ctx;
  const size_t layer_bytes = size_t(2 * rows * hd) * sizeof(E) + (sizeof(E) == 1 ? size_t(2 * rows) * 4 : 0);
  const size_t layers = cold ? (kColdBytes + layer_bytes - 1) / layer_bytes : 1;
  std::vector<LayerCaches<E>> ring;
  for (size_t l = 0; l < layers; ++l) ring.push_back(make_layer<E>(rows, hd, uint32_t(10 + 2 * l)));
  std::vector<float> q(size_t(seqs * H * hd)), out(q.size());
  fill_random(q.data(), q.size(), 7);
  const float scale = 0.125f;
  size_t li = 0;
  ordo::detail::run_as_team([&] {
    for (auto _ : state) {
      const LayerCaches<E>& c = ring[li];
      ordo::detail::parallel_items(seqs * H, true, [&](int64_t item) {
        thread_local std::vector<float> scores;
        scores.resize(size_t(ctx));
        const int64_t base = item * ctx;  // this (sequence, head)'s first row
        const float* ks = c.ks.empty() ? nullptr : c.ks.data() + base;
        const float* vs = c.vs.empty() ? nullptr : c.vs.data() + base;
        float* o = out.data() + item * hd;
        std::fill(o, o + hd, 0.0f);
        ordo::detail::qk_scores(q.data() + item * hd, c.k.data() + base * hd, ks, ctx, hd, scale, scores.data(),
                                c.v.data() + base * hd);  // the values requested beside the keys, as the decoder does
        const float sum = ordo::softmax_unnormalized(scores.data(), ctx);
        ordo::detail::pv_accumulate(scores.data(), c.v.data() + base * hd, vs, ctx, hd, o);
        for (int64_t i = 0; i < hd; ++i) o[i] /= sum;
      });
      benchmark::DoNotOptimize(out.data());
      benchmark::ClobberMemory();
      if (++li == ring.size()) li = 0;
    }
  });
  state.counters["GB/s"] =
      benchmark::Counter(double(layer_bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void register_attention() {
  for (int64_t seqs : {1, 16})
    for (bool cold : {true, false}) {
      const std::string shape_s = "seqs=" + std::to_string(seqs) + "/ctx=128/heads=12/hd=64";
      const std::string kind = cold ? "attention/" : "attention/hot/";
      auto add = [&](const char* dt, void (*f)(benchmark::State&, int64_t, int64_t, bool)) {
        benchmark::RegisterBenchmark((kind + dt + "/" + shape_s).c_str(),
                                     [=](benchmark::State& st) { f(st, seqs, 128, cold); })
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime()
            ->ComputeStatistics("min", min_of);
      };
      add("F32", attention_step<float>);
      add("F16", attention_step<uint16_t>);
      add("I8", attention_step<int8_t>);
    }
}

void register_all() {
  register_decode();
  register_batch();
  register_prefill();
  register_attention();
  for (int64_t M : {1, 16, 128}) {
    const std::string name = "mlp_block/panels/M=" + std::to_string(M);
    benchmark::RegisterBenchmark(name.c_str(), [M](benchmark::State& state) { mlp_block(state, M); })
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime()
        ->ComputeStatistics("min", min_of);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0)
      threads = std::atoi(argv[i] + 10);
    else
      args.push_back(argv[i]);
  }
  ordo::set_num_threads(threads);
  int n = int(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::AddCustomContext("ordo_threads", std::to_string(ordo::num_threads()));
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
