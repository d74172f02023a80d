// GPT-NeoX family (Pythia, GPT-NeoX-20B): partial RoPE in the half-split (rotate_half) layout on
// the first head_dim·rotary_pct dims of each head, fused query_key_value laid out per head as
// [q | k | v], parallel residual x + attn(ln1(x)) + mlp(ln2(x)) (or sequential pre-LN when
// use_parallel_residual is false), exact gelu, final_layer_norm, untied embed_out.
#include <cmath>

#include "../family_context.hpp"

namespace ordo {

ModelSpec build_gpt_neox(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s = c.start_spec(GraphKind::Decoder, {"hidden_size"}, {"num_attention_heads"});
  const int64_t d = s.d_model, hd = s.head_dim, H = s.n_heads;
  const int64_t n_layers = cfg.get_int("num_hidden_layers");
  const int64_t ffn = cfg.get_count("intermediate_size");
  const float eps = cfg.get_eps("layer_norm_eps", 1e-5);
  const Activation act = c.activation("hidden_act", "gelu");
  const bool attn_bias = cfg.get_bool("attention_bias", true);
  s.pre_norm = true;
  s.parallel_residual = cfg.get_bool("use_parallel_residual", true);

  // HF's GPTNeoXConfig takes rotary_pct / rotary_emb_base (newer spellings: partial_rotary_factor,
  // rope_theta).
  s.position.scheme = "rope";
  s.position.max_positions = cfg.get_int_any({"max_position_embeddings", "n_positions"});
  s.position.rope_theta = cfg.get_double_any({"rotary_emb_base", "rope_theta"}, 10000.0);
  s.position.rope_layout = RopeLayout::HalfSplit;
  s.position.rotary_dim =
      rotary_dims(cfg, cfg.first_present({"rotary_pct", "partial_rotary_factor"}).value_or("rotary_pct"), hd);
  s.position.scaling = parse_rope_scaling(cfg);

  s.tok_embed = c.embedding("gpt_neox.embed_in.weight", {s.vocab_size, d});
  s.decoder.layers = c.layers("gpt_neox.layers.", n_layers, [&](const std::string& p) {
    Layer ly;
    ly.attn_norm = c.norm(p + "input_layernorm", NormKind::Layer, eps, d);
    ly.ffn_norm = c.norm(p + "post_attention_layernorm", NormKind::Layer, eps, d);
    split_qkv_per_head(c.linear_biased(p + "attention.query_key_value", 3 * d, d, attn_bias), H, hd, ly.self_attn);
    ly.self_attn.out = c.linear_biased(p + "attention.dense", d, d, attn_bias);
    ly.ffn.up = c.linear(p + "mlp.dense_h_to_4h", ffn, d, true);
    ly.ffn.down = c.linear(p + "mlp.dense_4h_to_h", d, ffn, true);
    ly.ffn.act = act;
    return ly;
  });
  s.decoder.final_norm = c.norm("gpt_neox.final_layer_norm", NormKind::Layer, eps, d);
  s.decoder.causal = true;
  s.lm_head.weight = c.lm_head_weight(s, "embed_out.weight", false);
  c.read_special_ids(s, 0, 2, -1);
  return s;
}

}  // namespace ordo
