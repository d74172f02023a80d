// `ordo quantize --format gguf`: a Hugging Face llama-family directory, or a GGUF file, written as
// one GGUF v3 file in llama.cpp's layout (llama.* metadata, tokenizer.ggml.*, blk.N.* tensor names,
// Q and K rows in ggml's RoPE order), so llama.cpp and ordo both read it.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <tuple>

#include "gguf_encode.hpp"
#include "json_config.hpp"
#include "ordo/ordo.hpp"
#include "ordo/output_file.hpp"
#include "ordo/tokenizer.hpp"
#include "ordo/weights.hpp"
#include "weights/gguf.hpp"
#include "weights/gguf_writer.hpp"

namespace fs = std::filesystem;

namespace ordo {
namespace {

// A tensor to write: its GGUF name, its values (HF layout) and, for Q/K, the heads to permute over.
struct Out {
  std::string name;
  Tensor values;
  int64_t permute_heads = 0;
  std::string source;  // the HF name, for errors
};

// HF's llama names -> GGUF's; "" for a tensor the converter drops (rotary inv_freq).
std::string gguf_name(const std::string& hf, const std::string& where) {
  static const std::map<std::string, std::string> top = {{"model.embed_tokens.weight", "token_embd.weight"},
                                                         {"model.norm.weight", "output_norm.weight"},
                                                         {"lm_head.weight", "output.weight"}};
  static const std::map<std::string, std::string> block = {
      {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},   {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"},        {"mlp.down_proj", "ffn_down"},       {"post_attention_layernorm", "ffn_norm"}};
  if (auto it = top.find(hf); it != top.end()) return it->second;
  const std::string prefix = "model.layers.";
  if (hf.find("rotary_emb.inv_freq") != std::string::npos) return "";
  if (hf.compare(0, prefix.size(), prefix) == 0) {
    const size_t d = hf.find('.', prefix.size());
    const size_t last = hf.rfind('.');
    if (d != std::string::npos && last > d) {
      const std::string layer = hf.substr(prefix.size(), d - prefix.size());
      const std::string part = hf.substr(d + 1, last - d - 1), suffix = hf.substr(last);
      auto it = block.find(part);
      if (it != block.end() && !layer.empty() && layer.find_first_not_of("0123456789") == std::string::npos &&
          (suffix == ".weight" || suffix == ".bias"))
        return "blk." + layer + "." + it->second + suffix;
    }
  }
  throw Error(where + ": tensor '" + hf + "' has no GGUF name ordo knows for a llama model");
}

// Sorted as the converter writes them: token_embd, the blocks in order, then the rest.
std::tuple<int, long, std::string> order_key(const std::string& g) {
  if (g.rfind("token_embd", 0) == 0) return {0, 0, g};
  if (g.rfind("blk.", 0) == 0) return {1, std::stol(g.substr(4)), g};
  return {2, 0, g};
}

void llama_metadata(GgufWriter& w, const JsonConfig& c, const std::string& dir, GgufOut t, int64_t vocab) {
  const std::string a = "llama.";
  const int64_t d = c.get_count("hidden_size"), heads = c.get_count("num_attention_heads");
  const int64_t head_dim = c.get_count("head_dim", d / heads);
  std::string name = fs::path(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();
  w.add_string("general.architecture", "llama");
  w.add_string("general.type", "model");
  w.add_string("general.name", name);
  w.add_u32(a + "block_count", static_cast<uint32_t>(c.get_count("num_hidden_layers")));
  w.add_u32(a + "context_length", static_cast<uint32_t>(c.get_count("max_position_embeddings", 2048)));
  w.add_u32(a + "embedding_length", static_cast<uint32_t>(d));
  w.add_u32(a + "feed_forward_length", static_cast<uint32_t>(c.get_count("intermediate_size")));
  w.add_u32(a + "attention.head_count", static_cast<uint32_t>(heads));
  w.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(c.get_count("num_key_value_heads", heads)));
  w.add_f32(a + "rope.freq_base", static_cast<float>(c.get_double("rope_theta", 10000.0)));
  w.add_f32(a + "attention.layer_norm_rms_epsilon", c.get_eps("rms_norm_eps", 1e-6));
  w.add_u32(a + "attention.key_length", static_cast<uint32_t>(head_dim));
  w.add_u32(a + "attention.value_length", static_cast<uint32_t>(head_dim));
  w.add_u32("general.file_type", gguf_file_type(t));
  w.add_u32(a + "vocab_size", static_cast<uint32_t>(vocab));
  w.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(head_dim));
  if (c.has("rope_scaling")) {  // JsonConfig's reads: a wrong type is an Error naming the file and field
    const JsonConfig s = c.child("rope_scaling");
    const std::string type = s.get_string("rope_type", s.get_string("type", std::string()));
    if (type != "linear" && type != "yarn")
      throw Error(c.origin() + ": rope_scaling type '" + type + "' is not written to GGUF yet (linear and yarn are)");
    w.add_string(a + "rope.scaling.type", type);
    w.add_f32(a + "rope.scaling.factor", static_cast<float>(s.get_double("factor", 1.0)));
    if (s.has("original_max_position_embeddings"))
      w.add_u32(a + "rope.scaling.original_context_length",
                static_cast<uint32_t>(s.get_count("original_max_position_embeddings")));
  }
  w.add_u32("general.quantization_version", 2);
}

void tokenizer_metadata(GgufWriter& w, const std::string& dir, const JsonConfig& c, int64_t vocab) {
  const fs::path sp = fs::path(dir) / "tokenizer.model";
  if (!fs::is_regular_file(sp))
    throw Error(dir + ": no tokenizer.model; ordo writes GGUF files with a SentencePiece tokenizer only");
  const VocabLists v = sentencepiece_vocab_lists(sp.string(), vocab);
  w.add_string("tokenizer.ggml.model", v.model);
  w.add_string("tokenizer.ggml.pre", v.pre);
  w.add_strings("tokenizer.ggml.tokens", v.tokens);
  w.add_f32s("tokenizer.ggml.scores", v.scores);
  w.add_i32s("tokenizer.ggml.token_type", v.types);
  for (const char* k : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
    if (!c.has(k) || !c.raw().at(k).is_number_integer()) continue;  // a list of eos ids: the converter skips it too
    // An id outside the vocabulary ("pad_token_id": -1 in early LLaMA configs) names no token: not
    // written, as llama.cpp's converter does (a cast would store -1 as 4294967295).
    const int64_t id = c.get_int(k);
    if (id < 0 || id >= vocab) {
      std::cerr << "note: " << c.origin() << ": " << k << " " << id << " is outside the vocabulary [0, " << vocab
                << "); tokenizer.ggml." << k << " is not written\n";
      continue;
    }
    w.add_u32(std::string("tokenizer.ggml.") + k, static_cast<uint32_t>(id));
  }
  const fs::path tc = fs::path(dir) / "tokenizer_config.json";
  if (fs::is_regular_file(tc)) {
    const JsonConfig t = JsonConfig::load(tc.string());
    if (t.has("add_bos_token")) w.add_bool("tokenizer.ggml.add_bos_token", t.get_bool("add_bos_token"));
    if (t.has("add_eos_token")) w.add_bool("tokenizer.ggml.add_eos_token", t.get_bool("add_eos_token"));
  }
}

int write_from_dir(const std::string& dir, OutputFile& out, GgufOut t, const QuantizeProgress& progress) {
  const JsonConfig c = JsonConfig::load((fs::path(dir) / "config.json").string());
  const std::string mt = c.get_string("model_type");
  if (mt != "llama" && mt != "mistral")
    throw Error(c.origin() + ": model_type '" + mt + "' is not written to GGUF yet (llama and mistral are)");
  const Weights weights = Weights::open_dir(dir);
  std::vector<Out> outs;
  const int64_t heads = c.get_count("num_attention_heads"), kv = c.get_count("num_key_value_heads", heads);
  for (const auto& [hf, tensor] : weights.tensors()) {
    const std::string g = gguf_name(hf, weights.origin());
    if (g.empty()) continue;
    const bool q = g.find(".attn_q.") != std::string::npos, k = g.find(".attn_k.") != std::string::npos;
    outs.push_back({g, tensor, q ? heads : k ? kv : 0, hf});
  }
  const bool has_output = std::any_of(outs.begin(), outs.end(), [](const Out& o) { return o.name == "output.weight"; });
  if (has_output && c.get_bool("tie_word_embeddings", false))  // the converter drops a tied lm_head
    outs.erase(std::remove_if(outs.begin(), outs.end(), [](const Out& o) { return o.name == "output.weight"; }),
               outs.end());
  const bool tied = std::none_of(outs.begin(), outs.end(), [](const Out& o) { return o.name == "output.weight"; });
  std::sort(outs.begin(), outs.end(), [](const Out& x, const Out& y) { return order_key(x.name) < order_key(y.name); });
  auto emb = std::find_if(outs.begin(), outs.end(), [](const Out& o) { return o.name == "token_embd.weight"; });
  if (emb == outs.end()) throw Error(weights.origin() + ": missing tensor 'model.embed_tokens.weight'");
  const int64_t vocab = emb->values.dim(0);
  GgufWriter w;
  llama_metadata(w, c, dir, t, vocab);
  tokenizer_metadata(w, dir, c, vocab);
  std::vector<uint32_t> types;
  for (const Out& o : outs) {
    const std::vector<int64_t> dims(o.values.shape.rbegin(), o.values.shape.rend());
    types.push_back(gguf_tensor_type(t, o.name, dims, tied));
    w.add_tensor(o.name, dims, types.back(), gguf_tensor_bytes(types.back(), static_cast<uint64_t>(o.values.numel())));
  }
  w.write(out, [&](size_t i) {
    if (progress) progress(i + 1, outs.size(), outs[i].name);
    const Out& o = outs[i];
    check_encodable(o.values, types[i], dir + ": tensor '" + o.source + "'");
    return encode_tensor(
        o.permute_heads ? gguf_rope_rows(o.values, o.permute_heads, true, "tensor '" + o.name + "'") : o.values,
        types[i]);
  });
  return static_cast<int>(outs.size());
}

// A GGUF file re-encoded: metadata copied (the file type replaced), tensors decoded and stored in
// the new type under the same names (already in ggml's layout).
int write_from_gguf(const std::string& path, OutputFile& out, GgufOut t, const QuantizeProgress& progress) {
  const GgufFile g = GgufFile::open(path);
  GgufWriter w;
  for (const auto& [key, value] : g.metadata()) {
    if (key == "general.file_type" || key == "general.quantization_version" || key == "general.alignment") continue;
    w.add_value(key, value);
  }
  w.add_u32("general.file_type", gguf_file_type(t));
  w.add_u32("general.quantization_version", 2);
  const auto& infos = g.tensors();
  const bool tied =
      std::none_of(infos.begin(), infos.end(), [](const GgufTensorInfo& i) { return i.name == "output.weight"; });
  std::vector<uint32_t> types;
  for (const GgufTensorInfo& i : infos) {
    uint64_t n = 1;
    for (int64_t d : i.dims) n *= static_cast<uint64_t>(d);
    types.push_back(gguf_tensor_type(t, i.name, i.dims, tied));
    w.add_tensor(i.name, i.dims, types.back(), gguf_tensor_bytes(types.back(), n));
  }
  w.write(out, [&](size_t i) {
    if (progress) progress(i + 1, infos.size(), infos[i].name);
    const Tensor v = g.tensor(infos[i]);
    check_encodable(v, types[i], path + ": tensor '" + infos[i].name + "'");
    return encode_tensor(v, types[i]);
  });
  return static_cast<int>(infos.size());
}

}  // namespace

int write_gguf_model(const std::string& in, const std::string& out_file, const std::string& dtype, bool replace,
                     const QuantizeProgress& progress) {
  const GgufOut t = parse_gguf_out(dtype, "--dtype");
  check_output_outside_inputs(out_file, {in});
  std::error_code ec;
  if (!replace && fs::is_regular_file(out_file, ec) && !is_gguf_file(out_file))
    throw Error(out_file + ": exists and is not a GGUF file; refusing to overwrite it without --replace");
  OutputFile out(out_file);  // a temporary beside out_file, renamed over it only once whole
  return is_gguf_file(in) ? write_from_gguf(in, out, t, progress) : write_from_dir(in, out, t, progress);
}

}  // namespace ordo
