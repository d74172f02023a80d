// The engine's description of a model: one small graph that covers decoder-only,
// encoder-only and encoder-decoder transformers. models/ fills it from a checkpoint;
// the engine never sees checkpoint tensor names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ordo/ops.hpp"
#include "ordo/position.hpp"
#include "ordo/tensor.hpp"

namespace ordo {

enum class GraphKind { Decoder, Encoder, EncoderDecoder };
const char* graph_kind_name(GraphKind g);

struct Norm {
  NormKind kind = NormKind::Layer;
  Tensor weight;  // [D] (empty: weight 1)
  Tensor bias;    // [D] or empty
  float eps = 1e-5f;
  bool present = false;
};

struct AttentionWeights {
  Linear q, k, v;  // q: [n_heads·hd, d_model]; k, v: [n_kv_heads·hd, d_model (or encoder d_model)]
  Linear out;      // [d_model, n_heads·hd]
};

struct FeedForward {
  Linear up;    // [ffn, d_model]
  Linear gate;  // [ffn, d_model] when gated (SwiGLU / GeGLU): act(gate x) · (up x)
  Linear down;  // [d_model, ffn]
  Activation act = Activation::GeluErf;
};

struct Layer {
  Norm attn_norm;  // pre-norm: before attention; post-norm: after the residual add
  AttentionWeights self_attn;
  Norm cross_norm;  // encoder-decoder decoder layers only
  AttentionWeights cross_attn;
  Norm ffn_norm;  // absent with parallel residual sharing one norm (GPT-J)
  FeedForward ffn;
};

struct Stack {
  std::vector<Layer> layers;
  Norm final_norm;           // after the last layer (pre-norm models)
  PositionWeights position;  // learned table or relative bias table of this stack
  bool causal = true;
};

struct ModelSpec {
  std::string architecture;  // informational: "llama", "gpt2", "t5", ...
  GraphKind graph = GraphKind::Decoder;

  int64_t d_model = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, vocab_size = 0;
  bool pre_norm = true;
  bool parallel_residual = false;  // x + attn(n1(x)) + ffn(n2(x)) (ffn_norm absent: n1 shared)
  float attn_scale = 0.0f;         // multiplies q·k; 0 means 1/sqrt(head_dim). T5 uses 1.

  // Embeddings: x = tok[id]·embed_scale + token_type[tt] (+ scheme (1)), then embed_norm.
  Tensor tok_embed;  // [vocab, d_model]
  float embed_scale = 1.0f;
  Tensor token_type_embed;  // [types, d_model] or empty (BERT)
  Norm embed_norm;          // BLOOM word_embeddings_layernorm, BERT embeddings LayerNorm

  PositionConfig position;
  Stack encoder;  // Encoder and EncoderDecoder
  Stack decoder;  // Decoder and EncoderDecoder

  // Head: logits = (h · logits_scale) · lm_head.weightᵀ + lm_head.bias + final_logits_bias.
  Linear lm_head;  // weight may share storage with tok_embed (tied)
  float logits_scale = 1.0f;
  Tensor final_logits_bias;  // [vocab] or empty (Marian)
  Linear pooler;             // BERT: tanh(pooler(h[0]))

  int32_t bos_id = -1, eos_id = -1, pad_id = -1, decoder_start_id = -1;
  // Every end-of-sequence id (generation_config.json's or config.json's eos_token_id may list
  // several; eos_id is the first). Generation ends at any of them.
  std::vector<int32_t> eos_ids;
  int32_t mask_id = -1;  // masked-LM encoders: the token that replaces a masked one (-1: none)

  // Total parameter count (tied tensors counted once).
  int64_t parameter_count() const;

  // f(Linear&) for every linear layer, present or not: per stack (encoder, then decoder) and layer
  // self-attention q/k/v/out, cross-attention q/k/v/out, FFN up/gate/down; then lm_head, pooler.
  template <class F>
  void for_each_linear(F&& f) {
    for_each_linear_of(*this, f);
  }
  template <class F>
  void for_each_linear(F&& f) const {
    for_each_linear_of(*this, f);
  }

 private:
  template <class Spec, class F>
  static void for_each_linear_of(Spec& s, F& f) {
    for (auto* st : {&s.encoder, &s.decoder})
      for (auto& l : st->layers)
        for (auto* p : {&l.self_attn.q, &l.self_attn.k, &l.self_attn.v, &l.self_attn.out, &l.cross_attn.q,
                        &l.cross_attn.k, &l.cross_attn.v, &l.cross_attn.out, &l.ffn.up, &l.ffn.gate, &l.ffn.down})
          f(*p);
    f(s.lm_head);
    f(s.pooler);
  }
};

}  // namespace ordo
