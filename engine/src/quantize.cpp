// Weight dtype conversion (F32/F16/BF16/I8 per-row symmetric) and synthetic Llama-shaped models.
#include "ordo/quantize.hpp"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "gemm_backend.hpp"

namespace ordo {

DType parse_weight_dtype(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "f32" || s == "float32" || s == "fp32") return DType::F32;
  if (s == "f16" || s == "float16" || s == "fp16") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "int8" || s == "i8" || s == "q8") return DType::I8;
  throw Error("unknown weight dtype '" + name + "' (valid: f32, f16, bf16, int8)");
}

const char* weight_dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I8: return "int8";
  }
  return "?";
}

namespace {

// Row r of a 2-D weight as F32 (I8 rows multiplied by their scale).
void row_f32(const Tensor& w, const float* scales, int64_t r, float* dst) {
  const int64_t K = w.dim(1);
  switch (w.dtype) {
    case DType::F32: std::memcpy(dst, w.f32() + r * K, K * sizeof(float)); return;
    case DType::F16:
    case DType::BF16: {
      const auto* p = static_cast<const unsigned char*>(w.data) + 2 * r * K;
      for (int64_t k = 0; k < K; ++k) {
        uint16_t h;
        std::memcpy(&h, p + 2 * k, 2);
        dst[k] = w.dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    }
    case DType::I8: {
      const auto* p = static_cast<const int8_t*>(w.data) + r * K;
      const float s = scales[r];
      for (int64_t k = 0; k < K; ++k) dst[k] = static_cast<float>(p[k]) * s;
      return;
    }
  }
}

// Quantises one F32 row to int8 with a symmetric scale max|x| / 127.
void quantize_row(const float* x, int64_t K, int8_t* q, float* scale) {
  float mx = 0.0f;
  for (int64_t k = 0; k < K; ++k) mx = std::max(mx, std::fabs(x[k]));
  const float s = mx / 127.0f;
  *scale = s;
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
  for (int64_t k = 0; k < K; ++k) {
    const float v = std::nearbyint(x[k] * inv);
    q[k] = static_cast<int8_t>(std::max(-127.0f, std::min(127.0f, v)));
  }
}

}  // namespace

Linear convert_linear(const Linear& l, DType to) {
  if (!l.present() || l.weight.dtype == to) return l;
  const Tensor& w = l.weight;
  if (w.ndim() != 2) throw Error("convert_linear: weight must be 2-D, got " + w.shape_str());
  if (w.dtype == DType::I8 && (l.scales.empty() || l.scales.numel() != w.dim(0)))
    throw Error("convert_linear: I8 weight " + w.shape_str() + " without matching scales");
  const int64_t N = w.dim(0), K = w.dim(1);
  const float* in_scales = w.dtype == DType::I8 ? l.scales.f32() : nullptr;
  Linear out;
  out.bias = l.bias;
  out.weight = Tensor::zeros({N, K}, to);
  if (to == DType::I8) out.scales = Tensor::zeros({N});
  detail::ensure_threads();
#pragma omp parallel
  {
    std::vector<float> row(K);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < N; ++r) {
      row_f32(w, in_scales, r, row.data());
      switch (to) {
        case DType::F32: std::memcpy(out.weight.f32() + r * K, row.data(), K * sizeof(float)); break;
        case DType::F16:
        case DType::BF16: {
          auto* d = static_cast<uint16_t*>(out.weight.data) + r * K;
          for (int64_t k = 0; k < K; ++k) d[k] = to == DType::F16 ? f32_to_f16(row[k]) : f32_to_bf16(row[k]);
          break;
        }
        case DType::I8:
          quantize_row(row.data(), K, static_cast<int8_t*>(out.weight.data) + r * K, out.scales.f32() + r);
          break;
      }
    }
  }
  return out;
}

namespace {

template <class F>
void for_each_linear(ModelSpec& s, F&& f) {
  auto attn = [&](AttentionWeights& a) {
    f(a.q);
    f(a.k);
    f(a.v);
    f(a.out);
  };
  for (Stack* st : {&s.encoder, &s.decoder})
    for (Layer& l : st->layers) {
      attn(l.self_attn);
      attn(l.cross_attn);
      f(l.ffn.up);
      f(l.ffn.gate);
      f(l.ffn.down);
    }
  f(s.lm_head);
  f(s.pooler);
}

int64_t linear_bytes(const Linear& l) {
  if (!l.present()) return 0;
  return static_cast<int64_t>(l.weight.nbytes() + (l.scales.empty() ? 0 : l.scales.nbytes()));
}

}  // namespace

void convert_weights(ModelSpec& spec, DType to) {
  std::map<const void*, Linear> done;  // original weight data → converted layer (shared weights)
  for_each_linear(spec, [&](Linear& l) {
    if (!l.present() || l.weight.dtype == to) return;
    auto it = done.find(l.weight.data);
    if (it != done.end()) {
      Tensor bias = l.bias;
      l = it->second;
      l.bias = bias;
      return;
    }
    const void* key = l.weight.data;
    l = convert_linear(l, to);
    done.emplace(key, l);
  });
}

int64_t prepack_weights(ModelSpec& spec) {
  // Keyed by data and shape: a view of a tensor's first rows shares its data pointer.
  std::map<std::tuple<const void*, int64_t, int64_t>, std::shared_ptr<const PackedWeight>> done;
  int64_t bytes = 0;
  for_each_linear(spec, [&](Linear& l) {
    if (!l.present() || l.weight.dtype != DType::F32 || l.weight.ndim() != 2 || l.packed) return;
    const auto key = std::make_tuple(static_cast<const void*>(l.weight.data), l.weight.dim(0), l.weight.dim(1));
    auto it = done.find(key);
    if (it != done.end()) {
      l.packed = it->second;
      return;
    }
    if (prepack_linear(l)) bytes += static_cast<int64_t>(l.weight.nbytes());
    done.emplace(key, l.packed);
  });
  return bytes;
}

int64_t decode_weight_bytes(const ModelSpec& spec) {
  int64_t n = 0;
  for (const Layer& l : spec.decoder.layers) {
    for (const Linear* p : {&l.self_attn.q, &l.self_attn.k, &l.self_attn.v, &l.self_attn.out, &l.cross_attn.q,
                            &l.cross_attn.out, &l.ffn.up, &l.ffn.gate, &l.ffn.down})
      n += linear_bytes(*p);
  }
  return n + linear_bytes(spec.lm_head);
}

int64_t decoder_linear_params(const ModelSpec& spec) {
  int64_t n = 0;
  for (const Layer& l : spec.decoder.layers)
    for (const Linear* p : {&l.self_attn.q, &l.self_attn.k, &l.self_attn.v, &l.self_attn.out, &l.cross_attn.q,
                            &l.cross_attn.out, &l.ffn.up, &l.ffn.gate, &l.ffn.down})
      if (p->present()) n += p->weight.numel();
  return n;
}

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
    throw Error("synthetic model '" + text + "': DIM must be a multiple of HEADS (even head size) and HEADS of KV_HEADS");
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
      }
    }
  }
}

Linear random_linear(int64_t out, int64_t in, DType dt, uint64_t seed) {
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
  if (sh.tied_head && dtype == DType::F32) {
    s.lm_head.weight = s.tok_embed;
  } else if (sh.tied_head) {
    Linear head;
    head.weight = s.tok_embed;
    s.lm_head = convert_linear(head, dtype);  // the head copy only; tok_embed stays F32
  } else {
    s.lm_head = random_linear(sh.vocab, sh.dim, dtype, ++k);
  }
  s.bos_id = 1;
  s.eos_id = 2;
  return s;
}

}  // namespace ordo
