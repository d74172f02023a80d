// Marian family (MarianMTModel, the Opus-MT checkpoints): encoder-decoder, post-norm LayerNorm,
// token embeddings scaled by sqrt(d_model) (scale_embedding), fixed sinusoidal positions in the
// [sin… | cos…] layout (computed, not stored), swish FFN, final_logits_bias added to the logits.
// Encoder and decoder share model.shared; the LM head is lm_head.weight (or the shared table when
// the checkpoint ties it and stores it once).
#include <cmath>

#include "../family_context.hpp"

namespace ordo {

ModelSpec build_marian(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s;
  s.architecture = cfg.get_string("model_type");
  s.graph = GraphKind::EncoderDecoder;
  s.pre_norm = false;
  s.d_model = cfg.get_count("d_model");
  s.vocab_size = cfg.get_count("vocab_size");
  const int64_t enc_heads = cfg.get_count("encoder_attention_heads");
  const int64_t dec_heads = cfg.get_count("decoder_attention_heads");
  if (enc_heads != dec_heads)
    throw Error(cfg.origin() + ": encoder_attention_heads (" + std::to_string(enc_heads) +
                ") and decoder_attention_heads (" + std::to_string(dec_heads) +
                ") differ; ordo needs one head count for both stacks");
  s.n_heads = s.n_kv_heads = enc_heads;
  if (s.d_model % s.n_heads != 0)
    throw Error(cfg.origin() + ": d_model (" + std::to_string(s.d_model) +
                ") is not a multiple of the head count (" + std::to_string(s.n_heads) + ")");
  s.head_dim = s.d_model / s.n_heads;
  if (cfg.has("decoder_vocab_size") && cfg.get_int("decoder_vocab_size") != s.vocab_size)
    throw Error(cfg.origin() + ": decoder_vocab_size (" + std::to_string(cfg.get_int("decoder_vocab_size")) +
                ") differs from vocab_size (" + std::to_string(s.vocab_size) +
                "); separate vocabularies are not supported");
  if (!cfg.get_bool("share_encoder_decoder_embeddings", true))
    throw Error(
        cfg.origin() +
        ": share_encoder_decoder_embeddings is false; separate encoder/decoder embeddings are not supported");
  const int64_t n_enc = cfg.get_int("encoder_layers");
  const int64_t n_dec = cfg.get_int("decoder_layers");
  const int64_t enc_ffn = cfg.get_int("encoder_ffn_dim");
  const int64_t dec_ffn = cfg.get_int("decoder_ffn_dim");
  const Activation act = c.activation("activation_function", "swish");
  const float eps = 1e-5f;  // nn.LayerNorm default

  s.position.scheme = "sinusoidal";
  s.position.sinusoidal_layout = SinusoidalLayout::Concat;
  s.position.max_positions = cfg.get_int("max_position_embeddings", 512);

  const std::vector<int64_t> emb_shape = {s.vocab_size, s.d_model};
  if (c.has("model.shared.weight"))
    s.tok_embed = c.get("model.shared.weight", emb_shape);
  else
    s.tok_embed = c.get("model.encoder.embed_tokens.weight", emb_shape);
  if (cfg.get_bool("scale_embedding", false))
    s.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(s.d_model)));

  auto attention = [&](const std::string& p) {
    AttentionWeights a;
    a.q = c.linear(p + ".q_proj", s.d_model, s.d_model, true);
    a.k = c.linear(p + ".k_proj", s.d_model, s.d_model, true);
    a.v = c.linear(p + ".v_proj", s.d_model, s.d_model, true);
    a.out = c.linear(p + ".out_proj", s.d_model, s.d_model, true);
    return a;
  };
  auto ln = [&](const std::string& p) { return c.norm(p, NormKind::Layer, eps, s.d_model); };
  auto ffn = [&](const std::string& p, int64_t n) {
    FeedForward f;
    f.up = c.linear(p + "fc1", n, s.d_model, true);
    f.down = c.linear(p + "fc2", s.d_model, n, true);
    f.act = act;
    return f;
  };

  for (int64_t l = 0; l < n_enc; ++l) {
    const std::string p = "model.encoder.layers." + std::to_string(l) + ".";
    Layer ly;
    ly.self_attn = attention(p + "self_attn");
    ly.attn_norm = ln(p + "self_attn_layer_norm");
    ly.ffn = ffn(p, enc_ffn);
    ly.ffn_norm = ln(p + "final_layer_norm");
    s.encoder.layers.push_back(std::move(ly));
  }
  s.encoder.causal = false;
  for (int64_t l = 0; l < n_dec; ++l) {
    const std::string p = "model.decoder.layers." + std::to_string(l) + ".";
    Layer ly;
    ly.self_attn = attention(p + "self_attn");
    ly.attn_norm = ln(p + "self_attn_layer_norm");
    ly.cross_attn = attention(p + "encoder_attn");
    ly.cross_norm = ln(p + "encoder_attn_layer_norm");
    ly.ffn = ffn(p, dec_ffn);
    ly.ffn_norm = ln(p + "final_layer_norm");
    s.decoder.layers.push_back(std::move(ly));
  }
  s.decoder.causal = true;

  if (c.has("lm_head.weight"))
    s.lm_head.weight = c.get("lm_head.weight", emb_shape);
  else if (cfg.get_bool("tie_word_embeddings", true))
    s.lm_head.weight = s.tok_embed;
  else
    s.lm_head.weight = c.get("lm_head.weight", emb_shape);  // missing: the error names it
  if (c.has("final_logits_bias")) {
    s.final_logits_bias = c.get("final_logits_bias", {1, s.vocab_size});
    s.final_logits_bias.shape = {s.vocab_size};
  }

  s.pad_id = c.token_id("pad_token_id", -1);
  s.eos_id = c.token_id("eos_token_id", 0);
  s.decoder_start_id = c.token_id("decoder_start_token_id", s.pad_id);
  return s;
}

}  // namespace ordo
