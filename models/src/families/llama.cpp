// Llama family (also Mistral and Qwen2 configs: the same graph): pre-norm RMSNorm, SwiGLU,
// grouped-query attention, RoPE in Hugging Face's half-split (rotate_half) layout.
#include "../family_context.hpp"

namespace ordo {

void read_llama_decoder(const FamilyContext& c, ModelSpec& s, const LlamaDecoder& d) {
  const int64_t dm = s.d_model, qd = s.n_heads * s.head_dim, kvd = s.n_kv_heads * s.head_dim;
  s.decoder.layers = c.layers("model.layers.", d.n_layers, [&](const std::string& p) {
    Layer ly;
    ly.attn_norm = c.norm(p + "input_layernorm", NormKind::RMS, d.eps, dm);
    ly.self_attn.q = c.linear_biased(p + "self_attn.q_proj", qd, dm, d.attn_bias);
    ly.self_attn.k = c.linear_biased(p + "self_attn.k_proj", kvd, dm, d.attn_bias);
    ly.self_attn.v = c.linear_biased(p + "self_attn.v_proj", kvd, dm, d.attn_bias);
    ly.self_attn.out = c.linear_no_bias(p + "self_attn.o_proj", dm, qd);
    ly.ffn_norm = c.norm(p + "post_attention_layernorm", NormKind::RMS, d.eps, dm);
    ly.ffn.gate = c.linear_biased(p + "mlp.gate_proj", d.ffn, dm, d.mlp_bias);
    ly.ffn.up = c.linear_biased(p + "mlp.up_proj", d.ffn, dm, d.mlp_bias);
    ly.ffn.down = c.linear_biased(p + "mlp.down_proj", dm, d.ffn, d.mlp_bias);
    ly.ffn.act = Activation::SiLU;
    return ly;
  });
  s.decoder.final_norm = c.norm("model.norm", NormKind::RMS, d.eps, dm);
  s.decoder.causal = true;
}

ModelSpec build_llama(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s = c.start_spec(GraphKind::Decoder, {"hidden_size"}, {"num_attention_heads"}, "head_dim");
  s.n_kv_heads = cfg.get_count("num_key_value_heads", s.n_heads);
  const int64_t ffn = cfg.get_count("intermediate_size");
  const int64_t n_layers = cfg.get_int("num_hidden_layers");
  const float eps = cfg.get_eps("rms_norm_eps", 1e-6);
  const bool attn_bias = cfg.get_bool("attention_bias", s.architecture == "qwen2");
  const bool mlp_bias = cfg.get_bool("mlp_bias", false);

  s.position.scheme = "rope";
  s.position.max_positions = cfg.get_int("max_position_embeddings", 2048);
  s.position.rope_theta = cfg.get_double("rope_theta", 10000.0);
  s.position.rope_layout = RopeLayout::HalfSplit;
  s.position.rotary_dim = rotary_dims(cfg, "partial_rotary_factor", s.head_dim);
  s.position.scaling = parse_rope_scaling(cfg);

  s.tok_embed = c.embedding("model.embed_tokens.weight", {s.vocab_size, s.d_model});
  read_llama_decoder(c, s, {n_layers, ffn, eps, attn_bias, mlp_bias});
  s.lm_head.weight = c.lm_head_weight(s, "lm_head.weight", false);
  c.read_special_ids(s, 1, 2, -1);
  return s;
}

}  // namespace ordo
