// Token generation over a Transformer: greedy or sampled decoding with a KV cache.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "ordo/transformer.hpp"

namespace ordo {

struct SamplingParams {
  float temperature = 0.0f;         // 0: greedy (argmax)
  int top_k = 0;                    // 0: off
  float top_p = 1.0f;               // 1: off
  float repetition_penalty = 1.0f;  // 1: off (CTRL-style: divide positive logits, multiply negative)
  uint64_t seed = 0;
};

// Picks the next token from one row of logits. Deterministic for a given seed.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);
  // logits [V] is modified in place (penalty, temperature). history: tokens seen so far.
  int32_t sample(float* logits, int64_t V, const std::vector<int32_t>& history);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;
};

struct GenerateParams {
  int max_new_tokens = 64;
  SamplingParams sampling;
  std::vector<int32_t> stop_ids;  // generation ends after emitting one of these
  bool use_cache = true;          // false: recompute the whole sequence every step (reference mode)
  int64_t capacity = 0;           // KV-cache slots to preallocate (0: prompt + max_new_tokens)
  std::vector<uint8_t> prompt_mask;  // 0 marks padding in the prompt (left-padded batches); empty: none
};

// Called once per generated token; return false to stop (e.g. a stop string was seen).
using TokenCallback = std::function<bool(int32_t id)>;

struct GenerateResult {
  std::vector<int32_t> ids;  // generated tokens only
  std::vector<Tensor> step_logits;  // logits row [V] of every step (before sampling), when asked
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  bool stopped_by_eos = false;
};

// Decoder-only: `prompt` is the token prefix. Encoder-decoder: pass the encoder output via
// `encoder_out` (from Transformer::encode) and `prompt` = the decoder start tokens.
GenerateResult generate(const Transformer& model, const std::vector<int32_t>& prompt, const GenerateParams& params,
                        const TokenCallback& on_token = nullptr, const Tensor* encoder_out = nullptr,
                        const std::vector<uint8_t>& encoder_mask = {}, bool keep_logits = false);

// One sequence of a batched generation: generate()'s arguments.
struct GenerateRequest {
  std::vector<int32_t> prompt;
  GenerateParams params;
  const Tensor* encoder_out = nullptr;  // encoder-decoder: the encoder output of this sequence
  std::vector<uint8_t> encoder_mask;
};

// Called once per generated token of request `index`; return false to stop that sequence.
using BatchTokenCallback = std::function<bool(size_t index, int32_t id)>;

// Generates every request with up to max_batch sequences in flight (continuous batching): each
// step is one Transformer::decode_batch over the new prompts of sequences joining and the next
// token of the others; a sequence leaves as soon as it finishes and the next request takes its
// place. result[i] is what generate() of request i alone returns (same ids for greedy and for
// seeded sampling; logits equal up to float rounding), with prefill_seconds the step that ran
// its prompt and decode_seconds the steps it was decoded in. on_token calls come in step order,
// interleaved across sequences.
std::vector<GenerateResult> generate_batch(const Transformer& model, const std::vector<GenerateRequest>& requests,
                                           int max_batch, const BatchTokenCallback& on_token = nullptr,
                                           bool keep_logits = false);

}  // namespace ordo
