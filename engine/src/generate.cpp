// Sampling and batched generation: penalties, filters, requests planned, stepped and finished.
#include "ordo/generate.hpp"
#include "ordo/finite.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "generate_internal.hpp"
#include "ordo/beam_search.hpp"

namespace ordo {

Sampler::Sampler(const SamplingParams& p) : p_(p), rng_(p.seed) {
  // Written so that NaN fails every check.
  if (!(p.temperature >= 0 && std::isfinite(p.temperature)))
    throw Error("temperature must be a finite number >= 0, got " + std::to_string(p.temperature));
  if (!(p.top_p > 0 && p.top_p <= 1)) throw Error("top_p must be in (0, 1], got " + std::to_string(p.top_p));
  if (!(p.min_p >= 0 && p.min_p <= 1)) throw Error("min_p must be in [0, 1], got " + std::to_string(p.min_p));
  if (p.top_k < 0) throw Error("top_k must be >= 0, got " + std::to_string(p.top_k));
  if (!(p.repetition_penalty > 0 && std::isfinite(p.repetition_penalty)))
    throw Error("repetition_penalty must be a finite number > 0, got " + std::to_string(p.repetition_penalty));
  if (p.no_repeat_ngram_size < 0)
    throw Error("no_repeat_ngram_size must be >= 0, got " + std::to_string(p.no_repeat_ngram_size));
}

void apply_penalties(float* scores, int64_t V, const std::vector<int32_t>& history, const SamplingParams& p) {
  if (p.repetition_penalty != 1.0f) {
    std::vector<int32_t> seen(history);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t id : seen)
      if (id >= 0 && id < V)
        scores[id] = scores[id] > 0 ? scores[id] / p.repetition_penalty : scores[id] * p.repetition_penalty;
  }
  const float ban = -std::numeric_limits<float>::infinity();
  const size_t L = history.size(), n = p.no_repeat_ngram_size > 0 ? static_cast<size_t>(p.no_repeat_ngram_size) : 0;
  // As Hugging Face: the last n-1 tokens followed by t must not be an n-gram already seen.
  if (n > 0 && L + 1 >= n)
    for (size_t i = 0; i + n <= L; ++i)
      if (std::equal(history.begin() + static_cast<std::ptrdiff_t>(i),
                     history.begin() + static_cast<std::ptrdiff_t>(i + n - 1),
                     history.end() - static_cast<std::ptrdiff_t>(n - 1))) {
        const int32_t t = history[i + n - 1];
        if (t >= 0 && t < V) scores[t] = ban;
      }
  for (const std::vector<int32_t>& w : p.bad_words_ids) {
    if (w.empty() || w.back() < 0 || w.back() >= V) continue;
    const size_t prefix = w.size() - 1;
    if (prefix <= L && std::equal(w.begin(), w.end() - 1, history.end() - static_cast<std::ptrdiff_t>(prefix)))
      scores[w.back()] = ban;
  }
}

int32_t Sampler::sample(float* logits, int64_t V, const std::vector<int32_t>& history) {
  apply_penalties(logits, V, history, p_);
  return pick(logits, V);
}

size_t Sampler::filter(const float* logits, int64_t V, double* sum_out) {
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
  // As MinPLogitsWarper: a token whose probability is below min_p x the top one's is dropped (the
  // ratio is the same before and after renormalising); the top token always stays.
  if (p_.min_p > 0.0f) {
    const double threshold = static_cast<double>(p_.min_p) * cand_[0].first;
    size_t keep = 1;
    while (keep < n && cand_[keep].first >= threshold) ++keep;
    n = keep;
    sum = 0;
    for (size_t i = 0; i < n; ++i) sum += cand_[i].first;
  }
  *sum_out = sum;
  return n;
}

int32_t Sampler::pick(float* logits, int64_t V) {
  if (p_.temperature == 0.0f) return static_cast<int32_t>(std::max_element(logits, logits + V) - logits);
  double sum = 0;
  const size_t n = filter(logits, V, &sum);
  double r = std::uniform_real_distribution<double>(0.0, sum)(rng_);
  for (size_t i = 0; i < n; ++i) {
    r -= cand_[i].first;
    if (r <= 0) return cand_[i].second;
  }
  return cand_[n - 1].second;
}

std::vector<double> Sampler::probabilities(const float* logits, int64_t V) {
  std::vector<double> probs(static_cast<size_t>(V), 0.0);
  if (V <= 0) return probs;
  if (p_.temperature == 0.0f) {
    probs[static_cast<size_t>(std::max_element(logits, logits + V) - logits)] = 1.0;
    return probs;
  }
  double sum = 0;
  const size_t n = filter(logits, V, &sum);
  for (size_t i = 0; i < n; ++i) probs[static_cast<size_t>(cand_[i].second)] = cand_[i].first / sum;
  return probs;
}

namespace detail {

void apply_length_rules(float* scores, int64_t V, const GenerateParams& p, int64_t prompt, int64_t generated,
                        int max_new_tokens) {
  const float ban = -std::numeric_limits<float>::infinity();
  if (prompt + generated < p.min_length || generated < p.min_new_tokens)
    for (int32_t id : p.stop_ids)
      if (id >= 0 && id < V) scores[id] = ban;
  if (!p.forced_eos_ids.empty() && generated == max_new_tokens - 1) {
    std::fill(scores, scores + V, ban);
    for (int32_t id : p.forced_eos_ids)
      if (id >= 0 && id < V) scores[id] = 0;
  }
}

Sequence fresh_sequence(const Transformer& model, int64_t capacity, const Tensor* encoder_out,
                        const std::vector<uint8_t>& encoder_mask) {
  Sequence seq = model.new_sequence(capacity);
  if (encoder_out) model.attach_encoder(seq, *encoder_out, encoder_mask);
  return seq;
}

bool needs_refeed(const Transformer& model, const GenerateParams& p, int64_t len) {
  return !p.use_cache || model.decoder_scheme().rotation_changes(len - 1, len);
}

RequestPlan plan_request(const Transformer& model, const GenerateRequest& r, size_t i) {
  if (r.prompt.empty())
    throw Error("generate: the prompt is empty (a decoder needs at least one token, e.g. BOS)" +
                (i > 0 ? " (request " + std::to_string(i) + ")" : std::string()));
  if (r.params.max_new_tokens < 0) throw Error("max_new_tokens must be >= 0");
  if (r.params.max_length < 0) throw Error("max_length must be >= 0 (0: off)");
  if (!r.params.prompt_mask.empty() && r.params.prompt_mask.size() != r.prompt.size())
    throw Error("generate: prompt_mask has " + std::to_string(r.params.prompt_mask.size()) + " entries for " +
                std::to_string(r.prompt.size()) + " prompt tokens");
  const int64_t prompt = static_cast<int64_t>(r.prompt.size());
  RequestPlan plan;
  plan.max_new_tokens = r.params.max_new_tokens;
  if (r.params.max_length > 0 && prompt >= r.params.max_length)
    throw Error("generate: the prompt (" + std::to_string(prompt) + " tokens" +
                (i > 0 ? ", request " + std::to_string(i) : std::string()) + ") already reaches max_length (" +
                std::to_string(r.params.max_length) + "): nothing can be generated; give max_new_tokens instead");
  if (r.params.max_length > 0)
    plan.max_new_tokens =
        static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(plan.max_new_tokens, r.params.max_length - prompt)));
  const int64_t total = prompt + plan.max_new_tokens;
  int64_t capacity = r.params.capacity > 0 ? r.params.capacity : total + 1;
  const ContextExtension& ext = model.context_extension();
  if (ext.streaming()) {
    // Sinks hold at most K + N keys (the whole prompt while it runs): memory stays constant however
    // long the generation, so only that is checked against the context limit.
    const int64_t held = std::max(prompt, ext.cache_size());
    capacity = std::min(capacity, held);
    model.check_context(held, "generate: the prompt (" + std::to_string(prompt) + " tokens) or the sink cache (" +
                                  std::to_string(ext.cache_size()) + " tokens)");
    if (total >= std::numeric_limits<int32_t>::max())
      throw Error("generate: the prompt + max_new_tokens must stay below 2^31 positions");
  } else {
    model.check_context(total, "generate: the prompt (" + std::to_string(prompt) + " tokens) + max_new_tokens (" +
                                   std::to_string(plan.max_new_tokens) + ")");
  }
  plan.capacity = capacity;
  return plan;
}

}  // namespace detail

namespace {

// A sequence in flight.
struct Live {
  size_t index;
  const GenerateRequest* req;
  Sequence seq;
  Sampler sampler;
  GenerateResult res;
  std::vector<int32_t> history;
  std::vector<uint8_t> history_mask;
  std::vector<int32_t> feed;  // what the next step appends: the prompt, one token, or (re-encode) all
  std::vector<uint8_t> feed_mask;
  bool prefilled = false;
  int max_new_tokens = 0;  // within max_length
};

// Validates request i and starts its sequence, its prompt as the first feed.
Live start(const Transformer& model, const GenerateRequest& r, size_t i) {
  const detail::RequestPlan plan = detail::plan_request(model, r, i);
  Live l{i,
         &r,
         detail::fresh_sequence(model, plan.capacity, r.encoder_out, r.encoder_mask),
         Sampler(r.params.sampling),
         {},
         r.prompt,
         r.params.prompt_mask,
         r.prompt,
         r.params.prompt_mask};
  l.max_new_tokens = plan.max_new_tokens;
  l.res.prompt_tokens = static_cast<int64_t>(r.prompt.size());
  return l;
}

// After a step: samples l's next token from its logits row and sets its next feed. Returns false
// when the sequence is finished.
bool advance(const Transformer& model, Live& l, float* logits, const BatchTokenCallback& on_token, bool keep_logits) {
  const GenerateParams& p = l.req->params;
  const int64_t V = model.spec().vocab_size;
  if (l.max_new_tokens == 0) return false;
  if (keep_logits) {
    Tensor row = Tensor::zeros({V});
    std::memcpy(row.f32(), logits, static_cast<size_t>(V) * sizeof(float));
    l.res.step_logits.push_back(std::move(row));
  }
  // NaN scores would still pick some id (every comparison false): stop, naming the position.
  check_finite_row(logits, V, static_cast<int64_t>(l.history.size()) - 1,
                   l.index > 0 ? "request " + std::to_string(l.index) + ": logits" : std::string("logits"));
  // Hugging Face's order: penalties and bans, then the length rules, then the pick.
  apply_penalties(logits, V, l.history, p.sampling);
  detail::apply_length_rules(logits, V, p, static_cast<int64_t>(l.req->prompt.size()),
                             static_cast<int64_t>(l.res.ids.size()), l.max_new_tokens);
  const int32_t id = l.sampler.pick(logits, V);
  l.res.ids.push_back(id);
  l.history.push_back(id);
  if (!l.history_mask.empty()) l.history_mask.push_back(1);
  const bool is_stop = std::find(p.stop_ids.begin(), p.stop_ids.end(), id) != p.stop_ids.end();
  if (on_token && !on_token(l.index, id)) return false;
  if (is_stop) {
    l.res.stopped_by_eos = true;
    return false;
  }
  if (static_cast<int>(l.res.ids.size()) == l.max_new_tokens) return false;
  if (detail::needs_refeed(model, p, static_cast<int64_t>(l.history.size()))) {
    // Recompute every key with the rotation in force for the new length (LongRoPE's
    // short→long switch, or the uncached reference mode).
    l.seq = detail::fresh_sequence(model, l.seq.self.capacity, l.req->encoder_out, l.req->encoder_mask);
    l.feed = l.history;
    l.feed_mask = l.history_mask;
  } else {
    l.feed.assign(1, id);
    l.feed_mask.clear();
  }
  return true;
}

}  // namespace

std::vector<GenerateResult> generate_batch(const Transformer& model, const std::vector<GenerateRequest>& requests,
                                           int max_batch, const BatchTokenCallback& on_token, bool keep_logits) {
  using clock = std::chrono::steady_clock;
  if (max_batch < 1) throw Error("generate_batch: max_batch must be >= 1, got " + std::to_string(max_batch));
  std::vector<size_t> beam, plain;
  for (size_t i = 0; i < requests.size(); ++i) (requests[i].params.beams.num_beams > 1 ? beam : plain).push_back(i);
  if (!beam.empty()) {
    // Beam-search requests run through beam_search_batch, the others below; each part's callbacks
    // and results keep the requests' own indices.
    std::vector<GenerateResult> results(requests.size());
    for (const std::vector<size_t>* part : {&beam, &plain}) {
      if (part->empty()) continue;
      std::vector<GenerateRequest> sub;
      for (size_t i : *part) sub.push_back(requests[i]);
      BatchTokenCallback cb;
      if (on_token) cb = [&](size_t k, int32_t id) { return on_token((*part)[k], id); };
      std::vector<GenerateResult> got = part == &beam ? beam_search_batch(model, sub, max_batch, cb)
                                                      : generate_batch(model, sub, max_batch, cb, keep_logits);
      for (size_t k = 0; k < part->size(); ++k) results[(*part)[k]] = std::move(got[k]);
    }
    return results;
  }
  std::vector<GenerateResult> results(requests.size());
  std::vector<Live> live;
  std::vector<DecodeRequest> step;
  size_t next = 0;
  for (;;) {
    while (live.size() < static_cast<size_t>(max_batch) && next < requests.size()) {
      live.push_back(start(model, requests[next], next));
      ++next;
    }
    if (live.empty()) break;
    step.resize(live.size());
    for (size_t i = 0; i < live.size(); ++i) {
      step[i].seq = &live[i].seq;
      step[i].ids.swap(live[i].feed);
      step[i].mask.assign(live[i].feed_mask.begin(), live[i].feed_mask.end());
      step[i].which = LogitsFor::Last;
    }
    const auto t0 = clock::now();
    std::vector<ForwardOutput> out = model.decode_batch(step);
    const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
    size_t kept = 0;
    for (size_t i = 0; i < live.size(); ++i) {
      Live& l = live[i];
      (l.prefilled ? l.res.decode_seconds : l.res.prefill_seconds) += seconds;
      l.prefilled = true;
      const auto t1 = clock::now();
      const bool more = advance(model, l, out[i].logits.f32(), on_token, keep_logits);
      l.res.decode_seconds += std::chrono::duration<double>(clock::now() - t1).count();
      if (more) {
        if (kept != i) live[kept] = std::move(l);
        ++kept;
      } else {
        results[l.index] = std::move(l.res);
      }
    }
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(kept), live.end());
  }
  return results;
}

GenerateResult generate(const Transformer& model, const std::vector<int32_t>& prompt, const GenerateParams& params,
                        const TokenCallback& on_token, const Tensor* encoder_out,
                        const std::vector<uint8_t>& encoder_mask, bool keep_logits) {
  const std::vector<GenerateRequest> one{GenerateRequest{prompt, params, encoder_out, encoder_mask}};
  BatchTokenCallback cb;
  if (on_token) cb = [&](size_t, int32_t id) { return on_token(id); };
  return std::move(generate_batch(model, one, 1, cb, keep_logits)[0]);
}

}  // namespace ordo
