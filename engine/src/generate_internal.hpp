// What generate.cpp and beam_search.cpp share (private to the engine): a request's checks and sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ordo/generate.hpp"

namespace ordo::detail {

// A request checked and sized: the tokens it may generate and the KV-cache slots its sequence needs.
struct RequestPlan {
  int max_new_tokens = 0;  // max_new_tokens within max_length
  int64_t capacity = 0;
};

// Error (naming request i when there are several) for an empty prompt, a bad prompt mask or bad
// limits; checks the context limit.
RequestPlan plan_request(const Transformer& model, const GenerateRequest& r, size_t i);

// GenerateParams' length rules (min_length, min_new_tokens, forced_eos_ids) on one row of scores,
// before the token after `generated` generated ones; prompt: the decoder's prompt length.
void apply_length_rules(float* scores, int64_t V, const GenerateParams& p, int64_t prompt, int64_t generated,
                        int max_new_tokens);

// A new sequence for the request, the encoder output attached (encoder-decoder).
Sequence fresh_sequence(const Transformer& model, int64_t capacity, const Tensor* encoder_out,
                        const std::vector<uint8_t>& encoder_mask);

// Whether the sequence must be fed its whole history again before the step that makes it `len`
// tokens long: the uncached reference mode, or a position scheme whose rotation changes there.
bool needs_refeed(const Transformer& model, const GenerateParams& p, int64_t len);

}  // namespace ordo::detail
