// BERT family (BertModel and the task heads' "bert." backbone): encoder only, post-norm LayerNorm,
// embeddings word + learned position + token type followed by a LayerNorm, exact-erf GELU FFN,
// pooler tanh(dense(h[0])) when the checkpoint has one.
#include "../family_context.hpp"

namespace ordo {

ModelSpec build_bert(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s = c.start_spec(GraphKind::Encoder, {"hidden_size"}, {"num_attention_heads"});
  s.pre_norm = false;
  const int64_t ffn = cfg.get_count("intermediate_size");
  const int64_t n_layers = cfg.get_int("num_hidden_layers");
  const int64_t n_types = cfg.get_int("type_vocab_size", 2);
  const float eps = cfg.get_eps("layer_norm_eps", 1e-12);
  const Activation act = c.activation("hidden_act", "gelu");
  const std::string pos_type = cfg.get_string("position_embedding_type", "absolute");
  if (pos_type != "absolute")
    throw Error(cfg.origin() + ": position_embedding_type '" + pos_type + "' is not supported (only 'absolute')");

  // BertModel stores "embeddings...."; BertForMaskedLM & co. prefix the backbone with "bert.".
  const std::string p0 = c.has("bert.embeddings.word_embeddings.weight") ? "bert." : "";

  s.position.scheme = "learned";
  s.position.max_positions = cfg.get_int("max_position_embeddings", 512);
  s.encoder.position.tensors["table"] =
      c.get(p0 + "embeddings.position_embeddings.weight", {s.position.max_positions, s.d_model});
  s.encoder.causal = false;

  s.tok_embed = c.get(p0 + "embeddings.word_embeddings.weight", {s.vocab_size, s.d_model});
  if (n_types > 0) s.token_type_embed = c.get(p0 + "embeddings.token_type_embeddings.weight", {n_types, s.d_model});
  s.embed_norm = c.norm(p0 + "embeddings.LayerNorm", NormKind::Layer, eps, s.d_model);

  s.encoder.layers = c.layers(p0 + "encoder.layer.", n_layers, [&](const std::string& p) {
    Layer ly;
    ly.self_attn.q = c.linear(p + "attention.self.query", s.d_model, s.d_model, true);
    ly.self_attn.k = c.linear(p + "attention.self.key", s.d_model, s.d_model, true);
    ly.self_attn.v = c.linear(p + "attention.self.value", s.d_model, s.d_model, true);
    ly.self_attn.out = c.linear(p + "attention.output.dense", s.d_model, s.d_model, true);
    ly.attn_norm = c.norm(p + "attention.output.LayerNorm", NormKind::Layer, eps, s.d_model);
    ly.ffn.up = c.linear(p + "intermediate.dense", ffn, s.d_model, true);
    ly.ffn.down = c.linear(p + "output.dense", s.d_model, ffn, true);
    ly.ffn.act = act;
    ly.ffn_norm = c.norm(p + "output.LayerNorm", NormKind::Layer, eps, s.d_model);
    return ly;
  });
  // Post-norm: the last layer's output is the final hidden state (no final norm).
  if (c.has(p0 + "pooler.dense.weight")) s.pooler = c.linear(p0 + "pooler.dense", s.d_model, s.d_model, true);

  c.read_special_ids(s, -1, -1, 0);
  return s;
}

}  // namespace ordo
