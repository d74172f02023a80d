// Probes of how a model uses position: what `ordo compare` runs, one function per probe, each
// returning plain numbers. The probes that change a model's settings for their run (permutation:
// bidirectional attention; length: the scaling; attention: an observer) take the Model mutably and
// restore it before returning: do not share the model with other threads while they run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"

namespace ordo::probes {

// ---- Word order ---------------------------------------------------------------------------------

struct WordPair {
  std::string original, swapped;
};

// Sentences of `text`: split after '.', '!' or '?' (plus closing quotes) followed by whitespace;
// whitespace runs collapse to one space.
std::vector<std::string> split_sentences(const std::string& text);

// The default suite, deterministic for a seed: for each sentence of 5..30 words, in text order,
// the content words are those after the first whose letters-only core (leading/trailing
// punctuation stripped) is all ASCII letters and at least 4 long. Candidate swaps are the pairs of
// content words whose lower-cased cores differ; sentence i takes candidate splitmix64(seed + i) mod
// #candidates, and the two cores trade places (punctuation stays). Sentences without a candidate
// are skipped; at most max_pairs pairs.
constexpr uint64_t kPairSeed = 0x6f72646f;  // "ordo"
std::vector<WordPair> default_pairs(const std::string& text, size_t max_pairs, uint64_t seed = kPairSeed);

// JSONL lines {"original": "...", "swapped": "..."} (blank lines skipped); Error naming `origin`
// (the file) and the line otherwise, or when there is no pair.
std::vector<WordPair> parse_pairs(const std::string& jsonl, const std::string& origin);

// A text scored as a sum of per-token log-probabilities (nats).
struct TextScore {
  double logprob = 0;        // Σ of the per-token terms
  double abs_terms = 0;      // Σ |term|: the scale float rounding of the score grows with
  std::vector<int32_t> ids;  // the text encoded with the tokenizer's specials
  // Each term (log p of one token, nats) and the position in `ids` of the token it scores, in
  // position order: causal, every position after the first; PLL, every non-special position.
  std::vector<double> terms;
  std::vector<int64_t> positions;
};

// Σ_{t>=1} log p(token_t | tokens_<t) of each text encoded with the tokenizer's specials, all texts
// in one forward step. Error for a text that encodes to fewer than 2 tokens.
std::vector<TextScore> causal_scores(const Model& m, const std::vector<const std::string*>& texts);
std::vector<double> sentence_logprobs(const Model& m, const std::vector<const std::string*>& texts);

// Whether m is a masked-LM encoder: encoder-only with an LM head and a mask token id.
bool is_masked_lm(const Model& m);

// Pseudo-log-likelihood (Salazar et al. 2020) of each text encoded with the tokenizer's specials:
// for every position that is not a special token (those encode(text, true) adds around
// encode(text, false)), the token replaced by the mask id, the encoder run, log p(true token) read
// at that row; PLL = Σ. All masked copies of a text run in one batched encoder forward (several
// short texts share one). Error unless is_masked_lm(m), or for a text without a non-special token.
std::vector<TextScore> pseudo_log_likelihoods(const Model& m, const std::vector<const std::string*>& texts);

// The score word_order uses: PLL for a masked-LM encoder, the causal log-prob otherwise.
std::vector<TextScore> text_scores(const Model& m, const std::vector<const std::string*>& texts);

// Tie rule. A NoPE encoder is permutation-equivariant, so when the swapped text's tokens are a
// permutation of the original's its PLL is the same in exact arithmetic; in float32 only the order
// of the attention's sums over keys changes. The worst-case bound on that is n·u per term (n keys,
// u = 2^-24), but the roundings are random and cancel: measured, at most 2e-9 of Σ|terms| (tiny and
// committed zoo encoders, 40 held-out pairs). A margin is a tie (and reported as 0) when
// |margin| <= kTieTolerance · (Σ|terms| of both texts): 1e-7, 50x above that noise and below the
// smallest learned preference measured (1.6e-6 relative, an undertrained tiny ALiBi encoder).
constexpr double kTieTolerance = 1e-7;
bool is_tie(const TextScore& original, const TextScore& swapped);

struct PairScore {
  double original = 0, swapped = 0;  // scores (PLL or causal log-prob), nats
  double margin = 0;                 // original − swapped; exactly 0 when `tie`
  bool tie = false;
  bool same_tokens = false;  // the swapped text's tokens are a permutation of the original's
};

struct WordOrderResult {
  std::string method;          // "pll" (masked-LM encoder) or "logprob" (causal)
  int64_t wins = 0, ties = 0;  // original scored higher / a tie (is_tie)
  double accuracy = 0;         // (wins + ties / 2) / pairs
  double mean_margin = 0;      // mean of the pairs' margins (ties 0), nats
  std::vector<PairScore> pairs;
};
// progress(done, total) after every batch of pairs: kPairsPerStep pairs (their 2 texts each)
// score in one forward step, so pairs split at multiples of it score exactly as in one run.
constexpr size_t kPairsPerStep = 8;
WordOrderResult word_order(const Model& m, const std::vector<WordPair>& pairs,
                           const std::function<void(size_t, size_t)>& progress = {});
// wins, ties, accuracy and mean_margin from r.pairs, as word_order computes them (parts of a run
// joined in pair order give the whole run's figures exactly). Error for no pairs.
void summarize_word_order(WordOrderResult& r);

// ---- Permutation equivariance -------------------------------------------------------------------

struct PermutationResult {
  double max_abs_error = 0;   // max |h(perm x) − perm h(x)| over positions and channels
  double max_abs_hidden = 0;  // max |h(x)|
  double rel_error = 0;       // max_abs_error / max_abs_hidden
};
// The stack run bidirectionally (an encoder as it is, a decoder without its causal mask) on `ids`
// and on the permutation of them that a Fisher-Yates shuffle
// driven by splitmix64(seed + i) gives. Without positions, only a mask breaks equivariance.
constexpr uint64_t kPermutationSeed = 0x7065726d;  // "perm"
PermutationResult permutation(Model& m, const std::vector<int32_t>& ids, uint64_t seed = kPermutationSeed);

// The first n held-out tokens, else n deterministic pseudo-random ids below vocab (from salt).
std::vector<int32_t> probe_ids(const std::vector<int32_t>& heldout, int64_t n, int64_t vocab, uint64_t salt);

// ---- Length -------------------------------------------------------------------------------------

struct LengthMethod {
  std::string name;  // "none" for the model as it is, else a scaling name
  ScalingType type = ScalingType::None;
};
// Unscaled, then every scaling the scheme runs from a factor alone.
std::vector<LengthMethod> length_methods(const std::string& scheme);

struct LengthPoint {
  int64_t multiple = 0, ctx = 0;
  double factor = 1;  // the scaling factor used (1 for "none")
  int64_t windows = 0, tokens = 0;
  double ppl = 0;  // NaN with `error` set when the point cannot run
  std::string error;
};
// Perplexity over `ids` at ctx = base · multiple for each multiple, with the model's scheme scaled
// by `method` at factor max(1, ctx / trained). progress(point, window, windows).
std::vector<LengthPoint> length(Model& m, const std::vector<int32_t>& ids, const LengthMethod& method,
                                const std::vector<int64_t>& multiples, int64_t base, int64_t trained,
                                const std::function<void(const LengthPoint&, int64_t, int64_t)>& progress = {});

// ---- Synthetic tasks (length generalization) ----------------------------------------------------

// One item of a task suite (tasks/suite.jsonl of the zoo): the model gets `prompt` encoded with
// the tokenizer's specials and must produce `target`'s tokens, then the end-of-sequence token.
struct TaskItem {
  std::string task;    // "copy", "reverse", "role", "add", ...
  int64_t length = 0;  // the task's length knob (n)
  std::string prompt, target;
};

// JSONL lines {"task": "...", "length": n, "prompt": "...", "target": "..."} (blank lines
// skipped); Error naming `origin` (the file) and the line for a bad line, or when there is no item.
std::vector<TaskItem> parse_task_suite(const std::string& jsonl, const std::string& origin);

struct TaskPoint {
  std::string task;
  int64_t length = 0;
  int64_t longest = 0;  // tokens of the longest item: bos + prompt + target + end of sequence
  double factor = 1;    // the scaling factor used (1 for "none")
  int64_t items = 0, correct = 0;
  double accuracy = 0;                // correct / items; NaN with `error` set when the point cannot run
  std::vector<uint8_t> item_correct;  // per item, in suite order
  std::string error;
};

struct TaskRunOptions {
  int max_batch = 32;  // sequences in flight (continuous batching)
  // With a scaling method, the factor of a point; empty: max(1, longest / trained), so that every
  // item of the point fits. Points at factor <= 1 are left out (they are the unscaled points).
  std::function<double(const TaskPoint&)> factor;
  std::function<void(const TaskPoint&, size_t)> progress;  // (point, items done)
};

// Exact-match accuracy per (task, length), points in the order the suite first names them. Each
// item is decoded greedily until the model's end-of-sequence id or len(target ids) + 1 tokens and
// is correct iff it produced exactly the target ids, then end of sequence. "none" runs every point
// with the model as it is; a scaling method runs the points beyond the trained length with the
// model's scheme scaled (see TaskRunOptions::factor). A point that cannot run (e.g. beyond a
// learned table) gets `error`.
std::vector<TaskPoint> synthetic_tasks(Model& m, const std::vector<TaskItem>& suite, const LengthMethod& method,
                                       int64_t trained, const TaskRunOptions& opts = {});

// ---- Attention by distance ----------------------------------------------------------------------

struct DistanceBucket {
  int64_t lo = 0, hi = 0;  // query − key distance, inclusive
  std::string label() const;
};
// 0, 1, 2, 3, then powers of two up to at least max(max_distance, 127).
std::vector<DistanceBucket> distance_buckets(int64_t max_distance);

struct AttentionProfile {
  int64_t rows = 0;                 // attention rows observed (layers × heads × queries × windows)
  std::vector<double> mean_weight;  // per bucket: mean attention weight of a (query, key) pair
  std::vector<double> mass;         // per bucket: attention mass per row (sums to 1 over buckets)
};
// Attention weights averaged over layers, heads and queries by distance bucket (|query − key| for an
// encoder, whose queries see keys on both sides), over windows of `base` tokens each. Error if a window cannot run
// (e.g. beyond a learned table).
AttentionProfile attention_by_distance(Model& m, const std::vector<std::vector<int32_t>>& windows,
                                       const std::vector<DistanceBucket>& buckets,
                                       const std::function<void(size_t)>& progress = {});

}  // namespace ordo::probes
