// Beam search over the batched engine, as Hugging Face transformers' BeamSearchScorer.
//
// Each step scores every live beam's next token with log_softmax of its logits (after the
// request's penalties and bans, ordo/generate.hpp apply_penalties) plus the beam's summed
// log-probability, and takes the top max(2, 1 + #stop ids) x num_beams candidates over beams x
// vocabulary. In that order, a candidate ending in a stop id among the first num_beams becomes a
// finished hypothesis (kept when it is among the num_beams best, scored sum / generated_len^
// length_penalty, generated_len counting the stop id); other candidates fill the next num_beams
// beams. The search of a request ends when early_stopping says no better hypothesis can come or
// after max_new_tokens steps, when the running beams join the hypotheses (generated_len without a
// stop id). A beam is a Sequence: the beams of every request in flight run together in one
// Transformer::decode_batch per step, and a beam chosen twice has its KV cache copied.
#pragma once

#include <vector>

#include "ordo/generate.hpp"

namespace ordo {

// Every request must have params.beams.num_beams in [2, 1024] (generate_batch sends those above 1
// here; more is an Error, each beam holding a KV cache). Up to max_batch beams run in flight (at
// least one request at a time, whatever its num_beams). Sampling parameters other than the
// penalties and bans are not used (beam search is deterministic).
// result[i].sequences holds request i's num_return_sequences best hypotheses, best first, and
// result[i].ids the best one's ids; on_token sees those ids once request i's search is over.
std::vector<GenerateResult> beam_search_batch(const Transformer& model, const std::vector<GenerateRequest>& requests,
                                              int max_batch, const BatchTokenCallback& on_token = nullptr);

}  // namespace ordo
