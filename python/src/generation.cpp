// ordo.Model's prompts (text or token ids), generation keyword arguments and results, and the
// batched generation behind generate, generate_batch and the streamer's settings.
#include "generation.hpp"

#include <algorithm>
#include <random>
#include <shared_mutex>

#include "logprobs.hpp"

namespace ordo::py {

Prompt to_prompt(const pyb::handle& o, const SharedModel& sm, const std::string& what) {
  Prompt p;
  if (pyb::isinstance<pyb::str>(o) || pyb::isinstance<pyb::bytes>(o)) {
    p.text = o.cast<std::string>();
    if (!sm.m.has_tokenizer())
      throw ArgumentError(what + ": text needs a tokenizer; this model was loaded without one: give token ids");
    return p;
  }
  try {
    p.ids = o.cast<std::vector<int32_t>>();
  } catch (const pyb::cast_error&) {
    throw ArgumentError(what + ": expected text (str) or token ids (a sequence of int), got " +
                        std::string(pyb::str(o.get_type().attr("__name__"))));
  }
  check_ids(*p.ids, sm.m.spec().vocab_size, what);
  return p;
}

std::vector<Prompt> to_prompts(const pyb::handle& o, const SharedModel& sm, const std::string& what, bool* single) {
  *single = pyb::isinstance<pyb::str>(o) || pyb::isinstance<pyb::bytes>(o);
  if (!*single && pyb::isinstance<pyb::sequence>(o)) {
    pyb::sequence s = o.cast<pyb::sequence>();
    *single = s.size() > 0 && pyb::isinstance<pyb::int_>(s[0]);
  }
  std::vector<Prompt> out;
  if (*single) {
    out.push_back(to_prompt(o, sm, what));
    return out;
  }
  if (!pyb::isinstance<pyb::iterable>(o)) throw ArgumentError(what + ": expected a list of texts or of token-id lists");
  size_t i = 0;
  for (pyb::handle item : o) out.push_back(to_prompt(item, sm, what + "[" + std::to_string(i++) + "]"));
  if (out.empty()) throw ArgumentError(what + ": empty list");
  return out;
}

GenArgs gen_args(int max_new_tokens, double temperature, int top_k, double top_p, double min_p, double repeat_penalty,
                 std::optional<int64_t> seed, const pyb::object& stop, int logprobs, bool add_special) {
  GenArgs g;
  auto range = [](const char* name, double v, double lo, double hi, const char* says) {
    if (!(v >= lo && v <= hi))
      throw ArgumentError(std::string(name) + " must be " + says + ", got " + std::to_string(v));
  };
  range("max_new_tokens", max_new_tokens, 0, 1 << 30, ">= 0");
  range("temperature", temperature, 0, 1e30, ">= 0");
  range("top_k", top_k, 0, 1 << 30, ">= 0 (0: off)");
  range("top_p", top_p, 1e-30, 1, "in (0, 1]");
  range("min_p", min_p, 0, 1, "in [0, 1] (0: off)");
  range("repeat_penalty", repeat_penalty, 1e-30, 1e30, "> 0");
  range("logprobs", logprobs, 0, 1000, "in [0, 1000]");
  if (seed && *seed < 0) throw ArgumentError("seed must be >= 0, got " + std::to_string(*seed));
  TextGenerateParams& p = g.params;
  p.max_new_tokens = max_new_tokens;
  p.sampling.temperature = static_cast<float>(temperature);
  p.sampling.top_k = top_k;
  p.sampling.top_p = static_cast<float>(top_p);
  p.sampling.min_p = static_cast<float>(min_p);
  p.sampling.repetition_penalty = static_cast<float>(repeat_penalty);
  p.sampling.seed = seed ? static_cast<uint64_t>(*seed) : std::random_device{}();
  p.add_special = add_special;
  if (!stop.is_none()) {
    if (pyb::isinstance<pyb::str>(stop))
      p.stop_strings.push_back(stop.cast<std::string>());
    else
      try {
        p.stop_strings = stop.cast<std::vector<std::string>>();
      } catch (const pyb::cast_error&) {
        throw ArgumentError("stop must be a str or a list of str");
      }
    for (const std::string& s : p.stop_strings)
      if (s.empty()) throw ArgumentError("stop: an empty stop string");
  }
  g.logprobs = logprobs;
  return g;
}

namespace {

Generation make_generation(const SharedModel& sm, std::string text, const GenerateResult& g, const GenArgs& a,
                           bool want_logprobs) {
  Generation r;
  r.text = std::move(text);
  r.ids = g.ids;
  r.prompt_tokens = g.prompt_tokens;
  r.prefill_seconds = g.prefill_seconds;
  r.decode_seconds = g.decode_seconds;
  bool stopped = g.stopped_by_eos || static_cast<int>(g.ids.size()) < a.params.max_new_tokens;
  if (!stopped && !a.params.stop_strings.empty() && sm.m.has_tokenizer()) {
    const std::string all = sm.m.decode(g.ids);
    for (const std::string& s : a.params.stop_strings) stopped = stopped || all.find(s) != std::string::npos;
  }
  r.finish_reason = stopped ? "stop" : "length";
  if (want_logprobs) {
    TokenLogprobs lp = step_logprobs(g.step_logits, g.ids, a.logprobs);
    r.logprobs = std::move(lp.chosen);
    r.top_logprobs = std::move(lp.top);
  }
  return r;
}

// Generated ids as text following the prompt (a decoder's prompt is the context, so a word's
// leading space is kept), as TextStreamer streams it.
std::string continuation_text(const Model& m, const std::vector<int32_t>& prompt, const std::vector<int32_t>& ids) {
  StreamDecoder dec(m.tokenizer(), m.spec().graph == GraphKind::EncoderDecoder ? std::vector<int32_t>{} : prompt);
  const std::vector<int32_t>& eos = m.spec().eos_ids;
  std::string text;
  for (int32_t id : ids)
    if (std::find(eos.begin(), eos.end(), id) == eos.end()) text += dec.push(id);
  return text + dec.flush();
}

}  // namespace

std::vector<Generation> run_generate(const SharedModel& sm, const std::vector<Prompt>& prompts, const GenArgs& a,
                                     int max_batch) {
  const bool keep = a.logprobs > 0;
  const bool text = !prompts[0].ids;
  for (const Prompt& p : prompts)
    if (static_cast<bool>(p.ids) == text)
      throw ArgumentError("prompts: give all texts or all token-id lists, not both");
  if (!text && !a.params.stop_strings.empty())
    throw ArgumentError("stop: stop strings need text prompts (these are token ids)");
  std::vector<Generation> out;
  pyb::gil_scoped_release nogil;
  std::shared_lock<std::shared_mutex> shared(sm.mu);
  if (text) {
    std::vector<std::string> texts;
    for (const Prompt& p : prompts) texts.push_back(p.text);
    std::vector<TextResult> res = sm.m.generate_batch(texts, a.params, max_batch, nullptr, keep);
    for (TextResult& r : res) out.push_back(make_generation(sm, std::move(r.text), r.generation, a, keep));
  } else {
    std::vector<std::vector<int32_t>> ids;
    for (const Prompt& p : prompts) ids.push_back(*p.ids);
    std::vector<GenerateResult> res = sm.m.generate_ids_batch(ids, a.params, max_batch, nullptr, keep);
    for (size_t i = 0; i < res.size(); ++i)
      out.push_back(make_generation(
          sm, sm.m.has_tokenizer() ? continuation_text(sm.m, ids[i], res[i].ids) : std::string(), res[i], a, keep));
  }
  return out;
}

}  // namespace ordo::py
