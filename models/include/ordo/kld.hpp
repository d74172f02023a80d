// Accuracy of a model against a reference run, as llama.cpp's `llama-perplexity
// --kl-divergence-base` reports it: the reference (usually the F32 model) saves its log-probabilities
// of every scored token to a file once; any other model (another dtype, a quantized file) is then
// scored on the same tokens for its perplexity ratio, mean KL divergence and same-top-token rate.
//
// Tokens are scored as llama-perplexity scores them: the text's ids are cut into chunks of `ctx`
// tokens, the first of each replaced by BOS (when the tokenizer adds one), and only the second half
// of each chunk is scored (every scored token has at least ctx/2 tokens of context).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ordo {

class Model;

using KldProgress = std::function<void(int64_t done_chunks, int64_t total_chunks)>;

// Scores `ids` with `m` and writes the base file `path` (atomically): ctx, vocabulary size, the
// chunked token ids and, for every scored token, the full log-softmax row as F32. max_chunks 0: every
// whole chunk. Returns the number of tokens scored. Errors: text shorter than one chunk, bad ctx.
int64_t write_kld_base(const Model& m, const std::vector<int32_t>& ids, int64_t ctx, int64_t max_chunks,
                       const std::string& path, const KldProgress& progress = {});

struct KldStats {
  int64_t ctx = 0, chunks = 0, tokens = 0;
  double ppl_base = 0, ppl = 0;           // perplexities of the base and of the model
  double ln_ratio = 0, ln_ratio_err = 0;  // mean ln(PPL/PPL_base) per token, with its standard error
  double kld = 0, kld_err = 0;            // mean KL(base || model) in nats, with its standard error
  double kld_median = 0, kld_max = 0;
  double same_top = 0, same_top_err = 0;  // fraction of tokens where both rank the same token first
  double ppl_ratio() const;               // exp(ln_ratio)
};

// KL(base || model) in nats of one token's log-probability rows over n entries (entries the base
// gives probability 0 add nothing). Rounding's small negatives are 0; NonFiniteError naming
// `position` when the sum is NaN or infinite, Error when it is clearly negative (a base whose
// probabilities do not sum to one).
double kl_divergence(const float* base, const float* model, int64_t n, int64_t position);

// Reads the base file at `path` and scores its tokens with `m`. The ids stored there are used, so
// the model must share the base's vocabulary (an Error naming the file otherwise). The file's size
// must be exactly what its header describes (an Error naming the file, before anything is read).
// `text_ids`, when given, is `m`'s encoding of the text the base should have been made from: the
// base's ids must be its first chunks (the first id of each chunk may be BOS), else an Error naming
// the first token that differs. That refuses a base of another text or another tokenizer with the
// same vocabulary size, whose scores would be meaningless rather than wrong-looking.
KldStats compare_kld_base(const Model& m, const std::string& path, const KldProgress& progress = {},
                          const std::vector<int32_t>* text_ids = nullptr);

}  // namespace ordo
