// ordo.Model: loading options, tokenize, forward, generate (single, batched, streamed), score,
// perplexity and embed, each computing call without the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <random>
#include <shared_mutex>
#include <sstream>

#include "bindings.hpp"
#include "common.hpp"
#include "logprobs.hpp"
#include "ordo/perplexity.hpp"
#include "ordo/probes.hpp"
#include "stream.hpp"

namespace ordo::py {
namespace {

using ModelPtr = std::shared_ptr<SharedModel>;

// ---- Loading ------------------------------------------------------------------------------------

// The keyword arguments as `ordo run`'s flags, checked and converted by the CLI's own ModelArgs so
// that both accept exactly the same settings; messages name the Python argument.
ModelOptions model_options(const std::vector<std::pair<std::string, std::string>>& flags) {
  CLI::App app;
  cli::ModelArgs args;
  args.add(&app);
  std::vector<std::string> argv;
  for (const auto& [name, value] : flags) {
    argv.push_back("--" + name);
    argv.push_back(value);
  }
  std::reverse(argv.begin(), argv.end());  // CLI11 takes argv reversed
  auto python_names = [&](std::string msg) {
    for (const auto& [name, value] : flags) {
      std::string py = name;
      std::replace(py.begin(), py.end(), '-', '_');
      for (size_t at; (at = msg.find("--" + name)) != std::string::npos;)
        msg.replace(at, name.size() + 2, py);
    }
    return msg;
  };
  try {
    app.parse(argv);
    return args.options();
  } catch (const CLI::Error& e) {
    throw ArgumentError(python_names(e.what()));
  } catch (const Error& e) {
    throw ArgumentError(python_names(e.what()));
  }
}

template <class T>
std::string flag_value(const T& v) {
  if constexpr (std::is_same_v<T, std::string>)
    return v;
  else {
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
  }
}

ModelPtr load_model(const std::string& path, std::optional<std::string> dtype,
                    std::optional<std::string> kv_dtype, std::optional<std::string> position,
                    std::optional<std::string> scaling, std::optional<double> factor,
                    std::optional<int64_t> original_max, std::optional<int> threads,
                    std::optional<std::string> backend, std::optional<int64_t> max_context,
                    std::optional<std::pair<int64_t, int64_t>> self_extend, std::optional<int64_t> sinks,
                    std::optional<int64_t> window, bool tokenizer, bool allow_nonfinite) {
  std::vector<std::pair<std::string, std::string>> flags;
  auto add = [&](const char* name, const auto& v) {
    if (v) flags.emplace_back(name, flag_value(*v));
  };
  add("dtype", dtype);
  add("kv-dtype", kv_dtype);
  add("position", position);
  add("scaling", scaling);
  add("factor", factor);
  add("original-max", original_max);
  add("threads", threads);
  add("backend", backend);
  add("max-context", max_context);
  if (self_extend)
    flags.emplace_back("self-extend",
                       std::to_string(self_extend->first) + "," + std::to_string(self_extend->second));
  add("sinks", sinks);
  add("window", window);
  ModelOptions o = model_options(flags);
  o.load_tokenizer = tokenizer;
  o.allow_nonfinite = allow_nonfinite;
  ModelPtr m;
  {
    pyb::gil_scoped_release nogil;
    m = std::make_shared<SharedModel>(Model::load(path, o));
  }
  // NaN/Inf weights let through: a RuntimeWarning each (an error under warnings' "error" filter).
  for (const std::string& w : m->m.load_warnings())
    if (PyErr_WarnEx(PyExc_RuntimeWarning, w.c_str(), 2) < 0) throw pyb::error_already_set();
  return m;
}

pyb::dict info(const SharedModel& sm) {
  const Model& m = sm.m;
  const ModelSpec& s = m.spec();
  // The probes that retune the model change its position settings under `mu` alone: read them
  // under it shared (without the GIL, so that waiting holds up no other Python thread).
  PositionConfig p;
  int64_t context_limit = 0;
  {
    pyb::gil_scoped_release nogil;
    std::shared_lock<std::shared_mutex> shared(sm.mu);
    p = s.position;
    context_limit = m.engine().context_limit();
  }
  pyb::dict d;
  d["dir"] = m.dir();
  d["family"] = m.family();
  d["architecture"] = s.architecture;
  d["graph"] = graph_kind_name(s.graph);
  d["scheme"] = p.scheme;
  d["scaling"] = scaling_name(p.scaling.type);
  d["scaling_factor"] = p.scaling.type == ScalingType::None ? 1.0 : p.scaling.factor;
  d["extension"] = p.extension.active() ? pyb::object(pyb::str(p.extension.describe())) : pyb::none();
  d["trained_length"] = p.max_positions;
  d["context_limit"] = context_limit;
  d["parameters"] = s.parameter_count();
  d["d_model"] = s.d_model;
  d["n_heads"] = s.n_heads;
  d["n_kv_heads"] = s.n_kv_heads;
  d["head_dim"] = s.head_dim;
  d["encoder_layers"] = s.graph == GraphKind::Decoder ? 0 : s.encoder.layers.size();
  d["decoder_layers"] = s.graph == GraphKind::Encoder ? 0 : s.decoder.layers.size();
  d["vocab"] = s.vocab_size;
  d["bos_id"] = s.bos_id;
  d["eos_id"] = s.eos_id;
  d["pad_id"] = s.pad_id;
  d["has_tokenizer"] = m.has_tokenizer();
  return d;
}

// ---- Prompts and generation parameters ----------------------------------------------------------

struct Prompt {
  std::string text;
  std::optional<std::vector<int32_t>> ids;
};

// str or bytes: text; any other sequence: token ids.
Prompt to_prompt(const pyb::handle& o, const SharedModel& sm, const std::string& what) {
  Prompt p;
  if (pyb::isinstance<pyb::str>(o) || pyb::isinstance<pyb::bytes>(o)) {
    p.text = o.cast<std::string>();
    if (!sm.m.has_tokenizer())
      throw ArgumentError(what +
                          ": text needs a tokenizer; this model was loaded without one: give token ids");
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

std::vector<Prompt> to_prompts(const pyb::handle& o, const SharedModel& sm, const std::string& what,
                               bool* single) {
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
  if (!pyb::isinstance<pyb::iterable>(o))
    throw ArgumentError(what + ": expected a list of texts or of token-id lists");
  size_t i = 0;
  for (pyb::handle item : o) out.push_back(to_prompt(item, sm, what + "[" + std::to_string(i++) + "]"));
  if (out.empty()) throw ArgumentError(what + ": empty list");
  return out;
}

struct GenArgs {
  TextGenerateParams params;
  int logprobs = 0;
};

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

// ---- Results ------------------------------------------------------------------------------------

struct Generation {
  std::string text;
  std::vector<int32_t> ids;
  std::optional<std::vector<double>> logprobs;
  std::optional<std::vector<std::vector<std::pair<int32_t, double>>>> top_logprobs;
  std::string finish_reason;  // "stop" (end of sequence, a stop string or stopped), "length"
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
};

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
std::string continuation_text(const Model& m, const std::vector<int32_t>& prompt,
                              const std::vector<int32_t>& ids) {
  StreamDecoder dec(m.tokenizer(),
                    m.spec().graph == GraphKind::EncoderDecoder ? std::vector<int32_t>{} : prompt);
  const std::vector<int32_t>& eos = m.spec().eos_ids;
  std::string text;
  for (int32_t id : ids)
    if (std::find(eos.begin(), eos.end(), id) == eos.end()) text += dec.push(id);
  return text + dec.flush();
}

std::vector<Generation> run_generate(const SharedModel& sm, const std::vector<Prompt>& prompts,
                                     const GenArgs& a, int max_batch) {
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
          sm, sm.m.has_tokenizer() ? continuation_text(sm.m, ids[i], res[i].ids) : std::string(), res[i], a,
          keep));
  }
  return out;
}

struct Score {
  std::vector<int32_t> ids;
  std::vector<double>
      token_logprobs;              // each scored token's log p (decoders: log p(ids[t] | ids[<t]), t >= 1)
  std::vector<int64_t> positions;  // the position in ids of each scored token
  double logprob = 0;              // their sum (masked-LM encoders: the PLL)
  std::string method;              // "logprob" or "pll"
};

struct PerplexityOut {
  PerplexityResult r;
};

// ---- Binding ------------------------------------------------------------------------------------

#define ORDO_GEN_KWARGS                                                                      \
  pyb::arg("max_new_tokens") = 64, pyb::arg("temperature") = 0.0, pyb::arg("top_k") = 0,     \
  pyb::arg("top_p") = 1.0, pyb::arg("min_p") = 0.0, pyb::arg("repeat_penalty") = 1.0,           \
  pyb::arg("seed") = pyb::none(),                                                              \
  pyb::arg("stop") = pyb::none(), pyb::arg("logprobs") = 0, pyb::arg("add_special") = true

}  // namespace

void bind_model(pyb::module_& mod) {
  pyb::class_<Generation>(mod, "Generation", "One prompt's generated text, ids, log-probs and finish reason.")
      .def_property_readonly("text", [](const Generation& g) { return utf8_text(g.text); })
      .def_readonly("ids", &Generation::ids)
      .def_readonly("logprobs", &Generation::logprobs,
                    "log p of each generated token (None unless logprobs=k > 0)")
      .def_readonly("top_logprobs", &Generation::top_logprobs, "the k likeliest (id, log p) of each step")
      .def_readonly("finish_reason", &Generation::finish_reason)
      .def_readonly("prompt_tokens", &Generation::prompt_tokens)
      .def_readonly("prefill_seconds", &Generation::prefill_seconds)
      .def_readonly("decode_seconds", &Generation::decode_seconds)
      .def("__repr__", [](const Generation& g) {
        return "<ordo.Generation " + std::to_string(g.ids.size()) +
               " tokens, finish_reason=" + g.finish_reason + ">";
      });

  pyb::class_<Score>(mod, "Score", "Log-probabilities of one given input.")
      .def_readonly("ids", &Score::ids)
      .def_readonly("token_logprobs", &Score::token_logprobs)
      .def_readonly("positions", &Score::positions)
      .def_readonly("logprob", &Score::logprob)
      .def_readonly("method", &Score::method)
      .def("__repr__",
           [](const Score& s) { return "<ordo.Score " + s.method + " " + std::to_string(s.logprob) + ">"; });

  pyb::class_<PerplexityOut>(mod, "Perplexity", "What `ordo ppl` reports for one context length.")
      .def_property_readonly("ppl", [](const PerplexityOut& p) { return p.r.ppl(); })
      .def_property_readonly("nll_sum", [](const PerplexityOut& p) { return p.r.nll_sum; })
      .def_property_readonly("tokens", [](const PerplexityOut& p) { return p.r.tokens; })
      .def_property_readonly("windows", [](const PerplexityOut& p) { return p.r.windows; })
      .def_property_readonly("ctx", [](const PerplexityOut& p) { return p.r.ctx; })
      .def("__repr__",
           [](const PerplexityOut& p) { return "<ordo.Perplexity " + std::to_string(p.r.ppl()) + ">"; });

  pyb::class_<TextStreamer, std::shared_ptr<TextStreamer>>(mod, "_Streamer")
      .def("next",
           [](TextStreamer& s) -> pyb::object {
             std::optional<std::string> piece;
             {
               pyb::gil_scoped_release nogil;
               piece = s.next();
             }
             if (!piece) return pyb::none();
             return utf8_text(*piece);
           })
      .def("close", &TextStreamer::close, pyb::call_guard<pyb::gil_scoped_release>())
      .def_property_readonly("finished", &TextStreamer::finished);

  pyb::class_<SharedModel, ModelPtr>(mod, "_Model")
      .def(pyb::init(&load_model), pyb::arg("path"), pyb::kw_only(), pyb::arg("dtype") = pyb::none(),
           pyb::arg("kv_dtype") = pyb::none(), pyb::arg("position") = pyb::none(),
           pyb::arg("scaling") = pyb::none(), pyb::arg("factor") = pyb::none(),
           pyb::arg("original_max") = pyb::none(), pyb::arg("threads") = pyb::none(),
           pyb::arg("backend") = pyb::none(), pyb::arg("max_context") = pyb::none(),
           pyb::arg("self_extend") = pyb::none(), pyb::arg("sinks") = pyb::none(),
           pyb::arg("window") = pyb::none(), pyb::arg("tokenizer") = true, pyb::arg("allow_nonfinite") = false)
      .def_property_readonly("info", &info)
      .def_property_readonly(
          "tokenizer",
          [](const SharedModel& sm) -> pyb::object {
            if (!sm.m.has_tokenizer()) return pyb::none();
            return pyb::cast(&sm.m.tokenizer(), pyb::return_value_policy::reference);
          },
          pyb::keep_alive<0, 1>())
      .def(
          "tokenize",
          [](const SharedModel& sm, const std::string& text, bool add_special) {
            pyb::gil_scoped_release nogil;
            return sm.m.encode(text, add_special);
          },
          pyb::arg("text"), pyb::kw_only(), pyb::arg("add_special") = true)
      .def(
          "detokenize",
          [](const SharedModel& sm, const std::vector<int32_t>& ids) {
            check_ids(ids, sm.m.spec().vocab_size, "ids", true);
            return utf8_text(sm.m.decode(ids));
          },
          pyb::arg("ids"))
      .def(
          "detokenize_bytes",
          [](const SharedModel& sm, const std::vector<int32_t>& ids) {
            check_ids(ids, sm.m.spec().vocab_size, "ids", true);
            return pyb::bytes(sm.m.decode(ids));
          },
          pyb::arg("ids"))
      .def(
          "forward",
          [](const SharedModel& sm, const std::vector<int32_t>& ids, bool hidden,
             std::optional<std::vector<int32_t>> decoder_ids) {
            const int64_t V = sm.m.spec().vocab_size;
            check_ids(ids, V, "ids");
            const GraphKind g = sm.m.spec().graph;
            if (decoder_ids) check_ids(*decoder_ids, V, "decoder_ids");
            if (g == GraphKind::EncoderDecoder && !decoder_ids)
              throw ArgumentError("decoder_ids: " + sm.m.spec().architecture +
                                  " is an encoder-decoder model: give decoder_ids");
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
          },
          pyb::arg("ids"), pyb::kw_only(), pyb::arg("hidden_states") = false,
          pyb::arg("decoder_ids") = pyb::none())
      .def(
          "generate",
          [](const SharedModel& sm, const pyb::object& prompt, int n, double temp, int top_k, double top_p,
             double min_p, double rp, std::optional<int64_t> seed, const pyb::object& stop, int logprobs,
             bool add_special) {
            const GenArgs a = gen_args(n, temp, top_k, top_p, min_p, rp, seed, stop, logprobs, add_special);
            return run_generate(sm, {to_prompt(prompt, sm, "prompt")}, a, 1)[0];
          },
          pyb::arg("prompt"), pyb::kw_only(), ORDO_GEN_KWARGS)
      .def(
          "generate_batch",
          [](const SharedModel& sm, const pyb::object& prompts, int max_batch, int n, double temp, int top_k,
             double top_p, double min_p, double rp, std::optional<int64_t> seed, const pyb::object& stop, int logprobs,
             bool add_special) {
            if (max_batch < 1)
              throw ArgumentError("max_batch must be >= 1, got " + std::to_string(max_batch));
            const GenArgs a = gen_args(n, temp, top_k, top_p, min_p, rp, seed, stop, logprobs, add_special);
            if (pyb::isinstance<pyb::str>(prompts) || pyb::isinstance<pyb::bytes>(prompts))
              throw ArgumentError("prompts: expected a list of prompts, got one text");
            std::vector<Prompt> ps;
            size_t i = 0;
            for (pyb::handle p : prompts)
              ps.push_back(to_prompt(p, sm, "prompts[" + std::to_string(i++) + "]"));
            if (ps.empty()) return std::vector<Generation>{};
            return run_generate(sm, ps, a, max_batch);
          },
          pyb::arg("prompts"), pyb::kw_only(), pyb::arg("max_batch") = 16, ORDO_GEN_KWARGS)
      .def(
          "_stream",
          [](const ModelPtr& sm, const pyb::object& prompt, int n, double temp, int top_k, double top_p,
             double min_p, double rp, std::optional<int64_t> seed, const pyb::object& stop, int logprobs,
             bool add_special) {
            const GenArgs a = gen_args(n, temp, top_k, top_p, min_p, rp, seed, stop, logprobs, add_special);
            Prompt p = to_prompt(prompt, *sm, "prompt");
            if (p.ids && !a.params.stop_strings.empty())
              throw ArgumentError("stop: stop strings need a text prompt (this one is token ids)");
            if (!sm->m.has_tokenizer()) throw ArgumentError("prompt: stream needs a tokenizer to make text");
            if (sm->m.spec().graph == GraphKind::Encoder)
              throw Error(sm->m.spec().architecture + " is an encoder-only model: it cannot generate");
            pyb::gil_scoped_release nogil;
            return std::make_shared<TextStreamer>(sm, p.text, p.ids, a.params, false);
          },
          pyb::arg("prompt"), pyb::kw_only(), ORDO_GEN_KWARGS)
      .def(
          "_score",
          [](const SharedModel& sm, const pyb::object& inputs) {
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
                  throw Error(m.spec().architecture +
                              " is not a decoder-only model: score needs one (or a masked-LM encoder)");
                for (size_t i = 0; i < ids.size(); ++i) {
                  if (ids[i].size() < 2)
                    throw ArgumentError("inputs[" + std::to_string(i) + "]: fewer than 2 tokens to score");
                  ForwardOutput o = m.forward(ids[i]);
                  Score s{ids[i], causal_logprobs(o.logits, ids[i]), {}, 0, "logprob"};
                  for (size_t t = 1; t < ids[i].size(); ++t) s.positions.push_back(static_cast<int64_t>(t));
                  for (double v : s.token_logprobs) s.logprob += v;
                  out.push_back(std::move(s));
                }
              }
            }
            return single ? pyb::cast(out[0]) : pyb::cast(out);
          },
          pyb::arg("inputs"))
      .def(
          "perplexity",
          [](const SharedModel& sm, const pyb::object& input, std::optional<int64_t> ctx, int64_t stride,
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
                throw ArgumentError("ctx " + std::to_string(c) + " is longer than the input (" +
                                    std::to_string(n) + " tokens)");
              if (stride < 0 || stride > c)
                throw ArgumentError("stride must be in [0, ctx], got " + std::to_string(stride));
              if (batch < 1) throw ArgumentError("batch must be >= 1, got " + std::to_string(batch));
              m.engine().check_context(c, "ctx " + std::to_string(c));
              out.r = perplexity(m.engine(), ids, c, stride, nullptr, batch);
            }
            return out;
          },
          pyb::arg("text_or_ids"), pyb::kw_only(), pyb::arg("ctx") = pyb::none(), pyb::arg("stride") = 0,
          pyb::arg("batch") = 1)
      .def(
          "embed",
          [](const SharedModel& sm, const pyb::object& texts, std::optional<std::string> pooling,
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
              o.pooling =
                  p == "mean"   ? Pooling::Mean
                  : p == "cls"  ? Pooling::Cls
                  : p == "last" ? Pooling::Last
                  : p == "pooler"
                      ? Pooling::Pooler
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
          },
          pyb::arg("texts"), pyb::kw_only(), pyb::arg("pooling") = pyb::none(),
          pyb::arg("normalize") = pyb::none(), pyb::arg("batch") = 32, pyb::arg("add_special") = true);
}

}  // namespace ordo::py
