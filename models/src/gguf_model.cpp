// A GGUF file read as a model directory would be: its `<arch>.*` metadata becomes the config.json
// the family reads, its tensors get Hugging Face's names (llama's Q and K rows back in HF's order),
// and the family file builds the spec as it does for safetensors.
#include <cstring>
#include <nlohmann/json.hpp>

#include "model_dir.hpp"
#include "weights/gguf.hpp"

namespace ordo {
namespace {

using Names = std::vector<std::pair<const char*, const char*>>;

// GGUF name -> HF name, per architecture: the block tensors ("blk.N.<x>") and the rest.
struct ArchNames {
  const char* block_prefix;  // HF's "model.layers." / "transformer.h."
  Names block, top;
};

const ArchNames& llama_names() {
  static const ArchNames n = {
      "model.layers.",
      {{"attn_norm", "input_layernorm"},
       {"attn_q", "self_attn.q_proj"},
       {"attn_k", "self_attn.k_proj"},
       {"attn_v", "self_attn.v_proj"},
       {"attn_output", "self_attn.o_proj"},
       {"ffn_norm", "post_attention_layernorm"},
       {"ffn_gate", "mlp.gate_proj"},
       {"ffn_up", "mlp.up_proj"},
       {"ffn_down", "mlp.down_proj"}},
      {{"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}}};
  return n;
}

const ArchNames& gpt2_names() {
  static const ArchNames n = {"transformer.h.",
                              {{"attn_norm", "ln_1"},
                               {"attn_qkv", "attn.c_attn"},
                               {"attn_output", "attn.c_proj"},
                               {"ffn_norm", "ln_2"},
                               {"ffn_up", "mlp.c_fc"},
                               {"ffn_down", "mlp.c_proj"}},
                              {{"token_embd", "transformer.wte"},
                               {"position_embd", "transformer.wpe"},
                               {"output_norm", "transformer.ln_f"},
                               {"output", "lm_head"}}};
  return n;
}

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight"; "" when not a known name.
std::string hf_name(const ArchNames& n, const std::string& g) {
  const size_t dot = g.rfind('.');
  if (dot == std::string::npos) return "";
  const std::string base = g.substr(0, dot), suffix = g.substr(dot);
  if (suffix != ".weight" && suffix != ".bias") return "";
  if (base.compare(0, 4, "blk.") == 0) {
    const size_t d2 = base.find('.', 4);
    if (d2 == std::string::npos || d2 == 4) return "";
    const std::string layer = base.substr(4, d2 - 4), part = base.substr(d2 + 1);
    if (layer.find_first_not_of("0123456789") != std::string::npos || layer.size() > 6) return "";
    for (const auto& [from, to] : n.block)
      if (part == from) return n.block_prefix + std::to_string(std::stoi(layer)) + "." + to + suffix;
    return "";
  }
  for (const auto& [from, to] : n.top)
    if (base == from) return to + suffix;
  return "";
}

// GPT-2's converter stores the Conv1D weights transposed to [out, in]; the family reads HF's [in, out].
Tensor transposed(const Tensor& t) {
  const Tensor f = t.dtype == DType::F32 ? t : t.to_f32();
  return transpose(f);
}

}  // namespace

nlohmann::json gguf_config(const GgufFile& g, const std::string& arch);  // gguf_config.cpp

Loaded load_gguf(const std::string& path, bool decoded_as_f32) {
  const GgufFile g = GgufFile::open(path);
  const std::string arch = g.get_string("general.architecture");
  const bool llama = arch == "llama" || arch == "qwen2", gpt2 = arch == "gpt2";
  if (!llama && !gpt2)
    throw Error(path + ": metadata 'general.architecture' is '" + arch +
                "', which ordo does not read from GGUF yet (it reads llama, qwen2 and gpt2)");
  const nlohmann::json cfg = gguf_config(g, arch);
  const ArchNames& names = llama ? llama_names() : gpt2_names();
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> unsupported;
  std::map<std::string, int> decoded_types;  // type name -> tensors
  for (const GgufTensorInfo& ti : g.tensors()) {
    const std::string hf = hf_name(names, ti.name);
    if (hf.empty())
      throw Error(path + ": tensor '" + ti.name + "' is not one ordo knows for architecture '" + arch + "'");
    const uint32_t t = ti.type;
    const bool decoded = ggml_type_decodable(t);
    if (t != kGgmlF32 && t != kGgmlF16 && t != kGgmlBF16 && t != kGgmlQ8_0 && t != kGgmlQ4_0 && !decoded) {
      unsupported[hf] = ggml_type_unread(path, ti.name, t);
      continue;
    }
    // Q8_0 / Q4_0 / Q4_K stay blocks (the family's linear weights run on the block kernels; what it
    // reads as floats, embeddings for one, it dequantises); the types ordo only decodes become Q8_0.
    Tensor x = g.tensor(ti, !(decoded && decoded_as_f32));
    const bool q = hf.find("q_proj.weight") != std::string::npos, k = hf.find("k_proj.weight") != std::string::npos;
    if (arch == "llama" && (q || k) && x.ndim() == 2)
      x = gguf_rope_rows(x, cfg.at(q ? "num_attention_heads" : "num_key_value_heads").get<int64_t>(), false,
                         path + ": tensor '" + ti.name + "'");
    if (gpt2 && x.ndim() == 2 && hf.find(".h.") != std::string::npos) x = transposed(x);
    if (decoded && !decoded_as_f32 && x.dtype != DType::Q4_K) ++decoded_types[ggml_type_name(t)];
    tensors.emplace(hf, std::move(x));
  }
  const std::string model_type = cfg.at("model_type").get<std::string>();
  const Family& fam = family_for(model_type, path);
  Loaded out;
  if (!decoded_types.empty()) {
    std::string list;
    for (const auto& [name, count] : decoded_types)
      list += (list.empty() ? "" : ", ") + std::to_string(count) + " " + name;
    out.notes.push_back(path + ": tensors of types ordo has no kernels for (" + list +
                        ") were decoded and run as Q8_0 (8.5 bits per weight), or F32 where read as floats");
  }
  Weights w =
      Weights::from_tensors(path, "gguf v" + std::to_string(g.version()), std::move(tensors), std::move(unsupported),
                            {g.mapped_bytes().first, g.mapped_bytes().second, g.mapping()});
  FamilyContext ctx(JsonConfig(cfg, path), std::move(w), JsonConfig::parse("{}", path));
  build_into(out, fam, ctx);
  return out;
}

}  // namespace ordo
