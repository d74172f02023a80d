// oneDNN v2.6 backend. Debian's libdnnl is built on OpenMP, so it uses the calling thread's
// omp_get_max_threads() and runs sequentially inside an OpenMP parallel region.
//
// linear: a dnnl::matmul primitive per (M, N, K, strides, has_bias), created once and cached
// (JIT creation costs far more than a decode-step matmul). The weight W[N, K] row-major is
// described as a {K, N} matrix with strides {1, ldw} (format `ba`), so it is used in place.
// gemm_nt / gemm_nn: dnnl_sgemm (row-major BLAS-like entry point), which needs no primitive and so
// suits attention shapes that change every decode step.
//
// Threads: a cached primitive is shared by every thread that calls linear(). In oneDNN's default
// (library) scratchpad mode a primitive keeps the scratchpad of the thread that created it, so two
// threads running primitives made by one thread overwrite each other's temporaries (wrong
// logits, no error). Every primitive here is therefore created in user scratchpad mode and each
// call passes a scratchpad of the calling thread.
#include <dnnl.hpp>
#include <omp.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

#include "address_space.hpp"
#include "gemm_backend.hpp"


namespace ordo::detail {

namespace {

using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream s(cpu_engine());
  return s;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

// The calling thread's scratchpad memory for a primitive needing `desc` (grown, never shrunk).
memory thread_scratchpad(const memory::desc& desc) {
  struct Buffer {
    std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
    size_t size = 0;
  };
  thread_local Buffer buf;
  const size_t need = desc.get_size();
  if (need > buf.size) {
    const size_t bytes = (need + 4095) / 4096 * 4096;
    buf.data.reset(std::aligned_alloc(4096, bytes));
    if (!buf.data) throw out_of_memory("a oneDNN scratchpad", bytes);
    buf.size = bytes;
  }
  return memory(desc, cpu_engine(), buf.data.get());
}

struct Key {
  int64_t M, N, K, ldx, ldw, ldy;
  bool bias;
  bool operator==(const Key& o) const {
    return M == o.M && N == o.N && K == o.K && ldx == o.ldx && ldw == o.ldw && ldy == o.ldy && bias == o.bias;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t v : {k.M, k.N, k.K, k.ldx, k.ldw, k.ldy, static_cast<int64_t>(k.bias)})
      h = (h ^ static_cast<size_t>(v)) * 1099511628211ull;
    return h;
  }
};

struct Entry {
  dnnl::matmul prim;
  memory::desc src, wei, bias, dst, scratchpad;
};

// Bounded: prompts of many different lengths would otherwise grow it without limit.
constexpr size_t kMaxCached = 256;
std::mutex g_cache_mu;
std::unordered_map<Key, Entry, KeyHash> g_cache;

Entry make_entry(const Key& k) {
  Entry e;
  e.src = memory::desc({k.M, k.K}, memory::data_type::f32, {k.ldx, 1});
  e.wei = memory::desc({k.K, k.N}, memory::data_type::f32, {1, k.ldw});  // W[N,K] as Wᵀ (`ba`)
  e.dst = memory::desc({k.M, k.N}, memory::data_type::f32, {k.ldy, 1});
  if (k.bias) e.bias = memory::desc({1, k.N}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::desc d =
      k.bias ? dnnl::matmul::desc(e.src, e.wei, e.bias, e.dst) : dnnl::matmul::desc(e.src, e.wei, e.dst);
  const dnnl::matmul::primitive_desc pd(d, user_scratchpad(), cpu_engine());
  e.scratchpad = pd.scratchpad_desc();
  e.prim = dnnl::matmul(pd);
  return e;
}

// Address space a oneDNN call may allocate inside the library: JIT code and its bookkeeping, plus
// packed copies of the operands. An allocation failing there throws through oneDNN's C interface
// (the process aborts), so under an address-space limit each call first checks that this much is
// free. Generous on purpose: an Error a little early beats an abort.
// Inside a parallel region every thread of it may be in oneDNN at once, each allocating: the room
// checked is the whole team's (a probe reserves nothing).
size_t onednn_room(int64_t M, int64_t N, int64_t K) {
  const size_t per_call = (size_t(32) << 20) + 2 * sizeof(float) * static_cast<size_t>(M * K + K * N + M * N);
  return per_call * static_cast<size_t>(omp_in_parallel() ? omp_get_num_threads() : 1);
}

Entry lookup(const Key& k) {
  {
    std::lock_guard<std::mutex> lock(g_cache_mu);
    auto it = g_cache.find(k);
    if (it != g_cache.end()) return it->second;
  }
  Entry e = make_entry(k);  // outside the lock: creation JITs code
  std::lock_guard<std::mutex> lock(g_cache_mu);
  if (g_cache.size() >= kMaxCached) g_cache.clear();
  return g_cache.emplace(k, std::move(e)).first->second;
}

}  // namespace

void onednn_gemm(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  require_address_space(onednn_room(M, N, K), "oneDNN's GEMM (its kernels and packed copies of the operands)");
  dnnl_status_t st = dnnl_sgemm('N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success)
    throw Error("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(st)) + ") for M=" +
                std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
}

namespace {

// Runs a cached matmul on raw buffers (bias may be null).
void execute(const Entry& e, const float* x, const float* W, const float* bias, float* y) {
  dnnl::engine& eng = cpu_engine();
  memory src(e.src, eng, const_cast<float*>(x));
  memory wei(e.wei, eng, const_cast<float*>(W));
  memory dst(e.dst, eng, y);
  dnnl::stream& s = cpu_stream();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(e.bias, eng, const_cast<float*>(bias)));
  if (e.scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, thread_scratchpad(e.scratchpad));
  e.prim.execute(s, args);
  s.wait();
}

}  // namespace

void onednn_linear(const float* x, int64_t ldx, int64_t M, int64_t K, const float* W, int64_t ldw,
                   int64_t N, const float* bias, float* y, int64_t ldy) {
  require_address_space(onednn_room(M, N, K), "oneDNN's matmul (its kernels and packed copies of the operands)");
  try {
    execute(lookup(Key{M, N, K, ldx, ldw, ldy, bias != nullptr}), x, W, bias, y);
  } catch (const dnnl::error& err) {
    throw Error("oneDNN matmul failed for M=" + std::to_string(M) + " N=" + std::to_string(N) +
                " K=" + std::to_string(K) + ": " + err.what());
  }
}

}  // namespace ordo::detail

namespace ordo {

std::string onednn_isa() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "sse41";
    case isa::avx: return "avx";
    case isa::avx2: return "avx2";
    case isa::avx2_vnni: return "avx2_vnni";
    case isa::avx512_core: return "avx512_core";
    case isa::avx512_core_vnni: return "avx512_core_vnni";
    case isa::avx512_core_bf16: return "avx512_core_bf16";
    case isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

}  // namespace ordo

namespace ordo::detail {

size_t onednn_cache_size() {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  return g_cache.size();
}

}  // namespace ordo::detail
