// A sequence's decoding state: the KV cache of each attention stack, its tokens and positions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ordo/position.hpp"
#include "ordo/tensor.hpp"

namespace ordo {

// Keys and values of one attention stack, preallocated: per layer [n_kv, capacity, hd], F32 or
// (decoder self-attention, Transformer::set_kv_dtype) F16 or I8. An I8 row r of head g stands for
// k_scale[g, r] · k[g, r, :] (symmetric, one scale per head and token).
struct KVCache {
  std::vector<Tensor> k, v;
  std::vector<Tensor> k_scale, v_scale;  // I8 only: per layer [n_kv, capacity] F32
  int64_t capacity = 0;
  int64_t length = 0;              // slots in use
  std::vector<int32_t> positions;  // position of each cached token in the text (for score biases)
  std::vector<uint8_t> valid;      // 0 for padding: never attended to
  // Self-Extend on a rotating scheme: every key also rotated at its grouped position ⌊p/G⌋,
  // once when stored (same layout and dtype as k; empty otherwise).
  std::vector<Tensor> kg, kg_scale;
};

// One sequence's decoding state.
struct Sequence {
  KVCache self;
  // Encoder-decoder: the encoder output's keys/values per decoder layer (computed once).
  KVCache cross;
  int64_t next_position = 0;  // position the next real token gets
  // Tokens fed so far (the generator re-encodes them if the position scheme's rotation changes).
  std::vector<int32_t> tokens;
  std::vector<uint8_t> token_valid;
  // The context extension the sequence was created under (Transformer::new_sequence); feeding it
  // under another is an Error.
  ContextExtension extension;
  int64_t length() const { return self.length; }
  // Forgets every token after the first n (n <= length()): the next decode continues from there,
  // as if the later tokens had never been fed. The cache keeps its capacity. An Error once sinks
  // have dropped tokens (unless n is 0 or length()).
  void truncate(int64_t n);
  // Whether attention sinks have dropped tokens from the cache.
  bool has_evicted() const;
  // Makes this sequence hold what `other` holds (beam search forks a beam): its cached keys and
  // values are copied, its encoder keys/values shared (they are never written). Both must come
  // from the same Transformer; this one keeps its own storage and needs room for other.length().
  void copy_from(const Sequence& other);

  // The Transformer that made it (Transformer::new_sequence; 0 for a default-constructed one):
  // every other model refuses it with an Error naming both, so a cache laid out for one model is
  // never written or read by another, even one of the same shapes or at the same address.
  uint64_t owner() const { return owner_; }
  const std::string& owner_name() const { return owner_name_; }

 private:
  friend class Transformer;
  uint64_t owner_ = 0;      // Transformer::serial()
  std::string owner_name_;  // Transformer::name() when made
};

}  // namespace ordo
