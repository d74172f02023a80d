#include "ordo/transformer.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernels/attention_kernels.hpp"
#include "kernels/big_alloc.hpp"
#include "kernels/gemm_backend.hpp"
#include "ordo/quantize.hpp"
#include "kernels/parallel_errors.hpp"
#include "kernels/team.hpp"

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
  kScrQ, kScrK, kScrV, kScrCtx, kScrScores, kScrKf, kScrVf, kScrUp, kScrGate, kScrH, kScrA, kScrF, kScrX,
  kScrQ2, kScrKg, kScrKgf, kScrScores2, kScrCount
};

float* scratch(Scratch role, int64_t n) {
  thread_local std::vector<float> bufs[kScrCount];
  std::vector<float>& b = bufs[role];
  if (b.size() < static_cast<size_t>(n)) b.resize(static_cast<size_t>(n));
  return b.data();
}

// The recording (StepTimes::Recording) alive on this thread, and the step it is timing now: parts
// are timed only inside a step, so an encoder forward under a recording adds nothing.
thread_local StepTimes* t_recording = nullptr;
thread_local StepTimes* t_step_times = nullptr;

using StepClock = std::chrono::steady_clock;
double seconds_since(StepClock::time_point t0) { return std::chrono::duration<double>(StepClock::now() - t0).count(); }

// Adds the wall time of its scope to one part of the step being recorded, if any.
class PartTimer {
 public:
  explicit PartTimer(double StepTimes::*part) : into_(t_step_times), part_(part) {
    if (into_) t0_ = StepClock::now();
  }
  ~PartTimer() {
    if (into_) into_->*part_ += seconds_since(t0_);
  }
  PartTimer(const PartTimer&) = delete;
  PartTimer& operator=(const PartTimer&) = delete;

 private:
  StepTimes* into_;
  double StepTimes::*part_;
  StepClock::time_point t0_;
};

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
    if (l.weight.empty() && l.panels) {  // values released after packing: the panels stand for them
      if (std::find(seen.begin(), seen.end(), l.panels.get()) == seen.end()) {
        seen.push_back(l.panels.get());
        n += l.weight.numel();
      }
    } else {
      add(l.weight);
    }
    add(l.bias);
  };
  auto add_norm = [&](const Norm& m) {
    add(m.weight);
    add(m.bias);
  };
  add(tok_embed);
  add(token_type_embed);
  add_norm(embed_norm);
  for (const Stack* st : {&encoder, &decoder}) {
    for (const Layer& l : st->layers)
      for (const Norm* m : {&l.attn_norm, &l.cross_norm, &l.ffn_norm}) add_norm(*m);
    add_norm(st->final_norm);
    for (const auto& named : st->position.tensors) add(named.second);
  }
  for_each_linear(add_lin);
  add(final_logits_bias);
  return n;
}

StepTimes::Recording::Recording(StepTimes& into) : previous_(t_recording) { t_recording = &into; }
StepTimes::Recording::~Recording() { t_recording = previous_; }

namespace {
std::atomic<uint64_t> g_next_serial{1};
}  // namespace

Transformer::Transformer(ModelSpec spec, Backend backend)
    : spec_(std::move(spec)), backend_(backend), serial_(g_next_serial.fetch_add(1)) {
  if (spec_.d_model <= 0 || spec_.n_heads <= 0 || spec_.head_dim <= 0 || spec_.vocab_size <= 0)
    throw Error("model spec: d_model, n_heads, head_dim and vocab_size must be positive");
  if (spec_.n_kv_heads <= 0) spec_.n_kv_heads = spec_.n_heads;
  if (spec_.n_heads % spec_.n_kv_heads != 0)
    throw Error("model spec: n_heads (" + std::to_string(spec_.n_heads) + ") is not a multiple of n_kv_heads (" +
                std::to_string(spec_.n_kv_heads) + ")");
  // The logits block is [T, vocab_size] and the head writes every element of it.
  const Tensor& head = spec_.lm_head.weight;
  if (spec_.lm_head.present() && (head.ndim() != 2 || head.dim(0) != spec_.vocab_size || head.dim(1) != spec_.d_model))
    throw Error("model spec: lm_head weight is " + head.shape_str() + ", expected [vocab_size " +
                std::to_string(spec_.vocab_size) + ", d_model " + std::to_string(spec_.d_model) + "]");
  pack_panels(spec_);
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
  const ContextExtension& e = cfg.extension;
  check_context_extension(e);
  if (e.active()) {
    const std::string what = e.self_extend() ? "self-extend (--self-extend)" : "sinks (--sinks/--window)";
    if (!dec) throw Error(what + " applies to a decoder's self-attention; " + spec_.architecture + " has no decoder");
    if (e.self_extend() && dec->embeds())
      throw Error(what + " does not apply to the " + cfg.scheme +
                  " scheme: its positions are added to the input embeddings, one per token for every query, "
                  "while Self-Extend sees a key at one position from near queries and another from far ones; "
                  "use sinks (--sinks K --window N) or a scheme acting in attention (rope, alibi, relative)");
    // Both scalings pick their frequencies from the sequence length: sinks hold that length at the
    // cache size, and Self-Extend keeps every distance seen within the trained length, so the
    // frequencies would be stretched for distances that never occur.
    if (cfg.scaling.type == ScalingType::Dynamic || cfg.scaling.type == ScalingType::LongRoPE)
      throw Error(what + " cannot be combined with " + scaling_name(cfg.scaling.type) +
                  " scaling: it picks its frequencies from the sequence length, which " +
                  (e.streaming() ? "sinks hold at the cache size" : "Self-Extend keeps within the trained length") +
                  "; use a static scaling (linear, ntk, yarn, llama3) or none");
  }
  spec_.position = cfg;
  enc_scheme_ = std::move(enc);
  dec_scheme_ = std::move(dec);
}

namespace {

// A tensor of this shape with no storage yet (place_in_one_block gives it some).
Tensor unplaced(std::vector<int64_t> shape, DType dtype) {
  Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

// Every tensor of ts as a view into one block (each 64-byte aligned): a decode step reads a
// sequence's whole cache and writes a row into every head of it. With huge_pages, a block of 2 MB or
// more goes on huge pages (detail::alloc_streamed; measured on 16 sequences: the reads 10-20%
// faster, the row writes 25-40%), which makes it resident in full once written to.
void place_in_one_block(const std::vector<Tensor*>& ts, bool huge_pages) {
  auto padded = [](const Tensor* t) { return (t->nbytes() + 63) / 64 * 64; };
  size_t total = 0;
  for (const Tensor* t : ts) total += padded(t);
  std::shared_ptr<void> block = detail::alloc_streamed(total, "a KV cache", huge_pages);
  size_t at = 0;
  for (Tensor* t : ts) {
    t->data = static_cast<char*>(block.get()) + at;
    t->owner = block;
    at += padded(t);
  }
}

}  // namespace

// Every tensor of a cache that holds one entry per slot, each [heads, capacity, ...]: keys and
// values (rows of hd), I8 row scales, Self-Extend's grouped keys and their scales.
static std::vector<Tensor*> slot_tensors(KVCache& c) {
  std::vector<Tensor*> out;
  for (size_t l = 0; l < c.k.size(); ++l) {
    out.insert(out.end(), {&c.k[l], &c.v[l]});
    if (l < c.k_scale.size()) out.insert(out.end(), {&c.k_scale[l], &c.v_scale[l]});
    if (l < c.kg.size()) out.push_back(&c.kg[l]);
    if (l < c.kg_scale.size()) out.push_back(&c.kg_scale[l]);
  }
  return out;
}

KVCache Transformer::make_cache(int64_t n_layers, int64_t capacity, DType dtype, bool grouped_keys,
                                bool filled) const {
  KVCache c;
  c.capacity = capacity;
  const std::vector<int64_t> rows{spec_.n_kv_heads, capacity, spec_.head_dim}, scales{spec_.n_kv_heads, capacity};
  for (int64_t l = 0; l < n_layers; ++l) {
    // Slots are written before they are read (attention reads [0, length) only).
    c.k.push_back(unplaced(rows, dtype));
    c.v.push_back(unplaced(rows, dtype));
    if (grouped_keys) c.kg.push_back(unplaced(rows, dtype));
    if (dtype == DType::I8) {
      c.k_scale.push_back(unplaced(scales, DType::F32));
      c.v_scale.push_back(unplaced(scales, DType::F32));
      if (grouped_keys) c.kg_scale.push_back(unplaced(scales, DType::F32));
    }
  }
  place_in_one_block(slot_tensors(c), filled);
  return c;
}

bool Transformer::grouped_keys() const {
  return dec_scheme_ && spec_.position.extension.self_extend() && dec_scheme_->rotates();
}

int64_t Transformer::context_limit() const {
  if (context_limit_ > 0) return context_limit_;
  const int64_t trained = spec_.position.max_positions;
  if (trained <= 0) return kDefaultContextLimit;
  const double factor = spec_.position.scaling.type != ScalingType::None ? spec_.position.scaling.factor : 1.0;
  return static_cast<int64_t>(static_cast<double>(trained) * kContextLimitFactor * std::max(1.0, factor));
}

void Transformer::set_context_limit(int64_t n) {
  if (n < 0) throw Error("context limit must be >= 0 (0: the default), got " + std::to_string(n));
  context_limit_ = n;
}

void Transformer::check_context(int64_t positions, const std::string& what) const {
  const int64_t limit = context_limit();
  if (positions <= limit) return;
  const std::string why = context_limit_ > 0 ? "as set" : spec_.position.max_positions > 0
      ? std::to_string(kContextLimitFactor) + " x the trained length " + std::to_string(spec_.position.max_positions) +
            (spec_.position.scaling.type != ScalingType::None ? " x the scaling factor" : "")
      : "the default for a model without a trained length";
  throw Error(what + " needs " + std::to_string(positions) + " positions, more than the context limit of " +
              std::to_string(limit) + " (" + why + "); use fewer tokens or raise the limit " +
              "(ordo -c/--ctx-size N, ModelOptions::context_limit)");
}

Sequence Transformer::new_sequence(int64_t capacity) const {
  const bool sized = capacity > 0;
  if (!sized) capacity = spec_.position.max_positions > 0 ? spec_.position.max_positions : 512;
  check_context(capacity, "a sequence");
  Sequence s;
  s.owner_ = serial_;
  s.owner_name_ = name();
  s.self = make_cache(static_cast<int64_t>(spec_.decoder.layers.size()), capacity, kv_dtype_, grouped_keys(), sized);
  s.extension = spec_.position.extension;
  return s;
}

std::string Transformer::name() const {
  return (label_.empty() ? spec_.architecture : label_) + " (model #" + std::to_string(serial_) + ")";
}

void Transformer::check_owner(const Sequence& seq, const std::string& what) const {
  if (seq.owner_ == serial_) return;
  if (seq.owner_ == 0)
    throw Error(what + ": this sequence was not made by a model (use new_sequence() of " + name() + ")");
  throw Error(what + ": this sequence was made by " + seq.owner_name_ + " and cannot be used with " + name() +
              "; a sequence belongs to the model whose new_sequence() made it");
}

void Sequence::truncate(int64_t n) {
  if (n < 0 || n > self.length)
    throw Error("Sequence::truncate: " + std::to_string(n) + " is outside [0, " + std::to_string(self.length) + "]");
  if (n == self.length) return;
  if (n > 0 && has_evicted()) throw Error("Sequence::truncate: attention sinks have dropped tokens from this sequence's cache, "
                                          "so its slots are no longer a prefix of the text; start a new sequence");
  const size_t k = static_cast<size_t>(n);
  self.length = n;
  self.positions.resize(k);
  self.valid.resize(k);
  tokens.resize(std::min(tokens.size(), k));
  token_valid.resize(std::min(token_valid.size(), k));
  // Real tokens take positions 0, 1, ... in order; padding takes none.
  next_position = std::count(self.valid.begin(), self.valid.end(), uint8_t{1});
}

bool Sequence::has_evicted() const {
  // Real tokens take positions 0, 1, ... in order; a gap means some were dropped.
  int64_t expected = 0;
  for (int64_t i = 0; i < self.length; ++i)
    if (self.valid[static_cast<size_t>(i)] && self.positions[static_cast<size_t>(i)] != expected++) return true;
  return false;
}

void Sequence::copy_from(const Sequence& other) {
  if (this == &other) return;
  if (owner_ != other.owner_)
    throw Error("Sequence::copy_from: the source sequence was made by " +
                (other.owner_ ? other.owner_name_ : std::string("no model")) + " and this one by " +
                (owner_ ? owner_name_ : std::string("no model")) + "; both must come from the same model");
  KVCache& c = self;
  const KVCache& o = other.self;
  if (o.length > c.capacity)
    throw Error("Sequence::copy_from: " + std::to_string(o.length) + " cached tokens do not fit in " +
                std::to_string(c.capacity) + " slots");
  std::vector<Tensor*> to = slot_tensors(c);
  const std::vector<Tensor*> from = slot_tensors(const_cast<KVCache&>(o));
  if (to.size() != from.size()) throw Error("Sequence::copy_from: the sequences' caches differ in layout");
  for (size_t i = 0; i < to.size(); ++i) {
    const Tensor& s = *from[i];
    if (s.dtype != to[i]->dtype || s.shape[0] != to[i]->shape[0])
      throw Error("Sequence::copy_from: the sequences' caches differ in layout");
    const int64_t heads = s.shape[0], row = s.numel() / (heads * o.capacity);  // elements per slot
    const size_t es = dtype_size(s.dtype) * static_cast<size_t>(row);
    auto dst = static_cast<char*>(to[i]->data);
    auto src = static_cast<const char*>(s.data);
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(dst + h * c.capacity * es, src + h * o.capacity * es, static_cast<size_t>(o.length) * es);
  }
  c.length = o.length;
  c.positions = o.positions;
  c.valid = o.valid;
  cross = other.cross;
  next_position = other.next_position;
  tokens = other.tokens;
  token_valid = other.token_valid;
  extension = other.extension;
}

// Grows a cache (keeping its contents) so that `needed` slots fit.
static void reserve_cache(KVCache& c, int64_t needed) {
  if (needed <= c.capacity) return;
  const int64_t cap = std::max(needed, c.capacity * 2);
  const std::vector<Tensor*> ts = slot_tensors(c);
  // The new tensors are placed and filled before any replaces its old one: an allocation that
  // throws leaves the cache as it was. Grown caches stay on 4 KB pages (up to half of it empty).
  std::vector<Tensor> grown;
  for (const Tensor* t : ts) {
    std::vector<int64_t> shape = t->shape;
    shape[1] = cap;
    grown.push_back(unplaced(std::move(shape), t->dtype));
  }
  std::vector<Tensor*> places;
  for (Tensor& t : grown) places.push_back(&t);
  place_in_one_block(places, false);
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& o = *ts[i];
    const int64_t heads = o.shape[0], row = o.numel() / (heads * c.capacity);  // elements per slot
    const size_t es = dtype_size(o.dtype);
    auto dst = static_cast<char*>(grown[i].data);
    auto src = static_cast<const char*>(o.data);
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(dst + h * cap * row * es, src + h * c.capacity * row * es, c.length * row * es);
  }
  for (size_t i = 0; i < ts.size(); ++i) *ts[i] = std::move(grown[i]);
  c.capacity = cap;
}

// Attention sinks: drops the cached keys the next query (text position `next`) no longer sees,
// every slot past the first `sinks` tokens and before the `window` − 1 most recent, moving the
// recent ones down. Keys stay rotated at their text positions (see attention()), so nothing is
// re-rotated; relative order is kept.
static void evict_for_sinks(KVCache& c, int64_t sinks, int64_t window, int64_t next) {
  int64_t keep_end = 0;  // slots [0, keep_end) are sinks
  while (keep_end < c.length && c.positions[static_cast<size_t>(keep_end)] < sinks) ++keep_end;
  int64_t recent = c.length;  // slots [recent, length) are within the window of `next`
  while (recent > keep_end && next - c.positions[static_cast<size_t>(recent - 1)] < window) --recent;
  if (recent == keep_end) return;
  const int64_t moved = c.length - recent;
  for (Tensor* t : slot_tensors(c)) {
    const int64_t heads = t->shape[0], row = t->numel() / (heads * c.capacity);
    const size_t es = dtype_size(t->dtype) * static_cast<size_t>(row);
    auto base = static_cast<char*>(t->data);
    for (int64_t h = 0; h < heads; ++h)
      std::memmove(base + (h * c.capacity + keep_end) * es, base + (h * c.capacity + recent) * es,
                   static_cast<size_t>(moved) * es);
  }
  c.positions.erase(c.positions.begin() + keep_end, c.positions.begin() + recent);
  c.valid.erase(c.valid.begin() + keep_end, c.valid.begin() + recent);
  c.length = keep_end + moved;
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

void Transformer::embed(const int32_t* ids, const int32_t* token_types, int64_t T, const int32_t* pos,
                        const PositionScheme& scheme, float* x) const {
  const int64_t d = spec_.d_model;
  const int64_t n_types = spec_.token_type_embed.empty() ? 0 : spec_.token_type_embed.dim(0);
  std::vector<float> row(n_types ? d : 0);
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
      const int32_t tt = token_types ? token_types[t] : 0;
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

namespace {

// What turning one query row's raw scores into probabilities needs to know.
struct ScoreRow {
  const PositionScheme* bias;  // null: no score bias
  const int32_t* key_pos;
  const uint8_t* key_valid;  // null: every key is real
  const Transformer::AttentionObserver* observer;  // null: nobody watches
  int layer;
  const ContextExtension* ext = nullptr;  // decoder self-attention under Self-Extend or sinks
};

// Where one query sees the cache slots [0, nk) under a context extension: slots [0, far_end) at
// the alternate assignment (Self-Extend: the grouped keys, from the query's grouped position;
// sinks: the sink tokens, from the query's slot in the cache), [far_end, near_begin) not at all
// (sinks: out of the window), [near_begin, nk) at their exact distance. Real tokens' positions
// grow with their slots, so each part is one run; padding (masked anyway) is skipped over.
struct KeyRegions {
  int64_t far_end = 0, near_begin = 0;
  int32_t far_qpos = 0;  // the query's position for the far keys
};

KeyRegions key_regions(const ContextExtension* e, int32_t pq, const int32_t* kpos, const uint8_t* valid, int64_t nk) {
  KeyRegions r;
  if (!e || !kpos) return r;
  auto real = [&](int64_t j) { return !valid || valid[j]; };
  if (e->self_extend()) {
    r.far_qpos = static_cast<int32_t>(e->grouped_query_position(pq));
    int64_t j = nk;
    while (j > 0 && !(real(j - 1) && int64_t{pq} - kpos[j - 1] >= e->neighbor)) --j;
    r.far_end = r.near_begin = j;
  } else if (e->streaming() && pq >= e->cache_size()) {
    r.far_qpos = static_cast<int32_t>(e->cache_position(pq));
    int64_t j = nk;
    while (j > 0 && !(real(j - 1) && int64_t{pq} - kpos[j - 1] >= e->window)) --j;
    r.near_begin = j;
    int64_t f = 0;
    while (f < r.near_begin && !(real(f) && kpos[f] >= e->sinks)) ++f;
    r.far_end = f;
  }
  return r;
}

// The padding mask of a cache's first `total` slots, or null when every key is real (the common
// case: no per-row mask pass).
const uint8_t* padding_of(const KVCache& c, int64_t total) {
  const uint8_t* v = c.valid.empty() ? nullptr : c.valid.data();
  return v && std::memchr(v, 0, static_cast<size_t>(total)) ? v : nullptr;
}

// Biases and masks a query's nk scores and exponentiates them (softmax without the division).
// Returns what the row's output Σ p_j v_j must be multiplied by: 1/Σ p (0 for a fully masked
// row), or 1 when an observer needed the probabilities normalised already.
float finish_scores(const ScoreRow& r, int64_t head, int32_t qpos, int64_t query_index, float* scores, int64_t nk,
                    const KeyRegions& kr = {}) {
  if (r.bias) {
    if (kr.far_end > 0) {
      const int32_t* far_pos = r.key_pos;
      if (r.ext->self_extend()) {  // the far keys' grouped positions
        thread_local std::vector<int32_t> grouped;
        grouped.resize(static_cast<size_t>(kr.far_end));
        for (int64_t j = 0; j < kr.far_end; ++j) grouped[static_cast<size_t>(j)] = static_cast<int32_t>(r.key_pos[j] / r.ext->group);
        far_pos = grouped.data();
      }
      r.bias->add_score_bias(scores, head, kr.far_qpos, far_pos, kr.far_end);
    }
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

// Calls f(K, V, Ks, Vs) with layer l's cache as float, uint16_t (F16) or int8_t (I8, with row
// scales Ks, Vs [KV, capacity]; null otherwise).
template <class F>
void with_cache(const KVCache& c, int l, F&& f) {
  const Tensor &K = c.k[static_cast<size_t>(l)], &V = c.v[static_cast<size_t>(l)];
  switch (K.dtype) {
    case DType::F16: return f(static_cast<const uint16_t*>(K.data), static_cast<const uint16_t*>(V.data), nullptr, nullptr);
    case DType::I8:
      return f(static_cast<const int8_t*>(K.data), static_cast<const int8_t*>(V.data),
               c.k_scale[static_cast<size_t>(l)].f32(), c.v_scale[static_cast<size_t>(l)].f32());
    default: return f(K.f32(), V.f32(), nullptr, nullptr);
  }
}

}  // namespace

void Transformer::store_kv(const Segment& s, int layer, const float* k, const float* v, const float* kg) const {
  const int64_t KV = spec_.n_kv_heads, hd = spec_.head_dim;
  KVCache& c = *s.self;
  const size_t l = static_cast<size_t>(layer);
  // Row `row` (= head · capacity + slot) of cache tensor t (scales rs for I8) from src.
  auto put = [&](Tensor& t, std::vector<Tensor>& rs, int64_t row, const float* src) {
    const int64_t at = row * hd;
    switch (t.dtype) {
      case DType::F16: detail::to_f16(src, hd, static_cast<uint16_t*>(t.data) + at); break;
      case DType::I8: rs[l].f32()[row] = detail::to_i8(src, hd, static_cast<int8_t*>(t.data) + at); break;
      default: std::memcpy(t.f32() + at, src, hd * sizeof(float));
    }
  };
  for (int64_t t = 0; t < s.T; ++t)
    for (int64_t g = 0; g < KV; ++g) {
      const int64_t row = g * c.capacity + c.length + t, src = (t * KV + g) * hd;
      put(c.k[l], c.k_scale, row, k + src);
      put(c.v[l], c.v_scale, row, v + src);
      if (kg) put(c.kg[l], c.kg_scale, row, kg + src);
    }
}

void Transformer::attend_single(const std::vector<const Segment*>& segs, bool cross, int layer, bool causal,
                                const PositionScheme* scheme, const float* q, const float* q2, float* ctx) const {
  const int64_t H = spec_.n_heads, hd = spec_.head_dim, group = H / spec_.n_kv_heads;
  const float scale = spec_.attn_scale != 0.0f ? spec_.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  const bool bias = scheme && scheme->has_score_bias();
  int64_t work = 0;
  for (const Segment* s : segs) work += H * (cross ? s->cross->length : s->self->length + 1) * hd;
  // Each (segment, head) reads its K and V rows once; they are handed out to the threads (the
  // decode step's team) unless the layer's keys have under 4096 elements in all.
  detail::parallel_items(static_cast<int64_t>(segs.size()) * H, work >= (1 << 12), [&](int64_t item) {
    const Segment& s = *segs[static_cast<size_t>(item / H)];
    const int64_t hh = item % H, g = hh / group;
    const KVCache& cache = cross ? *s.cross : *s.self;
    const int64_t base = cross ? 0 : cache.length;  // the query's own slot (self-attention)
    const int64_t total = cross ? cache.length : base + 1;
    const int64_t nk = causal ? base + 1 : total;
    const ScoreRow row{bias ? scheme : nullptr, cache.positions.empty() ? nullptr : cache.positions.data(),
                       padding_of(cache, total), observer_ && !cross ? &observer_ : nullptr, layer,
                       cross ? nullptr : s.ext};
    const KeyRegions kr = key_regions(row.ext, s.pos[0], row.key_pos, row.key_valid, nk);
    float* scores = scratch(kScrScores, total);
    const float* qh = q + (s.row0 * H + hh) * hd;
    float* out = ctx + (s.row0 * H + hh) * hd;
    std::memset(out, 0, static_cast<size_t>(hd) * sizeof(float));
    with_cache(cache, layer, [&](const auto* K, const auto* V, const float* Ks, const float* Vs) {
      const int64_t cap = cache.capacity, nb = kr.near_begin;
      if (kr.far_end > 0) {  // grouped keys (Self-Extend on a rotating scheme) or the plain ones
        const bool grouped = !cache.kg.empty();
        const auto* KF = grouped ? static_cast<decltype(K)>(cache.kg[static_cast<size_t>(layer)].data) : K;
        const float* KFs = grouped && Ks ? cache.kg_scale[static_cast<size_t>(layer)].f32() : Ks;
        detail::qk_scores(q2 + (s.row0 * H + hh) * hd, KF + g * cap * hd, KFs ? KFs + g * cap : nullptr, kr.far_end,
                          hd, scale, scores);
      }
      detail::qk_scores(qh, K + (g * cap + nb) * hd, Ks ? Ks + g * cap + nb : nullptr, nk - nb, hd, scale,
                        scores + nb);
      const float f = finish_scores(row, hh, s.pos[0], base, scores, nk, kr);
      detail::pv_accumulate(scores, V + g * cap * hd, Vs ? Vs + g * cap : nullptr, nk, hd, out);
      scale_row(out, hd, f);
    });
  });
}

void Transformer::attend_prompt(const Segment& s, const KVCache& cache, int layer, bool causal,
                                const PositionScheme* scheme, const float* q, const float* q2, float* ctx) const {
  const int64_t H = spec_.n_heads, KV = spec_.n_kv_heads, hd = spec_.head_dim, group = H / KV, T = s.T;
  const float scale = spec_.attn_scale != 0.0f ? spec_.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  const bool self = &cache == s.self;
  const int64_t base = self ? cache.length : 0;
  const int64_t total = self ? base + T : cache.length;
  const ScoreRow row{scheme && scheme->has_score_bias() ? scheme : nullptr,
                     cache.positions.empty() ? nullptr : cache.positions.data(), padding_of(cache, total),
                     observer_ && self ? &observer_ : nullptr, layer, self ? s.ext : nullptr};
  // Blocks of kQueryBlock query rows per head through two GEMMs, S = scale · Q_blk · K[0, kend)ᵀ
  // and ctx_blk = softmax(S) · V[0, kend), so the largest score buffer is kQueryBlock × keys per
  // thread, never T × T. Causal rows are zeroed past their last key, which makes the shared kend
  // exact for every row of the block.
  constexpr int64_t kQueryBlock = 64;
  const int64_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
  with_cache(cache, layer, [&](const auto* K, const auto* V, const float* Ks, const float* Vs) {
    int64_t stride = 0;
    const float* Kf = cache_as_f32(K, Ks, KV, cache.capacity, total, hd, kScrKf, stride);
    const float* Vf = cache_as_f32(V, Vs, KV, cache.capacity, total, hd, kScrVf, stride);
    const float* KFf = Kf;  // far keys (context extension): the grouped ones under Self-Extend on rope
    if (row.ext && !cache.kg.empty()) {
      const size_t l = static_cast<size_t>(layer);
      KFf = cache_as_f32(static_cast<decltype(K)>(cache.kg[l].data), Ks ? cache.kg_scale[l].f32() : nullptr, KV,
                         cache.capacity, total, hd, kScrKgf, stride);
    }
    detail::ParallelErrors errors;
#pragma omp parallel
    {
      float* S = nullptr;
      float* S2 = nullptr;
      // try/catch rather than errors.run's lambda: clang 14 cannot capture this function's locals
      // in a lambda inside an OpenMP region inside a generic lambda.
      try {
        S = scratch(kScrScores, std::min(T, kQueryBlock) * total);
        S2 = row.ext ? scratch(kScrScores2, std::min(T, kQueryBlock) * total) : nullptr;
      } catch (...) {
        errors.keep_current();
      }
#pragma omp for collapse(2) schedule(dynamic)
      for (int64_t hh = 0; hh < H; ++hh)
        for (int64_t b = 0; b < blocks; ++b) {
          if (!S) continue;  // this thread's scratch failed: the error is kept
          try {
            const int64_t g = hh / group;
            const int64_t t0 = b * kQueryBlock, m = std::min(kQueryBlock, T - t0);
            const int64_t kend = causal ? base + t0 + m : total;
            gemm_nt(backend_, m, kend, hd, scale, &q[(t0 * H + hh) * hd], H * hd, Kf + g * stride * hd, hd, 0.0f, S,
                    kend);
            KeyRegions kr[kQueryBlock];
            int64_t far = 0;
            for (int64_t i = 0; i < m; ++i) {
              kr[i] = key_regions(row.ext, s.pos[t0 + i], row.key_pos, row.key_valid, causal ? base + t0 + i + 1 : total);
              far = std::max(far, kr[i].far_end);
            }
            if (far > 0) {  // the far keys' scores from the queries at their alternate positions
              gemm_nt(backend_, m, far, hd, scale, &q2[(t0 * H + hh) * hd], H * hd, KFf + g * stride * hd, hd, 0.0f, S2,
                      far);
              for (int64_t i = 0; i < m; ++i)
                std::copy(S2 + i * far, S2 + i * far + kr[i].far_end, S + i * kend);
            }
            float row_scale[kQueryBlock];
            for (int64_t i = 0; i < m; ++i) {
              float* r = S + i * kend;
              const int64_t nk = causal ? base + t0 + i + 1 : total;
              row_scale[i] = finish_scores(row, hh, s.pos[t0 + i], base + t0 + i, r, nk, kr[i]);
              std::fill(r + nk, r + kend, 0.0f);
            }
            gemm_nn(backend_, m, hd, kend, 1.0f, S, kend, Vf + g * stride * hd, hd, 0.0f, &ctx[(t0 * H + hh) * hd],
                    H * hd);
            for (int64_t i = 0; i < m; ++i) scale_row(&ctx[((t0 + i) * H + hh) * hd], hd, row_scale[i]);
          } catch (...) {
            errors.keep_current();
          }
        }
    }
    errors.rethrow();
  });
}

void Transformer::project(const Batch& b, const float* x, int64_t K,
                          std::initializer_list<LinearTarget> targets) const {
  const PartTimer timer(&StepTimes::linears);
  constexpr size_t kMax = 4;
  if (targets.size() > kMax) throw Error("project: at most 4 weights per group");
  LinearTarget at[kMax];
  // The targets with their outputs moved to row r0.
  auto rows_from = [&](int64_t r0) {
    size_t i = 0;
    for (const LinearTarget& t : targets) at[i++] = LinearTarget{t.w, t.y + r0 * t.w->out_features()};
    return at;
  };
  if (b.single_rows > 0) detail::linear_targets(backend_, x, b.single_rows, K, rows_from(0), targets.size(), true);
  if (b.single_rows == b.rows) return;
  if (!b.prompts_alone) {
    detail::linear_targets(backend_, x + b.single_rows * K, b.rows - b.single_rows, K, rows_from(b.single_rows),
                           targets.size(), false);
    return;
  }
  for (const Segment& s : b.segs)
    if (s.row0 >= b.single_rows)
      detail::linear_targets(backend_, x + s.row0 * K, s.T, K, rows_from(s.row0), targets.size(), false);
}

void Transformer::attention(const AttentionWeights& w, const PositionScheme* scheme, const float* h, const Batch& b,
                            bool cross, int layer, bool causal, float* out) const {
  const int64_t H = spec_.n_heads, KV = spec_.n_kv_heads, hd = spec_.head_dim, d = spec_.d_model, R = b.rows;
  causal = causal && causal_ && !cross;
  float* q = scratch(kScrQ, R * H * hd);
  float* q2 = q;  // queries at their alternate positions (context extension on a rotating scheme)
  if (cross) {
    project(b, h, d, {{&w.q, q}});
  } else {
    float* k = scratch(kScrK, R * KV * hd);
    float* v = scratch(kScrV, R * KV * hd);
    project(b, h, d, {{&w.q, q}, {&w.k, k}, {&w.v, v}});
    const PartTimer timer(&StepTimes::rope_and_cache);
    for (const Segment& s : b.segs) {
      float* kg = nullptr;
      if (scheme && s.ext && scheme->rotates()) {
        // Context extension on a rotating scheme. Cached keys are rotated at their text positions,
        // so each far key's score comes from a second copy of the query rotated at its
        // alternate position: for sinks, the query's cache slot (every sink key is stored at its
        // own cache slot, and window keys keep their text distance, which equals their distance in
        // the cache); for Self-Extend, the grouped query position, against keys also stored
        // rotated at ⌊p/G⌋ — a grouped position is fixed per key, so it is rotated once, here,
        // instead of re-rotating every cached key for every query.
        if (q2 == q) q2 = scratch(kScrQ2, R * H * hd);
        thread_local std::vector<int32_t> alt;
        alt.resize(static_cast<size_t>(s.T));
        const ContextExtension& e = *s.ext;
        for (int64_t t = 0; t < s.T; ++t)
          alt[static_cast<size_t>(t)] = static_cast<int32_t>(
              e.self_extend() ? e.grouped_query_position(s.pos[t]) : e.cache_position(s.pos[t]));
        float* qa = q2 + s.row0 * H * hd;
        std::memcpy(qa, q + s.row0 * H * hd, static_cast<size_t>(s.T * H * hd) * sizeof(float));
        scheme->rotate(qa, RotateTarget::Query, H, alt.data(), s.T, s.seq_len);
        if (e.self_extend()) {
          for (int64_t t = 0; t < s.T; ++t) alt[static_cast<size_t>(t)] = static_cast<int32_t>(s.pos[t] / e.group);
          kg = scratch(kScrKg, R * KV * hd) + s.row0 * KV * hd;
          std::memcpy(kg, k + s.row0 * KV * hd, static_cast<size_t>(s.T * KV * hd) * sizeof(float));
          scheme->rotate(kg, RotateTarget::Key, KV, alt.data(), s.T, s.seq_len);
        }
      }
      if (scheme) {
        scheme->rotate(q + s.row0 * H * hd, RotateTarget::Query, H, s.pos, s.T, s.seq_len);
        scheme->rotate(k + s.row0 * KV * hd, RotateTarget::Key, KV, s.pos, s.T, s.seq_len);
      }
      // Appended at slots [length, length + T); the step advances `length` after every layer.
      store_kv(s, layer, k + s.row0 * KV * hd, v + s.row0 * KV * hd, kg);
    }
  }
  float* ctx = scratch(kScrCtx, R * H * hd);
  {
    const PartTimer timer(&StepTimes::attention);
    thread_local std::vector<const Segment*> single;
    single.clear();
    for (const Segment& s : b.segs) {
      if (s.T == 1)
        single.push_back(&s);
      else
        attend_prompt(s, cross ? *s.cross : *s.self, layer, causal, cross ? nullptr : scheme, q + s.row0 * H * hd,
                      q2 + s.row0 * H * hd, ctx + s.row0 * H * hd);
    }
    if (!single.empty()) attend_single(single, cross, layer, causal, cross ? nullptr : scheme, q, q2, ctx);
  }
  project(b, ctx, H * hd, {{&w.out, out}});
}


void Transformer::feed_forward(const FeedForward& f, const float* h, const Batch& b, float* out) const {
  const int64_t d = spec_.d_model, n = f.up.out_features(), T = b.rows;
  float* up = scratch(kScrUp, T * n);
  if (f.gate.present()) {
    float* gate = scratch(kScrGate, T * n);
    project(b, h, d, {{&f.gate, gate}, {&f.up, up}});
    gated_activate(f.act, gate, up, T * n);
    project(b, gate, n, {{&f.down, out}});
  } else {
    project(b, h, d, {{&f.up, up}});
    activate(f.act, up, T * n);
    project(b, up, n, {{&f.down, out}});
  }
}

void Transformer::run_stack(const Stack& stack, const PositionScheme& scheme, float* x, const Batch& b,
                            std::vector<Tensor>* hidden) const {
  const int64_t d = spec_.d_model, R = b.rows;
  const int64_t L = static_cast<int64_t>(stack.layers.size());
  const bool cross = !b.segs.empty() && b.segs[0].cross;
  float* const h = scratch(kScrH, R * d);
  float* const a = scratch(kScrA, R * d);
  float* const f = scratch(kScrF, R * d);
  auto snapshot = [&](const float* src) {
    Tensor t = Tensor::zeros({R, d});
    std::memcpy(t.f32(), src, R * d * sizeof(float));
    hidden->push_back(std::move(t));
  };
  if (hidden) snapshot(x);
  for (int l = 0; l < static_cast<int>(L); ++l) {
    const Layer& ly = stack.layers[static_cast<size_t>(l)];
    if (spec_.pre_norm) {
      apply_norm(ly.attn_norm, x, R, h);
      attention(ly.self_attn, &scheme, h, b, false, l, stack.causal, a);
      if (spec_.parallel_residual) {
        if (ly.ffn_norm.present) apply_norm(ly.ffn_norm, x, R, h);
        feed_forward(ly.ffn, h, b, f);
        add_inplace(x, a, R * d);
        add_inplace(x, f, R * d);
      } else {
        add_inplace(x, a, R * d);
        if (cross) {
          apply_norm(ly.cross_norm, x, R, h);
          attention(ly.cross_attn, nullptr, h, b, true, l, false, a);
          add_inplace(x, a, R * d);
        }
        apply_norm(ly.ffn_norm, x, R, h);
        feed_forward(ly.ffn, h, b, f);
        add_inplace(x, f, R * d);
      }
    } else {  // post-norm
      attention(ly.self_attn, &scheme, x, b, false, l, stack.causal, a);
      add_inplace(x, a, R * d);
      apply_norm(ly.attn_norm, x, R, x);
      if (cross) {
        attention(ly.cross_attn, nullptr, x, b, true, l, false, a);
        add_inplace(x, a, R * d);
        apply_norm(ly.cross_norm, x, R, x);
      }
      feed_forward(ly.ffn, x, b, f);
      add_inplace(x, f, R * d);
      apply_norm(ly.ffn_norm, x, R, x);
    }
    if (hidden && l + 1 < L) snapshot(x);
  }
  if (stack.final_norm.present) apply_norm(stack.final_norm, x, R, x);
  if (hidden) snapshot(x);
}

std::vector<Tensor> Transformer::encode_all(const std::vector<EncodeRequest>& requests,
                                            std::vector<Tensor>* hidden) const {
  if (spec_.graph == GraphKind::Decoder) throw Error(spec_.architecture + " is a decoder-only model: it has no encoder");
  const size_t n = requests.size();
  std::vector<KVCache> caches(n);
  Batch b;  // every input's rows together (an encoder generates nothing: rounding may differ from alone)
  std::vector<Segment>& segs = b.segs;
  segs.resize(n);
  int64_t R = 0;
  for (const EncodeRequest& r : requests) R += static_cast<int64_t>(r.ids.size());
  std::vector<int32_t> ids, types(static_cast<size_t>(R), 0);
  ids.reserve(static_cast<size_t>(R));
  for (size_t i = 0; i < n; ++i) {
    const EncodeRequest& r = requests[i];
    const int64_t T = static_cast<int64_t>(r.ids.size());
    if (!r.mask.empty() && static_cast<int64_t>(r.mask.size()) != T)
      throw Error("attention mask has " + std::to_string(r.mask.size()) + " entries for " + std::to_string(T) +
                  " tokens");
    if (!r.token_types.empty() && static_cast<int64_t>(r.token_types.size()) != T)
      throw Error("token type ids have " + std::to_string(r.token_types.size()) + " entries for " +
                  std::to_string(T) + " tokens");
    KVCache& c = caches[i];
    c = make_cache(static_cast<int64_t>(spec_.encoder.layers.size()), std::max<int64_t>(T, 1));
    c.positions.resize(static_cast<size_t>(T));
    c.valid.assign(static_cast<size_t>(T), 1);
    int32_t next = 0;
    for (int64_t t = 0; t < T; ++t) {
      const bool real = r.mask.empty() || r.mask[static_cast<size_t>(t)];
      c.valid[static_cast<size_t>(t)] = real;
      c.positions[static_cast<size_t>(t)] = real ? next++ : 0;
    }
    if (next > 0) enc_scheme_->check_positions(next - 1);
    const int64_t row0 = static_cast<int64_t>(ids.size());
    std::copy(r.token_types.begin(), r.token_types.end(), types.begin() + row0);
    ids.insert(ids.end(), r.ids.begin(), r.ids.end());
    segs[i] = Segment{row0, T, c.positions.data(), &c, nullptr, std::max<int32_t>(next, 1)};
  }
  std::vector<int32_t> pos(static_cast<size_t>(R));
  for (const Segment& s : segs) std::copy(s.pos, s.pos + s.T, pos.begin() + s.row0);
  Tensor x = Tensor::zeros({R, spec_.d_model});
  embed(ids.data(), types.data(), R, pos.data(), *enc_scheme_, x.f32());
  b.rows = R;
  if (R > 0) run_stack(spec_.encoder, *enc_scheme_, x.f32(), b, hidden);
  if (n == 1) return {std::move(x)};
  std::vector<Tensor> out;
  for (const Segment& s : segs) {
    Tensor t = Tensor::zeros({s.T, spec_.d_model});
    std::memcpy(t.f32(), x.f32() + s.row0 * spec_.d_model, static_cast<size_t>(s.T * spec_.d_model) * sizeof(float));
    out.push_back(std::move(t));
  }
  return out;
}

Tensor Transformer::encode(const std::vector<int32_t>& ids, const std::vector<int32_t>& token_types,
                           const std::vector<uint8_t>& mask, std::vector<Tensor>* hidden) const {
  return std::move(encode_all({EncodeRequest{ids, token_types, mask}}, hidden)[0]);
}

std::vector<Tensor> Transformer::encode_batch(const std::vector<EncodeRequest>& requests) const {
  return encode_all(requests, nullptr);
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
  check_owner(seq, "attach_encoder");
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

void Transformer::check_step(const std::vector<StepInput>& in, Batch& b) const {
  b.segs.resize(in.size());
  b.rows = b.single_rows = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const StepInput& r = in[i];
    if (!r.seq) throw Error("decode: request " + std::to_string(i) + " has no sequence");
    if (r.seq->owner() != serial_)  // the message is only built on failure: this runs every step
      check_owner(*r.seq, in.size() > 1 ? "decode_batch: request " + std::to_string(i) : std::string("decode"));
    if (r.T <= 0) throw Error("decode: no tokens");
    if (spec_.graph == GraphKind::EncoderDecoder && r.seq->cross.k.empty())
      throw Error("encoder-decoder decode needs the encoder output: call attach_encoder first");
    for (size_t j = 0; j < i; ++j)
      if (in[j].seq == r.seq) throw Error("decode_batch: one sequence appears in requests " + std::to_string(j) +
                                          " and " + std::to_string(i));
    b.rows += r.T;
    b.single_rows += r.T == 1;
  }
}

std::vector<int64_t> Transformer::place_step(const std::vector<StepInput>& in, Batch& b, std::vector<int32_t>& ids,
                                             std::vector<int32_t>& pos) const {
  ids.resize(static_cast<size_t>(b.rows));
  pos.resize(static_cast<size_t>(b.rows));
  const ContextExtension& ext = spec_.position.extension;
  const ContextExtension* seg_ext = ext.active() ? &ext : nullptr;
  std::vector<int64_t> next(in.size());
  // One-token requests take the first rows, in request order, then the prompts.
  int64_t single_row = 0, prompt_row = b.single_rows;
  for (size_t i = 0; i < in.size(); ++i) {
    const StepInput& r = in[i];
    Sequence& seq = *r.seq;
    KVCache& cache = seq.self;
    if (seq.extension != ext)
      throw Error("this sequence was created with context extension '" + seq.extension.describe() +
                  "' and the model is now set to '" + ext.describe() + "'; start a new sequence");
    if (ext.streaming()) {
      if (r.mask && std::find(r.mask, r.mask + r.T, uint8_t{0}) != r.mask + r.T)
        throw Error("sinks (--sinks/--window): padded input (an attention mask with 0) is not supported");
      if (seq.next_position + r.T > std::numeric_limits<int32_t>::max())
        throw Error("sinks: the sequence has reached 2^31 positions");
      evict_for_sinks(cache, ext.sinks, ext.window, seq.next_position);
    }
    const int64_t base = cache.length;
    const int64_t row0 = r.T == 1 ? single_row++ : prompt_row;
    if (r.T > 1) prompt_row += r.T;
    int64_t nx = seq.next_position;
    for (int64_t t = 0; t < r.T; ++t) {
      const bool real = !r.mask || r.mask[t];
      pos[static_cast<size_t>(row0 + t)] = real ? static_cast<int32_t>(nx++) : 0;
    }
    if (nx > seq.next_position)
      dec_scheme_->check_positions(ext.streaming() ? ext.cache_position(nx - 1) : nx - 1);
    std::copy(r.ids, r.ids + r.T, ids.begin() + row0);
    reserve_cache(cache, base + r.T);
    cache.positions.resize(static_cast<size_t>(base + r.T));
    cache.valid.resize(static_cast<size_t>(base + r.T));
    for (int64_t t = 0; t < r.T; ++t) {
      cache.positions[static_cast<size_t>(base + t)] = pos[static_cast<size_t>(row0 + t)];
      cache.valid[static_cast<size_t>(base + t)] = r.mask ? r.mask[t] : 1;
    }
    next[i] = nx;
    b.segs[i] = Segment{row0, r.T, pos.data() + row0, &cache,
                        spec_.graph == GraphKind::EncoderDecoder ? &seq.cross : nullptr, std::max<int64_t>(nx, 1),
                        seg_ext};
  }
  return next;
}

const int32_t* Transformer::embed_positions(const std::vector<int32_t>& pos) const {
  // Sinks on a scheme that embeds positions: each token is embedded at its cache slot (what it is
  // seen at when it arrives), min(t, K + N − 1), and keeps that embedding while cached.
  const ContextExtension& ext = spec_.position.extension;
  if (!ext.streaming() || !dec_scheme_->embeds()) return pos.data();
  thread_local std::vector<int32_t> embed_pos;
  embed_pos.resize(pos.size());
  for (size_t t = 0; t < pos.size(); ++t)
    embed_pos[t] = static_cast<int32_t>(ext.cache_position(pos[t]));
  return embed_pos.data();
}

// Logits: one row per sequence (Last, or a one-token All) gathered through the matvec kernels, so
// each is the row it gets alone; a prompt's rows (All) as alone, or shared.
void Transformer::step_outputs(const std::vector<StepInput>& in, const Batch& b, const float* x,
                               std::vector<ForwardOutput>& out) const {
  const int64_t d = spec_.d_model;
  const bool prompts_alone = b.prompts_alone;
  auto one_row = [&](size_t i) { return in[i].which == LogitsFor::Last || (in[i].which == LogitsFor::All && in[i].T == 1); };
  int64_t n_single = 0, n_shared = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (one_row(i)) ++n_single;
    else if (in[i].which == LogitsFor::All && !prompts_alone) n_shared += in[i].T;
  }
  float* rows = scratch(kScrH, (n_single + n_shared) * d);
  int64_t g = 0, h = n_single;
  for (size_t i = 0; i < in.size(); ++i) {
    const Segment& s = b.segs[i];
    const float* xs = x + s.row0 * d;
    if (one_row(i)) {
      std::memcpy(rows + g++ * d, xs + (s.T - 1) * d, static_cast<size_t>(d) * sizeof(float));
    } else if (in[i].which == LogitsFor::None) {
      out[i].final_hidden = Tensor::zeros({s.T, d});
      std::memcpy(out[i].final_hidden.f32(), xs, static_cast<size_t>(s.T * d) * sizeof(float));
    } else if (prompts_alone) {
      out[i].logits = logits_of(xs, s.T, false);
    } else {
      std::memcpy(rows + h * d, xs, static_cast<size_t>(s.T * d) * sizeof(float));
      h += s.T;
    }
  }
  // Each sequence's logits are its rows of one block (views, not copies).
  const Tensor single = n_single ? logits_of(rows, n_single, true) : Tensor{};
  const Tensor shared = n_shared ? logits_of(rows + n_single * d, n_shared, false) : Tensor{};
  g = 0;
  h = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (one_row(i)) {
      out[i].logits = single.rows(g, g + 1);
      ++g;
    } else if (in[i].which == LogitsFor::All && !prompts_alone) {
      out[i].logits = shared.rows(h, h + in[i].T);
      h += in[i].T;
    }
  }
}

void Transformer::advance(const std::vector<StepInput>& in, const std::vector<int64_t>& next) {
  for (size_t i = 0; i < in.size(); ++i) {
    const StepInput& r = in[i];
    Sequence& seq = *r.seq;
    seq.self.length += r.T;
    seq.next_position = next[i];
    seq.tokens.insert(seq.tokens.end(), r.ids, r.ids + r.T);
    for (int64_t t = 0; t < r.T; ++t) seq.token_valid.push_back(r.mask ? r.mask[t] : 1);
  }
}

std::vector<ForwardOutput> Transformer::step(const std::vector<StepInput>& in, std::vector<Tensor>* hidden,
                                             bool prompts_alone) const {
  if (spec_.graph == GraphKind::Encoder) throw Error(spec_.architecture + " is an encoder-only model: it cannot decode");
  // Timed when a recording is alive on this thread (StepTimes); a step that throws adds nothing.
  struct Timing {
    StepTimes* into = t_recording;
    StepTimes* outer = t_step_times;
    StepTimes parts;
    StepClock::time_point t0 = into ? StepClock::now() : StepClock::time_point{};
    Timing() { t_step_times = into ? &parts : nullptr; }
    ~Timing() { t_step_times = outer; }
  } timing;
  // Reused across steps: once warm, a decode step allocates little beyond its outputs.
  thread_local Batch b;
  thread_local std::vector<int32_t> ids, pos;
  check_step(in, b);
  b.prompts_alone = prompts_alone;
  const std::vector<int64_t> next = place_step(in, b, ids, pos);
  const int32_t* epos = embed_positions(pos);
  std::vector<ForwardOutput> out(in.size());
  auto forward = [&] {
    float* x = scratch(kScrX, b.rows * spec_.d_model);
    embed(ids.data(), nullptr, b.rows, epos, *dec_scheme_, x);
    run_stack(spec_.decoder, *dec_scheme_, x, b, hidden);
    step_outputs(in, b, x, out);
  };
  // Only one-token sequences: every parallel loop of the step is one of ours (the matvec kernels,
  // no GEMM), so the threads stay in one region for the whole step instead of waking for each of
  // its ~60 loops.
  if (b.single_rows == b.rows)
    detail::run_as_team(forward);
  else
    forward();
  advance(in, next);
  if (StepTimes* r = timing.into) {
    r->total += seconds_since(timing.t0);
    r->linears += timing.parts.linears;
    r->attention += timing.parts.attention;
    r->rope_and_cache += timing.parts.rope_and_cache;
    r->lm_head += timing.parts.lm_head;
    ++r->steps;
  }
  return out;
}

ForwardOutput Transformer::decode(Sequence& seq, const std::vector<int32_t>& ids, const std::vector<uint8_t>& mask,
                                  LogitsFor which, bool want_hidden) const {
  const int64_t T = static_cast<int64_t>(ids.size());
  if (!mask.empty() && static_cast<int64_t>(mask.size()) != T)
    throw Error("attention mask has " + std::to_string(mask.size()) + " entries for " + std::to_string(T) + " tokens");
  ForwardOutput out;
  ForwardOutput r = std::move(step({StepInput{&seq, ids.data(), T, mask.empty() ? nullptr : mask.data(), which}},
                                   want_hidden ? &out.hidden : nullptr, true)[0]);
  out.logits = std::move(r.logits);
  out.final_hidden = std::move(r.final_hidden);
  return out;
}

std::vector<ForwardOutput> Transformer::decode_batch(const std::vector<DecodeRequest>& requests,
                                                     PromptRows prompts) const {
  std::vector<StepInput> in;
  in.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const DecodeRequest& r = requests[i];
    const int64_t T = static_cast<int64_t>(r.ids.size());
    if (!r.mask.empty() && static_cast<int64_t>(r.mask.size()) != T)
      throw Error("decode_batch: request " + std::to_string(i) + ": attention mask has " +
                  std::to_string(r.mask.size()) + " entries for " + std::to_string(T) + " tokens");
    in.push_back(StepInput{r.seq, r.ids.data(), T, r.mask.empty() ? nullptr : r.mask.data(), r.which});
  }
  return step(in, nullptr, prompts == PromptRows::Alone);
}


Tensor Transformer::logits(const float* h, int64_t T) const { return logits_of(h, T, false); }

Tensor Transformer::logits_of(const float* h, int64_t T, bool matvec) const {
  const PartTimer timer(&StepTimes::lm_head);
  const int64_t d = spec_.d_model;
  Tensor out = Tensor::uninitialized({T, spec_.vocab_size});  // every element is written below
  const LinearTarget head{&spec_.lm_head, out.f32()};
  if (spec_.logits_scale != 1.0f) {
    std::vector<float> hs(h, h + T * d);
    for (float& v : hs) v *= spec_.logits_scale;
    detail::linear_targets(backend_, hs.data(), T, d, &head, 1, matvec);
  } else {
    detail::linear_targets(backend_, h, T, d, &head, 1, matvec);
  }
  if (!spec_.final_logits_bias.empty())
    for (int64_t t = 0; t < T; ++t) add_inplace(out.f32() + t * spec_.vocab_size, spec_.final_logits_bias.f32(), spec_.vocab_size);
  return out;
}

}  // namespace ordo
