// ordo.Model's computing calls besides generation: forward, score, perplexity and embed, each
// checking its arguments (ValueError naming them) and running without the GIL.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "ordo/perplexity.hpp"

namespace ordo::py {

struct Score {
  std::vector<int32_t> ids;
  std::vector<double> token_logprobs;  // each scored token's log p (decoders: log p(ids[t] | ids[<t]), t >= 1)
  std::vector<int64_t> positions;      // the position in ids of each scored token
  double logprob = 0;                  // their sum (masked-LM encoders: the PLL)
  std::string method;                  // "logprob" or "pll"
};

struct PerplexityOut {
  PerplexityResult r;
};

// logits, hidden states (and an encoder-decoder's encoder states) as a SimpleNamespace of arrays.
pyb::object forward(const SharedModel& sm, const std::vector<int32_t>& ids, bool hidden,
                    std::optional<std::vector<int32_t>> decoder_ids);
// Log-probabilities of one input or a list (masked-LM encoders: pseudo-log-likelihoods).
pyb::object score(const SharedModel& sm, const pyb::object& inputs);
// Perplexity of a text or ids over windows of ctx tokens, as `ordo ppl`.
PerplexityOut perplexity_of(const SharedModel& sm, const pyb::object& input, std::optional<int64_t> ctx, int64_t stride,
                            int64_t batch);
// Sentence embeddings [texts, d] of one text or a list.
Array embed(const SharedModel& sm, const pyb::object& texts, std::optional<std::string> pooling,
            std::optional<bool> normalize, int batch, bool add_special);

}  // namespace ordo::py
