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

ModelSpec build_t5(const FamilyContext& c) {
  const JsonConfig& cfg = c.config();
  ModelSpec s;
  s.architecture = cfg.get_string("model_type");
  s.pre_norm = true;
  s.attn_scale = 1.0f;  // T5 folds the 1/sqrt(d) into its initialisation
  s.d_model = cfg.get_count("d_model");
  s.n_heads = cfg.get_count("num_heads");
  s.n_kv_heads = s.n_heads;
  s.head_dim = cfg.get_count("d_kv");
  s.vocab_size = cfg.get_count("vocab_size");
  const int64_t d_ff = cfg.get_count("d_ff");
  const int64_t n_enc = cfg.get_int("num_layers");
  const int64_t n_dec = cfg.get_int("num_decoder_layers", n_enc);
  const float eps = cfg.get_eps("layer_norm_epsilon", 1e-6);
  const int64_t inner = s.n_heads * s.head_dim;

  // feed_forward_proj: "relu", "gated-gelu", "gated-silu", ... HF maps "gated-gelu" to gelu_new.
  const std::string proj = cfg.get_string("feed_forward_proj", "relu");
  const bool gated = proj.rfind("gated-", 0) == 0;
  std::string act_name = gated ? proj.substr(6) : proj;
  if (act_name == "gelu" && gated) act_name = "gelu_new";
  if (cfg.has("dense_act_fn")) act_name = cfg.get_string("dense_act_fn");
  const Activation act = activation_from_name(act_name, cfg.origin() + ": field 'feed_forward_proj' / 'dense_act_fn'");

  // T5EncoderModel checkpoints have no decoder: run them as encoder-only models.
  const bool has_decoder = c.has("decoder.block.0.layer.0.SelfAttention.q.weight");
  s.graph = has_decoder ? GraphKind::EncoderDecoder : GraphKind::Encoder;

  s.position.scheme = "relative";
  s.position.num_buckets = cfg.get_int("relative_attention_num_buckets", 32);
  s.position.max_distance = cfg.get_int("relative_attention_max_distance", 128);
  s.position.max_positions = cfg.get_int("n_positions", 512);  // relative positions have no hard limit

  s.tok_embed = c.has("shared.weight") ? c.get("shared.weight", {s.vocab_size, s.d_model})
                                       : c.get("encoder.embed_tokens.weight", {s.vocab_size, s.d_model});

  auto attention = [&](const std::string& p) {
    AttentionWeights a;
    a.q = c.linear_no_bias(p + ".q", inner, s.d_model);
    a.k = c.linear_no_bias(p + ".k", inner, s.d_model);
    a.v = c.linear_no_bias(p + ".v", inner, s.d_model);
    a.out = c.linear_no_bias(p + ".o", s.d_model, inner);
    return a;
  };
  auto feed_forward = [&](const std::string& p) {
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
  };
  auto rms = [&](const std::string& p) { return c.norm(p, NormKind::RMS, eps, s.d_model); };
  auto bias_table = [&](const std::string& stack) {
    return c.get(stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                 {s.position.num_buckets, s.n_heads});
  };

  for (int64_t l = 0; l < n_enc; ++l) {
    const std::string p = "encoder.block." + std::to_string(l) + ".layer.";
    Layer ly;
    ly.attn_norm = rms(p + "0.layer_norm");
    ly.self_attn = attention(p + "0.SelfAttention");
    ly.ffn_norm = rms(p + "1.layer_norm");
    ly.ffn = feed_forward(p + "1.DenseReluDense");
    s.encoder.layers.push_back(std::move(ly));
  }
  s.encoder.final_norm = rms("encoder.final_layer_norm");
  s.encoder.position.tensors["relative_bias"] = bias_table("encoder");
  s.encoder.causal = false;

  if (has_decoder) {
    for (int64_t l = 0; l < n_dec; ++l) {
      const std::string p = "decoder.block." + std::to_string(l) + ".layer.";
      Layer ly;
      ly.attn_norm = rms(p + "0.layer_norm");
      ly.self_attn = attention(p + "0.SelfAttention");
      ly.cross_norm = rms(p + "1.layer_norm");
      ly.cross_attn = attention(p + "1.EncDecAttention");
      ly.ffn_norm = rms(p + "2.layer_norm");
      ly.ffn = feed_forward(p + "2.DenseReluDense");
      s.decoder.layers.push_back(std::move(ly));
    }
    s.decoder.final_norm = rms("decoder.final_layer_norm");
    s.decoder.position.tensors["relative_bias"] = bias_table("decoder");
    s.decoder.causal = true;

    // HF rescales the decoder output by d_model^-0.5 exactly when the head is tied.
    if (cfg.get_bool("tie_word_embeddings", true)) {
      s.lm_head.weight = s.tok_embed;
      s.logits_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.d_model)));
    } else {
      s.lm_head.weight = c.get("lm_head.weight", {s.vocab_size, s.d_model});
    }
  }

  s.pad_id = c.token_id("pad_token_id", 0);
  s.eos_id = c.token_id("eos_token_id", 1);
  s.decoder_start_id = c.token_id("decoder_start_token_id", s.pad_id);
  return s;
}

}  // namespace ordo
