// BLOOM family: ALiBi (no position embeddings), word_embeddings_layernorm right after the token
// embedding, pre-LN blocks, fused query_key_value laid out per head as [q | k | v], tanh-gelu MLP
// (4x), final ln_f, lm_head tied to word_embeddings.
#include "../family_context.hpp"

namespace ordo {

ModelSpec build_bloom(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s = c.start_spec(GraphKind::Decoder, {"hidden_size", "n_embed"}, {"n_head", "num_attention_heads"});
  const int64_t d = s.d_model, hd = s.head_dim, H = s.n_heads;
  const int64_t n_layers = cfg.get_int_any({"n_layer", "num_hidden_layers"});
  const float eps = cfg.get_eps("layer_norm_epsilon", 1e-5);
  if (cfg.get_bool("apply_residual_connection_post_layernorm", false))
    throw Error(cfg.origin() + ": apply_residual_connection_post_layernorm is not supported");
  s.pre_norm = true;

  // ALiBi has no trained table; the length is informational (and sizes the default KV cache).
  s.position.scheme = "alibi";
  s.position.alibi_max_bias = 8.0;
  s.position.max_positions = cfg.get_int_any({"seq_length", "max_position_embeddings", "n_positions"}, 2048);

  // Checkpoints saved from BloomModel (e.g. bigscience/bloom-560m) have no "transformer." prefix.
  const std::string root = c.has("transformer.word_embeddings.weight") ? "transformer." : "";
  s.tok_embed = c.embedding(root + "word_embeddings.weight", {s.vocab_size, d});
  s.embed_norm = c.norm(root + "word_embeddings_layernorm", NormKind::Layer, eps, d);
  s.decoder.layers = c.layers(root + "h.", n_layers, [&](const std::string& p) {
    Layer ly;
    ly.attn_norm = c.norm(p + "input_layernorm", NormKind::Layer, eps, d);
    split_qkv_per_head(c.linear(p + "self_attention.query_key_value", 3 * d, d, true), H, hd, ly.self_attn);
    ly.self_attn.out = c.linear(p + "self_attention.dense", d, d, true);
    ly.ffn_norm = c.norm(p + "post_attention_layernorm", NormKind::Layer, eps, d);
    ly.ffn.up = c.linear(p + "mlp.dense_h_to_4h", 4 * d, d, true);
    ly.ffn.down = c.linear(p + "mlp.dense_4h_to_h", d, 4 * d, true);
    ly.ffn.act = Activation::GeluTanh;
    return ly;
  });
  s.decoder.final_norm = c.norm(root + "ln_f", NormKind::Layer, eps, d);
  s.decoder.causal = true;
  s.lm_head.weight = c.lm_head_weight(s, "lm_head.weight", true);
  c.read_special_ids(s, 1, 2, 3);
  return s;
}

}  // namespace ordo
