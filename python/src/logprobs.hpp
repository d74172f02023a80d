// Log-probabilities from logits rows: of generated tokens (with top-k alternatives) and of given text.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ordo/tensor.hpp"

namespace ordo::py {

struct TokenLogprobs {
  std::vector<double> chosen;                                // log p(id_i) at step i, natural log
  std::vector<std::vector<std::pair<int32_t, double>>> top;  // the k likeliest ids of step i, best first
};
// From GenerateResult::step_logits (the raw logits of each step, before penalties, temperature or
// truncation) and the ids drawn: log softmax in double, as ordo::token_nll computes it.
TokenLogprobs step_logprobs(const std::vector<Tensor>& step_logits, const std::vector<int32_t>& ids, int k);

// log p(ids[t] | ids[<t]) for t = 1..T-1 from a decoder's logits [T, vocab] of `ids`.
std::vector<double> causal_logprobs(const Tensor& logits, const std::vector<int32_t>& ids);

}  // namespace ordo::py
