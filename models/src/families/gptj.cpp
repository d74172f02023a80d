// GPT-J family: partial RoPE on the first rotary_dim dims of each head with GPT-J's interleaved
// pairs (x[2i], x[2i+1]), q/k/v/out projections without bias, attention and MLP in parallel off
// one ln_1 (x + attn(ln_1(x)) + mlp(ln_1(x))), gelu_new, final ln_f, untied lm_head with a bias.
#include "../family_context.hpp"

namespace ordo {

ModelSpec build_gptj(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s = c.start_spec(GraphKind::Decoder, {"n_embd", "hidden_size"}, {"n_head", "num_attention_heads"});
  const int64_t d = s.d_model;
  const int64_t n_layers = cfg.get_int_any({"n_layer", "num_hidden_layers"});
  const int64_t ffn = cfg.has("n_inner") ? cfg.get_int("n_inner") : 4 * d;
  const float eps = cfg.get_eps("layer_norm_epsilon", 1e-5);
  const Activation act = c.activation("activation_function", "gelu_new");
  s.pre_norm = true;
  s.parallel_residual = true;  // ffn_norm stays absent: the MLP reads ln_1's output too

  s.position.scheme = "rope";
  s.position.max_positions = cfg.get_int_any({"n_positions", "max_position_embeddings"});
  s.position.rope_theta = 10000.0;
  s.position.rope_layout = RopeLayout::Interleaved;
  s.position.rotary_dim = cfg.has("rotary_dim") ? cfg.get_int("rotary_dim") : 0;  // 0: the whole head

  s.tok_embed = c.get("transformer.wte.weight", {s.vocab_size, d});
  s.decoder.layers = c.layers("transformer.h.", n_layers, [&](const std::string& p) {
    Layer ly;
    ly.attn_norm = c.norm(p + "ln_1", NormKind::Layer, eps, d);
    ly.self_attn.q = c.linear_no_bias(p + "attn.q_proj", d, d);
    ly.self_attn.k = c.linear_no_bias(p + "attn.k_proj", d, d);
    ly.self_attn.v = c.linear_no_bias(p + "attn.v_proj", d, d);
    ly.self_attn.out = c.linear_no_bias(p + "attn.out_proj", d, d);
    ly.ffn.up = c.linear(p + "mlp.fc_in", ffn, d, true);
    ly.ffn.down = c.linear(p + "mlp.fc_out", d, ffn, true);
    ly.ffn.act = act;
    return ly;
  });
  s.decoder.final_norm = c.norm("transformer.ln_f", NormKind::Layer, eps, d);
  s.decoder.causal = true;
  // HF's lm_head is an nn.Linear with bias; tying shares only its weight.
  if (c.ties_lm_head(false)) {
    s.lm_head.weight = s.tok_embed;
    s.lm_head.bias = c.get_optional("lm_head.bias", {s.vocab_size});
  } else {
    s.lm_head = c.linear("lm_head", s.vocab_size, d);
  }
  c.read_special_ids(s, 50256, 50256, -1);
  return s;
}

}  // namespace ordo
