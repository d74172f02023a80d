// Synthetic Llama-shaped models: seeded random weights in the requested dtype.
#include "ordo/synthetic.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "kernels/gemm_backend.hpp"
#include "ordo/quant_blocks.hpp"
#include "ordo/quantize.hpp"

namespace ordo {

SyntheticShape parse_synthetic_shape(const std::string& text) {
  std::string s = text;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  SyntheticShape sh;
  if (s == "110m") return sh;
  if (s == "1b" || s == "1.1b") {
    sh.dim = 2048;
    sh.layers = 22;
    sh.heads = 32;
    sh.kv_heads = 4;
    sh.ffn = 5632;
    sh.vocab = 32000;
    sh.tied_head = false;
    return sh;
  }
  std::vector<int64_t> v;
  std::string item;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      char* end = nullptr;
      const long long x = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || x <= 0)
        throw Error("synthetic model '" + text + "': expected 110m, 1b or DIM,LAYERS,HEADS,KV_HEADS,FFN,VOCAB");
      v.push_back(x);
      item.clear();
    } else {
      item += s[i];
    }
  }
  if (v.size() != 6)
    throw Error("synthetic model '" + text + "': expected 110m, 1b or DIM,LAYERS,HEADS,KV_HEADS,FFN,VOCAB");
  sh.dim = v[0];
  sh.layers = v[1];
  sh.heads = v[2];
  sh.kv_heads = v[3];
  sh.ffn = v[4];
  sh.vocab = v[5];
  if (sh.dim % sh.heads != 0 || sh.heads % sh.kv_heads != 0 || (sh.dim / sh.heads) % 2 != 0)
    throw Error("synthetic model '" + text +
                "': DIM must be a multiple of HEADS (even head size) and HEADS of KV_HEADS");
  return sh;
}

namespace {

// splitmix64 → xorshift64*: one independent stream per 4096-element block, so the fill is the
// same for any thread count.
inline uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Fills t (any dtype) with uniform values in [-a, a) (I8: integers in [-127, 127], scale a/127 per row).
void fill_uniform(Tensor& t, float a, uint64_t seed) {
  const int64_t n = t.numel();
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  detail::ensure_threads();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    uint64_t st = splitmix(seed * 0x100000001B3ull + static_cast<uint64_t>(b)) | 1;
    const int64_t i0 = b * kBlock, i1 = std::min(n, i0 + kBlock);
    for (int64_t i = i0; i < i1; ++i) {
      st ^= st >> 12;
      st ^= st << 25;
      st ^= st >> 27;
      const uint64_t r = st * 0x2545F4914F6CDD1Dull;
      const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;  // [-1, 1)
      switch (t.dtype) {
        case DType::F32: t.f32()[i] = u * a; break;
        case DType::F16: static_cast<uint16_t*>(t.data)[i] = f32_to_f16(u * a); break;
        case DType::BF16: static_cast<uint16_t*>(t.data)[i] = f32_to_bf16(u * a); break;
        case DType::I8: static_cast<int8_t*>(t.data)[i] = static_cast<int8_t>(std::nearbyint(u * 127.0f)); break;
        case DType::Q8_0:
        case DType::Q4_0:
        case DType::Q4_K: break;  // not reached: random_linear makes block weights itself
      }
    }
  }
}

Linear random_linear(int64_t out, int64_t in, DType dt, uint64_t seed) {
  if (dt == DType::Q4_K) {
    Linear l;
    l.weight = random_q4_k(out, in, seed, 1.0f / std::sqrt(static_cast<float>(in)));
    return l;
  }
  if (is_block_dtype(dt)) return convert_linear(random_linear(out, in, DType::F32, seed), dt);  // llama.cpp's rounding
  Linear l;
  l.weight = Tensor::zeros({out, in}, dt);
  const float a = 1.0f / std::sqrt(static_cast<float>(in));
  fill_uniform(l.weight, a, seed);
  if (dt == DType::I8) {
    l.scales = Tensor::zeros({out});
    std::fill(l.scales.f32(), l.scales.f32() + out, a / 127.0f);
  }
  return l;
}

}  // namespace

Tensor random_q4_k(int64_t rows, int64_t cols, uint64_t seed, float a) {
  if (cols % kQ4KBlock != 0)
    throw Error("a q4_k weight needs a multiple of 256 columns, got [" + std::to_string(rows) + ", " +
                std::to_string(cols) + "]");
  Tensor t = Tensor::uninitialized({rows, cols}, DType::Q4_K);
  auto* p = static_cast<uint8_t*>(t.data);
  uint64_t st = splitmix(seed) | 1;
  for (size_t i = 0; i < t.nbytes(); ++i) {
    st ^= st >> 12;
    st ^= st << 25;
    st ^= st >> 27;
    p[i] = static_cast<uint8_t>((st * 0x2545F4914F6CDD1Dull) >> 56);
  }
  // Codes and 6-bit scales average 7.5 and 31.5: d·sc·q spans [0, 2a] and the mean min cancels its mean.
  const float d = 2.0f * a / (63.0f * 15.0f);
  const uint16_t hd = f32_to_f16(d), hmin = f32_to_f16(7.5f * d);
  for (size_t i = 0; i < t.nbytes(); i += kQ4KBytes) {
    std::memcpy(p + i, &hd, 2);
    std::memcpy(p + i + 2, &hmin, 2);
  }
  return t;
}

namespace {

Norm ones_norm(int64_t d) {
  Norm n;
  n.kind = NormKind::RMS;
  n.eps = 1e-5f;
  n.present = true;
  n.weight = Tensor::zeros({d});
  std::fill(n.weight.f32(), n.weight.f32() + d, 1.0f);
  return n;
}

}  // namespace

ModelSpec synthetic_llama(const SyntheticShape& sh, DType dtype, uint64_t seed) {
  if (sh.dim <= 0 || sh.layers <= 0 || sh.heads <= 0 || sh.kv_heads <= 0 || sh.ffn <= 0 || sh.vocab <= 0 ||
      sh.dim % sh.heads != 0 || sh.heads % sh.kv_heads != 0)
    throw Error("synthetic_llama: invalid shape");
  ModelSpec s;
  s.architecture = "llama";
  s.graph = GraphKind::Decoder;
  s.d_model = sh.dim;
  s.n_heads = sh.heads;
  s.n_kv_heads = sh.kv_heads;
  s.head_dim = sh.dim / sh.heads;
  s.vocab_size = sh.vocab;
  s.position.scheme = "rope";
  s.position.max_positions = sh.max_positions;
  s.position.rope_theta = 10000.0;
  s.position.rope_layout = RopeLayout::HalfSplit;
  s.position.rotary_dim = s.head_dim;
  uint64_t k = seed * 1000003ull;
  s.tok_embed = Tensor::zeros({sh.vocab, sh.dim});
  fill_uniform(s.tok_embed, 1.0f, ++k);
  const int64_t qd = sh.heads * s.head_dim, kvd = sh.kv_heads * s.head_dim;
  for (int64_t l = 0; l < sh.layers; ++l) {
    Layer ly;
    ly.attn_norm = ones_norm(sh.dim);
    ly.self_attn.q = random_linear(qd, sh.dim, dtype, ++k);
    ly.self_attn.k = random_linear(kvd, sh.dim, dtype, ++k);
    ly.self_attn.v = random_linear(kvd, sh.dim, dtype, ++k);
    ly.self_attn.out = random_linear(sh.dim, qd, dtype, ++k);
    ly.ffn_norm = ones_norm(sh.dim);
    ly.ffn.gate = random_linear(sh.ffn, sh.dim, dtype, ++k);
    ly.ffn.up = random_linear(sh.ffn, sh.dim, dtype, ++k);
    ly.ffn.down = random_linear(sh.dim, sh.ffn, dtype, ++k);
    ly.ffn.act = Activation::SiLU;
    s.decoder.layers.push_back(std::move(ly));
  }
  s.decoder.final_norm = ones_norm(sh.dim);
  s.decoder.causal = true;
  // Q4_K: the head as a Q4_K_M file's Q6_K head runs (ordo has no Q6_K kernels), Q8_0.
  const DType head_dtype = dtype == DType::Q4_K ? DType::Q8_0 : dtype;
  if (sh.tied_head && dtype == DType::F32) {
    s.lm_head.weight = s.tok_embed;
  } else if (sh.tied_head) {
    Linear head;
    head.weight = s.tok_embed;
    s.lm_head = convert_linear(head, head_dtype);  // the head copy only; tok_embed stays F32
  } else {
    s.lm_head = random_linear(sh.vocab, sh.dim, head_dtype, ++k);
  }
  s.bos_id = 1;
  s.eos_id = 2;
  return s;
}

}  // namespace ordo
