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
// (causal, padding), softmax, Σ p_j v_j. Memory beyond the cache is O(T) per head (one score row).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ordo/ops.hpp"
#include "ordo/position.hpp"
#include "ordo/spec.hpp"
#include "ordo/tensor.hpp"

namespace ordo {

// Keys and values of one attention stack, preallocated: per layer [n_kv, capacity, hd], F32 or
// (decoder self-attention, Transformer::set_kv_dtype) F16 or I8. An I8 row r of head g stands for
// k_scale[g, r] · k[g, r, :] (symmetric, one scale per head and token).
struct KVCache {
  std::vector<Tensor> k, v;
  std::vector<Tensor> k_scale, v_scale;  // I8 only: per layer [n_kv, capacity] F32
  int64_t capacity = 0;
  int64_t length = 0;  // slots in use
  std::vector<int32_t> positions;  // position of each cached token in the text (for score biases)
  std::vector<uint8_t> valid;      // 0 for padding: never attended to
  // Self-Extend on a rotating scheme: every key also rotated at its grouped position ⌊p/G⌋,
  // once when stored (same layout and dtype as k; empty otherwise).
  std::vector<Tensor> kg, kg_scale;
};

// One sequence's decoding state.
struct Sequence {
  KVCache self;
  // Encoder-decoder: the encoder output's keys/values per decoder layer (computed once).
  KVCache cross;
  int64_t next_position = 0;  // position the next real token gets
  // Tokens fed so far (the generator re-encodes them if the position scheme's rotation changes).
  std::vector<int32_t> tokens;
  std::vector<uint8_t> token_valid;
  // The context extension the sequence was created under (Transformer::new_sequence); feeding it
  // under another is an Error.
  ContextExtension extension;
  int64_t length() const { return self.length; }
  // Forgets every token after the first n (n <= length()): the next decode continues from there,
  // as if the later tokens had never been fed. The cache keeps its capacity. An Error once sinks
  // have dropped tokens (unless n is 0 or length()).
  void truncate(int64_t n);
  // Whether attention sinks have dropped tokens from the cache.
  bool has_evicted() const;
  // Makes this sequence hold what `other` holds (beam search forks a beam): its cached keys and
  // values are copied, its encoder keys/values shared (they are never written). Both must come
  // from the same Transformer; this one keeps its own storage and needs room for other.length().
  void copy_from(const Sequence& other);

  // The Transformer that made it (Transformer::new_sequence; 0 for a default-constructed one):
  // every other model refuses it with an Error naming both, so a cache laid out for one model is
  // never written or read by another, even one of the same shapes or at the same address.
  uint64_t owner() const { return owner_; }
  const std::string& owner_name() const { return owner_name_; }

 private:
  friend class Transformer;
  uint64_t owner_ = 0;      // Transformer::serial()
  std::string owner_name_;  // Transformer::name() when made
};

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

// Where decoder steps' wall time goes (Transformer::decode and decode_batch): seconds, summed over
// the steps a thread runs while a StepTimes::Recording on that thread is alive. Each part is timed
// on the thread that leads the step (the caller), so it includes waiting for the step's other
// threads to finish it. Recording reads the clock about a hundred times a step; with no recording
// alive the parts are not timed. A StepTimes is written by one thread: give each thread its own.
struct StepTimes {
  int64_t steps = 0;
  double total = 0;
  double linears = 0;         // the layers' weight multiplications: q, k, v, out and the FFN
  double attention = 0;       // scores, softmax and the weighted sum of values over the caches
  double rope_and_cache = 0;  // rotating queries and keys, writing keys and values to the caches
  double lm_head = 0;         // the logits
  // Embedding, norms, residuals, activations and the step's bookkeeping.
  double other() const { return total - linears - attention - rope_and_cache - lm_head; }

  // While alive, the steps the constructing thread runs add to `into`. Recordings nest: the
  // innermost one receives the steps, and the outer one again once it is destroyed.
  class Recording {
   public:
    explicit Recording(StepTimes& into);
    ~Recording();
    Recording(const Recording&) = delete;
    Recording& operator=(const Recording&) = delete;

   private:
    StepTimes* previous_;
  };
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
  // Rows [row0, row0 + T) of a batched forward: one sequence's new tokens.
  struct Segment {
    int64_t row0 = 0, T = 0;
    const int32_t* pos = nullptr;   // position of each row
    KVCache* self = nullptr;        // self-attention cache, appended to at slots [length, length + T)
    const KVCache* cross = nullptr; // encoder keys/values (encoder-decoder decoder stacks)
    int64_t seq_len = 1;            // positions this sequence's forward sees (max position + 1)
    const ContextExtension* ext = nullptr;  // decoder self-attention under Self-Extend or sinks
  };
  // The rows of one forward: its segments, the one-token ones first.
  struct Batch {
    std::vector<Segment> segs;
    int64_t rows = 0;
    int64_t single_rows = 0;     // rows [0, single_rows): one-token segments, through the matvec kernels
    bool prompts_alone = false;  // each longer segment through the linear layers on its own
  };
  // y = x · Wᵀ + b for every target, x [b.rows, K], as the batch's plan says.
  void project(const Batch& b, const float* x, int64_t K, std::initializer_list<LinearTarget> targets) const;
  void embed(const int32_t* ids, const int32_t* token_types, int64_t T, const int32_t* pos,
             const PositionScheme& scheme, float* x) const;
  void run_stack(const Stack& stack, const PositionScheme& scheme, float* x, const Batch& b,
                 std::vector<Tensor>* hidden) const;
  // Self-attention (cross = false) appends each segment's keys/values to its self cache and
  // attends over it; cross-attention attends over each segment's cross cache.
  void attention(const AttentionWeights& w, const PositionScheme* scheme, const float* h, const Batch& b, bool cross,
                 int layer, bool causal, float* out) const;
  void store_kv(const Segment& s, int layer, const float* k, const float* v, const float* kg) const;
  // Attention of one segment's prompt rows (T > 1) in query blocks through GEMMs; q, ctx point at
  // the segment's first row.
  // q2: the queries rotated at their alternate positions (context extension on a rotating
  // scheme; else q), with the same layout as q.
  void attend_prompt(const Segment& s, const KVCache& cache, int layer, bool causal, const PositionScheme* scheme,
                     const float* q, const float* q2, float* ctx) const;
  // Attention of every one-token segment listed, one parallel loop over (segment, head).
  void attend_single(const std::vector<const Segment*>& segs, bool cross, int layer, bool causal,
                     const PositionScheme* scheme, const float* q, const float* q2, float* ctx) const;
  // One sequence's tokens in a decoder step (decode and decode_batch without copying ids).
  struct StepInput {
    Sequence* seq;
    const int32_t* ids;
    int64_t T;
    const uint8_t* mask;  // null: all real
    LogitsFor which;
  };
  std::vector<ForwardOutput> step(const std::vector<StepInput>& in, std::vector<Tensor>* hidden,
                                  bool prompts_alone) const;
  // step()'s parts: the requests checked and sized into b; their rows placed (ids, positions, cache
  // slots; returns each sequence's next position); the logits each request asks for from the final
  // hidden rows x; the sequences advanced once the step has run.
  void check_step(const std::vector<StepInput>& in, Batch& b) const;
  std::vector<int64_t> place_step(const std::vector<StepInput>& in, Batch& b, std::vector<int32_t>& ids,
                                  std::vector<int32_t>& pos) const;
  // Positions the embedding sees (the text's, or the cache slots under sinks).
  const int32_t* embed_positions(const std::vector<int32_t>& pos) const;
  void step_outputs(const std::vector<StepInput>& in, const Batch& b, const float* x,
                    std::vector<ForwardOutput>& out) const;
  static void advance(const std::vector<StepInput>& in, const std::vector<int64_t>& next);
  // logits(); matvec: every row through the matvec kernels (each row's bits as alone).
  Tensor logits_of(const float* h, int64_t T, bool matvec) const;
  std::vector<Tensor> encode_all(const std::vector<EncodeRequest>& requests, std::vector<Tensor>* hidden) const;
  void feed_forward(const FeedForward& f, const float* h, const Batch& b, float* out) const;
  void apply_norm(const Norm& n, const float* x, int64_t T, float* y) const;
  // filled: the cache will be filled to its capacity, so it may take 2 MB pages (new_sequence).
  KVCache make_cache(int64_t n_layers, int64_t capacity, DType dtype = DType::F32, bool grouped_keys = false,
                     bool filled = true) const;
  // Self-Extend on a rotating scheme: caches hold grouped keys too.
  bool grouped_keys() const;

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
