// A GGUF file's metadata as the files Hugging Face would have written for the same model: the
// `<arch>.*` hyperparameters as config.json (llama/qwen2 or gpt2), so the family files read GGUF and
// safetensors alike, and tokenizer.ggml.* as the tokenizer.
#include <nlohmann/json.hpp>

#include "model_dir.hpp"
#include "ordo/ordo.hpp"
#include "weights/gguf.hpp"

namespace ordo {
namespace {

const GgufTensorInfo* find_tensor(const GgufFile& g, const std::string& name) {
  for (const GgufTensorInfo& t : g.tensors())
    if (t.name == name) return &t;
  return nullptr;
}

// The vocabulary: token_embd's rows (ne[1]).
int64_t vocab_rows(const GgufFile& g) {
  const GgufTensorInfo* e = find_tensor(g, "token_embd.weight");
  if (!e) throw Error(g.path() + ": tensor 'token_embd.weight' missing (the token embedding)");
  if (e->dims.size() != 2) throw Error(g.path() + ": tensor 'token_embd.weight' must be 2-D");
  return e->dims[1];
}

void special_ids(const GgufFile& g, nlohmann::json& c) {
  if (g.find("tokenizer.ggml.bos_token_id")) c["bos_token_id"] = g.get_int("tokenizer.ggml.bos_token_id");
  if (g.find("tokenizer.ggml.eos_token_id")) c["eos_token_id"] = g.get_int("tokenizer.ggml.eos_token_id");
}

// rope.scaling.* -> HF rope_scaling (null for none).
nlohmann::json rope_scaling(const GgufFile& g, const std::string& a) {
  const std::string type = g.get_string(a + ".rope.scaling.type", "none");
  if (type == "none") return nullptr;
  if (type != "linear" && type != "yarn")
    throw Error(g.path() + ": metadata '" + a + ".rope.scaling.type' is '" + type +
                "'; ordo reads none, linear and yarn");
  nlohmann::json s = {{"type", type}};
  const double factor = g.get_float(a + ".rope.scaling.factor", 0.0);
  if (!(factor > 0)) throw Error(g.path() + ": metadata '" + a + ".rope.scaling.factor' must be > 0");
  s["factor"] = factor;
  const int64_t orig = g.get_int(a + ".rope.scaling.original_context_length", 0);
  if (orig > 0) s["original_max_position_embeddings"] = orig;
  if (g.find(a + ".rope.scaling.yarn_beta_fast")) s["beta_fast"] = g.get_float(a + ".rope.scaling.yarn_beta_fast", 32);
  if (g.find(a + ".rope.scaling.yarn_beta_slow")) s["beta_slow"] = g.get_float(a + ".rope.scaling.yarn_beta_slow", 1);
  return s;
}

nlohmann::json llama_config(const GgufFile& g, const std::string& a) {
  if (find_tensor(g, "rope_freqs.weight"))
    throw Error(g.path() +
                ": tensor 'rope_freqs.weight' (Llama 3's per-frequency RoPE factors) is not read "
                "from GGUF yet");
  nlohmann::json c;
  c["model_type"] = a;
  const int64_t d = g.get_int(a + ".embedding_length"), heads = g.get_int(a + ".attention.head_count");
  if (heads <= 0) throw Error(g.path() + ": metadata '" + a + ".attention.head_count' must be > 0");
  c["hidden_size"] = d;
  c["num_hidden_layers"] = g.get_int(a + ".block_count");
  c["intermediate_size"] = g.get_int(a + ".feed_forward_length");
  c["num_attention_heads"] = heads;
  c["num_key_value_heads"] = g.get_int(a + ".attention.head_count_kv", heads);
  const int64_t head_dim = g.get_int(a + ".attention.key_length", d / heads);
  c["head_dim"] = head_dim;
  c["rms_norm_eps"] = g.get_float(a + ".attention.layer_norm_rms_epsilon", 1e-5);
  c["rope_theta"] = g.get_float(a + ".rope.freq_base", 10000.0);
  c["max_position_embeddings"] = g.get_int(a + ".context_length", 2048);
  const int64_t n_rot = g.get_int(a + ".rope.dimension_count", head_dim);
  if (n_rot != head_dim && head_dim > 0) c["partial_rotary_factor"] = static_cast<double>(n_rot) / head_dim;
  c["vocab_size"] = vocab_rows(g);
  c["tie_word_embeddings"] = find_tensor(g, "output.weight") == nullptr;
  c["attention_bias"] = find_tensor(g, "blk.0.attn_q.bias") != nullptr;
  c["rope_scaling"] = rope_scaling(g, a);
  special_ids(g, c);
  return c;
}

nlohmann::json gpt2_config(const GgufFile& g) {
  nlohmann::json c;
  c["model_type"] = "gpt2";
  c["n_embd"] = g.get_int("gpt2.embedding_length");
  c["n_layer"] = g.get_int("gpt2.block_count");
  c["n_head"] = g.get_int("gpt2.attention.head_count");
  c["n_inner"] = g.get_int("gpt2.feed_forward_length");
  c["n_positions"] = g.get_int("gpt2.context_length");
  c["layer_norm_epsilon"] = g.get_float("gpt2.attention.layer_norm_epsilon", 1e-5);
  c["vocab_size"] = vocab_rows(g);
  special_ids(g, c);
  return c;
}

}  // namespace

nlohmann::json gguf_config(const GgufFile& g, const std::string& arch) {
  return arch == "gpt2" ? gpt2_config(g) : llama_config(g, arch);
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const std::string& path, const TokenizerOptions& opts) {
  const GgufFile g = GgufFile::open(path);
  VocabLists v;
  v.model = g.get_string("tokenizer.ggml.model");
  for (const GgufValue& t : g.get_array("tokenizer.ggml.tokens", GgufType::String)) v.tokens.push_back(t.s);
  if (g.find("tokenizer.ggml.scores"))
    for (const GgufValue& s : g.get_array("tokenizer.ggml.scores", GgufType::F32))
      v.scores.push_back(static_cast<float>(s.f));
  if (g.find("tokenizer.ggml.token_type"))
    for (const GgufValue& t : g.get_array("tokenizer.ggml.token_type", GgufType::I32))
      v.types.push_back(static_cast<int32_t>(t.i));
  v.pre = g.get_string("tokenizer.ggml.pre", "");
  if (g.find("tokenizer.ggml.merges"))
    for (const GgufValue& m : g.get_array("tokenizer.ggml.merges", GgufType::String)) v.merges.push_back(m.s);
  auto id = [&](const char* key, std::optional<int32_t>& out) {
    if (!g.find(key)) return;
    const int64_t x = g.get_int(key);
    if (x < 0 || x >= static_cast<int64_t>(v.tokens.size()))
      throw Error(path + ": metadata '" + key + "' = " + std::to_string(x) + " is not a token id (the vocabulary has " +
                  std::to_string(v.tokens.size()) + ")");
    out = static_cast<int32_t>(x);
  };
  id("tokenizer.ggml.bos_token_id", v.bos_id);
  id("tokenizer.ggml.eos_token_id", v.eos_id);
  id("tokenizer.ggml.unknown_token_id", v.unk_id);
  id("tokenizer.ggml.padding_token_id", v.pad_id);
  if (g.find("tokenizer.ggml.add_bos_token")) v.add_bos = g.get_bool("tokenizer.ggml.add_bos_token", true);
  if (g.find("tokenizer.ggml.add_eos_token")) v.add_eos = g.get_bool("tokenizer.ggml.add_eos_token", false);
  if (g.find("tokenizer.ggml.add_space_prefix"))
    v.add_space_prefix = g.get_bool("tokenizer.ggml.add_space_prefix", true);
  return load_tokenizer_lists(v, path, opts);
}

std::unique_ptr<Tokenizer> load_model_tokenizer(const std::string& path, const TokenizerOptions& opts) {
  return is_gguf_file(path) ? load_gguf_tokenizer(path, opts) : load_tokenizer(path, opts);
}

}  // namespace ordo
