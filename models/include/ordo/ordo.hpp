// ordo's public API: load a Hugging Face model directory, tokenize, run forward passes, generate.
//
//   ordo::Model m = ordo::Model::load("models/stories260K");
//   auto ids = m.encode("Once upon a time");
//   ordo::ForwardOutput out = m.forward(ids);            // out.logits: [T, vocab]
//   ordo::TextGenerateParams p;  p.max_new_tokens = 32;
//   m.generate("Once upon a time", p, [](const std::string& piece) { std::cout << piece; return true; });
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ordo/chat_template.hpp"
#include "ordo/generate.hpp"
#include "ordo/ops.hpp"
#include "ordo/position.hpp"
#include "ordo/spec.hpp"
#include "ordo/tokenizer.hpp"
#include "ordo/transformer.hpp"

namespace ordo {

struct ModelOptions {
  Backend backend = Backend::OneDNN;  // GEMM library of prompt attention; linear layers run on ordo's kernels
  std::string position;               // replaces the model's position scheme ("" keeps it)
  std::optional<Scaling> scaling;     // replaces the model's long-context scaling
  // Self-Extend or attention sinks (ContextExtension in ordo/position.hpp), orthogonal to the
  // scheme and the scaling; nullopt: none.
  std::optional<ContextExtension> extension;
  int threads = 0;             // 0: all cores
  bool load_tokenizer = true;  // false: ids only (e.g. the fixtures, which ship no tokenizer)
  // Storage of every linear weight (attention, FFN, lm_head), converted once at load; compute is
  // F32 either way. nullopt keeps them as stored (F32; a directory written by `ordo quantize`
  // keeps its dtype). I8 is weight-only per-row symmetric quantization (ordo/quantize.hpp).
  std::optional<DType> dtype;
  // Decoder KV cache storage: F32 (exact), F16 (half the cache memory and reads) or I8 (a
  // quarter; see Transformer::set_kv_dtype). nullopt: Transformer::default_kv_dtype, F16 for
  // Q8_0 / Q4_0 / Q4_K linear weights (as loaded: a GGUF file's or --dtype's), F32 otherwise.
  std::optional<DType> kv_dtype;
  // Most positions one sequence may hold (prompt + generated), checked before allocating; 0: the
  // default (Transformer::context_limit).
  int64_t context_limit = 0;
  // A NaN or Inf in a weight is an Error naming the tensor at load; true loads the model anyway and
  // lists each such tensor in Model::load_warnings() (a run then stops at the first non-finite
  // logits instead). Values beyond F16's range under dtype F16 are refused either way.
  bool allow_nonfinite = false;
};

struct TextGenerateParams : GenerateParams {
  std::vector<std::string> stop_strings;  // generation ends at the first occurrence (not printed)
  bool add_special = true;                // BOS (or the tokenizer's specials) before the prompt
};

struct TextResult {
  std::string text;  // generated text only (stop string and stop ids' text excluded)
  GenerateResult generation;
  // Beam search: the text of each of generation.sequences, best first (texts[0] == text).
  std::vector<std::string> texts;
};

// How Model::embed turns one input's token vectors (its last hidden state) into one vector.
enum class Pooling {
  Mean,    // mean over the real tokens (mask 1), special tokens included, as sentence-transformers
  Cls,     // the first token's vector
  Last,    // the last real token's vector (the usual pooling of decoder embedding models)
  Pooler,  // the model's own pooler on the first token (BERT: tanh(dense(h[0]))), where it has one
};
const char* pooling_name(Pooling p);  // "mean", "cls", "last", "pooler"

struct EmbedOptions {
  // nullopt: what the directory's sentence-transformers files choose (modules.json, the Pooling
  // module's config.json, a Normalize module), else Mean for encoder and encoder-decoder models,
  // Last for decoder-only ones, not normalized (Model::embed_options).
  std::optional<Pooling> pooling;
  std::optional<bool> normalize;  // L2: each vector divided by max(|v|, 1e-12)
  bool add_special = true;        // texts: the tokenizer's [CLS]/[SEP], BOS/EOS
  int batch = 32;                 // inputs per forward
};

// Generation settings under Hugging Face's GenerationConfig names, each set only where a file or
// a caller says so. Model::generation_config() holds the model directory's: generation_config.json,
// with config.json's fields too when there is no generation_config.json or it was written from
// config.json ("_from_model_config": true), as transformers reads them.
struct GenerationConfig {
  std::optional<bool> do_sample;
  std::optional<float> temperature, top_p, min_p, repetition_penalty;
  std::optional<int> top_k, max_new_tokens, max_length, num_beams, num_return_sequences, no_repeat_ngram_size;
  std::optional<double> length_penalty;
  std::optional<EarlyStopping> early_stopping;
  std::optional<std::vector<std::vector<int32_t>>> bad_words_ids;
  std::optional<int> min_length, min_new_tokens;
  std::optional<std::vector<int32_t>> forced_eos_token_id;
  std::optional<bool> renormalize_logits;
  // The file each set field came from ("generation_config.json", "config.json"), by field name.
  std::map<std::string, std::string> source;
};

// One setting a generation uses: its name, value and where it came from ("flag", the file, "default").
struct GenerationSetting {
  std::string name, value, source;
};

// The parameters of a generation: each setting from `overrides` (a caller's flags) when set
// there, else from `config` (a model's generation_config()), else ordo's default. Sampling,
// greedy or beam search: overrides' do_sample, temperature (> 0 samples, 0 is greedy) or num_beams
// > 1 decide, else config's do_sample, else config's num_beams > 1 (greedy beams, Hugging Face's
// do_sample default), else ordo's default, sampling. Sampling uses temperature 0.8, top-k 40,
// top-p 0.95 unless set; greedy and beam search use none of them. Length: max_new_tokens, else
// max_length (Hugging Face's: the decoder's whole length), else 128 new tokens. Beam sampling is
// an Error naming where do_sample and num_beams came from (overrides' sampling replaces config's
// beams). no_repeat_ngram_size, bad_words_ids, min_length, min_new_tokens, forced_eos_token_id
// and renormalize_logits apply as Hugging Face applies them. `used`, when given, receives the
// settings in effect with their sources. Stop ids are left empty (the model's EOS ids).
TextGenerateParams resolve_generation(const GenerationConfig& overrides, const GenerationConfig& config,
                                      std::vector<GenerationSetting>* used = nullptr);

// Threads: a loaded Model is immutable and may be shared by any number of threads, each calling
// its const members (encode, forward, generate, embed, the batch calls, engine() const) at the same time,
// with results identical to calling alone. Each call keeps its state to itself: a generation's
// Sequence (KV cache) is its own, scratch buffers and the oneDNN scratchpad belong to the calling
// thread, and OpenBLAS runs single-threaded inside each caller's OpenMP threads. The non-const
// engine() setters (set_position, set_backend, set_kv_dtype, set_causal, set_attention_observer)
// and set_num_threads() configure the model: call them before sharing it, not while others run.
//
// Errors: every call throws ordo::Error and nothing else (an allocation failure as "<dir>: <call>:
// out of memory"), except that an exception thrown by the caller's own callback reaches the caller
// as it was thrown.
class Model {
 public:
  // Reads dir/config.json, the weights (memory-mapped, validated: model.safetensors, sharded
  // safetensors, pytorch_model.bin or sharded .bin; see ordo/weights.hpp) and the tokenizer files.
  // Throws Error naming the file, field or tensor on any problem.
  static Model load(const std::string& dir, const ModelOptions& opts = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const std::string& dir() const;
  const std::string& family() const;  // the family file that built it ("llama", "gpt2", ...)
  // What load() let through with ModelOptions::allow_nonfinite: one line per tensor holding NaN or
  // Inf (file, tensor, first index and value); and, without ModelOptions::dtype, a line for a GGUF
  // file whose tensors of types ordo has no kernels for (Q6_K, Q5_K...) it decoded and runs as
  // Q8_0. Empty for a clean model in a type ordo runs as stored.
  const std::vector<std::string>& load_warnings() const;
  const ModelSpec& spec() const;
  const Transformer& engine() const;
  Transformer& engine();
  bool has_tokenizer() const;
  const Tokenizer& tokenizer() const;  // throws Error if the directory has no tokenizer

  // The directory's generation settings (see GenerationConfig); empty fields where it says nothing.
  const GenerationConfig& generation_config() const;
  // resolve_generation(overrides, generation_config(), used), with bad_words_ids that are one EOS id
  // dropped (as Hugging Face does).
  TextGenerateParams generation_params(const GenerationConfig& overrides = {},
                                       std::vector<GenerationSetting>* used = nullptr) const;

  std::vector<int32_t> encode(const std::string& text, bool add_special = true) const;
  std::string decode(const std::vector<int32_t>& ids) const;

  // Chat (models/src/model_chat.cpp): the directory's chat template (ordo/chat_template.hpp);
  // chat_template() throws an Error naming tokenizer_config.json if there is none.
  bool has_chat_template() const;
  const ChatTemplate& chat_template() const;
  std::string apply_chat_template(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
  // The rendered conversation as ids, encoded without added specials as transformers does (the
  // template writes BOS itself where the model wants one).
  std::vector<int32_t> encode_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
  // Ids that end an assistant turn: the EOS ids (config.json, generation_config.json, the
  // tokenizer) and the end-of-turn special tokens the vocabulary has (<|eot_id|>, <|im_end|>,
  // <end_of_turn>, <|end|>, ...).
  std::vector<int32_t> chat_stop_ids() const;

  // Decoder-only: logits [T, vocab] of every position, hidden states (embedding, each layer, final)
  // when asked. Encoder-only: hidden states of the encoder, last one = output; logits [T, vocab]
  // when the encoder has an LM head (masked-LM encoders such as the zoo's), else empty.
  ForwardOutput forward(const std::vector<int32_t>& ids, bool want_hidden = false) const;
  // Encoder-decoder: logits [T_dec, vocab]; hidden = encoder states followed by decoder states.
  ForwardOutput forward_seq2seq(const std::vector<int32_t>& encoder_ids, const std::vector<int32_t>& decoder_ids,
                                bool want_hidden = false, std::vector<Tensor>* encoder_hidden = nullptr) const;

  // Embeddings: one vector per input, rows of [N, d_model] in input order, pooled from the last
  // hidden state: an encoder's output (encoder-decoder models: the encoder's, as T5EncoderModel),
  // a decoder-only model's final hidden state after its final norm (HF's last_hidden_state).
  // Inputs run `batch` at a time; each row equals the input embedded alone up to float rounding.
  Tensor embed(const std::vector<std::string>& texts, const EmbedOptions& opts = {}) const;
  // Token ids; token_types for BERT-style segments; mask 0 marks padding, left out of every pooling.
  Tensor embed_ids(const std::vector<EncodeRequest>& inputs, const EmbedOptions& opts = {}) const;
  // opts with its unset pooling and normalisation filled in as embed fills them. With no pooling
  // given, a sentence-transformers setup ordo cannot reproduce (another pooling mode, a Dense
  // module, ...) is an Error naming the file and field; an explicit pooling still works then.
  EmbedOptions embed_options(const EmbedOptions& opts = {}) const;
  // The last hidden state [T_i, d_model] of each input, as embed pools it.
  std::vector<Tensor> last_hidden_states(const std::vector<EncodeRequest>& inputs, int batch = 32) const;

  // Generates from token ids (decoder-only: prefix; encoder-decoder: encoder input). Encoder-only
  // models, masked-LM ones included, cannot generate: an Error saying so. Empty params.stop_ids:
  // the model's EOS ids (spec().eos_ids). params.beams.num_beams > 1: beam search
  // (ordo/beam_search.hpp; on_token then sees the best hypothesis once the search is over).
  // The parameters as the model directory defines them: generation_params().
  GenerateResult generate_ids(const std::vector<int32_t>& prompt, const GenerateParams& params,
                              const TokenCallback& on_token = nullptr, bool keep_logits = false) const;
  // Generates from text, streaming decoded text pieces (complete UTF-8) to on_text; return false
  // from on_text to stop early.
  TextResult generate(const std::string& prompt, const TextGenerateParams& params,
                      const std::function<bool(const std::string&)>& on_text = nullptr) const;

  // Many prompts with up to max_batch sequences in flight (continuous batching: each step
  // decodes every sequence in flight in one forward; a finished sequence's slot goes to the next
  // prompt). Results come in input order; each equals what the single-prompt call returns (the
  // same ids, greedy or seeded; logits up to float rounding). Callbacks get the prompt's index.
  std::vector<GenerateResult> generate_ids_batch(const std::vector<std::vector<int32_t>>& prompts,
                                                 const GenerateParams& params, int max_batch,
                                                 const BatchTokenCallback& on_token = nullptr,
                                                 bool keep_logits = false) const;
  // keep_logits: each result's generation.step_logits holds every step's logits row (as generate_ids).
  std::vector<TextResult> generate_batch(const std::vector<std::string>& prompts, const TextGenerateParams& params,
                                         int max_batch,
                                         const std::function<bool(size_t, const std::string&)>& on_text = nullptr,
                                         bool keep_logits = false) const;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  static Model load_impl(const std::string& dir, const ModelOptions& opts);
  ForwardOutput forward_impl(const std::vector<int32_t>& ids, bool want_hidden) const;
  std::vector<GenerateResult> generate_ids_batch_impl(const std::vector<std::vector<int32_t>>& prompts,
                                                      const GenerateParams& params, int max_batch,
                                                      const BatchTokenCallback& on_token, bool keep_logits) const;
  std::vector<TextResult> generate_batch_impl(const std::vector<std::string>& prompts, const TextGenerateParams& params,
                                              int max_batch,
                                              const std::function<bool(size_t, const std::string&)>& on_text,
                                              bool keep_logits = false) const;
  std::unique_ptr<Impl> impl_;
};

// `ordo quantize`: writes out_dir (created if needed) as a copy of in_dir whose linear weights
// are stored as `dtype`: same tensor names in model.safetensors; for I8 a "<name>.scales" F32 [out]
// tensor per weight. config.json gains "ordo_quantization": {"dtype", "scheme"} (also in the
// safetensors metadata). Weights a family reshapes at load (GPT-2 Conv1D, fused QKV) stay F32 in
// the file and are converted when such a directory is loaded, so loading it gives the same model
// as loading in_dir with ModelOptions::dtype = dtype. Other files (tokenizer, generation config)
// are copied. Returns the number of tensors converted. out_dir is built beside itself and swapped in
// whole (OutputDir): refused if it is inside or linked into in_dir, or if it is not empty and not an
// earlier ordo output unless `replace` (then its old contents are removed, never mixed).
// `progress`, if given, is called before each weight is converted: (k, n, tensor name), k from 1.
using QuantizeProgress = std::function<void(size_t k, size_t n, const std::string& name)>;
int quantize_model(const std::string& in_dir, const std::string& out_dir, DType dtype, bool replace = false,
                   const QuantizeProgress& progress = {});

// `ordo quantize --format gguf`: writes `out_file`, one GGUF v3 file llama.cpp reads, from `in` (a
// Hugging Face llama/mistral directory with a SentencePiece tokenizer.model, or a GGUF file, whose
// metadata is copied): `dtype` f32, f16, bf16, q8_0 or q4_0, each tensor typed as llama.cpp's
// converter and quantizer would (gguf_encode.hpp). Built in a temporary file beside out_file and
// renamed over it once synced, so an error or a kill leaves the earlier file or none. Refused when
// out_file is inside or linked into `in`, and, unless `replace`, when it exists and is not a GGUF
// file. Returns the number of tensors written; `progress` as above.
int write_gguf_model(const std::string& in, const std::string& out_file, const std::string& dtype, bool replace = false,
                     const QuantizeProgress& progress = {});

// The tokenizer of a model: load_tokenizer(path) for a directory; for a GGUF file the one its
// metadata holds (tokenizer.ggml.*, load_tokenizer_lists).
std::unique_ptr<Tokenizer> load_model_tokenizer(const std::string& path, const TokenizerOptions& opts = {});

}  // namespace ordo
