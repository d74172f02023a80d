// Attention over KV caches: q/k/v, rotation, storing keys and values, scores, softmax, weighted values.
//
// Read top to bottom: how a cache is read (with_cache, cache_as_f32), how a row of scores becomes
// probabilities (finish_scores), one-token queries (attend_single: one score row per head),
// prompts (attend_prompt: blocks of query rows through two GEMMs), then the entry points
// self_attention and cross_attention. Keys a KeyMap places other than at their exact distance
// (Segment::keys) are the "far" region of a row: scored from a second copy of the query (q2)
// against the cache's second keys (kg) when it keeps them.
#include "attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/attention_kernels.hpp"
#include "kernels/gemm_backend.hpp"
#include "kernels/team.hpp"
#include "ordo/quantize.hpp"
#include "scratch.hpp"
#include "step_timer.hpp"

namespace ordo::detail {

namespace {

// ---- reading a cache ------------------------------------------------------------------------

// `rows` F16 or I8 (row scales rs) cache rows of hd elements widened to F32 into dst.
void widen_rows(const uint16_t* src, const float*, int64_t rows, int64_t hd, float* dst) {
  to_f32(src, rows * hd, dst);
}
void widen_rows(const int8_t* src, const float* rs, int64_t rows, int64_t hd, float* dst) {
  to_f32(src, rs, rows, hd, dst);
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
  parallel_items(groups * chunks, groups * rows * hd >= (1 << 15), [&](int64_t item) {
    const int64_t g = item / chunks, r0 = item % chunks * kChunk, n = std::min(kChunk, rows - r0);
    widen_rows(p + (g * capacity + r0) * hd, rs ? rs + g * capacity + r0 : nullptr, n, hd, dst + (g * rows + r0) * hd);
  });
  return dst;
}

// Calls f(K, V, Ks, Vs) with layer l's cache as float, uint16_t (F16) or int8_t (I8, with row
// scales Ks, Vs [KV, capacity]; null otherwise).
template <class F>
void with_cache(const KVCache& c, int l, F&& f) {
  const Tensor &K = c.k[static_cast<size_t>(l)], &V = c.v[static_cast<size_t>(l)];
  switch (K.dtype) {
    case DType::F16:
      return f(static_cast<const uint16_t*>(K.data), static_cast<const uint16_t*>(V.data), nullptr, nullptr);
    case DType::I8:
      return f(static_cast<const int8_t*>(K.data), static_cast<const int8_t*>(V.data),
               c.k_scale[static_cast<size_t>(l)].f32(), c.v_scale[static_cast<size_t>(l)].f32());
    default: return f(K.f32(), V.f32(), nullptr, nullptr);
  }
}

// The padding mask of a cache's first `total` slots, or null when every key is real (the common
// case: no per-row mask pass).
const uint8_t* padding_of(const KVCache& c, int64_t total) {
  const uint8_t* v = c.valid.empty() ? nullptr : c.valid.data();
  return v && std::memchr(v, 0, static_cast<size_t>(total)) ? v : nullptr;
}

// ---- one row of scores to probabilities ------------------------------------------------------

// What turning one query row's raw scores into probabilities needs to know.
struct ScoreRow {
  const PositionScheme* bias;  // null: no score bias
  const int32_t* key_pos;
  const uint8_t* key_valid;                   // null: every key is real
  const AttentionParams::Observer* observer;  // null: nobody watches
  int layer;
  const KeyMap* keys = nullptr;  // null: every key at its exact distance

  KeyRegions regions(int32_t qpos, int64_t nk) const {
    return keys ? keys->regions(qpos, key_pos, key_valid, nk) : KeyRegions{};
  }
};

// Biases and masks a query's nk scores and exponentiates them (softmax without the division).
// Returns what the row's output Σ p_j v_j must be multiplied by: 1/Σ p (0 for a fully masked
// row), or 1 when an observer needed the probabilities normalised already.
float finish_scores(const ScoreRow& r, int64_t head, int32_t qpos, int64_t query_index, float* scores, int64_t nk,
                    const KeyRegions& kr = {}) {
  if (r.bias) {
    if (kr.far_end > 0)
      r.bias->add_score_bias(scores, head, kr.far_qpos, r.keys->far_key_positions(r.key_pos, kr.far_end), kr.far_end);
    r.bias->add_score_bias(scores + kr.near_begin, head, qpos, r.key_pos + kr.near_begin, nk - kr.near_begin);
  }
  std::fill(scores + kr.far_end, scores + kr.near_begin, -std::numeric_limits<float>::infinity());
  if (r.key_valid)
    for (int64_t j = 0; j < nk; ++j)
      if (!r.key_valid[j]) scores[j] = -std::numeric_limits<float>::infinity();
  if (!r.observer) {
    const float sum = softmax_unnormalized(scores, nk);
    return sum > 0.0f ? 1.0f / sum : 0.0f;
  }
  softmax(scores, nk);
#pragma omp critical(ordo_attention_observer)
  (*r.observer)(r.layer, head, query_index, scores, nk);
  return 1.0f;
}

void scale_row(float* row, int64_t n, float f) {
  if (f != 1.0f)
    for (int64_t i = 0; i < n; ++i) row[i] *= f;
}

ScoreRow score_row(const AttentionParams& a, const Segment& s, const KVCache& cache, bool cross,
                   const PositionScheme* scheme, int layer, int64_t total) {
  return ScoreRow{scheme && scheme->has_score_bias() ? scheme : nullptr,
                  cache.positions.empty() ? nullptr : cache.positions.data(),
                  padding_of(cache, total),
                  cross ? nullptr : a.observer,
                  layer,
                  cross ? nullptr : s.keys};
}

// ---- one-token queries -----------------------------------------------------------------------

// Attention of every one-token segment listed, one parallel loop over (segment, head); q, q2 and
// ctx are the whole batch's rows.
void attend_single(const AttentionParams& a, const std::vector<const Segment*>& segs, bool cross, int layer,
                   bool causal, const PositionScheme* scheme, const float* q, const float* q2, float* ctx) {
  const int64_t H = a.n_heads, hd = a.head_dim, group = H / a.n_kv_heads;
  int64_t work = 0;
  for (const Segment* s : segs) work += H * (cross ? s->cross->length : s->self->length + 1) * hd;
  // Each (segment, head) reads its K and V rows once; they are handed out to the threads (the
  // decode step's team) unless the layer's keys have under 4096 elements in all, a few at a
  // time. An item reads its keys and values as two streams at once (qk_scores is given the
  // values to request): requesting the next item's rows into L2 while one is computed, as
  // before, took 4-10% longer than that alone (16 sequences, ctx 128 and 512).
  const int64_t n = static_cast<int64_t>(segs.size()) * H;
  auto one = [&](int64_t item) {
    const Segment& s = *segs[static_cast<size_t>(item / H)];
    const int64_t hh = item % H, g = hh / group;
    const KVCache& cache = cross ? *s.cross : *s.self;
    const int64_t base = cross ? 0 : cache.length;  // the query's own slot (self-attention)
    const int64_t total = cross ? cache.length : base + 1;
    const int64_t nk = causal ? base + 1 : total;
    const ScoreRow row = score_row(a, s, cache, cross, scheme, layer, total);
    const KeyRegions kr = row.regions(s.pos[0], nk);
    float* scores = scratch(kScrScores, total);
    const float* qh = q + (s.row0 * H + hh) * hd;
    float* out = ctx + (s.row0 * H + hh) * hd;
    std::memset(out, 0, static_cast<size_t>(hd) * sizeof(float));
    with_cache(cache, layer, [&](const auto* K, const auto* V, const float* Ks, const float* Vs) {
      const int64_t cap = cache.capacity, nb = kr.near_begin;
      if (kr.far_end >
          0) {  // the far keys: the second keys (KVCache::kg) when the cache keeps them, else the plain ones
        const bool second = !cache.kg.empty();
        const auto* KF = second ? static_cast<decltype(K)>(cache.kg[static_cast<size_t>(layer)].data) : K;
        const float* KFs = second && Ks ? cache.kg_scale[static_cast<size_t>(layer)].f32() : Ks;
        qk_scores(q2 + (s.row0 * H + hh) * hd, KF + g * cap * hd, KFs ? KFs + g * cap : nullptr, kr.far_end, hd,
                  a.scale, scores, V + g * cap * hd);
      }
      // The values' rows come in beside the keys' (rows between the far keys and nb weigh 0).
      qk_scores(qh, K + (g * cap + nb) * hd, Ks ? Ks + g * cap + nb : nullptr, nk - nb, hd, a.scale, scores + nb,
                V + (g * cap + nb) * hd);
      const float f = finish_scores(row, hh, s.pos[0], base, scores, nk, kr);
      pv_accumulate(scores, V + g * cap * hd, Vs ? Vs + g * cap : nullptr, nk, hd, out);
      scale_row(out, hd, f);
    });
  };
  const int64_t per_take =
      std::clamp<int64_t>(n / (2 * ensure_threads()), 1, 8);  // 12 heads on 2 threads: 16 sequences 8, one 3
  parallel_items((n + per_take - 1) / per_take, work >= (1 << 12), [&](int64_t take) {
    const int64_t i0 = take * per_take, i1 = std::min(n, i0 + per_take);
    for (int64_t item = i0; item < i1; ++item) one(item);
  });
}

// ---- prompts -----------------------------------------------------------------------------------

// Blocks of kQueryBlock query rows per head through two GEMMs, S = scale · Q_blk · K[0, kend)ᵀ
// and ctx_blk = softmax(S) · V[0, kend), so the largest score buffer is kQueryBlock × keys per
// thread, never T × T. Causal rows are zeroed past their last key, which makes the shared kend
// exact for every row of the block.
constexpr int64_t kQueryBlock = 64;

// One segment's prompt over one cache as attend_prompt sets it up: the cache's keys and values
// as F32 (group g at K + g · stride · hd), the far keys' (KF: the second keys, or K).
struct PromptRun {
  const AttentionParams& a;
  const Segment& s;
  const ScoreRow& row;
  bool causal;
  int64_t base, total;  // the segment's first slot; the slots its last query sees
  const float *q, *q2;  // the segment's first row
  float* ctx;
  const float *K, *V, *KF;
  int64_t stride;
};

// Rows [t0, t0 + kQueryBlock) of head hh. S, S2: this thread's score blocks.
void prompt_block(const PromptRun& p, int64_t hh, int64_t t0, float* S, float* S2) {
  const AttentionParams& a = p.a;
  const int64_t H = a.n_heads, hd = a.head_dim, g = hh / (H / a.n_kv_heads);
  const int64_t m = std::min(kQueryBlock, p.s.T - t0);
  const int64_t kend = p.causal ? p.base + t0 + m : p.total;
  gemm_nt(a.backend, m, kend, hd, a.scale, &p.q[(t0 * H + hh) * hd], H * hd, p.K + g * p.stride * hd, hd, 0.0f, S,
          kend);
  KeyRegions kr[kQueryBlock];
  int64_t far = 0;
  for (int64_t i = 0; i < m; ++i) {
    kr[i] = p.row.regions(p.s.pos[t0 + i], p.causal ? p.base + t0 + i + 1 : p.total);
    far = std::max(far, kr[i].far_end);
  }
  if (far > 0) {  // the far keys' scores from the queries at their alternate positions
    gemm_nt(a.backend, m, far, hd, a.scale, &p.q2[(t0 * H + hh) * hd], H * hd, p.KF + g * p.stride * hd, hd, 0.0f, S2,
            far);
    for (int64_t i = 0; i < m; ++i) std::copy(S2 + i * far, S2 + i * far + kr[i].far_end, S + i * kend);
  }
  float row_scale[kQueryBlock];
  for (int64_t i = 0; i < m; ++i) {
    float* r = S + i * kend;
    const int64_t nk = p.causal ? p.base + t0 + i + 1 : p.total;
    row_scale[i] = finish_scores(p.row, hh, p.s.pos[t0 + i], p.base + t0 + i, r, nk, kr[i]);
    std::fill(r + nk, r + kend, 0.0f);
  }
  gemm_nn(a.backend, m, hd, kend, 1.0f, S, kend, p.V + g * p.stride * hd, hd, 0.0f, &p.ctx[(t0 * H + hh) * hd], H * hd);
  for (int64_t i = 0; i < m; ++i) scale_row(&p.ctx[((t0 + i) * H + hh) * hd], hd, row_scale[i]);
}

// Every (head, query block) of a prompt, in parallel (on the step's team); an error in any is
// rethrown here.
void prompt_blocks(const PromptRun& p) {
  const int64_t H = p.a.n_heads, T = p.s.T, blocks = (T + kQueryBlock - 1) / kQueryBlock;
  parallel_items(H * blocks, true, [&](int64_t item) {
    // This thread's score blocks (grown once, then reused by its later items).
    float* S = scratch(kScrScores, std::min(T, kQueryBlock) * p.total);
    float* S2 = p.row.keys ? scratch(kScrScores2, std::min(T, kQueryBlock) * p.total) : nullptr;
    prompt_block(p, item / blocks, item % blocks * kQueryBlock, S, S2);
  });
}

// Attention of one segment's prompt rows (T > 1) over `cache` (its self cache, or its encoder's);
// q, q2 and ctx point at the segment's first row.
void attend_prompt(const AttentionParams& a, const Segment& s, const KVCache& cache, bool cross, int layer, bool causal,
                   const PositionScheme* scheme, const float* q, const float* q2, float* ctx) {
  const int64_t KV = a.n_kv_heads, hd = a.head_dim;
  const int64_t base = cross ? 0 : cache.length;
  const int64_t total = cross ? cache.length : base + s.T;
  const ScoreRow row = score_row(a, s, cache, cross, scheme, layer, total);
  with_cache(cache, layer, [&](const auto* K, const auto* V, const float* Ks, const float* Vs) {
    int64_t stride = 0;
    const float* Kf = cache_as_f32(K, Ks, KV, cache.capacity, total, hd, kScrKf, stride);
    const float* Vf = cache_as_f32(V, Vs, KV, cache.capacity, total, hd, kScrVf, stride);
    const float* KFf = Kf;  // the far keys: the second (grouped) ones when the cache keeps them
    if (row.keys && !cache.kg.empty()) {
      const size_t l = static_cast<size_t>(layer);
      KFf = cache_as_f32(static_cast<decltype(K)>(cache.kg[l].data), Ks ? cache.kg_scale[l].f32() : nullptr, KV,
                         cache.capacity, total, hd, kScrKgf, stride);
    }
    prompt_blocks(PromptRun{a, s, row, causal, base, total, q, q2, ctx, Kf, Vf, KFf, stride});
  });
}

// ---- the layer -------------------------------------------------------------------------------

// Rows [t0, t1) of a segment's keys k, values v (and second keys kg, or null) [T, KV, hd] into its
// self cache at slots [length + t0, length + t1), converted to the cache's dtype.
void store_kv(const AttentionParams& a, const Segment& s, int layer, const float* k, const float* v, const float* kg,
              int64_t t0, int64_t t1) {
  const int64_t KV = a.n_kv_heads, hd = a.head_dim;
  KVCache& c = *s.self;
  const size_t l = static_cast<size_t>(layer);
  // Row `row` (= head · capacity + slot) of cache tensor t (scales rs for I8) from src.
  auto put = [&](Tensor& t, std::vector<Tensor>& rs, int64_t row, const float* src) {
    const int64_t at = row * hd;
    switch (t.dtype) {
      case DType::F16: to_f16(src, hd, static_cast<uint16_t*>(t.data) + at); break;
      case DType::I8: rs[l].f32()[row] = to_i8(src, hd, static_cast<int8_t*>(t.data) + at); break;
      default: std::memcpy(t.f32() + at, src, hd * sizeof(float));
    }
  };
  for (int64_t t = t0; t < t1; ++t)
    for (int64_t g = 0; g < KV; ++g) {
      const int64_t row = g * c.capacity + c.length + t, src = (t * KV + g) * hd;
      put(c.k[l], c.k_scale, row, k + src);
      put(c.v[l], c.v_scale, row, v + src);
      if (kg) put(c.kg[l], c.kg_scale, row, kg + src);
    }
}

// ctx = attention of every segment's queries q (and q2) over its cache: prompts one by one, the
// one-token segments together.
void attend_all(const AttentionParams& a, const Batch& b, bool cross, int layer, bool causal,
                const PositionScheme* scheme, const float* q, const float* q2, float* ctx) {
  const PartTimer timer(&StepTimes::attention);
  const int64_t row = a.n_heads * a.head_dim;
  thread_local std::vector<const Segment*> single;
  single.clear();
  for (const Segment& s : b.segs) {
    if (s.T == 1)
      single.push_back(&s);
    else
      attend_prompt(a, s, cross ? *s.cross : *s.self, cross, layer, causal, scheme, q + s.row0 * row, q2 + s.row0 * row,
                    ctx + s.row0 * row);
  }
  if (!single.empty()) attend_single(a, single, cross, layer, causal, scheme, q, q2, ctx);
}

}  // namespace

void self_attention(const AttentionParams& a, const AttentionWeights& w, const PositionScheme& scheme, const float* h,
                    const Batch& b, int layer, bool causal, float* out) {
  const int64_t H = a.n_heads, KV = a.n_kv_heads, hd = a.head_dim, R = b.rows;
  float* q = scratch(kScrQ, R * H * hd);
  float* q2 = q;  // queries at their alternate positions (Segment::keys on a rotating scheme)
  float* k = scratch(kScrK, R * KV * hd);
  float* v = scratch(kScrV, R * KV * hd);
  project(a.backend, b, h, a.d_model, {{&w.q, q}, {&w.k, k}, {&w.v, v}});
  {
    const PartTimer timer(&StepTimes::rope_and_cache);
    for (const Segment& s : b.segs) {
      float* sq = q + s.row0 * H * hd;
      float* sk = k + s.row0 * KV * hd;
      const float* sv = v + s.row0 * KV * hd;
      // Appended at slots [length, length + T); the step advances `length` after every layer.
      if (s.keys && s.keys->alternate_queries()) {
        if (q2 == q) q2 = scratch(kScrQ2, R * H * hd);
        float* kg = s.keys->second_keys() ? scratch(kScrKg, R * KV * hd) + s.row0 * KV * hd : nullptr;
        s.keys->rotate_alternates(scheme, sq, H, sk, KV, hd, s.pos, s.T, s.seq_len, q2 + s.row0 * H * hd, kg);
        scheme.rotate(sq, RotateTarget::Query, H, s.pos, s.T, s.seq_len);
        scheme.rotate(sk, RotateTarget::Key, KV, s.pos, s.T, s.seq_len);
        store_kv(a, s, layer, sk, sv, kg, 0, s.T);
        continue;
      }
      // A prompt's rows in parallel (each row is rotated for its own position; seq_len, the one
      // thing a scheme may read beyond the row, is passed whole): ~3% of a 512-token prefill serial.
      constexpr int64_t kRows = 32;
      parallel_items((s.T + kRows - 1) / kRows, s.T >= 2 * kRows && s.seq_len > 0, [&](int64_t item) {
        const int64_t t0 = item * kRows, n = std::min(kRows, s.T - t0);
        scheme.rotate(sq + t0 * H * hd, RotateTarget::Query, H, s.pos + t0, n, s.seq_len);
        scheme.rotate(sk + t0 * KV * hd, RotateTarget::Key, KV, s.pos + t0, n, s.seq_len);
        store_kv(a, s, layer, sk, sv, nullptr, t0, t0 + n);
      });
    }
  }
  float* ctx = scratch(kScrCtx, R * H * hd);
  attend_all(a, b, false, layer, causal, &scheme, q, q2, ctx);
  project(a.backend, b, ctx, H * hd, {{&w.out, out}});
}

void cross_attention(const AttentionParams& a, const AttentionWeights& w, const float* h, const Batch& b, int layer,
                     float* out) {
  const int64_t H = a.n_heads, hd = a.head_dim, R = b.rows;
  float* q = scratch(kScrQ, R * H * hd);
  project(a.backend, b, h, a.d_model, {{&w.q, q}});
  float* ctx = scratch(kScrCtx, R * H * hd);
  attend_all(a, b, true, layer, false, nullptr, q, q, ctx);
  project(a.backend, b, ctx, H * hd, {{&w.out, out}});
}

}  // namespace ordo::detail
