// OPT family: learned positions looked up at position + 2 (the table has max_position_embeddings
// + 2 rows), separate q/k/v/out projections with biases, ReLU FFN (fc1/fc2), pre-LN
// (do_layer_norm_before; OPT-350m's post-LN also maps onto the engine's post-norm graph), decoder
// final_layer_norm, lm_head tied to embed_tokens.
#include "../family_context.hpp"

namespace ordo {

ModelSpec build_opt(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s = c.start_spec(GraphKind::Decoder, {"hidden_size"}, {"num_attention_heads"});
  const int64_t d = s.d_model;
  const int64_t n_layers = cfg.get_int("num_hidden_layers");
  const int64_t ffn = cfg.get_int("ffn_dim");
  if (cfg.get_int("word_embed_proj_dim", d) != d)
    throw Error(cfg.origin() + ": word_embed_proj_dim (" + std::to_string(cfg.get_int("word_embed_proj_dim")) +
                ") differs from hidden_size (" + std::to_string(d) +
                "): OPT's project_in/project_out are not supported");
  const Activation act = c.activation("activation_function", "relu");
  const bool bias = cfg.get_bool("enable_bias", true);
  const bool affine = cfg.get_bool("layer_norm_elementwise_affine", true);
  s.pre_norm = cfg.get_bool("do_layer_norm_before", true);
  const bool final_norm = s.pre_norm && !cfg.get_bool("_remove_final_layer_norm", false);
  const float eps = 1e-5f;  // nn.LayerNorm default; OPT's config has no epsilon

  auto norm = [&](const std::string& prefix) {
    if (affine) return c.norm(prefix, NormKind::Layer, eps, d);
    Norm n;
    n.kind = NormKind::Layer;
    n.eps = eps;
    n.present = true;
    return n;
  };
  auto lin = [&](const std::string& prefix, int64_t out, int64_t in) { return c.linear_biased(prefix, out, in, bias); };

  const int64_t n_pos = cfg.get_int_any({"max_position_embeddings", "n_positions"});
  s.position.scheme = "learned";
  s.position.max_positions = n_pos;
  s.position.learned_offset = 2;
  s.decoder.position.tensors["table"] = c.get("model.decoder.embed_positions.weight", {n_pos + 2, d});

  s.tok_embed = c.embedding("model.decoder.embed_tokens.weight", {s.vocab_size, d});
  s.decoder.layers = c.layers("model.decoder.layers.", n_layers, [&](const std::string& p) {
    Layer ly;
    ly.attn_norm = norm(p + "self_attn_layer_norm");
    ly.self_attn.q = lin(p + "self_attn.q_proj", d, d);
    ly.self_attn.k = lin(p + "self_attn.k_proj", d, d);
    ly.self_attn.v = lin(p + "self_attn.v_proj", d, d);
    ly.self_attn.out = lin(p + "self_attn.out_proj", d, d);
    ly.ffn_norm = norm(p + "final_layer_norm");
    ly.ffn.up = lin(p + "fc1", ffn, d);
    ly.ffn.down = lin(p + "fc2", d, ffn);
    ly.ffn.act = act;
    return ly;
  });
  if (final_norm) s.decoder.final_norm = norm("model.decoder.final_layer_norm");
  s.decoder.causal = true;
  s.lm_head.weight = c.lm_head_weight(s, "lm_head.weight", true);
  c.read_special_ids(s, 2, 2, 1);
  return s;
}

}  // namespace ordo
