// The position probes behind `ordo compare`.
#include "ordo/probes.hpp"
#include "ordo/finite.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jsonl.hpp"
#include "ordo/perplexity.hpp"

namespace ordo::probes {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A word's letters-only core: [begin, begin + len) without leading/trailing punctuation.
struct Core {
  size_t word, begin, len;
  std::string lower;
};

std::vector<Core> content_words(const std::vector<std::string>& words) {
  std::vector<Core> content;
  for (size_t wi = 1; wi < words.size(); ++wi) {
    const std::string& w = words[wi];
    size_t b = 0, e = w.size();
    while (b < e && !std::isalnum(static_cast<unsigned char>(w[b]))) ++b;
    while (e > b && !std::isalnum(static_cast<unsigned char>(w[e - 1]))) --e;
    if (e - b < 4) continue;
    bool alpha = true;
    std::string lower;
    for (size_t k = b; k < e; ++k) {
      alpha = alpha && std::isalpha(static_cast<unsigned char>(w[k]));
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(w[k])));
    }
    if (alpha) content.push_back({wi, b, e - b, lower});
  }
  return content;
}

// Restores the engine's causal flag however the probe ends.
struct CausalRestore {
  Transformer& e;
  ~CausalRestore() { e.set_causal(true); }
};

Tensor bidirectional_hidden(Transformer& eng, const std::vector<int32_t>& ids) {
  if (eng.spec().graph == GraphKind::Encoder) return eng.encode(ids, {}, {});
  CausalRestore restore{eng};
  eng.set_causal(false);
  Sequence s = eng.new_sequence(static_cast<int64_t>(ids.size()));
  return eng.decode(s, ids, {}, LogitsFor::None).final_hidden;
}

}  // namespace

std::vector<std::string> split_sentences(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&]() {
    while (!cur.empty() && cur.back() == ' ') cur.pop_back();
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty() && cur.back() != ' ') cur += ' ';
      continue;
    }
    cur += c;
    if (c == '.' || c == '!' || c == '?') {
      while (i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\'')) cur += text[++i];
      if (i + 1 >= text.size() || std::isspace(static_cast<unsigned char>(text[i + 1]))) flush();
    }
  }
  flush();
  return out;
}

std::vector<WordPair> default_pairs(const std::string& text, size_t max_pairs, uint64_t seed) {
  std::vector<WordPair> pairs;
  const std::vector<std::string> sentences = split_sentences(text);
  for (size_t si = 0; si < sentences.size() && pairs.size() < max_pairs; ++si) {
    std::vector<std::string> words;
    std::stringstream ss(sentences[si]);
    for (std::string w; ss >> w;) words.push_back(w);
    if (words.size() < 5 || words.size() > 30) continue;
    const std::vector<Core> content = content_words(words);
    std::vector<std::pair<size_t, size_t>> candidates;
    for (size_t a = 0; a < content.size(); ++a)
      for (size_t b = a + 1; b < content.size(); ++b)
        if (content[a].lower != content[b].lower) candidates.emplace_back(a, b);
    if (candidates.empty()) continue;
    const auto [a, b] = candidates[splitmix64(seed + si) % candidates.size()];
    const Core &ca = content[a], &cb = content[b];
    std::vector<std::string> swapped = words;
    const std::string core_a = words[ca.word].substr(ca.begin, ca.len),
                      core_b = words[cb.word].substr(cb.begin, cb.len);
    swapped[ca.word] = words[ca.word].substr(0, ca.begin) + core_b + words[ca.word].substr(ca.begin + ca.len);
    swapped[cb.word] = words[cb.word].substr(0, cb.begin) + core_a + words[cb.word].substr(cb.begin + cb.len);
    std::string s;
    for (size_t k = 0; k < swapped.size(); ++k) s += (k ? " " : "") + swapped[k];
    pairs.push_back({sentences[si], s});
  }
  return pairs;
}

std::vector<WordPair> parse_pairs(const std::string& jsonl, const std::string& origin) {
  std::vector<WordPair> out;
  for_each_jsonl_line(jsonl, origin, "{\"original\": \"...\", \"swapped\": \"...\"}",
                      [&](const nlohmann::json& j, const std::string&) {
                        out.push_back({j.at("original").get<std::string>(), j.at("swapped").get<std::string>()});
                      });
  if (out.empty()) throw Error(origin + ": no pairs");
  return out;
}

std::vector<TextScore> causal_scores(const Model& m, const std::vector<const std::string*>& texts) {
  const Transformer& eng = m.engine();
  std::vector<Sequence> seqs;
  std::vector<DecodeRequest> reqs;
  seqs.reserve(texts.size());
  for (const std::string* text : texts) {
    std::vector<int32_t> ids = m.encode(*text, true);
    if (ids.size() < 2) throw Error("'" + *text + "' encodes to fewer than 2 tokens");
    seqs.push_back(eng.new_sequence(static_cast<int64_t>(ids.size())));
    reqs.push_back(DecodeRequest{&seqs.back(), std::move(ids), {}, LogitsFor::All});
  }
  const std::vector<ForwardOutput> outs = eng.decode_batch(reqs, PromptRows::Shared);
  std::vector<TextScore> scores;
  for (size_t i = 0; i < reqs.size(); ++i) {
    TextScore sc;
    sc.ids = std::move(reqs[i].ids);
    const int64_t V = outs[i].logits.dim(1);
    for (size_t t = 1; t < sc.ids.size(); ++t) {
      check_finite_row(outs[i].logits.f32() + (t - 1) * V, V, static_cast<int64_t>(t) - 1,
                       "'" + texts[i]->substr(0, 40) + "': logits");
      const double nll = token_nll(outs[i].logits.f32() + (t - 1) * V, V, sc.ids[t]);
      sc.logprob -= nll;
      sc.abs_terms += std::fabs(nll);
      sc.terms.push_back(-nll);
      sc.positions.push_back(static_cast<int64_t>(t));
    }
    scores.push_back(std::move(sc));
  }
  return scores;
}

std::vector<double> sentence_logprobs(const Model& m, const std::vector<const std::string*>& texts) {
  std::vector<double> lps;
  for (const TextScore& sc : causal_scores(m, texts)) lps.push_back(sc.logprob);
  return lps;
}

bool is_masked_lm(const Model& m) {
  const ModelSpec& s = m.spec();
  return s.graph == GraphKind::Encoder && s.lm_head.present() && s.mask_id >= 0;
}

namespace {

// Positions of `with` (encoded with specials) that hold the text's own tokens (`plain`, encoded
// without): the specials are what encode(text, true) adds before and after them.
std::vector<size_t> non_special_positions(const std::vector<int32_t>& with, const std::vector<int32_t>& plain,
                                          const std::string& text) {
  for (size_t k = 0; k + plain.size() <= with.size() && !plain.empty(); ++k)
    if (std::equal(plain.begin(), plain.end(), with.begin() + static_cast<std::ptrdiff_t>(k))) {
      std::vector<size_t> pos(plain.size());
      for (size_t i = 0; i < pos.size(); ++i) pos[i] = k + i;
      return pos;
    }
  throw Error("PLL: '" + text + "' has no token outside the specials its tokenizer adds");
}

// PLL terms of the masked copies work[i0, i1) — (text, position) each — in one batched encoder
// forward: the copies' final hidden rows at their masked position go through the LM head together.
void pll_batch(const Transformer& eng, const std::vector<std::pair<size_t, size_t>>& work, size_t i0, size_t i1,
               std::vector<TextScore>& scores) {
  std::vector<EncodeRequest> reqs;
  for (size_t i = i0; i < i1; ++i) {
    EncodeRequest r{scores[work[i].first].ids, {}, {}};
    r.ids[work[i].second] = eng.spec().mask_id;
    reqs.push_back(std::move(r));
  }
  const std::vector<Tensor> hidden = eng.encode_batch(reqs);
  const int64_t d = eng.spec().d_model, V = eng.spec().vocab_size;
  std::vector<float> rows(hidden.size() * static_cast<size_t>(d));
  for (size_t i = 0; i < hidden.size(); ++i)
    std::copy_n(hidden[i].f32() + static_cast<int64_t>(work[i0 + i].second) * d, d, rows.begin() + i * d);
  const Tensor logits = eng.logits(rows.data(), static_cast<int64_t>(hidden.size()));
  for (size_t i = 0; i < hidden.size(); ++i) {
    TextScore& sc = scores[work[i0 + i].first];
    check_finite_row(logits.f32() + static_cast<int64_t>(i) * V, V, work[i0 + i].second, "masked logits");
    const double nll = token_nll(logits.f32() + static_cast<int64_t>(i) * V, V, sc.ids[work[i0 + i].second]);
    sc.logprob -= nll;
    sc.abs_terms += std::fabs(nll);
    sc.terms.push_back(-nll);
    sc.positions.push_back(static_cast<int64_t>(work[i0 + i].second));
  }
}

}  // namespace

std::vector<TextScore> pseudo_log_likelihoods(const Model& m, const std::vector<const std::string*>& texts) {
  if (!is_masked_lm(m))
    throw Error(m.dir() + ": PLL needs a masked-LM encoder (encoder-only, with an LM head and a mask token id)");
  std::vector<TextScore> scores(texts.size());
  std::vector<std::pair<size_t, size_t>> work;  // (text, masked position), in text then position order
  for (size_t t = 0; t < texts.size(); ++t) {
    scores[t].ids = m.encode(*texts[t], true);
    // T masked copies of T tokens each: the same length limit as the causal scores.
    m.engine().check_context(static_cast<int64_t>(scores[t].ids.size()), "PLL of '" + texts[t]->substr(0, 40) + "'");
    for (size_t p : non_special_positions(scores[t].ids, m.encode(*texts[t], false), *texts[t]))
      work.emplace_back(t, p);
  }
  // Masked copies share a forward up to kRows rows (one copy alone may exceed it): memory stays
  // bounded however long a text is, and each text's terms are summed in position order.
  constexpr size_t kRows = 8192;
  for (size_t i0 = 0, i1; i0 < work.size(); i0 = i1) {
    size_t rows = 0;
    for (i1 = i0; i1 < work.size(); ++i1) {
      const size_t r = scores[work[i1].first].ids.size();
      if (i1 > i0 && rows + r > kRows) break;
      rows += r;
    }
    pll_batch(m.engine(), work, i0, i1, scores);
  }
  return scores;
}

std::vector<TextScore> text_scores(const Model& m, const std::vector<const std::string*>& texts) {
  return is_masked_lm(m) ? pseudo_log_likelihoods(m, texts) : causal_scores(m, texts);
}

bool is_tie(const TextScore& original, const TextScore& swapped) {
  return std::fabs(original.logprob - swapped.logprob) <= kTieTolerance * (original.abs_terms + swapped.abs_terms);
}

namespace {

PairScore pair_score(const TextScore& o, const TextScore& s, const WordPair& pair) {
  if (!std::isfinite(o.logprob) || !std::isfinite(s.logprob))
    throw Error("word order: the model scores '" + pair.original.substr(0, 40) + "' / '" + pair.swapped.substr(0, 40) +
                "' as " + std::to_string(o.logprob) + " / " + std::to_string(s.logprob) +
                " (non-finite logits: check the weights)");
  PairScore p;
  p.original = o.logprob;
  p.swapped = s.logprob;
  p.tie = is_tie(o, s);
  p.margin = p.tie ? 0.0 : o.logprob - s.logprob;
  std::vector<int32_t> a = o.ids, b = s.ids;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  p.same_tokens = a == b;
  return p;
}

}  // namespace

WordOrderResult word_order(const Model& m, const std::vector<WordPair>& pairs,
                           const std::function<void(size_t, size_t)>& progress) {
  if (pairs.empty()) throw Error("word order: no pairs");
  WordOrderResult r;
  r.method = is_masked_lm(m) ? "pll" : "logprob";
  for (size_t i0 = 0; i0 < pairs.size(); i0 += kPairsPerStep) {
    const size_t n = std::min(kPairsPerStep, pairs.size() - i0);
    std::vector<const std::string*> texts;
    for (size_t i = i0; i < i0 + n; ++i) texts.insert(texts.end(), {&pairs[i].original, &pairs[i].swapped});
    const std::vector<TextScore> sc = text_scores(m, texts);
    for (size_t i = 0; i < n; ++i) r.pairs.push_back(pair_score(sc[2 * i], sc[2 * i + 1], pairs[i0 + i]));
    if (progress) progress(i0 + n, pairs.size());
  }
  summarize_word_order(r);
  return r;
}

void summarize_word_order(WordOrderResult& r) {
  if (r.pairs.empty()) throw Error("word order: no pairs");
  r.wins = r.ties = 0;
  r.mean_margin = 0;
  for (const PairScore& p : r.pairs) {
    r.mean_margin += p.margin;
    r.wins += p.margin > 0;
    r.ties += p.tie;
  }
  const double n = static_cast<double>(r.pairs.size());
  r.accuracy = (static_cast<double>(r.wins) + 0.5 * static_cast<double>(r.ties)) / n;
  r.mean_margin /= n;
}

std::vector<int32_t> probe_ids(const std::vector<int32_t>& heldout, int64_t n, int64_t vocab, uint64_t salt) {
  if (static_cast<int64_t>(heldout.size()) >= n) return std::vector<int32_t>(heldout.begin(), heldout.begin() + n);
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(splitmix64(salt * 1000003 + i) % vocab);
  return ids;
}

PermutationResult permutation(Model& m, const std::vector<int32_t>& ids, uint64_t seed) {
  Transformer& eng = m.engine();
  const int64_t P = static_cast<int64_t>(ids.size());
  std::vector<int64_t> perm_idx(P);
  for (int64_t i = 0; i < P; ++i) perm_idx[i] = i;
  for (int64_t i = P - 1; i > 0; --i) std::swap(perm_idx[i], perm_idx[splitmix64(seed + i) % (i + 1)]);
  std::vector<int32_t> pids(P);
  for (int64_t i = 0; i < P; ++i) pids[i] = ids[perm_idx[i]];
  const Tensor h = bidirectional_hidden(eng, ids), hp = bidirectional_hidden(eng, pids);
  const int64_t d = h.dim(1);
  PermutationResult r;
  for (int64_t i = 0; i < P; ++i)
    for (int64_t c = 0; c < d; ++c) {
      const double a = hp.f32()[i * d + c], b = h.f32()[perm_idx[i] * d + c];
      r.max_abs_error = std::max(r.max_abs_error, std::fabs(a - b));
      r.max_abs_hidden = std::max(r.max_abs_hidden, std::fabs(b));
    }
  r.rel_error = r.max_abs_hidden > 0 ? r.max_abs_error / r.max_abs_hidden : 0.0;
  return r;
}

std::vector<LengthMethod> length_methods(const std::string& scheme) {
  std::vector<LengthMethod> out = {{scaling_name(ScalingType::None), ScalingType::None}};
  for (const ScalingSupport& s : position_scheme_info(scheme).scalings)
    if (s.factor_only) out.push_back({scaling_name(s.type), s.type});
  return out;
}

std::vector<LengthPoint> length(Model& m, const std::vector<int32_t>& ids, const LengthMethod& method,
                                const std::vector<int64_t>& multiples, int64_t base, int64_t trained,
                                const std::function<void(const LengthPoint&, int64_t, int64_t)>& progress) {
  Transformer& eng = m.engine();
  const PositionConfig pc0 = eng.spec().position;
  std::vector<LengthPoint> points;
  for (int64_t k : multiples) {
    LengthPoint pt;
    pt.multiple = k;
    pt.ctx = base * k;
    // factor: context / trained length (= the multiple unless base differs from the trained length)
    const double factor = std::max(1.0, static_cast<double>(pt.ctx) / static_cast<double>(trained));
    pt.factor = method.type == ScalingType::None ? 1.0 : factor;
    try {
      if (pt.ctx > static_cast<int64_t>(ids.size()))
        throw Error("only " + std::to_string(ids.size()) + " tokens to score, fewer than the context of " +
                    std::to_string(pt.ctx));
      PositionConfig pc = pc0;
      pc.scaling = Scaling{};
      pc.scaling.type = method.type;
      if (method.type != ScalingType::None) pc.scaling.factor = factor;
      eng.set_position(pc);
      const PerplexityResult pr = perplexity(
          eng, ids, pt.ctx, 0,
          [&](int64_t done, int64_t total) {
            if (progress) progress(pt, done, total);
          },
          4);
      pt.windows = pr.windows;
      pt.tokens = pr.tokens;
      pt.ppl = pr.ppl();
    } catch (const Error& err) {
      pt.ppl = std::numeric_limits<double>::quiet_NaN();
      pt.error = err.what();
    }
    points.push_back(pt);
  }
  eng.set_position(pc0);
  return points;
}

std::string DistanceBucket::label() const {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

std::vector<DistanceBucket> distance_buckets(int64_t max_distance) {
  std::vector<DistanceBucket> b = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
  for (int64_t lo = 4; lo <= std::max<int64_t>(max_distance, 127); lo *= 2) b.push_back({lo, 2 * lo - 1});
  return b;
}

AttentionProfile attention_by_distance(Model& m, const std::vector<std::vector<int32_t>>& windows,
                                       const std::vector<DistanceBucket>& buckets,
                                       const std::function<void(size_t)>& progress) {
  Transformer& eng = m.engine();
  // Bucket of every distance a window can hold, looked up once per (query, key) pair.
  size_t longest = 1;
  for (const auto& w : windows) longest = std::max(longest, w.size());
  std::vector<size_t> bucket_of(longest);
  for (size_t d = 0, b = 0; d < longest; ++d) {
    while (b + 1 < buckets.size() && static_cast<int64_t>(d) > buckets[b].hi) ++b;
    bucket_of[d] = b;
  }
  std::vector<double> sum(buckets.size(), 0.0);
  std::vector<int64_t> pairs_n(buckets.size(), 0);
  AttentionProfile r;
  struct ObserverRestore {
    Transformer& e;
    ~ObserverRestore() { e.set_attention_observer(nullptr); }
  } restore{eng};
  const bool encoder = eng.spec().graph == GraphKind::Encoder;  // keys on both sides: distance |q − j|
  eng.set_attention_observer([&](int64_t, int64_t, int64_t q, const float* p, int64_t nk) {
    ++r.rows;
    for (int64_t j = 0; j < nk && (encoder || j <= q); ++j) {
      const size_t b = bucket_of[static_cast<size_t>(j > q ? j - q : q - j)];
      sum[b] += p[j];
      ++pairs_n[b];
    }
  });
  for (size_t w = 0; w < windows.size(); ++w) {
    if (progress) progress(w);
    if (encoder) {
      eng.encode(windows[w], {}, {});
      continue;
    }
    Sequence s = eng.new_sequence(static_cast<int64_t>(windows[w].size()));
    eng.decode(s, windows[w], {}, LogitsFor::None);
  }
  for (size_t b = 0; b < buckets.size(); ++b) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    r.mean_weight.push_back(pairs_n[b] > 0 ? sum[b] / static_cast<double>(pairs_n[b]) : nan);
    r.mass.push_back(pairs_n[b] > 0 ? sum[b] / static_cast<double>(r.rows) : nan);
  }
  return r;
}

}  // namespace ordo::probes
