// T5 family (T5ForConditionalGeneration v1.0 and v1.1 / mT5 / Flan-T5; T5EncoderModel as an encoder):
// pre-norm with T5's LayerNorm (RMS, no mean, no bias), relative position bias buckets whose table
// lives in block 0 of each stack and is shared by all its layers (encoder: bidirectional buckets,
// decoder self-attention: causal), no 1/sqrt(d) attention scaling, heads of size d_kv
// (n_heads·d_kv may differ from d_model). FFN: v1.0 "relu" wo(relu(wi x)); v1.1 "gated-gelu"
// wo(gelu_new(wi_0 x) · wi_1 x). Tied head (v1.0): logits = (h · d_model^-0.5) · sharedᵀ;
// untied (v1.1): lm_head.weight, no rescale.
#include <cmath>

#include "../family_context.hpp"

namespace ordo {

namespace {

// feed_forward_proj: "relu", "gated-gelu", "gated-silu", ... HF maps "gated-gelu" to gelu_new;
// dense_act_fn, when present, names the activation itself.
Activation t5_activation(const JsonConfig& cfg, bool* gated) {
  const std::string proj = cfg.get_string("feed_forward_proj", "relu");
  *gated = proj.rfind("gated-", 0) == 0;
  std::string act_name = *gated ? proj.substr(6) : proj;
  if (act_name == "gelu" && *gated) act_name = "gelu_new";
  if (cfg.has("dense_act_fn")) act_name = cfg.get_string("dense_act_fn");
  return activation_from_name(act_name, cfg.origin() + ": field 'feed_forward_proj' / 'dense_act_fn'");
}

// One T5 stack's pieces by name: attention without biases (heads of size d_kv), the FFN, T5's
// LayerNorm (RMS), and the relative bias table block 0 holds for the whole stack.
struct T5Stack {
  const FamilyContext& c;
  const ModelSpec& s;
  int64_t d_ff;
  float eps;
  bool gated;
  Activation act;

  AttentionWeights attention(const std::string& p) const {
    const int64_t inner = s.n_heads * s.head_dim;
    AttentionWeights a;
    a.q = c.linear_no_bias(p + ".q", inner, s.d_model);
    a.k = c.linear_no_bias(p + ".k", inner, s.d_model);
    a.v = c.linear_no_bias(p + ".v", inner, s.d_model);
    a.out = c.linear_no_bias(p + ".o", s.d_model, inner);
    return a;
  }
  FeedForward feed_forward(const std::string& p) const {
    FeedForward f;
    if (gated) {
      f.gate = c.linear_no_bias(p + ".wi_0", d_ff, s.d_model);
      f.up = c.linear_no_bias(p + ".wi_1", d_ff, s.d_model);
    } else {
      f.up = c.linear_no_bias(p + ".wi", d_ff, s.d_model);
    }
    f.down = c.linear_no_bias(p + ".wo", s.d_model, d_ff);
    f.act = act;
    return f;
  }
  Norm rms(const std::string& p) const { return c.norm(p, NormKind::RMS, eps, s.d_model); }
  Tensor bias_table(const std::string& stack) const {
    return c.get(stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                 {s.position.num_buckets, s.n_heads});
  }

  // "encoder.block.<l>.": self-attention (layer.0), FFN (layer.1).
  Layer encoder_layer(const std::string& p) const { return self_attention_and_ffn(p, "layer.1."); }
  // "decoder.block.<l>.": self-attention, cross-attention (layer.1), FFN (layer.2).
  Layer decoder_layer(const std::string& p) const {
    Layer ly = self_attention_and_ffn(p, "layer.2.");
    ly.cross_norm = rms(p + "layer.1.layer_norm");
    ly.cross_attn = attention(p + "layer.1.EncDecAttention");
    return ly;
  }
  Layer self_attention_and_ffn(const std::string& p, const std::string& ffn_layer) const {
    Layer ly;
    ly.attn_norm = rms(p + "layer.0.layer_norm");
    ly.self_attn = attention(p + "layer.0.SelfAttention");
    ly.ffn_norm = rms(p + ffn_layer + "layer_norm");
    ly.ffn = feed_forward(p + ffn_layer + "DenseReluDense");
    return ly;
  }
};

}  // namespace

ModelSpec build_t5(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  // T5EncoderModel checkpoints have no decoder: run them as encoder-only models.
  const bool has_decoder = c.has("decoder.block.0.layer.0.SelfAttention.q.weight");
  cfg.get_count("d_kv");  // required: T5's heads need not tile d_model
  ModelSpec s =
      c.start_spec(has_decoder ? GraphKind::EncoderDecoder : GraphKind::Encoder, {"d_model"}, {"num_heads"}, "d_kv");
  s.pre_norm = true;
  s.attn_scale = 1.0f;  // T5 folds the 1/sqrt(d) into its initialisation
  bool gated = false;
  const Activation act = t5_activation(cfg, &gated);
  const T5Stack t5{c, s, cfg.get_count("d_ff"), cfg.get_eps("layer_norm_epsilon", 1e-6), gated, act};
  const int64_t n_enc = cfg.get_int("num_layers");
  const int64_t n_dec = cfg.get_int("num_decoder_layers", n_enc);

  s.position.scheme = "relative";
  s.position.num_buckets = cfg.get_int("relative_attention_num_buckets", 32);
  s.position.max_distance = cfg.get_int("relative_attention_max_distance", 128);
  s.position.max_positions = cfg.get_int("n_positions", 512);  // relative positions have no hard limit

  s.tok_embed = c.has("shared.weight") ? c.embedding("shared.weight", {s.vocab_size, s.d_model})
                                       : c.embedding("encoder.embed_tokens.weight", {s.vocab_size, s.d_model});

  s.encoder.layers = c.layers("encoder.block.", n_enc, [&](const std::string& p) { return t5.encoder_layer(p); });
  s.encoder.final_norm = t5.rms("encoder.final_layer_norm");
  s.encoder.position.tensors["relative_bias"] = t5.bias_table("encoder");
  s.encoder.causal = false;

  if (has_decoder) {
    s.decoder.layers = c.layers("decoder.block.", n_dec, [&](const std::string& p) { return t5.decoder_layer(p); });
    s.decoder.final_norm = t5.rms("decoder.final_layer_norm");
    s.decoder.position.tensors["relative_bias"] = t5.bias_table("decoder");
    s.decoder.causal = true;
    s.lm_head.weight = c.lm_head_weight(s, "lm_head.weight", true);
    // HF rescales the decoder output by d_model^-0.5 exactly when the head is tied.
    if (c.ties_lm_head(true)) s.logits_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.d_model)));
  }

  s.pad_id = c.token_id("pad_token_id", 0);
  s.eos_id = c.token_id("eos_token_id", 1);
  s.decoder_start_id = c.token_id("decoder_start_token_id", s.pad_id);
  return s;
}

}  // namespace ordo
