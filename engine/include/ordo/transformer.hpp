// The forward pass: one graph for decoder-only, encoder-only and encoder-decoder models.
//
//   x = embed(ids)                          [T, d]   token (+ token type) (+ scheme (1)), embed_norm
//   for each layer:
//     pre-norm:  x += attn(n1(x)); [x += cross(nc(x))]; x += ffn(n2(x))
//     parallel:  x += attn(n1(x)) + ffn(n2(x) or n1(x))
//     post-norm: x = n1(x + attn(x)); [x = nc(x + cross(x))]; x = n2(x + ffn(x))
//   h = final_norm(x); logits = (h · logits_scale) · Wᵀ + b
//
// attn(h): q = h·Wqᵀ [T, H, hd], k/v = h·Wk/vᵀ [T, KV, hd]; scheme (2) rotates q and k; k, v are
// appended to the KV cache; per head, per query row: s_j = scale · q·k_j + scheme (3) bias, masked
// (causal, padding), softmax, Σ p_j v_j.
//
// Attention's memory beyond the KV caches and the rows' q, k, v and context (scratch buffers, per
// thread, that keep the largest size they reached: a warm decode step allocates only its outputs):
// a one-token query keeps one score row over its keys; a prompt's queries go in blocks of 64 rows
// per head, each a 64 × keys score block (a second one under context extension), never T × T. A
// prompt over an F16 or I8 cache first widens that layer's cached keys and values to F32:
// 2 × n_kv_heads × keys × head_dim floats (3 × with Self-Extend's grouped keys), on the calling
// thread, read by all of the layer's threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ordo/kv_cache.hpp"
#include "ordo/ops.hpp"
#include "ordo/position.hpp"
#include "ordo/spec.hpp"
#include "ordo/step_times.hpp"
#include "ordo/tensor.hpp"

namespace ordo {

namespace detail {
struct Batch;  // the rows of one forward (engine/src/batch.hpp)
class KeyMap;  // where each query sees each key (engine/src/context_extension.hpp)
}  // namespace detail

// Which rows of logits a decoder forward computes.
enum class LogitsFor { All, Last, None };

// One sequence's share of a batched decoder step (Transformer::decode_batch).
struct DecodeRequest {
  Sequence* seq = nullptr;
  std::vector<int32_t> ids;   // tokens to append: a whole prompt, or one decode token (>= 1)
  std::vector<uint8_t> mask;  // 0 marks padding; empty: every token is real
  LogitsFor which = LogitsFor::Last;
};

// How Transformer::decode_batch runs prompts (requests of more than one token) through the linear
// layers. One-token requests always run together, each with the bits it gets alone.
enum class PromptRows {
  Alone,   // each prompt as it runs alone: the same bits as decode() (generation gets the same ids)
  Shared,  // every prompt's rows in one pass, each weight read once (scoring many short texts);
           // equal to alone up to float rounding
};

// One input of a batched encoder forward (Transformer::encode_batch).
struct EncodeRequest {
  std::vector<int32_t> ids;
  std::vector<int32_t> token_types;  // may be empty
  std::vector<uint8_t> mask;         // 1 real, 0 padding; empty: all real
};

struct ForwardOutput {
  // [T, vocab], [1, vocab] (Last) or empty (None). A step's one-row logits (Last, or a one-token
  // All) are views of one block shared by its outputs, as are the rows of prompts scored together
  // (PromptRows::Shared): keeping one keeps that block alive, and a view's data is not 64-byte
  // aligned.
  Tensor logits;
  Tensor final_hidden;         // [T, d] after the final norm (None only: compute logits in chunks)
  std::vector<Tensor> hidden;  // hidden states as the fixtures define them (when asked)
};

class Transformer {
 public:
  // Packs every linear of the spec (pack_panels(ModelSpec&)): a linear weight held by this spec
  // alone (moved in, not copied) keeps its shape and dtype but not its values, so the model is
  // held once, in panels.
  explicit Transformer(ModelSpec spec, Backend backend = Backend::OpenBLAS);

  const ModelSpec& spec() const { return spec_; }
  // Process-unique and never reused (a model allocated where a destroyed one was gets a new
  // one): the identity a Sequence keeps of the model that made it.
  uint64_t serial() const { return serial_; }
  // How errors name this model: "<label> (model #<serial>)", the label being set_label's (the
  // model directory, for a loaded Model) or else the architecture.
  std::string name() const;
  void set_label(std::string label) { label_ = std::move(label); }
  // Error naming both models unless seq was made by this one (new_sequence); `what` names the call.
  void check_owner(const Sequence& seq, const std::string& what) const;
  void set_backend(Backend b) { backend_ = b; }

  // Replaces the position scheme and/or its scaling (ablations, long context).
  // Throws Error if the weights cannot support it (e.g. no learned table).
  void set_position(const PositionConfig& cfg);
  const PositionScheme& decoder_scheme() const { return *dec_scheme_; }
  // The decoder's context extension (Self-Extend or sinks), set with the rest of the position
  // config (PositionConfig::extension). Sequences created under one setting must not be fed under
  // another.
  const ContextExtension& context_extension() const { return spec_.position.extension; }

  // ---- Probes (`ordo compare`); neither changes results while left at its default. ----
  // false: self-attention is bidirectional (every query sees every key of the sequence, later
  // ones too) — for permutation-equivariance probes, not for generation. Default true.
  void set_causal(bool causal) { causal_ = causal; }
  bool causal() const { return causal_; }
  // Called for every self-attention row after softmax: probabilities over cache slots [0, nk)
  // for the query in slot query_index (slot = position when there is no padding). Calls are
  // serialized (an OpenMP critical section), so the observer needs no locking of its own, but it
  // must not call back into this Transformer. Empty (the default) costs nothing.
  using AttentionObserver =
      std::function<void(int64_t layer, int64_t head, int64_t query_index, const float* probs, int64_t nk)>;
  void set_attention_observer(AttentionObserver observer) { observer_ = std::move(observer); }

  // Storage of the decoder's self-attention KV cache for sequences created after the call: F32
  // (default, exact), F16 (half the memory and cache reads per decode step; keys and values are
  // rounded to F16, ~3 significant digits, and beyond ±65504 become ±inf) or I8 (a quarter, plus
  // one F32 scale per head and token; each key/value row is rounded to 127 steps of its largest
  // magnitude). Attention arithmetic stays F32. Throws Error for BF16.
  void set_kv_dtype(DType dtype);
  DType kv_dtype() const { return kv_dtype_; }
  // The KV cache dtype a model runs with unless told otherwise: F16 when its linear weights are
  // Q8_0 / Q4_0 / Q4_K blocks (llama.cpp's default; a batch of decode steps then reads about as many cache
  // bytes as weight bytes, and F16 halves them), F32 otherwise. docs/performance.md has the figures.
  static DType default_kv_dtype(const ModelSpec& spec);

  // The most positions one sequence may hold, checked before its KV cache is allocated. Default:
  // kContextLimitFactor x the trained length (position.max_positions x the scaling factor, when
  // above 1), enough to study extrapolation; kDefaultContextLimit when the length is unknown.
  // set_context_limit(n > 0) replaces it, 0 restores the default.
  static constexpr int64_t kContextLimitFactor = 16;
  static constexpr int64_t kDefaultContextLimit = int64_t{1} << 20;
  int64_t context_limit() const;
  void set_context_limit(int64_t n);
  // Error saying the limit and how to raise it unless `positions` <= context_limit().
  void check_context(int64_t positions, const std::string& what) const;

  // A fresh decoding state with room for `capacity` tokens (0: the model's trained length);
  // Error beyond context_limit(). A cache given its capacity is taken as sized for its request:
  // it goes on 2 MB pages (faster decoding) and is resident in full once written to; with 0 its
  // memory grows 4 KB at a time as it fills.
  Sequence new_sequence(int64_t capacity = 0) const;

  // Encoder forward (Encoder / EncoderDecoder). mask: 1 real, 0 padding (empty: all real);
  // token_types may be empty. Returns the final hidden state [T, d].
  Tensor encode(const std::vector<int32_t>& ids, const std::vector<int32_t>& token_types,
                const std::vector<uint8_t>& mask, std::vector<Tensor>* hidden = nullptr) const;
  // BERT pooler: tanh(pooler(h[0])) → [d].
  Tensor pool(const Tensor& encoder_out) const;

  // Encoder-decoder: stores the encoder output's keys/values for every decoder layer in seq.
  void attach_encoder(Sequence& seq, const Tensor& encoder_out, const std::vector<uint8_t>& mask) const;

  // Decoder forward: appends ids to seq (mask 0 marks padding), returns logits of the new
  // positions as `which` asks, and hidden states of the new positions if asked.
  ForwardOutput decode(Sequence& seq, const std::vector<int32_t>& ids, const std::vector<uint8_t>& mask = {},
                       LogitsFor which = LogitsFor::All, bool want_hidden = false) const;

  // Advances several sequences in one forward step (continuous batching): each request appends
  // its tokens (a new prompt of any length, or one decode token) to its own sequence. The
  // one-token requests' rows go through each weight together (read once per step for all of
  // them), prompts as `prompts` says; attention runs per sequence over its own cache, positions
  // and scheme state (dynamic NTK and LongRoPE see that sequence's length). out[i] is bit for bit
  // what decode() of request i alone returns, except for prompts under PromptRows::Shared (float
  // rounding). The sequences must be distinct. No hidden states.
  std::vector<ForwardOutput> decode_batch(const std::vector<DecodeRequest>& requests,
                                          PromptRows prompts = PromptRows::Alone) const;

  // encode() of several inputs in one forward: final hidden state [T_i, d] of each.
  std::vector<Tensor> encode_batch(const std::vector<EncodeRequest>& requests) const;

  // Logits for hidden rows h [T, d] (after the final norm).
  Tensor logits(const float* h, int64_t T) const;

 private:
  // One sequence's tokens in a decoder step (decode and decode_batch without copying ids).
  struct StepInput {
    Sequence* seq;
    const int32_t* ids;
    int64_t T;
    const uint8_t* mask;  // null: all real
    LogitsFor which;
  };
  // The batched decoder step (step.cpp).
  std::vector<ForwardOutput> step(const std::vector<StepInput>& in, std::vector<Tensor>* hidden,
                                  bool prompts_alone) const;
  // step()'s parts: the requests checked and sized into b; their rows placed (ids, positions, cache
  // slots; returns each sequence's next position); the logits each request asks for from the final
  // hidden rows x; the sequences advanced once the step has run.
  void check_step(const std::vector<StepInput>& in, detail::Batch& b) const;
  std::vector<int64_t> place_step(const std::vector<StepInput>& in, const detail::KeyMap& keys, detail::Batch& b,
                                  std::vector<int32_t>& ids, std::vector<int32_t>& pos) const;
  void step_outputs(const std::vector<StepInput>& in, const detail::Batch& b, const float* x,
                    std::vector<ForwardOutput>& out) const;
  static void advance(const std::vector<StepInput>& in, const std::vector<int64_t>& next);

  // The forward's parts (transformer.cpp).
  void embed(const int32_t* ids, const int32_t* token_types, int64_t T, const int32_t* pos,
             const PositionScheme& scheme, float* x) const;
  void run_stack(const Stack& stack, const PositionScheme& scheme, float* x, const detail::Batch& b,
                 std::vector<Tensor>* hidden) const;
  // One layer of run_stack: attention (self, then cross when the batch has encoder keys) and the
  // feed-forward, with the residuals and norms of spec_'s layout.
  void run_layer(const Layer& ly, int layer, bool causal, const PositionScheme& scheme, float* x,
                 const detail::Batch& b) const;
  void feed_forward(const FeedForward& f, const float* h, const detail::Batch& b, float* out) const;
  void apply_norm(const Norm& n, const float* x, int64_t T, float* y) const;
  std::vector<Tensor> encode_all(const std::vector<EncodeRequest>& requests, std::vector<Tensor>* hidden) const;

  ModelSpec spec_;
  Backend backend_;
  std::unique_ptr<PositionScheme> enc_scheme_, dec_scheme_;
  bool causal_ = true;
  DType kv_dtype_ = DType::F32;
  int64_t context_limit_ = 0;  // 0: the default
  AttentionObserver observer_;
  uint64_t serial_;
  std::string label_;
};

}  // namespace ordo
