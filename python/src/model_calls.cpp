// ordo.Model's computing calls besides generation: forward, score, perplexity and embed, each
// checking its arguments (ValueError naming them) and running without the GIL.
#include "model_calls.hpp"

#include <shared_mutex>

#include "generation.hpp"
#include "logprobs.hpp"
#include "ordo/probes.hpp"

namespace ordo::py {

pyb::object forward(const SharedModel& sm, const std::vector<int32_t>& ids, bool hidden,
                    std::optional<std::vector<int32_t>> decoder_ids) {
  const int64_t V = sm.m.spec().vocab_size;
  check_ids(ids, V, "ids");
  const GraphKind g = sm.m.spec().graph;
  if (decoder_ids) check_ids(*decoder_ids, V, "decoder_ids");
  if (g == GraphKind::EncoderDecoder && !decoder_ids)
    throw ArgumentError("decoder_ids: " + sm.m.spec().architecture + " is an encoder-decoder model: give decoder_ids");
  if (g != GraphKind::EncoderDecoder && decoder_ids)
    throw ArgumentError("decoder_ids is only for encoder-decoder models");
  ForwardOutput o;
  std::vector<Tensor> enc_hidden;
  {
    pyb::gil_scoped_release nogil;
    std::shared_lock<std::shared_mutex> shared(sm.mu);
    if (decoder_ids)
      o = sm.m.forward_seq2seq(ids, *decoder_ids, hidden, hidden ? &enc_hidden : nullptr);
    else
      o = sm.m.forward(ids, hidden || g == GraphKind::Encoder);
  }
  pyb::object out = pyb::module_::import("types").attr("SimpleNamespace")();
  out.attr("logits") = o.logits.empty() ? pyb::none() : array_object(o.logits);
  out.attr("last_hidden_state") =
      g == GraphKind::Encoder && !o.hidden.empty() ? array_object(o.hidden.back()) : pyb::none();
  pyb::object hs = pyb::none();
  if (hidden) {
    pyb::list l;
    for (Tensor& t : o.hidden) l.append(array_object(t));
    hs = l;
  }
  out.attr("hidden_states") = hs;
  if (decoder_ids && hidden) {
    pyb::list l;
    for (Tensor& t : enc_hidden) l.append(array_object(t));
    out.attr("encoder_hidden_states") = l;
  }
  return out;
}

pyb::object score(const SharedModel& sm, const pyb::object& inputs) {
  bool single = false;
  std::vector<Prompt> ps = to_prompts(inputs, sm, "inputs", &single);
  std::vector<Score> out;
  {
    pyb::gil_scoped_release nogil;
    std::shared_lock<std::shared_mutex> shared(sm.mu);
    const Model& m = sm.m;
    std::vector<std::vector<int32_t>> ids;
    for (const Prompt& p : ps) ids.push_back(p.ids ? *p.ids : m.encode(p.text, true));
    if (probes::is_masked_lm(m)) {
      std::vector<std::string> texts;
      std::vector<const std::string*> tp;
      for (const Prompt& p : ps) {
        if (p.ids)
          throw ArgumentError(
              "inputs: a masked-LM encoder scores text (the tokenizer places its specials): give "
              "str");
        texts.push_back(p.text);
      }
      for (const std::string& t : texts) tp.push_back(&t);
      for (probes::TextScore& s : probes::pseudo_log_likelihoods(m, tp))
        out.push_back(Score{s.ids, s.terms, s.positions, s.logprob, "pll"});
    } else {
      if (m.spec().graph != GraphKind::Decoder)
        throw Error(m.spec().architecture + " is not a decoder-only model: score needs one (or a masked-LM encoder)");
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i].size() < 2) throw ArgumentError("inputs[" + std::to_string(i) + "]: fewer than 2 tokens to score");
        ForwardOutput o = m.forward(ids[i]);
        Score s{ids[i], causal_logprobs(o.logits, ids[i]), {}, 0, "logprob"};
        for (size_t t = 1; t < ids[i].size(); ++t) s.positions.push_back(static_cast<int64_t>(t));
        for (double v : s.token_logprobs) s.logprob += v;
        out.push_back(std::move(s));
      }
    }
  }
  return single ? pyb::cast(out[0]) : pyb::cast(out);
}

PerplexityOut perplexity_of(const SharedModel& sm, const pyb::object& input, std::optional<int64_t> ctx, int64_t stride,
                            int64_t batch) {
  Prompt p = to_prompt(input, sm, "text_or_ids");
  PerplexityOut out;
  {
    pyb::gil_scoped_release nogil;
    std::shared_lock<std::shared_mutex> shared(sm.mu);
    const Model& m = sm.m;
    if (m.spec().graph != GraphKind::Decoder)
      throw Error(m.spec().architecture + ": perplexity needs a decoder-only model");
    // As `ordo ppl`: the text without the tokenizer's specials.
    const std::vector<int32_t> ids = p.ids ? *p.ids : m.encode(p.text, false);
    const int64_t n = static_cast<int64_t>(ids.size());
    const int64_t c = ctx ? *ctx : n;
    if (c < 2) throw ArgumentError("ctx must be >= 2, got " + std::to_string(c));
    if (c > n)
      throw ArgumentError("ctx " + std::to_string(c) + " is longer than the input (" + std::to_string(n) + " tokens)");
    if (stride < 0 || stride > c) throw ArgumentError("stride must be in [0, ctx], got " + std::to_string(stride));
    if (batch < 1) throw ArgumentError("batch must be >= 1, got " + std::to_string(batch));
    m.engine().check_context(c, "ctx " + std::to_string(c));
    out.r = perplexity(m.engine(), ids, c, stride, nullptr, batch);
  }
  return out;
}

Array embed(const SharedModel& sm, const pyb::object& texts, std::optional<std::string> pooling,
            std::optional<bool> normalize, int batch, bool add_special) {
  std::vector<std::string> ts;
  if (pyb::isinstance<pyb::str>(texts))
    ts.push_back(texts.cast<std::string>());
  else
    try {
      ts = texts.cast<std::vector<std::string>>();
    } catch (const pyb::cast_error&) {
      throw ArgumentError("texts must be a str or a list of str");
    }
  if (ts.empty()) throw ArgumentError("texts: empty list");
  if (batch < 1) throw ArgumentError("batch must be >= 1, got " + std::to_string(batch));
  EmbedOptions o;
  if (pooling) {
    const std::string& p = *pooling;
    o.pooling = p == "mean"     ? Pooling::Mean
                : p == "cls"    ? Pooling::Cls
                : p == "last"   ? Pooling::Last
                : p == "pooler" ? Pooling::Pooler
                                : throw ArgumentError("pooling must be mean, cls, last or pooler, got '" + p + "'");
  }
  o.normalize = normalize;
  o.batch = batch;
  o.add_special = add_special;
  Tensor t;
  {
    pyb::gil_scoped_release nogil;
    std::shared_lock<std::shared_mutex> shared(sm.mu);
    t = sm.m.embed(ts, o);
  }
  return make_array(std::move(t));
}

}  // namespace ordo::py
