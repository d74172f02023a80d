// ordo.Model: loading options and the Python class with its methods: tokenize, forward, generate
// (single, batched, streamed), score, perplexity and embed (generation.cpp, model_calls.cpp).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <random>
#include <shared_mutex>
#include <sstream>

#include "bindings.hpp"
#include "common.hpp"
#include "generation.hpp"
#include "model_calls.hpp"
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
      for (size_t at; (at = msg.find("--" + name)) != std::string::npos;) msg.replace(at, name.size() + 2, py);
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

ModelPtr load_model(const std::string& path, std::optional<std::string> dtype, std::optional<std::string> kv_dtype,
                    std::optional<std::string> position, std::optional<std::string> scaling,
                    std::optional<double> factor, std::optional<int64_t> original_max, std::optional<int> threads,
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
    flags.emplace_back("self-extend", std::to_string(self_extend->first) + "," + std::to_string(self_extend->second));
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

// ---- Binding ------------------------------------------------------------------------------------

#define ORDO_GEN_KWARGS                                                                                           \
  pyb::arg("max_new_tokens") = 64, pyb::arg("temperature") = 0.0, pyb::arg("top_k") = 0, pyb::arg("top_p") = 1.0, \
  pyb::arg("min_p") = 0.0, pyb::arg("repeat_penalty") = 1.0, pyb::arg("seed") = pyb::none(),                      \
  pyb::arg("stop") = pyb::none(), pyb::arg("logprobs") = 0, pyb::arg("add_special") = true

// What the calls return: Generation, Score, Perplexity and the streamer.
void bind_results(pyb::module_& mod) {
  pyb::class_<Generation>(mod, "Generation", "One prompt's generated text, ids, log-probs and finish reason.")
      .def_property_readonly("text", [](const Generation& g) { return utf8_text(g.text); })
      .def_readonly("ids", &Generation::ids)
      .def_readonly("logprobs", &Generation::logprobs, "log p of each generated token (None unless logprobs=k > 0)")
      .def_readonly("top_logprobs", &Generation::top_logprobs, "the k likeliest (id, log p) of each step")
      .def_readonly("finish_reason", &Generation::finish_reason)
      .def_readonly("prompt_tokens", &Generation::prompt_tokens)
      .def_readonly("prefill_seconds", &Generation::prefill_seconds)
      .def_readonly("decode_seconds", &Generation::decode_seconds)
      .def("__repr__", [](const Generation& g) {
        return "<ordo.Generation " + std::to_string(g.ids.size()) + " tokens, finish_reason=" + g.finish_reason + ">";
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
      .def("__repr__", [](const PerplexityOut& p) { return "<ordo.Perplexity " + std::to_string(p.r.ppl()) + ">"; });

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
}

// Loading, info and the tokenizer's calls.
void bind_loading(pyb::class_<SharedModel, ModelPtr>& model) {
  model
      .def(pyb::init(&load_model), pyb::arg("path"), pyb::kw_only(), pyb::arg("dtype") = pyb::none(),
           pyb::arg("kv_dtype") = pyb::none(), pyb::arg("position") = pyb::none(), pyb::arg("scaling") = pyb::none(),
           pyb::arg("factor") = pyb::none(), pyb::arg("original_max") = pyb::none(), pyb::arg("threads") = pyb::none(),
           pyb::arg("backend") = pyb::none(), pyb::arg("max_context") = pyb::none(),
           pyb::arg("self_extend") = pyb::none(), pyb::arg("sinks") = pyb::none(), pyb::arg("window") = pyb::none(),
           pyb::arg("tokenizer") = true, pyb::arg("allow_nonfinite") = false)
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
          pyb::arg("ids"));
}

// forward and the generation calls.
void bind_generation(pyb::class_<SharedModel, ModelPtr>& model) {
  model
      .def("forward", &forward, pyb::arg("ids"), pyb::kw_only(), pyb::arg("hidden_states") = false,
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
            if (max_batch < 1) throw ArgumentError("max_batch must be >= 1, got " + std::to_string(max_batch));
            const GenArgs a = gen_args(n, temp, top_k, top_p, min_p, rp, seed, stop, logprobs, add_special);
            if (pyb::isinstance<pyb::str>(prompts) || pyb::isinstance<pyb::bytes>(prompts))
              throw ArgumentError("prompts: expected a list of prompts, got one text");
            std::vector<Prompt> ps;
            size_t i = 0;
            for (pyb::handle p : prompts) ps.push_back(to_prompt(p, sm, "prompts[" + std::to_string(i++) + "]"));
            if (ps.empty()) return std::vector<Generation>{};
            return run_generate(sm, ps, a, max_batch);
          },
          pyb::arg("prompts"), pyb::kw_only(), pyb::arg("max_batch") = 16, ORDO_GEN_KWARGS)
      .def(
          "_stream",
          [](const ModelPtr& sm, const pyb::object& prompt, int n, double temp, int top_k, double top_p, double min_p,
             double rp, std::optional<int64_t> seed, const pyb::object& stop, int logprobs, bool add_special) {
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
          pyb::arg("prompt"), pyb::kw_only(), ORDO_GEN_KWARGS);
}

// score, perplexity and embed.
void bind_scoring(pyb::class_<SharedModel, ModelPtr>& model) {
  model.def("_score", &score, pyb::arg("inputs"))
      .def("perplexity", &perplexity_of, pyb::arg("text_or_ids"), pyb::kw_only(), pyb::arg("ctx") = pyb::none(),
           pyb::arg("stride") = 0, pyb::arg("batch") = 1)
      .def("embed", &embed, pyb::arg("texts"), pyb::kw_only(), pyb::arg("pooling") = pyb::none(),
           pyb::arg("normalize") = pyb::none(), pyb::arg("batch") = 32, pyb::arg("add_special") = true);
}

}  // namespace

void bind_model(pyb::module_& mod) {
  bind_results(mod);
  pyb::class_<SharedModel, ModelPtr> model(mod, "_Model");
  bind_loading(model);
  bind_generation(model);
  bind_scoring(model);
}

}  // namespace ordo::py
