// ordo zoo family (model_type "ordo-zoo", models/zoo/, trained by tools/zoo/train_zoo.py): one small
// Llama-like stack (pre-norm RMSNorm, SwiGLU, no biases, tied head) trained once per position
// scheme. config.json "position_scheme" picks the scheme; everything else is identical. Attention
// keeps the 1/sqrt(head_dim) scale for every scheme (also relative), so the models differ only in
// the scheme. Token embeddings are multiplied by config "embed_scale" (sqrt(d_model), as in the
// original Transformer) on input only.
//
// "bidirectional": true makes the same stack a masked-LM encoder (GraphKind::Encoder, non-causal:
// relative uses bidirectional buckets, ALiBi -slope·|i−j|) with the same final norm and tied head;
// "mask_token_id" (required then) is the id PLL scoring masks tokens with.
#include "../family_context.hpp"

namespace ordo {
namespace {

// The scheme's settings (every scheme's are read; a scheme ignores the others') and the weights its
// registry entry declares, under the zoo trainer's tensor names, into `stack`.
void read_zoo_position(const FamilyContext& c, ModelSpec& s, Stack& stack) {
  const JsonConfig& cfg = c.config();
  const std::string scheme = cfg.get_string("position_scheme");
  const PositionSchemeInfo* info = nullptr;
  try {
    info = &position_scheme_info(scheme);
  } catch (const Error& e) {
    throw Error(cfg.origin() + ": position_scheme: " + e.what());
  }
  s.position.scheme = scheme;
  s.position.max_positions = cfg.get_int("max_position_embeddings", 128);
  s.position.rope_theta = cfg.get_double("rope_theta", 10000.0);
  s.position.rope_layout = RopeLayout::HalfSplit;
  s.position.rotary_dim = s.head_dim;
  s.position.scaling = parse_rope_scaling(cfg);
  s.position.sinusoidal_layout = SinusoidalLayout::Concat;
  s.position.num_buckets = cfg.get_int("relative_attention_num_buckets", 32);
  s.position.max_distance = cfg.get_int("relative_attention_max_distance", 128);
  s.position.alibi_max_bias = cfg.get_double("alibi_max_bias", 8.0);
  for (const PositionWeightInfo& w : info->weights) {
    const std::string name = w.name;
    if (name == "table")
      stack.position.set(name, c.get("model.embed_positions.weight",
                                     {cfg.get_int("learned_positions", s.position.max_positions), s.d_model}));
    else if (name == "relative_bias")
      stack.position.set(name, c.get("model.relative_attention_bias.weight", {s.position.num_buckets, s.n_heads}));
    else
      throw Error(cfg.origin() + ": the zoo has no tensor for position scheme '" + scheme + "' weight '" + name + "'");
  }
}

// mask_token_id: required, a token id below vocab_size.
int32_t read_mask_id(const JsonConfig& cfg, int64_t vocab) {
  const int64_t id = cfg.get_int("mask_token_id");
  if (id < 0 || id >= vocab)
    throw Error(cfg.origin() + ": field 'mask_token_id' must be a token id in [0, " + std::to_string(vocab - 1) +
                "] (vocab_size " + std::to_string(vocab) + "), got " + std::to_string(id));
  return static_cast<int32_t>(id);
}

}  // namespace

ModelSpec build_zoo(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  const bool encoder = cfg.get_bool("bidirectional", false);
  ModelSpec s = c.start_spec(encoder ? GraphKind::Encoder : GraphKind::Decoder, {"hidden_size"},
                             {"num_attention_heads"}, "head_dim");
  s.attn_scale = 0.0f;  // 1/sqrt(head_dim) for every scheme
  const int64_t ffn = cfg.get_count("intermediate_size");
  const int64_t n_layers = cfg.get_int("num_hidden_layers");
  const float eps = cfg.get_eps("rms_norm_eps", 1e-5);
  read_zoo_position(c, s, s.decoder);
  s.tok_embed = c.embedding("model.embed_tokens.weight", {s.vocab_size, s.d_model});
  s.embed_scale = cfg.get_eps("embed_scale", 1.0);  // sqrt(d_model); head unscaled
  read_llama_decoder(c, s, {n_layers, ffn, eps});
  s.lm_head.weight = c.lm_head_weight(s, "lm_head.weight", true);
  c.read_special_ids(s, 1, 2, -1);
  if (encoder) {  // the same layers, run without the causal mask
    s.encoder = std::move(s.decoder);
    s.decoder = Stack{};
    s.encoder.causal = false;
    s.mask_id = read_mask_id(cfg, s.vocab_size);
  }
  return s;
}

}  // namespace ordo
