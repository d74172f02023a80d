// The Transformer: model setup, context limits, embedding, the layer stack, the encoder and the logits.
#include "ordo/transformer.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "attention.hpp"
#include "batch.hpp"
#include "kernels/gemm_backend.hpp"
#include "kv_cache_internal.hpp"
#include "ordo/quantize.hpp"
#include "scratch.hpp"
#include "step_timer.hpp"

namespace ordo {

using detail::Batch;
using detail::Segment;

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
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K: throw Error(std::string("embedding tables cannot be stored as ") + dtype_name(table.dtype));
  }
}

PositionContext position_context(const ModelSpec& s, bool causal) {
  PositionContext c;
  c.d_model = s.d_model;
  c.n_heads = s.n_heads;
  c.head_dim = s.head_dim;
  c.causal = causal;
  return c;
}

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
  if (dtype == DType::BF16 || is_block_dtype(dtype))
    throw Error(std::string("KV cache dtype must be f32, f16 or int8, not ") + weight_dtype_name(dtype));
  kv_dtype_ = dtype;
}

DType Transformer::default_kv_dtype(const ModelSpec& spec) {
  bool blocks = false;
  spec.for_each_linear([&](const Linear& l) { blocks = blocks || (l.present() && is_block_dtype(l.weight.dtype)); });
  return blocks ? DType::F16 : DType::F32;
}

void Transformer::set_position(const PositionConfig& cfg) {
  std::unique_ptr<PositionScheme> enc, dec;
  if (spec_.graph != GraphKind::Decoder)
    enc = make_position_scheme(cfg, position_context(spec_, false), spec_.encoder.position);
  if (spec_.graph != GraphKind::Encoder)
    dec = make_position_scheme(cfg, position_context(spec_, true), spec_.decoder.position);
  detail::KeyMap::check(cfg, dec.get(), spec_.architecture);
  spec_.position = cfg;
  enc_scheme_ = std::move(enc);
  dec_scheme_ = std::move(dec);
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
  const std::string why = context_limit_ > 0 ? "as set"
                          : spec_.position.max_positions > 0
                              ? std::to_string(kContextLimitFactor) + " x the trained length " +
                                    std::to_string(spec_.position.max_positions) +
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
  const detail::KeyMap keys(spec_.position, dec_scheme_.get());
  Sequence s;
  s.owner_ = serial_;
  s.owner_name_ = name();
  s.self = detail::make_kv_cache(static_cast<int64_t>(spec_.decoder.layers.size()), spec_.n_kv_heads, spec_.head_dim,
                                 capacity, kv_dtype_, keys.second_keys(), sized);
  keys.adopt(s);
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

void Transformer::feed_forward(const FeedForward& f, const float* h, const Batch& b, float* out) const {
  const int64_t d = spec_.d_model, n = f.up.out_features(), T = b.rows;
  float* up = detail::scratch(detail::kScrUp, T * n);
  if (f.gate.present()) {
    float* gate = detail::scratch(detail::kScrGate, T * n);
    detail::project(backend_, b, h, d, {{&f.gate, gate}, {&f.up, up}});
    gated_activate(f.act, gate, up, T * n);
    detail::project(backend_, b, gate, n, {{&f.down, out}});
  } else {
    detail::project(backend_, b, h, d, {{&f.up, up}});
    activate(f.act, up, T * n);
    detail::project(backend_, b, up, n, {{&f.down, out}});
  }
}

void Transformer::run_stack(const Stack& stack, const PositionScheme& scheme, float* x, const Batch& b,
                            std::vector<Tensor>* hidden) const {
  const int64_t d = spec_.d_model, R = b.rows;
  const int64_t L = static_cast<int64_t>(stack.layers.size());
  auto snapshot = [&](const float* src) {
    Tensor t = Tensor::zeros({R, d});
    std::memcpy(t.f32(), src, R * d * sizeof(float));
    hidden->push_back(std::move(t));
  };
  if (hidden) snapshot(x);
  for (int l = 0; l < static_cast<int>(L); ++l) {
    run_layer(stack.layers[static_cast<size_t>(l)], l, stack.causal && causal_, scheme, x, b);
    if (hidden && l + 1 < L) snapshot(x);
  }
  if (stack.final_norm.present) apply_norm(stack.final_norm, x, R, x);
  if (hidden) snapshot(x);
}

void Transformer::run_layer(const Layer& ly, int l, bool causal, const PositionScheme& scheme, float* x,
                            const Batch& b) const {
  const int64_t d = spec_.d_model, R = b.rows;
  const bool cross = !b.segs.empty() && b.segs[0].cross;
  detail::AttentionParams ap;
  ap.d_model = d;
  ap.n_heads = spec_.n_heads;
  ap.n_kv_heads = spec_.n_kv_heads;
  ap.head_dim = spec_.head_dim;
  ap.scale = spec_.attn_scale != 0.0f ? spec_.attn_scale : 1.0f / std::sqrt(static_cast<float>(spec_.head_dim));
  ap.backend = backend_;
  ap.observer = observer_ ? &observer_ : nullptr;
  float* const h = detail::scratch(detail::kScrH, R * d);
  float* const a = detail::scratch(detail::kScrA, R * d);
  float* const f = detail::scratch(detail::kScrF, R * d);
  if (spec_.pre_norm) {
    apply_norm(ly.attn_norm, x, R, h);
    detail::self_attention(ap, ly.self_attn, scheme, h, b, l, causal, a);
    if (spec_.parallel_residual) {
      if (ly.ffn_norm.present) apply_norm(ly.ffn_norm, x, R, h);
      feed_forward(ly.ffn, h, b, f);
      add_inplace(x, a, R * d);
      add_inplace(x, f, R * d);
    } else {
      add_inplace(x, a, R * d);
      if (cross) {
        apply_norm(ly.cross_norm, x, R, h);
        detail::cross_attention(ap, ly.cross_attn, h, b, l, a);
        add_inplace(x, a, R * d);
      }
      apply_norm(ly.ffn_norm, x, R, h);
      feed_forward(ly.ffn, h, b, f);
      add_inplace(x, f, R * d);
    }
  } else {  // post-norm
    detail::self_attention(ap, ly.self_attn, scheme, x, b, l, causal, a);
    add_inplace(x, a, R * d);
    apply_norm(ly.attn_norm, x, R, x);
    if (cross) {
      detail::cross_attention(ap, ly.cross_attn, x, b, l, a);
      add_inplace(x, a, R * d);
      apply_norm(ly.cross_norm, x, R, x);
    }
    feed_forward(ly.ffn, x, b, f);
    add_inplace(x, f, R * d);
    apply_norm(ly.ffn_norm, x, R, x);
  }
}

std::vector<Tensor> Transformer::encode_all(const std::vector<EncodeRequest>& requests,
                                            std::vector<Tensor>* hidden) const {
  if (spec_.graph == GraphKind::Decoder)
    throw Error(spec_.architecture + " is a decoder-only model: it has no encoder");
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
      throw Error("token type ids have " + std::to_string(r.token_types.size()) + " entries for " + std::to_string(T) +
                  " tokens");
    KVCache& c = caches[i];
    c = detail::make_kv_cache(static_cast<int64_t>(spec_.encoder.layers.size()), spec_.n_kv_heads, spec_.head_dim,
                              std::max<int64_t>(T, 1));
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
  seq.cross = detail::make_kv_cache(L, KV, hd, std::max<int64_t>(T, 1));
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

Tensor Transformer::logits(const float* h, int64_t T) const {
  const detail::PartTimer timer(&StepTimes::lm_head);
  const int64_t d = spec_.d_model;
  Tensor out = Tensor::uninitialized({T, spec_.vocab_size});  // every element is written below
  const LinearTarget head{&spec_.lm_head, out.f32()};
  if (spec_.logits_scale != 1.0f) {
    std::vector<float> hs(h, h + T * d);
    for (float& v : hs) v *= spec_.logits_scale;
    detail::linear_targets(backend_, hs.data(), T, d, &head, 1);
  } else {
    detail::linear_targets(backend_, h, T, d, &head, 1);
  }
  if (!spec_.final_logits_bias.empty())
    for (int64_t t = 0; t < T; ++t)
      add_inplace(out.f32() + t * spec_.vocab_size, spec_.final_logits_bias.f32(), spec_.vocab_size);
  return out;
}

}  // namespace ordo
