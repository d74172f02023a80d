// Model: loading a model directory (spec, weights, tokenizer) and the forward/encode/decode calls.
#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "generation_config.hpp"
#include "mapped_pages.hpp"
#include "model_dir.hpp"
#include "ordo/input.hpp"
#include "ordo/ordo.hpp"
#include "ordo/quantize.hpp"
#include "ordo/text_stream.hpp"
#include "weight_check.hpp"

namespace fs = std::filesystem;

namespace ordo {

struct Model::Impl {
  std::string dir, family;
  std::unique_ptr<Transformer> engine;
  std::unique_ptr<Tokenizer> tokenizer;
  GenerationConfig generation;
  std::shared_ptr<const ChatTemplate> chat;  // the directory's chat template, if any
  std::string chat_error;                    // why it could not be read (reported when chat is used)
  std::vector<std::string> load_warnings;    // decoded GGUF types run as Q8_0; non-finite weights let through
};

namespace {

// An exception thrown by the caller's own callback belongs to the caller: it travels through ordo
// wrapped in this (not a std::exception, so with_ordo_errors lets it pass) and is rethrown as it was.
struct CallerException {
  std::exception_ptr thrown;
};

template <class... A>
std::function<bool(A...)> passing_caller_exceptions(const std::function<bool(A...)>& f) {
  if (!f) return nullptr;
  return [&f](A... a) {
    try {
      return f(a...);
    } catch (...) {
      throw CallerException{std::current_exception()};
    }
  };
}

// The per-call methods' promise: ordo::Error (an allocation failure as "<dir>: <call>: out of
// memory") or whatever the caller's callback threw, nothing else.
template <class F>
auto guarded(const std::string& dir, const char* call, F&& f) -> decltype(f()) {
  try {
    return with_ordo_errors(dir + ": " + call, std::forward<F>(f));
  } catch (const CallerException& c) {
    std::rethrow_exception(c.thrown);
  }
}

// A tokenizer with ids past the embedding table would fail on the first such token; say so at load.
// A smaller tokenizer is common (embeddings padded to a multiple of 64 or 128) and fine.
void check_tokenizer_fits(const Tokenizer& tok, const ModelSpec& spec, const std::string& dir) {
  const int64_t rows = spec.tok_embed.empty() ? spec.vocab_size : spec.tok_embed.dim(0);
  const int64_t n = tok.vocab_size();
  if (n <= rows) return;
  const std::string file = tok.source().empty() ? "the tokenizer" : fs::path(tok.source()).filename().string();
  throw Error(dir + ": " + file + " has ids up to " + std::to_string(n - 1) + " (" + std::to_string(n) +
              " tokens) but the model's vocabulary has " + std::to_string(rows) +
              " (config.json vocab_size, the embedding's rows): the tokenizer does not belong to this model");
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::string& dir, const ModelOptions& opts) {
  return with_ordo_errors(dir, [&] { return load_impl(dir, opts); });
}

Model Model::load_impl(const std::string& dir, const ModelOptions& opts) {
  set_num_threads(opts.threads);
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  Loaded l = load_dir(dir, opts.dtype.has_value());
  impl->family = l.family;
  ModelSpec spec = std::move(l.spec);
  GenerationFiles gen = read_generation_files(dir);
  impl->generation = std::move(gen.config);
  // Every EOS id of the list whose first the family took (a family that chose another keeps its own).
  if (spec.eos_ids.empty() && spec.eos_id >= 0)
    spec.eos_ids =
        !gen.eos_ids.empty() && gen.eos_ids[0] == spec.eos_id ? gen.eos_ids : std::vector<int32_t>{spec.eos_id};
  // The model is held once, in the dtype it runs in. The family left F16/BF16 linear weights as
  // stored (borrowed from the file): each is converted on its own, its converted copy packed into
  // panels and then freed (pack_panels), and the file pages every source was read from are let go
  // at once (building the spec read the embeddings and norms; converting or packing a weight reads
  // it), so at no point is the file resident beside the copy or an F32 copy of the whole model made.
  // Unless asked otherwise, F32, as every op computes. A directory written by `ordo quantize` may
  // hold weights a family reshaped (kept F32 in the file): convert those too, so the model matches
  // loading the original with that dtype.
  const DType dtype = opts.dtype ? *opts.dtype : l.stored_dtype ? *l.stored_dtype : DType::F32;
  // Every value the model reads is checked for NaN and Inf (named by its tensor, not met as
  // <unk>s): the linear weights as conversion or packing finishes with each, its pages still
  // resident; everything else (and F16's range) now.
  WeightCheck check(l, spec, dtype, opts.allow_nonfinite);
  check.check_now(true);
  MappedPages file_pages;
  file_pages.add(*l.weights);
  file_pages.release_all();
  const WeightDone release = [&](const Tensor& source) {
    check.check_source(source);
    file_pages.release(source);
    l.weights->release_values(source);  // a decoded copy (GGUF K-quants): freed with the spec's hold
  };
  // Without --dtype, a GGUF file's Q8_0 / Q4_0 / Q4_K layers run as stored (as llama.cpp runs them).
  convert_weights(spec, dtype, release, !opts.dtype);
  pack_panels(spec, release);
  check.finish();
  impl->load_warnings = std::move(l.notes);
  impl->load_warnings.insert(impl->load_warnings.end(), check.warnings.begin(), check.warnings.end());
  file_pages.release_all();  // what packing read again of a page two weights share
  l = Loaded{};              // the file's own tensor list: the spec keeps the mapping alive as far as it borrows it
  impl->engine = std::make_unique<Transformer>(std::move(spec), opts.backend);
  impl->engine->set_label(dir);  // errors about a sequence fed to the wrong model name the directory
  impl->engine->set_kv_dtype(opts.kv_dtype ? *opts.kv_dtype : Transformer::default_kv_dtype(impl->engine->spec()));
  impl->engine->set_context_limit(opts.context_limit);
  if (!opts.position.empty() || opts.scaling || opts.extension) {
    PositionConfig pc = impl->engine->spec().position;
    if (!opts.position.empty()) pc.scheme = opts.position;
    if (opts.scaling) pc.scaling = *opts.scaling;
    if (opts.extension) pc.extension = *opts.extension;
    impl->engine->set_position(pc);
  }
  if (opts.load_tokenizer) {
    TokenizerOptions to;
    const ModelSpec& s = impl->engine->spec();
    if (s.bos_id >= 0) to.bos_id = s.bos_id;
    if (s.eos_id >= 0) to.eos_id = s.eos_id;
    impl->tokenizer = load_model_tokenizer(dir, to);
    check_tokenizer_fits(*impl->tokenizer, impl->engine->spec(), dir);
    try {
      if (auto t = load_chat_template(dir)) impl->chat = std::make_shared<const ChatTemplate>(std::move(*t));
    } catch (const Error& e) {
      impl->chat_error = e.what();
    }
  }
  return Model(std::move(impl));
}

const std::string& Model::dir() const { return impl_->dir; }
const std::string& Model::family() const { return impl_->family; }
const std::vector<std::string>& Model::load_warnings() const { return impl_->load_warnings; }
const ModelSpec& Model::spec() const { return impl_->engine->spec(); }
const Transformer& Model::engine() const { return *impl_->engine; }
Transformer& Model::engine() { return *impl_->engine; }
bool Model::has_tokenizer() const { return impl_->tokenizer != nullptr; }
const GenerationConfig& Model::generation_config() const { return impl_->generation; }

TextGenerateParams Model::generation_params(const GenerationConfig& overrides,
                                            std::vector<GenerationSetting>* used) const {
  return guarded(impl_->dir, "generation_params", [&] {
    TextGenerateParams p = resolve_generation(overrides, impl_->generation, used);
    const std::vector<int32_t>& eos = spec().eos_ids;
    auto& bad = p.sampling.bad_words_ids;
    bad.erase(std::remove_if(bad.begin(), bad.end(),
                             [&](const std::vector<int32_t>& w) {
                               return w.size() == 1 && std::find(eos.begin(), eos.end(), w[0]) != eos.end();
                             }),
              bad.end());
    return p;
  });
}

const Tokenizer& Model::tokenizer() const {
  if (!impl_->tokenizer) throw Error(impl_->dir + ": no tokenizer loaded (pass token ids instead of text)");
  return *impl_->tokenizer;
}

bool Model::has_chat_template() const { return impl_->chat != nullptr; }

const ChatTemplate& Model::chat_template() const {
  if (impl_->chat) return *impl_->chat;
  if (!impl_->chat_error.empty()) throw Error(impl_->chat_error);
  throw Error(impl_->dir +
              "/tokenizer_config.json: no \"chat_template\" (and no chat_template.jinja): this model "
              "has no chat template; prompt it with plain text (ordo run -p)");
}

std::vector<int32_t> Model::encode(const std::string& text, bool add_special) const {
  return guarded(impl_->dir, "encode", [&] { return tokenizer().encode(text, add_special); });
}

std::string Model::decode(const std::vector<int32_t>& ids) const {
  return guarded(impl_->dir, "decode", [&] { return tokenizer().decode(ids); });
}

ForwardOutput Model::forward(const std::vector<int32_t>& ids, bool want_hidden) const {
  return guarded(impl_->dir, "forward", [&] { return forward_impl(ids, want_hidden); });
}

ForwardOutput Model::forward_impl(const std::vector<int32_t>& ids, bool want_hidden) const {
  const Transformer& e = *impl_->engine;
  if (e.spec().graph == GraphKind::Encoder) {
    ForwardOutput out;
    Tensor h = e.encode(ids, {}, {}, want_hidden ? &out.hidden : nullptr);
    if (e.spec().lm_head.present()) out.logits = e.logits(h.f32(), h.dim(0));  // masked-LM encoders
    if (!want_hidden) out.hidden.push_back(h);
    return out;
  }
  if (e.spec().graph == GraphKind::EncoderDecoder)
    throw Error(e.spec().architecture + " is an encoder-decoder model: give decoder ids too (forward_seq2seq)");
  Sequence seq = e.new_sequence(static_cast<int64_t>(ids.size()));
  return e.decode(seq, ids, {}, LogitsFor::All, want_hidden);
}

ForwardOutput Model::forward_seq2seq(const std::vector<int32_t>& encoder_ids, const std::vector<int32_t>& decoder_ids,
                                     bool want_hidden, std::vector<Tensor>* encoder_hidden) const {
  return guarded(impl_->dir, "forward_seq2seq", [&] {
    const Transformer& e = *impl_->engine;
    Tensor enc = e.encode(encoder_ids, {}, {}, encoder_hidden);
    Sequence seq = e.new_sequence(static_cast<int64_t>(decoder_ids.size()));
    e.attach_encoder(seq, enc, {});
    return e.decode(seq, decoder_ids, {}, LogitsFor::All, want_hidden);
  });
}

GenerateResult Model::generate_ids(const std::vector<int32_t>& prompt, const GenerateParams& params,
                                   const TokenCallback& on_token, bool keep_logits) const {
  BatchTokenCallback cb;
  if (on_token) cb = [&](size_t, int32_t id) { return on_token(id); };
  return guarded(impl_->dir, "generate_ids", [&] {
    return std::move(generate_ids_batch_impl({prompt}, params, 1, passing_caller_exceptions(cb), keep_logits)[0]);
  });
}

TextResult Model::generate(const std::string& prompt, const TextGenerateParams& params,
                           const std::function<bool(const std::string&)>& on_text) const {
  std::function<bool(size_t, const std::string&)> cb;
  if (on_text) cb = [&](size_t, const std::string& piece) { return on_text(piece); };
  return guarded(impl_->dir, "generate",
                 [&] { return std::move(generate_batch_impl({prompt}, params, 1, passing_caller_exceptions(cb))[0]); });
}

std::vector<GenerateResult> Model::generate_ids_batch(const std::vector<std::vector<int32_t>>& prompts,
                                                      const GenerateParams& params, int max_batch,
                                                      const BatchTokenCallback& on_token, bool keep_logits) const {
  return guarded(impl_->dir, "generate_ids_batch", [&] {
    return generate_ids_batch_impl(prompts, params, max_batch, passing_caller_exceptions(on_token), keep_logits);
  });
}

std::vector<TextResult> Model::generate_batch(const std::vector<std::string>& prompts, const TextGenerateParams& params,
                                              int max_batch,
                                              const std::function<bool(size_t, const std::string&)>& on_text,
                                              bool keep_logits) const {
  return guarded(impl_->dir, "generate_batch", [&] {
    return generate_batch_impl(prompts, params, max_batch, passing_caller_exceptions(on_text), keep_logits);
  });
}

std::vector<GenerateResult> Model::generate_ids_batch_impl(const std::vector<std::vector<int32_t>>& prompts,
                                                           const GenerateParams& params, int max_batch,
                                                           const BatchTokenCallback& on_token, bool keep_logits) const {
  const Transformer& e = *impl_->engine;
  if (e.spec().graph == GraphKind::Encoder)
    throw Error(e.spec().architecture + " is an encoder-only model" +
                (!e.spec().lm_head.present() ? "" : " (bidirectional masked-LM: score text with it, e.g. PLL)") +
                ": it cannot generate");
  if (max_batch < 1) throw Error("batch size must be >= 1, got " + std::to_string(max_batch));
  GenerateParams p = params;
  if (p.stop_ids.empty()) p.stop_ids = e.spec().eos_ids;
  std::vector<GenerateRequest> reqs(prompts.size());
  std::vector<Tensor> enc;
  std::vector<double> encode_seconds(prompts.size(), 0.0);
  const bool seq2seq = e.spec().graph == GraphKind::EncoderDecoder;
  if (seq2seq) {
    // Encoder inputs run max_batch at a time; the decoder starts from decoder_start_id.
    const int32_t start = e.spec().decoder_start_id >= 0 ? e.spec().decoder_start_id : e.spec().pad_id;
    for (size_t b = 0; b < prompts.size(); b += static_cast<size_t>(max_batch)) {
      std::vector<EncodeRequest> chunk;
      for (size_t i = b; i < std::min(prompts.size(), b + static_cast<size_t>(max_batch)); ++i)
        chunk.push_back(EncodeRequest{prompts[i], {}, {}});
      const auto t0 = std::chrono::steady_clock::now();
      for (Tensor& t : e.encode_batch(chunk)) enc.push_back(std::move(t));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (size_t i = b; i < b + chunk.size(); ++i) encode_seconds[i] = s;
    }
    for (size_t i = 0; i < prompts.size(); ++i) reqs[i] = GenerateRequest{{start}, p, &enc[i], {}};
  } else {
    for (size_t i = 0; i < prompts.size(); ++i) reqs[i] = GenerateRequest{prompts[i], p, nullptr, {}};
  }
  std::vector<GenerateResult> res = ordo::generate_batch(e, reqs, max_batch, on_token, keep_logits);
  if (seq2seq)
    for (size_t i = 0; i < res.size(); ++i) {
      // Report the encoder input as the prompt (the decoder's start token is not the user's prompt).
      res[i].prompt_tokens = static_cast<int64_t>(prompts[i].size());
      res[i].prefill_seconds += encode_seconds[i];
    }
  return res;
}

std::vector<TextResult> Model::generate_batch_impl(const std::vector<std::string>& prompts,
                                                   const TextGenerateParams& params, int max_batch,
                                                   const std::function<bool(size_t, const std::string&)>& on_text,
                                                   bool keep_logits) const {
  const Tokenizer& tok = tokenizer();
  const bool seq2seq = spec().graph == GraphKind::EncoderDecoder;
  const std::vector<int32_t> stops = params.stop_ids.empty() ? spec().eos_ids : params.stop_ids;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::unique_ptr<TextStream>> streams;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ids.push_back(tok.encode(prompts[i], params.add_special));
    std::function<bool(const std::string&)> cb;
    if (on_text) cb = [&on_text, i](const std::string& piece) { return on_text(i, piece); };
    streams.push_back(std::make_unique<TextStream>(tok, seq2seq ? std::vector<int32_t>{} : ids.back(),
                                                   params.stop_strings, stops, std::move(cb)));
  }
  std::vector<GenerateResult> gen = generate_ids_batch_impl(
      ids, params, max_batch, [&](size_t i, int32_t id) { return streams[i]->push(id); }, keep_logits);
  std::vector<TextResult> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    streams[i]->finish();
    out[i].text = std::move(streams[i]->text);
    out[i].generation = std::move(gen[i]);
    // Beam search: every returned hypothesis as text (the best one streamed above).
    for (size_t k = 0; k < out[i].generation.sequences.size(); ++k) {
      if (k == 0) {
        out[i].texts.push_back(out[i].text);
        continue;
      }
      TextStream t(tok, seq2seq ? std::vector<int32_t>{} : ids[i], params.stop_strings, stops, nullptr);
      for (int32_t id : out[i].generation.sequences[k].ids)
        if (!t.push(id)) break;
      t.finish();
      out[i].texts.push_back(std::move(t.text));
    }
  }
  return out;
}

}  // namespace ordo
