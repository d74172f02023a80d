// What a family file sees: the model directory's config.json and weights (whatever files hold them), with helpers that
// fetch tensors by Hugging Face name (converted to the engine's layout) and fail with the file and tensor named. One
// file per family under families/ turns these into a ModelSpec.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "json_config.hpp"
#include "ordo/spec.hpp"
#include "ordo/weights.hpp"

namespace ordo {

// Hugging Face's activation names (ACT2FN) → the engine's: gelu (exact erf); gelu_new,
// gelu_pytorch_tanh, gelu_fast (the tanh form); relu; silu, swish. Error naming `where` (the file and
// field) and the known names otherwise.
Activation activation_from_name(const std::string& name, const std::string& where);

class FamilyContext {
 public:
  FamilyContext(JsonConfig config, Weights weights, JsonConfig generation);

  const JsonConfig& config() const { return config_; }
  const Weights& weights() const { return weights_; }

  bool has(const std::string& name) const { return weights_.has(name); }
  // The tensor as F32 (borrowed from the mapping when stored F32, converted otherwise), checked
  // against `shape` when given. Errors name the file and tensor.
  Tensor get(const std::string& name, const std::vector<int64_t>& shape = {}) const;
  // Empty tensor when absent.
  Tensor get_optional(const std::string& name, const std::vector<int64_t>& shape = {}) const;
  // nn.Linear "<prefix>.weight" [out, in] and "<prefix>.bias" [out] (bias optional unless required).
  // The weight keeps its stored dtype: F32 as from get(), F16/BF16 borrowed from the mapping (copied
  // when not 2-byte aligned; the loader converts it to the dtype the model runs in, so no F32 copy
  // of the whole model is ever made), I8 with "<prefix>.weight.scales" F32 [out] as `ordo quantize`
  // writes it. Every weight name fetched here is recorded (linear_names()).
  Linear linear(const std::string& prefix, int64_t out, int64_t in, bool bias_required = false) const;
  Linear linear_no_bias(const std::string& prefix, int64_t out, int64_t in) const;
  // linear() with its bias required when `bias`, linear_no_bias() otherwise (config-switched biases).
  Linear linear_biased(const std::string& prefix, int64_t out, int64_t in, bool bias) const;
  // Norm "<prefix>.weight" (+ "<prefix>.bias" for LayerNorm when present).
  Norm norm(const std::string& prefix, NormKind kind, float eps, int64_t dim) const;

  // A spec with config.json's model_type, `graph`, vocab_size and the attention sizes of
  // read_attention_dims (same arguments).
  ModelSpec start_spec(GraphKind graph, std::initializer_list<std::string> d_model_keys,
                       std::initializer_list<std::string> head_keys, const char* head_dim_key = nullptr) const;
  // Multi-head attention sizes: d_model and n_heads from the first present of each key list,
  // n_kv_heads = n_heads; head_dim from `head_dim_key` when config.json has it (heads need not tile
  // d_model then), else d_model / n_heads: an Error naming the file and both fields when n_heads
  // does not divide d_model (a zero count is already an Error naming its field).
  void read_attention_dims(ModelSpec& s, std::initializer_list<std::string> d_model_keys,
                           std::initializer_list<std::string> head_keys, const char* head_dim_key = nullptr) const;

  // Layers "<prefix><l>." for l in [0, n), each built by `layer` from its prefix.
  static std::vector<Layer> layers(const std::string& prefix, int64_t n,
                                   const std::function<Layer(const std::string&)>& layer);

  // "<prefix>.weight" names fetched by linear()/linear_no_bias() so far, with the data pointer of
  // the tensor handed out: a name whose pointer ends up in the built spec's Linear is used as
  // stored, [out, in] (what `ordo quantize` may convert; fused weights that are split are not).
  const std::vector<std::pair<std::string, const void*>>& linear_names() const { return linear_names_; }
  // Every tensor name get() and linear() read so far, in order (repeats possible): the tensors the
  // model is built from, which the load checks for NaN and Inf (weight_check.hpp).
  const std::vector<std::string>& fetched_names() const { return fetched_; }

  // Whether the LM head is the token embedding, as Hugging Face ties it: config.json's
  // tie_word_embeddings, default `tied_by_default` (the family's config class default). HF then
  // overwrites any stored head with the embedding, so a stored one is not read.
  bool ties_lm_head(bool tied_by_default) const;
  // The token embedding table `name` as F32 (get()), remembered as the tensor a tied head reads.
  Tensor embedding(const std::string& name, const std::vector<int64_t>& shape) const;

  // The LM head weight by that rule: the token embedding (embedding()'s tensor) when tied, else the
  // stored tensor `name` [vocab, d_model] (an Error naming the file and tensor when the checkpoint
  // has none); F16, BF16 and the block dtypes (Q8_0, Q4_0, Q4_K) kept as stored like linear()'s
  // weights.
  Tensor lm_head_weight(const ModelSpec& s, const std::string& name, bool tied_by_default) const;

  // The activation named by config field `key` (default `def`); see activation_from_name.
  Activation activation(const std::string& key, const std::string& def) const;

  // Special token ids: generation_config.json first, then config.json, else `def`.
  int32_t token_id(const std::string& key, int32_t def = -1) const;
  // s.bos_id, eos_id and pad_id by token_id(), with the family's defaults.
  void read_special_ids(ModelSpec& s, int32_t bos, int32_t eos, int32_t pad) const;

 private:
  JsonConfig config_;
  Weights weights_;
  JsonConfig generation_;
  mutable std::vector<std::pair<std::string, const void*>> linear_names_;
  mutable std::vector<std::string> fetched_;
  mutable std::string embed_name_;  // embedding()'s tensor
  const Tensor& fetch(const std::string& name) const;
  Tensor linear_weight(const std::string& name, int64_t out, int64_t in, Tensor* scales) const;
  Tensor linear_weight_impl(const std::string& name, int64_t out, int64_t in, Tensor* scales) const;
};

// A fused [3·d, in] projection laid out [q | k | v] (GPT-2, MPT) split into a's q, k and v (each
// bias too when the fused one has a bias), each part in the fused weight's dtype.
void split_qkv(const Linear& qkv, int64_t d, AttentionWeights& a);
// The same for a [heads·3·hd, in] projection laid out per head as [q | k | v] (GPT-NeoX, BLOOM).
void split_qkv_per_head(const Linear& qkv, int64_t heads, int64_t hd, AttentionWeights& a);
// Transposes a 2-D [rows, cols] tensor (GPT-2 Conv1D weights are stored [in, out]).
Tensor transpose(const Tensor& w);

// rope_scaling from config.json (HF spellings: "type" or "rope_type", "factor",
// "original_max_position_embeddings", beta_fast/beta_slow, low/high_freq_factor, short/long_factor,
// attention_factor, mscale, mscale_all_dim). Null or absent → ScalingType::None.
Scaling parse_rope_scaling(const JsonConfig& config);
// The rotated dimensions of a head: int(head_dim · fraction), as Hugging Face computes them, with
// the fraction read from `field` (default 1). An Error naming the field when that leaves fewer than
// two: rotary_dim 0 would otherwise mean "the whole head" to the engine.
int64_t rotary_dims(const JsonConfig& config, const std::string& field, int64_t head_dim);

// The Llama-style decoder, Llama's and the zoo's: "model.layers.<l>." with input_layernorm and
// post_attention_layernorm (RMS), self_attn.q/k/v/o_proj (q, k, v biased when attn_bias) and a
// SwiGLU mlp.gate/up/down_proj (biased when mlp_bias), then "model.norm". Defined in llama.cpp.
struct LlamaDecoder {
  int64_t n_layers, ffn;
  float eps;
  bool attn_bias = false, mlp_bias = false;
};
void read_llama_decoder(const FamilyContext& c, ModelSpec& s, const LlamaDecoder& d);

using FamilyBuilder = std::function<ModelSpec(const FamilyContext&)>;

struct Family {
  const char* name;                      // family file / ordo's name for it
  std::vector<const char*> model_types;  // config.json model_type values it handles
  FamilyBuilder build;
};

// The registry: one line per family in families.cpp.
const std::vector<Family>& families();

}  // namespace ordo
