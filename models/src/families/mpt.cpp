// MPT family (as Hugging Face's MptForCausalLM runs it): ALiBi with attn_config.alibi_bias_max,
// fused Wqkv laid out contiguously [q | k | v] (not per head), no_bias (no linear biases and
// LayerNorms without bias), exact-gelu MLP (expansion_ratio x), final norm_f, lm_head tied to wte.
#include "../family_context.hpp"

namespace ordo {

ModelSpec build_mpt(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s = c.start_spec(GraphKind::Decoder, {"d_model", "hidden_size"}, {"n_heads", "num_attention_heads"});
  const int64_t d = s.d_model;
  const int64_t n_layers = cfg.get_int_any({"n_layers", "num_hidden_layers"});
  const int64_t ffn = cfg.get_int("expansion_ratio", 4) * d;
  const float eps = cfg.get_eps("layer_norm_epsilon", 1e-5);
  s.pre_norm = true;

  double alibi_max = 8.0;
  if (cfg.has("attn_config")) {
    const JsonConfig attn = cfg.child("attn_config");
    if (!attn.get_bool("alibi", true))
      throw Error(attn.origin() + ": alibi false is not supported (Hugging Face's MPT always uses ALiBi)");
    if (attn.has("clip_qkv")) throw Error(attn.origin() + ": clip_qkv is not supported");
    if (attn.get_bool("qk_ln", false)) throw Error(attn.origin() + ": qk_ln is not supported");
    alibi_max = attn.get_double("alibi_bias_max", 8.0);
    if (attn.has("softmax_scale")) s.attn_scale = static_cast<float>(attn.get_double("softmax_scale"));
  }
  s.position.scheme = "alibi";
  s.position.alibi_max_bias = alibi_max;
  s.position.max_positions = cfg.get_int_any({"max_seq_len", "max_position_embeddings", "n_positions"}, 2048);

  s.tok_embed = c.embedding("transformer.wte.weight", {s.vocab_size, d});
  // Linear biases and LayerNorm biases are read when the checkpoint has them (no_bias: false).
  s.decoder.layers = c.layers("transformer.blocks.", n_layers, [&](const std::string& p) {
    Layer ly;
    ly.attn_norm = c.norm(p + "norm_1", NormKind::Layer, eps, d);
    split_qkv(c.linear(p + "attn.Wqkv", 3 * d, d), d, ly.self_attn);
    ly.self_attn.out = c.linear(p + "attn.out_proj", d, d);
    ly.ffn_norm = c.norm(p + "norm_2", NormKind::Layer, eps, d);
    ly.ffn.up = c.linear(p + "ffn.up_proj", ffn, d);
    ly.ffn.down = c.linear(p + "ffn.down_proj", d, ffn);
    ly.ffn.act = Activation::GeluErf;  // HF MptMLP: nn.GELU(approximate="none")
    return ly;
  });
  s.decoder.final_norm = c.norm("transformer.norm_f", NormKind::Layer, eps, d);
  s.decoder.causal = true;
  s.lm_head.weight = c.lm_head_weight(s, "lm_head.weight", true);
  c.read_special_ids(s, 0, 0, -1);
  return s;
}

}  // namespace ordo
