// Perplexity of a decoder over token windows, for long-context measurements.
//
// Non-overlapping (stride 0): windows [k·ctx, (k+1)·ctx) for every full window; in each, tokens
// 1..ctx−1 are scored (the first has no context). Sliding (stride S, 0 < S <= ctx): windows of
// ctx tokens start every S tokens; each scores only the tokens no earlier window scored, so every
// token after the first is scored once with up to ctx−1 tokens of context (the HF recipe).
// Each window is one forward pass; logits are computed in row chunks, so memory beyond the KV
// cache stays O(ctx·d + chunk·vocab).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ordo/transformer.hpp"

namespace ordo {

struct PerplexityResult {
  int64_t ctx = 0;
  int64_t windows = 0;
  int64_t tokens = 0;    // tokens scored
  double nll_sum = 0.0;  // Σ −log p(token | context), natural log
  double ppl() const;    // exp(nll_sum / tokens)
};

// progress(done_windows, total_windows) after each group of windows. batch: windows per forward
// step (PromptRows::Shared: each weight read once for the group; equal to batch 1 up to float
// rounding), at the cost of batch KV caches at once.
PerplexityResult perplexity(const Transformer& model, const std::vector<int32_t>& ids, int64_t ctx, int64_t stride = 0,
                            const std::function<void(int64_t, int64_t)>& progress = nullptr, int64_t batch = 1);

// How many windows perplexity() scores over n tokens (0 when n < ctx).
int64_t perplexity_windows(int64_t n, int64_t ctx, int64_t stride = 0);

// Part of a run, for splitting one over processes (ordo sweep's shards): only the windows
// [first, last) of the plan, in groups of `batch` counted from `first` (a multiple of batch keeps
// the whole run's groups, so the same numbers). Every scored token's NLL is appended to *nlls in
// order: summing them in that order over the parts gives the whole run's nll_sum exactly.
struct PerplexityPart {
  int64_t first = 0, last = -1;  // last -1: to the end
  std::vector<double>* nlls = nullptr;
};
PerplexityResult perplexity(const Transformer& model, const std::vector<int32_t>& ids, int64_t ctx, int64_t stride,
                            const std::function<void(int64_t, int64_t)>& progress, int64_t batch,
                            const PerplexityPart& part);

// −log softmax(logits)[target] for one row, computed stably in double.
double token_nll(const float* logits, int64_t vocab, int32_t target);

}  // namespace ordo
