// Private: attention over KV caches (self and cross), as free functions over a batch of segments.
#pragma once

#include <cstdint>
#include <functional>

#include "batch.hpp"
#include "ordo/position.hpp"
#include "ordo/spec.hpp"

namespace ordo::detail {

// What attention needs of the model (Transformer::run_stack builds it).
struct AttentionParams {
  using Observer =
      std::function<void(int64_t layer, int64_t head, int64_t query_index, const float* probs, int64_t nk)>;
  int64_t d_model = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 0;  // of q·k
  Backend backend = Backend::OpenBLAS;
  // Called for every self-attention row after softmax (Transformer::set_attention_observer); null: none.
  const Observer* observer = nullptr;
};

// Self-attention of every segment of b over its own cache: q, k, v = h · W{q,k,v}ᵀ; the scheme
// rotates q and k at the segments' positions; k and v are appended to the cache at slots
// [length, length + T) (the step advances length after the whole stack); each query attends to
// the cache's slots up to its own (all of them when not causal); out = ctx · W_outᵀ.
void self_attention(const AttentionParams& a, const AttentionWeights& w, const PositionScheme& scheme, const float* h,
                    const Batch& b, int layer, bool causal, float* out);

// Cross-attention of every segment over its encoder keys and values (Segment::cross): no
// positions, no mask but the encoder's padding.
void cross_attention(const AttentionParams& a, const AttentionWeights& w, const float* h, const Batch& b, int layer,
                     float* out);

}  // namespace ordo::detail
