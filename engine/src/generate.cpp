#include "ordo/generate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace ordo {

Sampler::Sampler(const SamplingParams& p) : p_(p), rng_(p.seed) {
  if (p.temperature < 0) throw Error("temperature must be >= 0, got " + std::to_string(p.temperature));
  if (p.top_p <= 0 || p.top_p > 1) throw Error("top_p must be in (0, 1], got " + std::to_string(p.top_p));
  if (p.top_k < 0) throw Error("top_k must be >= 0, got " + std::to_string(p.top_k));
  if (p.repetition_penalty <= 0)
    throw Error("repetition_penalty must be > 0, got " + std::to_string(p.repetition_penalty));
}

int32_t Sampler::sample(float* logits, int64_t V, const std::vector<int32_t>& history) {
  if (p_.repetition_penalty != 1.0f) {
    std::vector<int32_t> seen(history);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t id : seen)
      if (id >= 0 && id < V)
        logits[id] = logits[id] > 0 ? logits[id] / p_.repetition_penalty : logits[id] * p_.repetition_penalty;
  }
  if (p_.temperature == 0.0f) return static_cast<int32_t>(std::max_element(logits, logits + V) - logits);

  cand_.resize(V);
  for (int64_t i = 0; i < V; ++i) cand_[i] = {logits[i] / p_.temperature, static_cast<int32_t>(i)};
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first; };
  size_t n = cand_.size();
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < n) {
    std::partial_sort(cand_.begin(), cand_.begin() + p_.top_k, cand_.end(), by_logit);
    n = p_.top_k;
  } else {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  // softmax over the kept candidates (sorted descending)
  const float mx = cand_[0].first;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += (cand_[i].first = std::exp(cand_[i].first - mx));
  if (p_.top_p < 1.0f) {
    double acc = 0;
    size_t keep = 0;
    while (keep < n) {
      acc += cand_[keep++].first / sum;
      if (acc >= p_.top_p) break;
    }
    n = keep;
    sum = 0;
    for (size_t i = 0; i < n; ++i) sum += cand_[i].first;
  }
  double r = std::uniform_real_distribution<double>(0.0, sum)(rng_);
  for (size_t i = 0; i < n; ++i) {
    r -= cand_[i].first;
    if (r <= 0) return cand_[i].second;
  }
  return cand_[n - 1].second;
}

namespace {

Sequence fresh_sequence(const Transformer& model, int64_t capacity, const Tensor* encoder_out,
                        const std::vector<uint8_t>& encoder_mask) {
  Sequence seq = model.new_sequence(capacity);
  if (encoder_out) model.attach_encoder(seq, *encoder_out, encoder_mask);
  return seq;
}

}  // namespace

GenerateResult generate(const Transformer& model, const std::vector<int32_t>& prompt, const GenerateParams& params,
                        const TokenCallback& on_token, const Tensor* encoder_out,
                        const std::vector<uint8_t>& encoder_mask, bool keep_logits) {
  if (prompt.empty()) throw Error("generate: the prompt is empty (a decoder needs at least one token, e.g. BOS)");
  if (params.max_new_tokens < 0) throw Error("max_new_tokens must be >= 0");
  using clock = std::chrono::steady_clock;
  const int64_t V = model.spec().vocab_size;
  const int64_t capacity =
      params.capacity > 0 ? params.capacity : static_cast<int64_t>(prompt.size()) + params.max_new_tokens + 1;
  Sampler sampler(params.sampling);
  GenerateResult res;
  res.prompt_tokens = static_cast<int64_t>(prompt.size());
  std::vector<int32_t> history(prompt);
  std::vector<uint8_t> history_mask = params.prompt_mask;
  if (!history_mask.empty() && history_mask.size() != prompt.size())
    throw Error("generate: prompt_mask has " + std::to_string(history_mask.size()) + " entries for " +
                std::to_string(prompt.size()) + " prompt tokens");

  auto t0 = clock::now();
  Sequence seq = fresh_sequence(model, capacity, encoder_out, encoder_mask);
  Tensor logits = model.decode(seq, prompt, history_mask, LogitsFor::Last).logits;
  res.prefill_seconds = std::chrono::duration<double>(clock::now() - t0).count();

  auto t1 = clock::now();
  for (int step = 0; step < params.max_new_tokens; ++step) {
    if (keep_logits) {
      Tensor row = Tensor::zeros({V});
      std::memcpy(row.f32(), logits.f32(), V * sizeof(float));
      res.step_logits.push_back(std::move(row));
    }
    const int32_t id = sampler.sample(logits.f32(), V, history);
    res.ids.push_back(id);
    history.push_back(id);
    if (!history_mask.empty()) history_mask.push_back(1);
    const bool is_stop = std::find(params.stop_ids.begin(), params.stop_ids.end(), id) != params.stop_ids.end();
    if (on_token && !on_token(id)) break;
    if (is_stop) {
      res.stopped_by_eos = true;
      break;
    }
    if (step + 1 == params.max_new_tokens) break;
    const int64_t len = static_cast<int64_t>(history.size());
    const bool reencode = !params.use_cache || model.decoder_scheme().rotation_changes(len - 1, len);
    if (reencode) {
      // Recompute every key with the rotation in force for the new length (LongRoPE's
      // short→long switch, or the uncached reference mode).
      seq = fresh_sequence(model, capacity, encoder_out, encoder_mask);
      logits = model.decode(seq, history, history_mask, LogitsFor::Last).logits;
    } else {
      logits = model.decode(seq, {id}, {}, LogitsFor::Last).logits;
    }
  }
  res.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return res;
}

}  // namespace ordo
