// Beam search: Hugging Face's BeamSearchScorer over beams that are Sequences of the batched engine.
#include "ordo/beam_search.hpp"
#include "ordo/finite.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "generate_internal.hpp"

namespace ordo {

namespace {

constexpr int kMaxBeams = 1024;

// A finished hypothesis: its generated ids and its length-normalised score.
struct Hypothesis {
  double score;
  std::vector<int32_t> ids;
};

// One request's search in flight.
struct Group {
  size_t index = 0;
  const GenerateRequest* req = nullptr;
  int max_new_tokens = 0;
  int64_t capacity = 0;
  int num_beams = 0;
  std::vector<Sequence> seqs;              // beam b's state; before the first step only the prompt's
  std::vector<std::vector<int32_t>> gen;   // beam b's generated tokens
  std::vector<float> beam_scores;          // beam b's summed log-probability (float, as HF's tensor)
  std::vector<std::vector<int32_t>> feed;  // what the next step appends to seqs[b]
  std::vector<std::vector<uint8_t>> feed_mask;
  std::vector<Hypothesis> hyps;  // BeamHypotheses.beams, in insertion order
  double worst = 1e9;            // BeamHypotheses.worst_score
  bool started = false;
  GenerateResult res;
};

void check_beams(const GenerateRequest& r, size_t i) {
  const BeamParams& b = r.params.beams;
  const std::string which = i > 0 ? " (request " + std::to_string(i) + ")" : std::string();
  // Each beam holds a KV cache: a bound keeps a bad config from exhausting memory.
  if (b.num_beams < 2 || b.num_beams > kMaxBeams)
    throw Error("beam search: num_beams must be in [2, " + std::to_string(kMaxBeams) + "], got " +
                std::to_string(b.num_beams) + which);
  if (b.num_return_sequences < 1 || b.num_return_sequences > b.num_beams)
    throw Error("beam search: num_return_sequences must be in [1, num_beams = " + std::to_string(b.num_beams) +
                "], got " + std::to_string(b.num_return_sequences) + which);
  if (!std::isfinite(b.length_penalty))
    throw Error("beam search: length_penalty must be a finite number, got " + std::to_string(b.length_penalty) + which);
}

Group start_group(const Transformer& model, const GenerateRequest& r, size_t i) {
  check_beams(r, i);
  Sampler check(r.params.sampling);  // the penalties' parameters, validated as for sampling
  (void)check;
  const detail::RequestPlan plan = detail::plan_request(model, r, i);
  Group g;
  g.index = i;
  g.req = &r;
  g.max_new_tokens = plan.max_new_tokens;
  g.capacity = plan.capacity;
  g.num_beams = r.params.beams.num_beams;
  g.seqs.push_back(detail::fresh_sequence(model, plan.capacity, r.encoder_out, r.encoder_mask));
  g.feed.push_back(r.prompt);
  g.feed_mask.push_back(r.params.prompt_mask);
  g.gen.assign(static_cast<size_t>(g.num_beams), {});
  // Only the first beam is live at first: the others start at -1e9 so that the first step's
  // candidates come from it alone (HF).
  g.beam_scores.assign(static_cast<size_t>(g.num_beams), -1e9f);
  g.beam_scores[0] = 0.0f;
  g.res.prompt_tokens = static_cast<int64_t>(r.prompt.size());
  return g;
}

// BeamHypotheses.add: keeps the num_beams best hypotheses.
void add_hypothesis(Group& g, float sum_logprobs, std::vector<int32_t> ids, int64_t generated_len) {
  const double score = static_cast<double>(sum_logprobs) /
                       std::pow(static_cast<double>(generated_len), g.req->params.beams.length_penalty);
  const size_t n = static_cast<size_t>(g.num_beams);
  if (g.hyps.size() < n || score > g.worst) {
    g.hyps.push_back(Hypothesis{score, std::move(ids)});
    if (g.hyps.size() > n) {
      // Python's sorted((score, index)): the lowest score goes, the first of equals; the second
      // lowest becomes the worst.
      std::vector<size_t> order(g.hyps.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return g.hyps[a].score < g.hyps[b].score; });
      g.worst = g.hyps[order[1]].score;
      g.hyps.erase(g.hyps.begin() + static_cast<std::ptrdiff_t>(order[0]));
    } else {
      g.worst = std::min(score, g.worst);
    }
  }
}

// BeamHypotheses.is_done after a step whose best candidate scored best_sum_logprobs, cur_len
// tokens generated.
bool is_done(const Group& g, float best_sum_logprobs, int64_t cur_len) {
  if (g.hyps.size() < static_cast<size_t>(g.num_beams)) return false;
  const BeamParams& b = g.req->params.beams;
  if (b.early_stopping == EarlyStopping::OnFull) return true;
  int64_t len = cur_len;
  if (b.early_stopping == EarlyStopping::Never && b.length_penalty > 0) len = g.max_new_tokens;
  const double highest = static_cast<double>(best_sum_logprobs) / std::pow(static_cast<double>(len), b.length_penalty);
  return g.worst >= highest;
}

// BeamSearchScorer.finalize: the running beams join unless the search is done; the best
// num_return_sequences hypotheses, best first.
void finalize(Group& g, bool done, const BatchTokenCallback& on_token) {
  if (!done)
    for (size_t b = 0; b < g.gen.size(); ++b)
      add_hypothesis(g, g.beam_scores[b], g.gen[b], static_cast<int64_t>(g.gen[b].size()));
  // sorted(key=score) then pop() from the end: of equal scores the later one comes first.
  std::stable_sort(g.hyps.begin(), g.hyps.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
  const std::vector<int32_t>& stops = g.req->params.stop_ids;
  for (int k = 0; k < g.req->params.beams.num_return_sequences && !g.hyps.empty(); ++k) {
    g.res.sequences.push_back(ScoredSequence{std::move(g.hyps.back().ids), g.hyps.back().score});
    g.hyps.pop_back();
  }
  if (g.res.sequences.empty()) return;
  g.res.ids = g.res.sequences[0].ids;
  g.res.stopped_by_eos = !g.res.ids.empty() && std::find(stops.begin(), stops.end(), g.res.ids.back()) != stops.end();
  if (on_token)
    for (int32_t id : g.res.ids)
      if (!on_token(g.index, id)) break;
}

// log_softmax of a logits row into out.
void log_softmax(const float* logits, int64_t V, float* out) {
  const float mx = *std::max_element(logits, logits + V);
  double sum = 0;
  for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v] - mx));
  const float lse = static_cast<float>(std::log(sum));
  for (int64_t v = 0; v < V; ++v) out[v] = (logits[v] - mx) - lse;
}

// Scores of every beam x token of group g (rows[b]: beam b's logits row): log_softmax, the
// penalties, plus the beam's score.
std::vector<float> step_scores(const Transformer& model, const Group& g, const std::vector<const float*>& rows) {
  const GenerateParams& p = g.req->params;
  const int64_t V = model.spec().vocab_size;
  const size_t nb = static_cast<size_t>(g.num_beams);
  std::vector<float> scores(nb * static_cast<size_t>(V));
  for (size_t b = 0; b < nb; ++b) {
    float* s = scores.data() + b * static_cast<size_t>(V);
    std::vector<int32_t> history = g.req->prompt;
    history.insert(history.end(), g.gen[b].begin(), g.gen[b].end());
    check_finite_row(
        rows[b], V, static_cast<int64_t>(history.size()) - 1,
        "beam " + std::to_string(b) + (g.index > 0 ? " of request " + std::to_string(g.index) : "") + ": logits");
    log_softmax(rows[b], V, s);
    apply_penalties(s, V, history, p.sampling);
    detail::apply_length_rules(s, V, p, static_cast<int64_t>(g.req->prompt.size()),
                               static_cast<int64_t>(g.gen[b].size()), g.max_new_tokens);
    if (p.renormalize) log_softmax(s, V, s);
    for (int64_t v = 0; v < V; ++v) s[v] += g.beam_scores[b];
  }
  return scores;
}

// The sequences of the next beams (beam i continues old beam src[i] with token tok[i]) and what
// each is fed next, after a step that left cur_len tokens generated.
void reseat(const Transformer& model, Group& g, std::vector<size_t> src, const std::vector<int32_t>& tok,
            int64_t cur_len) {
  const GenerateParams& p = g.req->params;
  const size_t nb = static_cast<size_t>(g.num_beams);
  // Before the first step every beam is the prompt's one sequence.
  std::vector<Sequence> old = std::move(g.seqs);
  if (!g.started)
    for (size_t& s : src) s = 0;
  g.started = true;
  // Each old beam chosen goes to the first new beam that continues it; the others get a copy, in
  // the storage of an old beam nobody chose (or a new one).
  std::vector<int> first(old.size(), -1);
  for (size_t i = 0; i < nb; ++i)
    if (first[src[i]] < 0) first[src[i]] = static_cast<int>(i);
  std::vector<Sequence*> spare;
  for (size_t s = 0; s < old.size(); ++s)
    if (first[s] < 0) spare.push_back(&old[s]);
  g.seqs.assign(nb, Sequence{});
  for (size_t i = 0; i < nb; ++i) {
    if (first[src[i]] == static_cast<int>(i)) continue;
    if (!spare.empty()) {
      g.seqs[i] = std::move(*spare.back());
      spare.pop_back();
    } else {
      g.seqs[i] = model.new_sequence(g.capacity);
    }
    g.seqs[i].copy_from(old[src[i]]);
  }
  for (size_t i = 0; i < nb; ++i)
    if (first[src[i]] == static_cast<int>(i)) g.seqs[i] = std::move(old[src[i]]);
  g.feed.assign(nb, {});
  g.feed_mask.assign(nb, {});
  const int64_t len = static_cast<int64_t>(g.req->prompt.size()) + cur_len;
  for (size_t i = 0; i < nb; ++i) {
    if (detail::needs_refeed(model, p, len)) {
      // As generate(): recompute every key (the uncached reference mode, a rotation switch).
      g.seqs[i] = detail::fresh_sequence(model, g.capacity, g.req->encoder_out, g.req->encoder_mask);
      g.feed[i] = g.req->prompt;
      g.feed[i].insert(g.feed[i].end(), g.gen[i].begin(), g.gen[i].end());
      if (!p.prompt_mask.empty()) {
        g.feed_mask[i] = p.prompt_mask;
        g.feed_mask[i].resize(g.feed[i].size(), 1);
      }
    } else {
      g.feed[i].assign(1, tok[i]);
    }
  }
}

// One step of group g: rows[b] is beam b's logits row. Returns false when the search is over (the
// result is then in g.res).
bool advance(const Transformer& model, Group& g, const std::vector<const float*>& rows,
             const BatchTokenCallback& on_token) {
  const GenerateParams& p = g.req->params;
  const int64_t V = model.spec().vocab_size;
  const size_t nb = static_cast<size_t>(g.num_beams);
  if (g.max_new_tokens == 0) {
    finalize(g, true, on_token);
    return false;
  }
  const std::vector<float> scores = step_scores(model, g, rows);
  // torch.topk of max(2, 1 + #stop ids) x num_beams, best first (equal scores: lower index first).
  const size_t keep = std::min(scores.size(), std::max<size_t>(2, 1 + p.stop_ids.size()) * nb);
  std::vector<int64_t> cand(scores.size());
  for (size_t k = 0; k < cand.size(); ++k) cand[k] = static_cast<int64_t>(k);
  std::partial_sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(keep), cand.end(),
                    [&](int64_t a, int64_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
  const int64_t cur_len = static_cast<int64_t>(g.gen[0].size()) + 1;  // tokens generated after this step
  std::vector<size_t> src;
  std::vector<int32_t> tok;
  std::vector<float> next_scores;
  for (size_t rank = 0; rank < keep && src.size() < nb; ++rank) {
    const size_t b = static_cast<size_t>(cand[rank] / V);
    const int32_t t = static_cast<int32_t>(cand[rank] % V);
    const float score = scores[static_cast<size_t>(cand[rank])];
    if (std::find(p.stop_ids.begin(), p.stop_ids.end(), t) != p.stop_ids.end()) {
      if (rank >= nb) continue;
      std::vector<int32_t> ids = g.gen[b];
      ids.push_back(t);
      add_hypothesis(g, score, std::move(ids), cur_len);
    } else {
      src.push_back(b);
      tok.push_back(t);
      next_scores.push_back(score);
    }
  }
  const bool done = is_done(g, scores[static_cast<size_t>(cand[0])], cur_len);
  // The next beams: beam i continues beam src[i] with tok[i].
  std::vector<std::vector<int32_t>> gen(nb);
  for (size_t i = 0; i < nb; ++i) {
    gen[i] = g.gen[src[i]];
    gen[i].push_back(tok[i]);
  }
  g.gen = std::move(gen);
  g.beam_scores = next_scores;
  if (done || cur_len >= g.max_new_tokens) {
    finalize(g, done, on_token);
    return false;
  }
  reseat(model, g, std::move(src), tok, cur_len);
  return true;
}

}  // namespace

std::vector<GenerateResult> beam_search_batch(const Transformer& model, const std::vector<GenerateRequest>& requests,
                                              int max_batch, const BatchTokenCallback& on_token) {
  using clock = std::chrono::steady_clock;
  if (max_batch < 1) throw Error("beam search: max_batch must be >= 1, got " + std::to_string(max_batch));
  for (size_t i = 0; i < requests.size(); ++i) check_beams(requests[i], i);
  std::vector<GenerateResult> results(requests.size());
  std::vector<Group> live;
  size_t next = 0, beams = 0;
  for (;;) {
    while (next < requests.size() &&
           (live.empty() ||
            beams + static_cast<size_t>(requests[next].params.beams.num_beams) <= static_cast<size_t>(max_batch))) {
      live.push_back(start_group(model, requests[next], next));
      beams += static_cast<size_t>(live.back().num_beams);
      ++next;
    }
    if (live.empty()) break;
    std::vector<DecodeRequest> step;
    for (Group& g : live)
      for (size_t b = 0; b < g.seqs.size(); ++b) {
        DecodeRequest d;
        d.seq = &g.seqs[b];
        d.ids.swap(g.feed[b]);
        d.mask.swap(g.feed_mask[b]);
        d.which = LogitsFor::Last;
        step.push_back(std::move(d));
      }
    const auto t0 = clock::now();
    const std::vector<ForwardOutput> out = model.decode_batch(step);
    const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
    size_t row = 0, kept = 0;
    for (size_t k = 0; k < live.size(); ++k) {
      Group& g = live[k];
      (g.started ? g.res.decode_seconds : g.res.prefill_seconds) += seconds;
      std::vector<const float*> rows(static_cast<size_t>(g.num_beams));
      for (size_t b = 0; b < rows.size(); ++b) rows[b] = out[row + (g.started ? b : 0)].logits.f32();
      row += g.seqs.size();
      const auto t1 = clock::now();
      const bool more = advance(model, g, rows, on_token);
      g.res.decode_seconds += std::chrono::duration<double>(clock::now() - t1).count();
      if (more) {
        if (kept != k) live[kept] = std::move(g);
        ++kept;
      } else {
        beams -= static_cast<size_t>(g.num_beams);
        results[g.index] = std::move(g.res);
      }
    }
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(kept), live.end());
  }
  return results;
}

}  // namespace ordo
