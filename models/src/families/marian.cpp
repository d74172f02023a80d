// Marian family (MarianMTModel, the Opus-MT checkpoints): encoder-decoder, post-norm LayerNorm,
// token embeddings scaled by sqrt(d_model) (scale_embedding), fixed sinusoidal positions in the
// [sin… | cos…] layout (computed, not stored), swish FFN, final_logits_bias added to the logits.
// Encoder and decoder share model.shared; the LM head is that table when tie_word_embeddings
// (default true), else lm_head.weight.
#include <cmath>

#include "../family_context.hpp"

namespace ordo {

namespace {

// Marian's layers by name: attention and FFN linears with biases, LayerNorms with nn.LayerNorm's
// default epsilon (Marian's config has none). A decoder layer is an encoder layer with
// cross-attention ("encoder_attn") added.
struct MarianStack {
  const FamilyContext& c;
  int64_t d;
  Activation act;

  AttentionWeights attention(const std::string& p) const {
    AttentionWeights a;
    a.q = c.linear(p + ".q_proj", d, d, true);
    a.k = c.linear(p + ".k_proj", d, d, true);
    a.v = c.linear(p + ".v_proj", d, d, true);
    a.out = c.linear(p + ".out_proj", d, d, true);
    return a;
  }
  Norm ln(const std::string& p) const { return c.norm(p, NormKind::Layer, 1e-5f, d); }
  Layer encoder_layer(const std::string& p, int64_t ffn) const {
    Layer ly;
    ly.self_attn = attention(p + "self_attn");
    ly.attn_norm = ln(p + "self_attn_layer_norm");
    ly.ffn.up = c.linear(p + "fc1", ffn, d, true);
    ly.ffn.down = c.linear(p + "fc2", d, ffn, true);
    ly.ffn.act = act;
    ly.ffn_norm = ln(p + "final_layer_norm");
    return ly;
  }
  Layer decoder_layer(const std::string& p, int64_t ffn) const {
    Layer ly = encoder_layer(p, ffn);
    ly.cross_attn = attention(p + "encoder_attn");
    ly.cross_norm = ln(p + "encoder_attn_layer_norm");
    return ly;
  }
};

// The settings ordo cannot honour, each an Error naming the file and fields: one head count and
// one vocabulary shared by both stacks.
void check_marian_sharing(const JsonConfig& cfg, const ModelSpec& s) {
  const int64_t dec_heads = cfg.get_count("decoder_attention_heads");
  if (s.n_heads != dec_heads)
    throw Error(cfg.origin() + ": encoder_attention_heads (" + std::to_string(s.n_heads) +
                ") and decoder_attention_heads (" + std::to_string(dec_heads) +
                ") differ; ordo needs one head count for both stacks");
  if (cfg.has("decoder_vocab_size") && cfg.get_int("decoder_vocab_size") != s.vocab_size)
    throw Error(cfg.origin() + ": decoder_vocab_size (" + std::to_string(cfg.get_int("decoder_vocab_size")) +
                ") differs from vocab_size (" + std::to_string(s.vocab_size) +
                "); separate vocabularies are not supported");
  if (!cfg.get_bool("share_encoder_decoder_embeddings", true))
    throw Error(cfg.origin() +
                ": share_encoder_decoder_embeddings is false; separate encoder/decoder embeddings are not supported");
}

}  // namespace

ModelSpec build_marian(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s = c.start_spec(GraphKind::EncoderDecoder, {"d_model"}, {"encoder_attention_heads"});
  s.pre_norm = false;
  check_marian_sharing(cfg, s);
  const MarianStack marian{c, s.d_model, c.activation("activation_function", "swish")};
  const int64_t enc_ffn = cfg.get_int("encoder_ffn_dim"), dec_ffn = cfg.get_int("decoder_ffn_dim");

  s.position.scheme = "sinusoidal";
  s.position.sinusoidal_layout = SinusoidalLayout::Concat;
  s.position.max_positions = cfg.get_int("max_position_embeddings", 512);

  const std::vector<int64_t> emb_shape = {s.vocab_size, s.d_model};
  if (c.has("model.shared.weight"))
    s.tok_embed = c.embedding("model.shared.weight", emb_shape);
  else
    s.tok_embed = c.embedding("model.encoder.embed_tokens.weight", emb_shape);
  if (cfg.get_bool("scale_embedding", false))
    s.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(s.d_model)));

  s.encoder.layers = c.layers("model.encoder.layers.", cfg.get_int("encoder_layers"),
                              [&](const std::string& p) { return marian.encoder_layer(p, enc_ffn); });
  s.encoder.causal = false;
  s.decoder.layers = c.layers("model.decoder.layers.", cfg.get_int("decoder_layers"),
                              [&](const std::string& p) { return marian.decoder_layer(p, dec_ffn); });
  s.decoder.causal = true;

  s.lm_head.weight = c.lm_head_weight(s, "lm_head.weight", true);
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
