// Llama family (also Mistral and Qwen2 configs: the same graph): pre-norm RMSNorm, SwiGLU,
// grouped-query attention, RoPE in Hugging Face's half-split (rotate_half) layout.
#include "../family_context.hpp"

namespace ordo {

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
  s.position.rotary_dim = s.head_dim * cfg.get_fraction("partial_rotary_factor", 1.0);
  s.position.scaling = parse_rope_scaling(cfg);

  s.tok_embed = c.get("model.embed_tokens.weight", {s.vocab_size, s.d_model});
  const int64_t qd = s.n_heads * s.head_dim, kvd = s.n_kv_heads * s.head_dim;
  s.decoder.layers = c.layers("model.layers.", n_layers, [&](const std::string& p) {
    Layer ly;
    ly.attn_norm = c.norm(p + "input_layernorm", NormKind::RMS, eps, s.d_model);
    auto lin = [&](const std::string& name, int64_t out, int64_t in, bool bias) {
      return bias ? c.linear(p + name, out, in, true) : c.linear_no_bias(p + name, out, in);
    };
    ly.self_attn.q = lin("self_attn.q_proj", qd, s.d_model, attn_bias);
    ly.self_attn.k = lin("self_attn.k_proj", kvd, s.d_model, attn_bias);
    ly.self_attn.v = lin("self_attn.v_proj", kvd, s.d_model, attn_bias);
    ly.self_attn.out = lin("self_attn.o_proj", s.d_model, qd, false);
    ly.ffn_norm = c.norm(p + "post_attention_layernorm", NormKind::RMS, eps, s.d_model);
    ly.ffn.gate = lin("mlp.gate_proj", ffn, s.d_model, mlp_bias);
    ly.ffn.up = lin("mlp.up_proj", ffn, s.d_model, mlp_bias);
    ly.ffn.down = lin("mlp.down_proj", s.d_model, ffn, mlp_bias);
    ly.ffn.act = Activation::SiLU;
    return ly;
  });
  s.decoder.final_norm = c.norm("model.norm", NormKind::RMS, eps, s.d_model);
  s.decoder.causal = true;
  s.lm_head.weight = c.lm_head_weight(s, "lm_head.weight", false);
  s.bos_id = c.token_id("bos_token_id", 1);
  s.eos_id = c.token_id("eos_token_id", 2);
  s.pad_id = c.token_id("pad_token_id", -1);
  return s;
}

}  // namespace ordo
