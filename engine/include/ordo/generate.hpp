// Token generation over a Transformer: greedy or sampled decoding with a KV cache.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "ordo/transformer.hpp"

namespace ordo {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy (argmax)
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  // Hugging Face's min_p (MinPLogitsWarper, after top-k and top-p): tokens less likely than
  // min_p x the most likely one are dropped (0: off).
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;  // 1: off (CTRL-style: divide positive logits, multiply negative)
  uint64_t seed = 0;
  // Hugging Face's no_repeat_ngram_size: a token that would repeat an n-gram of the history is
  // never picked (0: off).
  int no_repeat_ngram_size = 0;
  // Hugging Face's bad_words_ids: a token that would complete one of these id sequences is never
  // picked (a one-id sequence bans that id everywhere).
  std::vector<std::vector<int32_t>> bad_words_ids;
};

// The penalties and bans of p applied to one row of scores (logits, or log-probabilities for beam
// search, as Hugging Face applies its logits processors): repetition penalty, no-repeat n-grams,
// bad words. history: the tokens seen so far (prompt and generated).
void apply_penalties(float* scores, int64_t V, const std::vector<int32_t>& history, const SamplingParams& p);

// Picks the next token from one row of logits. Deterministic for a given seed.
class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);
  // logits [V] is modified in place (penalty, temperature). history: tokens seen so far.
  int32_t sample(float* logits, int64_t V, const std::vector<int32_t>& history);
  // sample() without the penalties and bans (the caller applied them).
  int32_t pick(float* logits, int64_t V);
  // The distribution pick() draws from, over all V tokens (0 for a token temperature, top-k,
  // top-p or min-p leave out; one 1 for greedy). Consumes no randomness.
  std::vector<double> probabilities(const float* logits, int64_t V);

 private:
  // Fills cand_ with the kept (exp(logit/T - max), id) pairs, most likely first; returns how many
  // and their sum in *sum. temperature must be > 0.
  size_t filter(const float* logits, int64_t V, double* sum);

  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;
};

// Hugging Face's early_stopping for beam search.
enum class EarlyStopping {
  Heuristic,  // False: stop when the best running beam, scored at the current length, cannot beat
              // the worst kept hypothesis
  OnFull,     // True: stop as soon as num_beams hypotheses are finished
  Never,      // "never": stop only when no better hypothesis is possible (canonical beam search)
};

// Beam search (num_beams > 1), as Hugging Face transformers' BeamSearchScorer: each step keeps the
// num_beams best continuations by summed log-probability; a continuation ending in a stop id is a
// finished hypothesis scored sum_logprobs / generated_len^length_penalty (generated_len counts the
// generated tokens, the stop id included).
struct BeamParams {
  int num_beams = 1;  // 1: no beam search (greedy or sampling)
  double length_penalty = 1.0;
  EarlyStopping early_stopping = EarlyStopping::Heuristic;
  int num_return_sequences = 1;  // hypotheses returned, best first (at most num_beams)
};

struct GenerateParams {
  int max_new_tokens = 64;
  // Hugging Face's max_length: the decoder's whole length (prompt or decoder start tokens plus
  // generated) stays within it; 0: off. max_new_tokens applies too.
  int max_length = 0;
  SamplingParams sampling;
  BeamParams beams;
  // Hugging Face's length rules: no stop id is picked while the decoder's whole length (prompt or
  // decoder start tokens plus generated) is below min_length, or fewer than min_new_tokens are
  // generated; the last token max_new_tokens allows is forced to forced_eos_ids[0] (its first
  // listed id scores 0, all else -inf; empty: off).
  int min_length = 0, min_new_tokens = 0;
  std::vector<int32_t> forced_eos_ids;
  // Hugging Face's renormalize_logits: beam search takes log_softmax again after the penalties
  // and bans (sampling and greedy pick the same token either way).
  bool renormalize = false;
  std::vector<int32_t> stop_ids;     // generation ends after emitting any of these (every EOS id)
  bool use_cache = true;             // false: recompute the whole sequence every step (reference mode)
  int64_t capacity = 0;              // KV-cache slots to preallocate (0: prompt + max_new_tokens)
  std::vector<uint8_t> prompt_mask;  // 0 marks padding in the prompt (left-padded batches); empty: none
};

// Called once per generated token; return false to stop (e.g. a stop string was seen).
using TokenCallback = std::function<bool(int32_t id)>;

// One hypothesis of a beam search: its generated ids (the stop id that ended it included) and its
// score (summed log-probability / generated length^length_penalty).
struct ScoredSequence {
  std::vector<int32_t> ids;
  double score = 0;
};

struct GenerateResult {
  std::vector<int32_t> ids;               // generated tokens only (beam search: the best hypothesis)
  std::vector<ScoredSequence> sequences;  // beam search: num_return_sequences hypotheses, best first
  std::vector<Tensor> step_logits;        // logits row [V] of every step (before sampling), when asked
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  bool stopped_by_eos = false;
};

// Decoder-only: `prompt` is the token prefix. params.beams.num_beams > 1 runs beam search
// (ordo/beam_search.hpp); on_token then sees the best hypothesis's ids once the search is over. Encoder-decoder: pass
// the encoder output via `encoder_out` (from Transformer::encode) and `prompt` = the decoder start tokens.
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
