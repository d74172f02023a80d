#include "ordo/transformer.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "attention_kernels.hpp"
#include "ordo/quantize.hpp"
#include "team.hpp"

namespace ordo {

namespace {

// Reads row `r` of an embedding table of any float dtype into dst[0..d).
void table_row(const Tensor& table, int64_t r, int64_t d, float* dst) {
  switch (table.dtype) {
    case DType::F32: std::memcpy(dst, table.f32() + r * d, d * sizeof(float)); return;
    case DType::F16:
    case DType::BF16: {
      auto src = static_cast<const unsigned char*>(table.data) + 2 * r * d;
      for (int64_t i = 0; i < d; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = table.dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    }
    case DType::I8: throw Error("embedding tables cannot be stored as I8");
  }
}

// Per-thread scratch buffers, one per role, reused by every call on that thread: once warm, a
// decode step allocates nothing but its returned logits (the buffers only grow, to the largest
// chunk seen). Roles never overlap within one call chain (run_stack → attention / feed_forward).
enum Scratch {
  kScrQ, kScrK, kScrV, kScrCtx, kScrScores, kScrKf, kScrVf, kScrUp, kScrGate, kScrH, kScrA, kScrF, kScrX, kScrCount
};

float* scratch(Scratch role, int64_t n) {
  thread_local std::vector<float> bufs[kScrCount];
  std::vector<float>& b = bufs[role];
  if (b.size() < static_cast<size_t>(n)) b.resize(static_cast<size_t>(n));
  return b.data();
}

PositionContext position_context(const ModelSpec& s, bool causal) {
  PositionContext c;
  c.d_model = s.d_model;
  c.n_heads = s.n_heads;
  c.head_dim = s.head_dim;
  c.causal = causal;
  return c;
}

// `rows` F16 or I8 (row scales rs) cache rows of hd elements widened to F32 into dst.
void widen_rows(const uint16_t* src, const float*, int64_t rows, int64_t hd, float* dst) {
  detail::to_f32(src, rows * hd, dst);
}
void widen_rows(const int8_t* src, const float* rs, int64_t rows, int64_t hd, float* dst) {
  detail::to_f32(src, rs, rows, hd, dst);
}

// Rows [0, rows) of every group of a [groups, capacity, hd] cache as F32, group g starting at
// result + g · stride · hd. F32 caches are used in place (stride = capacity); F16 and I8 ones are
// widened, in parallel, into scratch `role` (stride = rows) once per layer for every query block.
const float* cache_as_f32(const float* p, const float*, int64_t, int64_t capacity, int64_t, int64_t, Scratch,
                          int64_t& stride) {
  stride = capacity;
  return p;
}
template <class E>
const float* cache_as_f32(const E* p, const float* rs, int64_t groups, int64_t capacity, int64_t rows, int64_t hd,
                          Scratch role, int64_t& stride) {
  float* dst = scratch(role, groups * rows * hd);
  stride = rows;
  constexpr int64_t kChunk = 256;
  const int64_t chunks = (rows + kChunk - 1) / kChunk;
  const bool par = groups * rows * hd >= (1 << 15) && !omp_in_parallel();
#pragma omp parallel for collapse(2) schedule(static) if (par)
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t r0 = c * kChunk, n = std::min(kChunk, rows - r0);
      widen_rows(p + (g * capacity + r0) * hd, rs ? rs + g * capacity + r0 : nullptr, n, hd, dst + (g * rows + r0) * hd);
    }
  return dst;
}

}  // namespace

const char* graph_kind_name(GraphKind g) {
  switch (g) {
    case GraphKind::Decoder: return "decoder";
    case GraphKind::Encoder: return "encoder";
    case GraphKind::EncoderDecoder: return "encoder-decoder";
  }
  return "?";
}

int64_t ModelSpec::parameter_count() const {
  std::vector<const void*> seen;
  int64_t n = 0;
  auto add = [&](const Tensor& t) {
    if (t.empty() || std::find(seen.begin(), seen.end(), t.data) != seen.end()) return;
    seen.push_back(t.data);
    n += t.numel();
  };
  auto add_lin = [&](const Linear& l) {
    add(l.weight);
    add(l.bias);
  };
  auto add_norm = [&](const Norm& m) {
    add(m.weight);
    add(m.bias);
  };
  auto add_attn = [&](const AttentionWeights& a) {
    add_lin(a.q);
    add_lin(a.k);
    add_lin(a.v);
    add_lin(a.out);
  };
  auto add_stack = [&](const Stack& s) {
    for (const Layer& l : s.layers) {
      add_norm(l.attn_norm);
      add_attn(l.self_attn);
      add_norm(l.cross_norm);
      add_attn(l.cross_attn);
      add_norm(l.ffn_norm);
      add_lin(l.ffn.up);
      add_lin(l.ffn.gate);
      add_lin(l.ffn.down);
    }
    add_norm(s.final_norm);
    add(s.position.table);
    add(s.position.relative_bias);
  };
  add(tok_embed);
  add(token_type_embed);
  add_norm(embed_norm);
  add_stack(encoder);
  add_stack(decoder);
  add_lin(lm_head);
  add(final_logits_bias);
  add_lin(pooler);
  return n;
}

Transformer::Transformer(ModelSpec spec, Backend backend) : spec_(std::move(spec)), backend_(backend) {
  if (spec_.d_model <= 0 || spec_.n_heads <= 0 || spec_.head_dim <= 0 || spec_.vocab_size <= 0)
    throw Error("model spec: d_model, n_heads, head_dim and vocab_size must be positive");
  if (spec_.n_kv_heads <= 0) spec_.n_kv_heads = spec_.n_heads;
  if (spec_.n_heads % spec_.n_kv_heads != 0)
    throw Error("model spec: n_heads (" + std::to_string(spec_.n_heads) + ") is not a multiple of n_kv_heads (" +
                std::to_string(spec_.n_kv_heads) + ")");
  set_position(spec_.position);
}

void Transformer::set_kv_dtype(DType dtype) {
  if (dtype == DType::BF16)
    throw Error(std::string("KV cache dtype must be f32, f16 or int8, not ") + weight_dtype_name(dtype));
  kv_dtype_ = dtype;
}

void Transformer::set_position(const PositionConfig& cfg) {
  std::unique_ptr<PositionScheme> enc, dec;
  if (spec_.graph != GraphKind::Decoder)
    enc = make_position_scheme(cfg, position_context(spec_, false), spec_.encoder.position);
  if (spec_.graph != GraphKind::Encoder)
    dec = make_position_scheme(cfg, position_context(spec_, true), spec_.decoder.position);
  spec_.position = cfg;
  enc_scheme_ = std::move(enc);
  dec_scheme_ = std::move(dec);
}

KVCache Transformer::make_cache(int64_t n_layers, int64_t capacity, DType dtype) const {
  KVCache c;
  c.capacity = capacity;
  for (int64_t l = 0; l < n_layers; ++l) {
    // Slots are written before they are read (attention reads [0, length) only).
    c.k.push_back(Tensor::uninitialized({spec_.n_kv_heads, capacity, spec_.head_dim}, dtype));
    c.v.push_back(Tensor::uninitialized({spec_.n_kv_heads, capacity, spec_.head_dim}, dtype));
    if (dtype == DType::I8) {
      c.k_scale.push_back(Tensor::uninitialized({spec_.n_kv_heads, capacity}));
      c.v_scale.push_back(Tensor::uninitialized({spec_.n_kv_heads, capacity}));
    }
  }
  return c;
}

Sequence Transformer::new_sequence(int64_t capacity) const {
  if (capacity <= 0) capacity = spec_.position.max_positions > 0 ? spec_.position.max_positions : 512;
  Sequence s;
  s.self = make_cache(static_cast<int64_t>(spec_.decoder.layers.size()), capacity, kv_dtype_);
  return s;
}

// Grows a cache (keeping its contents) so that `needed` slots fit.
static void reserve_cache(KVCache& c, int64_t needed) {
  if (needed <= c.capacity) return;
  int64_t cap = std::max(needed, c.capacity * 2);
  std::vector<Tensor*> grow;  // each [heads, capacity, ...] (rows [heads, capacity, hd], scales [heads, capacity])
  for (size_t l = 0; l < c.k.size(); ++l) {
    grow.insert(grow.end(), {&c.k[l], &c.v[l]});
    if (l < c.k_scale.size()) grow.insert(grow.end(), {&c.k_scale[l], &c.v_scale[l]});
  }
  for (Tensor* t : grow) {
    std::vector<int64_t> shape = t->shape;
    shape[1] = cap;
    const int64_t heads = shape[0], row = t->numel() / (heads * c.capacity);  // elements per slot
    const size_t es = dtype_size(t->dtype);
    Tensor n = Tensor::uninitialized(shape, t->dtype);
    auto dst = static_cast<char*>(n.data);
    auto src = static_cast<const char*>(t->data);
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(dst + h * cap * row * es, src + h * c.capacity * row * es, c.length * row * es);
    *t = std::move(n);
  }
  c.capacity = cap;
}

void Transformer::apply_norm(const Norm& n, const float* x, int64_t T, float* y) const {
  const float* w = n.weight.empty() ? nullptr : n.weight.f32();
  if (n.kind == NormKind::RMS) {
    if (!w) throw Error("RMSNorm without a weight");
    rmsnorm(x, w, n.eps, T, spec_.d_model, y);
  } else {
    layernorm(x, w, n.bias.empty() ? nullptr : n.bias.f32(), n.eps, T, spec_.d_model, y);
  }
}

void Transformer::embed(const std::vector<int32_t>& ids, const std::vector<int32_t>& token_types,
                        const int32_t* pos, const PositionScheme& scheme, float* x) const {
  const int64_t T = static_cast<int64_t>(ids.size()), d = spec_.d_model;
  const int64_t n_types = spec_.token_type_embed.empty() ? 0 : spec_.token_type_embed.dim(0);
  std::vector<float> row(d);
  for (int64_t t = 0; t < T; ++t) {
    const int32_t id = ids[t];
    if (id < 0 || id >= spec_.vocab_size)
      throw Error("token id " + std::to_string(id) + " at position " + std::to_string(t) + " is out of range [0, " +
                  std::to_string(spec_.vocab_size) + ")");
    float* xt = x + t * d;
    table_row(spec_.tok_embed, id, d, xt);
    if (spec_.embed_scale != 1.0f)
      for (int64_t i = 0; i < d; ++i) xt[i] *= spec_.embed_scale;
    if (n_types) {
      const int32_t tt = token_types.empty() ? 0 : token_types[t];
      if (tt < 0 || tt >= n_types)
        throw Error("token type id " + std::to_string(tt) + " at position " + std::to_string(t) +
                    " is out of range [0, " + std::to_string(n_types) + ")");
      table_row(spec_.token_type_embed, tt, d, row.data());
      add_inplace(xt, row.data(), d);
    }
  }
  scheme.embed(x, pos, T);
  if (spec_.embed_norm.present) apply_norm(spec_.embed_norm, x, T, x);
}

void Transformer::attention(const AttentionWeights& w, const PositionScheme* scheme, const float* h, int64_t T,
                            const int32_t* pos, KVCache* self_cache, const KVCache& cache, int layer, bool causal,
                            int64_t seq_len, float* out) const {
  const int64_t H = spec_.n_heads, KV = spec_.n_kv_heads, hd = spec_.head_dim, d = spec_.d_model;
  const int64_t group = H / KV;
  causal = causal && causal_;
  const bool observe = observer_ && self_cache;
  const float scale = spec_.attn_scale != 0.0f ? spec_.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));

  float* q = scratch(kScrQ, T * H * hd);
  // Self-attention appends this chunk's keys/values at slots [length, length + T); the caller
  // advances `length` once every layer has run.
  const int64_t base = self_cache ? self_cache->length : 0;
  if (!self_cache) {
    linear(backend_, h, T, d, w.q, q);
    if (scheme) scheme->rotate(q, H, pos, T, seq_len);
  } else {
    float* k = scratch(kScrK, T * KV * hd);
    float* v = scratch(kScrV, T * KV * hd);
    linear_group(backend_, h, T, d, {{&w.q, q}, {&w.k, k}, {&w.v, v}});
    if (scheme) {
      scheme->rotate(q, H, pos, T, seq_len);
      scheme->rotate(k, KV, pos, T, seq_len);
    }
    Tensor& Kc = self_cache->k[layer];
    Tensor& Vc = self_cache->v[layer];
    for (int64_t t = 0; t < T; ++t)
      for (int64_t g = 0; g < KV; ++g) {
        const int64_t row = g * self_cache->capacity + base + t, slot = row * hd;
        const float* kr = &k[(t * KV + g) * hd];
        const float* vr = &v[(t * KV + g) * hd];
        switch (Kc.dtype) {
          case DType::F16:
            detail::to_f16(kr, hd, static_cast<uint16_t*>(Kc.data) + slot);
            detail::to_f16(vr, hd, static_cast<uint16_t*>(Vc.data) + slot);
            break;
          case DType::I8:
            self_cache->k_scale[layer].f32()[row] = detail::to_i8(kr, hd, static_cast<int8_t*>(Kc.data) + slot);
            self_cache->v_scale[layer].f32()[row] = detail::to_i8(vr, hd, static_cast<int8_t*>(Vc.data) + slot);
            break;
          default:
            std::memcpy(Kc.f32() + slot, kr, hd * sizeof(float));
            std::memcpy(Vc.f32() + slot, vr, hd * sizeof(float));
        }
      }
  }
  const int64_t total = self_cache ? base + T : cache.length;
  const bool bias = scheme && scheme->has_score_bias();
  // Padding mask, dropped when every key is real (the common case: no per-row mask pass).
  const uint8_t* key_valid = cache.valid.empty() ? nullptr : cache.valid.data();
  if (key_valid && std::memchr(key_valid, 0, static_cast<size_t>(total)) == nullptr) key_valid = nullptr;
  const int32_t* key_pos = cache.positions.empty() ? nullptr : cache.positions.data();

  float* ctx = scratch(kScrCtx, T * H * hd);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  // Bias and mask query row t's nk scores and exponentiate them (softmax without the division).
  // Returns what the row's output Σ p_j v_j must be multiplied by: 1/Σ p (0 for a fully masked
  // row), or 1 when an observer needed the probabilities normalised already.
  auto finish_scores = [&](int64_t hh, int64_t t, float* scores, int64_t nk) -> float {
    if (bias) scheme->add_score_bias(scores, hh, pos[t], key_pos, nk);
    if (key_valid)
      for (int64_t j = 0; j < nk; ++j)
        if (!key_valid[j]) scores[j] = neg_inf;
    if (!observe) {
      const float sum = softmax_unnormalized(scores, nk);
      return sum > 0.0f ? 1.0f / sum : 0.0f;
    }
    softmax(scores, nk);
#pragma omp critical(ordo_attention_observer)
    observer_(layer, hh, base + t, scores, nk);
    return 1.0f;
  };
  auto scale_row = [hd](float* row, float f) {
    if (f != 1.0f)
      for (int64_t i = 0; i < hd; ++i) row[i] *= f;
  };
  // K, V: the layer's cache, [KV, capacity, hd] of float, uint16_t (F16) or int8_t (I8, row
  // scales Ks, Vs: [KV, capacity]; null otherwise).
  auto attend = [&](const auto* K, const auto* V, const float* Ks, const float* Vs) {
    auto row_scales = [&](const float* rs, int64_t g) { return rs ? rs + g * cache.capacity : nullptr; };
    if (T == 1) {
      // Decode: each head reads its K and V rows once; heads are handed out to the threads (the
      // decode step's team) unless the layer's K has under 4096 elements.
      std::memset(ctx, 0, static_cast<size_t>(T * H * hd) * sizeof(float));
      detail::parallel_items(H, H * total * hd >= (1 << 12), [&](int64_t hh) {
        float* scores = scratch(kScrScores, total);
        const int64_t g = hh / group;
        const int64_t nk = causal ? base + 1 : total;
        detail::qk_scores(q + hh * hd, K + g * cache.capacity * hd, row_scales(Ks, g), nk, hd, scale, scores);
        const float f = finish_scores(hh, 0, scores, nk);
        detail::pv_accumulate(scores, V + g * cache.capacity * hd, row_scales(Vs, g), nk, hd, ctx + hh * hd);
        scale_row(ctx + hh * hd, f);
      });
    } else {
      // Prompt: blocks of kQueryBlock query rows per head through two GEMMs,
      // S = scale · Q_blk · K[0, kend)ᵀ and ctx_blk = softmax(S) · V[0, kend), so the largest
      // score buffer is kQueryBlock × keys per thread, never T × T. Causal rows are zeroed past
      // their last key, which makes the shared kend exact for every row of the block.
      constexpr int64_t kQueryBlock = 64;
      const int64_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
      int64_t stride = 0;
      const float* Kf = cache_as_f32(K, Ks, KV, cache.capacity, total, hd, kScrKf, stride);
      const float* Vf = cache_as_f32(V, Vs, KV, cache.capacity, total, hd, kScrVf, stride);
#pragma omp parallel
      {
        float* S = scratch(kScrScores, std::min(T, kQueryBlock) * total);
#pragma omp for collapse(2) schedule(dynamic)
        for (int64_t hh = 0; hh < H; ++hh)
          for (int64_t b = 0; b < blocks; ++b) {
            const int64_t g = hh / group;
            const int64_t t0 = b * kQueryBlock, m = std::min(kQueryBlock, T - t0);
            const int64_t kend = causal ? base + t0 + m : total;
            const float* Kg = Kf + g * stride * hd;
            const float* Vg = Vf + g * stride * hd;
            gemm_nt(backend_, m, kend, hd, scale, &q[(t0 * H + hh) * hd], H * hd, Kg, hd, 0.0f, S, kend);
            float row_scale[kQueryBlock];
            for (int64_t i = 0; i < m; ++i) {
              float* row = S + i * kend;
              const int64_t nk = causal ? base + t0 + i + 1 : total;
              row_scale[i] = finish_scores(hh, t0 + i, row, nk);
              std::fill(row + nk, row + kend, 0.0f);
            }
            gemm_nn(backend_, m, hd, kend, 1.0f, S, kend, Vg, hd, 0.0f, &ctx[(t0 * H + hh) * hd], H * hd);
            for (int64_t i = 0; i < m; ++i) scale_row(&ctx[((t0 + i) * H + hh) * hd], row_scale[i]);
          }
      }
    }
  };
  const Tensor &Kl = cache.k[layer], &Vl = cache.v[layer];
  switch (Kl.dtype) {
    case DType::F16:
      attend(static_cast<const uint16_t*>(Kl.data), static_cast<const uint16_t*>(Vl.data), nullptr, nullptr);
      break;
    case DType::I8:
      attend(static_cast<const int8_t*>(Kl.data), static_cast<const int8_t*>(Vl.data), cache.k_scale[layer].f32(),
             cache.v_scale[layer].f32());
      break;
    default: attend(Kl.f32(), Vl.f32(), nullptr, nullptr);
  }
  linear(backend_, ctx, T, H * hd, w.out, out);
}

void Transformer::feed_forward(const FeedForward& f, const float* h, int64_t T, float* out) const {
  const int64_t d = spec_.d_model, n = f.up.out_features();
  float* up = scratch(kScrUp, T * n);
  if (f.gate.present()) {
    float* gate = scratch(kScrGate, T * n);
    linear_group(backend_, h, T, d, {{&f.gate, gate}, {&f.up, up}});
    gated_activate(f.act, gate, up, T * n);
    linear(backend_, gate, T, n, f.down, out);
  } else {
    linear(backend_, h, T, d, f.up, up);
    activate(f.act, up, T * n);
    linear(backend_, up, T, n, f.down, out);
  }
}

void Transformer::run_stack(const Stack& stack, const PositionScheme& scheme, float* x, int64_t T,
                            const int32_t* pos, KVCache* cache, const KVCache* cross, std::vector<Tensor>* hidden,
                            int64_t seq_len) const {
  const int64_t d = spec_.d_model;
  const int64_t L = static_cast<int64_t>(stack.layers.size());
  float* const h = scratch(kScrH, T * d);
  float* const a = scratch(kScrA, T * d);
  float* const f = scratch(kScrF, T * d);
  auto snapshot = [&](const float* src) {
    Tensor t = Tensor::zeros({T, d});
    std::memcpy(t.f32(), src, T * d * sizeof(float));
    hidden->push_back(std::move(t));
  };
  if (hidden) snapshot(x);
  for (int64_t l = 0; l < L; ++l) {
    const Layer& ly = stack.layers[l];
    if (spec_.pre_norm) {
      apply_norm(ly.attn_norm, x, T, h);
      attention(ly.self_attn, &scheme, h, T, pos, cache, *cache, l, stack.causal, seq_len, a);
      if (spec_.parallel_residual) {
        if (ly.ffn_norm.present) apply_norm(ly.ffn_norm, x, T, h);
        feed_forward(ly.ffn, h, T, f);
        add_inplace(x, a, T * d);
        add_inplace(x, f, T * d);
      } else {
        add_inplace(x, a, T * d);
        if (cross) {
          apply_norm(ly.cross_norm, x, T, h);
          attention(ly.cross_attn, nullptr, h, T, pos, nullptr, *cross, l, false, seq_len, a);
          add_inplace(x, a, T * d);
        }
        apply_norm(ly.ffn_norm, x, T, h);
        feed_forward(ly.ffn, h, T, f);
        add_inplace(x, f, T * d);
      }
    } else {  // post-norm
      attention(ly.self_attn, &scheme, x, T, pos, cache, *cache, l, stack.causal, seq_len, a);
      add_inplace(x, a, T * d);
      apply_norm(ly.attn_norm, x, T, x);
      if (cross) {
        attention(ly.cross_attn, nullptr, x, T, pos, nullptr, *cross, l, false, seq_len, a);
        add_inplace(x, a, T * d);
        apply_norm(ly.cross_norm, x, T, x);
      }
      feed_forward(ly.ffn, x, T, f);
      add_inplace(x, f, T * d);
      apply_norm(ly.ffn_norm, x, T, x);
    }
    if (hidden && l + 1 < L) snapshot(x);
  }
  if (stack.final_norm.present) apply_norm(stack.final_norm, x, T, x);
  if (hidden) snapshot(x);
}

Tensor Transformer::encode(const std::vector<int32_t>& ids, const std::vector<int32_t>& token_types,
                           const std::vector<uint8_t>& mask, std::vector<Tensor>* hidden) const {
  if (spec_.graph == GraphKind::Decoder) throw Error(spec_.architecture + " is a decoder-only model: it has no encoder");
  const int64_t T = static_cast<int64_t>(ids.size());
  if (!mask.empty() && static_cast<int64_t>(mask.size()) != T)
    throw Error("attention mask has " + std::to_string(mask.size()) + " entries for " + std::to_string(T) + " tokens");
  KVCache cache = make_cache(static_cast<int64_t>(spec_.encoder.layers.size()), std::max<int64_t>(T, 1));
  cache.positions.resize(T);
  cache.valid.assign(T, 1);
  int32_t next = 0;
  for (int64_t t = 0; t < T; ++t) {
    const bool real = mask.empty() || mask[t];
    cache.valid[t] = real;
    cache.positions[t] = real ? next++ : 0;
  }
  if (next > 0) enc_scheme_->check_positions(next - 1);
  Tensor x = Tensor::zeros({T, spec_.d_model});
  embed(ids, token_types, cache.positions.data(), *enc_scheme_, x.f32());
  run_stack(spec_.encoder, *enc_scheme_, x.f32(), T, cache.positions.data(), &cache, nullptr, hidden, next);
  return x;
}

Tensor Transformer::pool(const Tensor& encoder_out) const {
  if (!spec_.pooler.present()) throw Error(spec_.architecture + " has no pooler");
  Tensor out = Tensor::zeros({spec_.d_model});
  linear(backend_, encoder_out.f32(), 1, spec_.d_model, spec_.pooler, out.f32());
  for (int64_t i = 0; i < spec_.d_model; ++i) out.f32()[i] = std::tanh(out.f32()[i]);
  return out;
}

void Transformer::attach_encoder(Sequence& seq, const Tensor& encoder_out, const std::vector<uint8_t>& mask) const {
  if (spec_.graph != GraphKind::EncoderDecoder) throw Error(spec_.architecture + " has no cross-attention");
  const int64_t T = encoder_out.dim(0), d = spec_.d_model, KV = spec_.n_kv_heads, hd = spec_.head_dim;
  const int64_t L = static_cast<int64_t>(spec_.decoder.layers.size());
  seq.cross = make_cache(L, std::max<int64_t>(T, 1));
  seq.cross.length = T;
  seq.cross.valid.assign(T, 1);
  for (int64_t t = 0; t < T && !mask.empty(); ++t) seq.cross.valid[t] = mask[t];
  std::vector<float> k(T * KV * hd), v(T * KV * hd);
  for (int64_t l = 0; l < L; ++l) {
    const AttentionWeights& w = spec_.decoder.layers[l].cross_attn;
    linear(backend_, encoder_out.f32(), T, d, w.k, k.data());
    linear(backend_, encoder_out.f32(), T, d, w.v, v.data());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t g = 0; g < KV; ++g) {
        std::memcpy(seq.cross.k[l].f32() + (g * T + t) * hd, &k[(t * KV + g) * hd], hd * sizeof(float));
        std::memcpy(seq.cross.v[l].f32() + (g * T + t) * hd, &v[(t * KV + g) * hd], hd * sizeof(float));
      }
  }
}

ForwardOutput Transformer::decode(Sequence& seq, const std::vector<int32_t>& ids, const std::vector<uint8_t>& mask,
                                  LogitsFor which, bool want_hidden) const {
  if (spec_.graph == GraphKind::Encoder) throw Error(spec_.architecture + " is an encoder-only model: it cannot decode");
  if (spec_.graph == GraphKind::EncoderDecoder && seq.cross.k.empty())
    throw Error("encoder-decoder decode needs the encoder output: call attach_encoder first");
  const int64_t T = static_cast<int64_t>(ids.size());
  if (T == 0) throw Error("decode: no tokens");
  if (!mask.empty() && static_cast<int64_t>(mask.size()) != T)
    throw Error("attention mask has " + std::to_string(mask.size()) + " entries for " + std::to_string(T) + " tokens");

  KVCache& cache = seq.self;
  const int64_t base = cache.length;
  thread_local std::vector<int32_t> pos;  // reused: no per-step allocation
  pos.resize(T);
  int64_t next = seq.next_position;
  for (int64_t t = 0; t < T; ++t) pos[t] = (mask.empty() || mask[t]) ? static_cast<int32_t>(next++) : 0;
  if (next > seq.next_position) dec_scheme_->check_positions(next - 1);

  reserve_cache(cache, base + T);
  cache.positions.resize(base + T);
  cache.valid.resize(base + T);
  for (int64_t t = 0; t < T; ++t) {
    cache.positions[base + t] = pos[t];
    cache.valid[base + t] = mask.empty() ? 1 : mask[t];
  }

  ForwardOutput out;
  // The final hidden state is returned only for LogitsFor::None; otherwise it lives in scratch.
  Tensor x_out = which == LogitsFor::None ? Tensor::zeros({T, spec_.d_model}) : Tensor{};
  auto forward = [&] {
    float* x = which == LogitsFor::None ? x_out.f32() : scratch(kScrX, T * spec_.d_model);
    static const std::vector<int32_t> no_types;
    embed(ids, no_types, pos.data(), *dec_scheme_, x);
    run_stack(spec_.decoder, *dec_scheme_, x, T, pos.data(), &cache,
              spec_.graph == GraphKind::EncoderDecoder ? &seq.cross : nullptr, want_hidden ? &out.hidden : nullptr,
              std::max<int64_t>(next, 1));
    switch (which) {
      case LogitsFor::All: out.logits = logits(x, T); break;
      case LogitsFor::Last: out.logits = logits(x + (T - 1) * spec_.d_model, 1); break;
      case LogitsFor::None: out.final_hidden = std::move(x_out); break;
    }
  };
  // One token: every parallel loop of the step is one of ours (no GEMM), so the threads stay in
  // one region for the whole step instead of waking for each of its ~60 loops.
  if (T == 1)
    detail::run_as_team(forward);
  else
    forward();
  cache.length = base + T;
  seq.next_position = next;
  seq.tokens.insert(seq.tokens.end(), ids.begin(), ids.end());
  for (int64_t t = 0; t < T; ++t) seq.token_valid.push_back(mask.empty() ? 1 : mask[t]);
  return out;
}

Tensor Transformer::logits(const float* h, int64_t T) const {
  const int64_t d = spec_.d_model;
  Tensor out = Tensor::zeros({T, spec_.vocab_size});
  if (spec_.logits_scale != 1.0f) {
    std::vector<float> hs(h, h + T * d);
    for (float& v : hs) v *= spec_.logits_scale;
    linear(backend_, hs.data(), T, d, spec_.lm_head, out.f32());
  } else {
    linear(backend_, h, T, d, spec_.lm_head, out.f32());
  }
  if (!spec_.final_logits_bias.empty())
    for (int64_t t = 0; t < T; ++t) add_inplace(out.f32() + t * spec_.vocab_size, spec_.final_logits_bias.f32(), spec_.vocab_size);
  return out;
}

}  // namespace ordo
