// GPT-2 family: learned absolute positions (wpe), pre-LN blocks, Conv1D projections stored
// [in, out] (transposed here to the engine's [out, in]), fused c_attn = [q | k | v] along the
// output dimension, gelu_new MLP, final ln_f, lm_head tied to wte.
#include "../family_context.hpp"

namespace ordo {

namespace {

// A Conv1D layer: weight [in, out] → Linear [out, in]; bias [out] required.
Linear conv1d(const FamilyContext& c, const std::string& prefix, int64_t in, int64_t out) {
  Linear l;
  l.weight = transpose(c.get(prefix + ".weight", {in, out}));
  l.bias = c.get(prefix + ".bias", {out});
  return l;
}

}  // namespace

ModelSpec build_gpt2(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s = c.start_spec(GraphKind::Decoder, {"n_embd", "hidden_size"}, {"n_head", "num_attention_heads"});
  const int64_t n_layers = cfg.get_int_any({"n_layer", "num_hidden_layers"});
  const int64_t ffn = cfg.has("n_inner") ? cfg.get_int("n_inner") : 4 * s.d_model;
  const float eps = cfg.get_eps("layer_norm_epsilon", 1e-5);
  const Activation act = c.activation("activation_function", "gelu_new");
  if (cfg.get_bool("scale_attn_by_inverse_layer_idx", false))
    throw Error(cfg.origin() + ": scale_attn_by_inverse_layer_idx is not supported");
  if (!cfg.get_bool("scale_attn_weights", true)) s.attn_scale = 1.0f;
  s.pre_norm = true;

  const int64_t n_pos = cfg.get_int_any({"n_positions", "max_position_embeddings"});
  s.position.scheme = "learned";
  s.position.max_positions = n_pos;
  s.decoder.position.tensors["table"] = c.get("transformer.wpe.weight", {n_pos, s.d_model});

  s.tok_embed = c.embedding("transformer.wte.weight", {s.vocab_size, s.d_model});
  const int64_t d = s.d_model;
  s.decoder.layers = c.layers("transformer.h.", n_layers, [&](const std::string& p) {
    Layer ly;
    ly.attn_norm = c.norm(p + "ln_1", NormKind::Layer, eps, d);
    split_qkv(conv1d(c, p + "attn.c_attn", d, 3 * d), d, ly.self_attn);
    ly.self_attn.out = conv1d(c, p + "attn.c_proj", d, d);
    ly.ffn_norm = c.norm(p + "ln_2", NormKind::Layer, eps, d);
    ly.ffn.up = conv1d(c, p + "mlp.c_fc", d, ffn);
    ly.ffn.down = conv1d(c, p + "mlp.c_proj", ffn, d);
    ly.ffn.act = act;
    return ly;
  });
  s.decoder.final_norm = c.norm("transformer.ln_f", NormKind::Layer, eps, d);
  s.decoder.causal = true;
  s.lm_head.weight = c.lm_head_weight(s, "lm_head.weight", true);
  c.read_special_ids(s, 50256, 50256, -1);
  return s;
}

}  // namespace ordo
