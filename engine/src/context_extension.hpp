// Context extension (Self-Extend, sinks) behind one interface: where a query sees each key, what is dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ordo/kv_cache.hpp"
#include "ordo/position.hpp"

namespace ordo::detail {

// Where one query sees the cache slots [0, nk): slots [0, far_end) at the alternate assignment
// (Self-Extend: the grouped keys, from the query's grouped position; sinks: the sink tokens, from
// the query's slot in the cache), [far_end, near_begin) not at all (sinks: out of the window),
// [near_begin, nk) at their exact distance. Real tokens' positions grow with their slots, so each
// part is one run; padding (masked anyway) is skipped over. The default: every slot exact.
struct KeyRegions {
  int64_t far_end = 0, near_begin = 0;
  int32_t far_qpos = 0;  // the query's position for the far keys
};

// How a decoder's self-attention maps positions under its context extension (PositionConfig::
// extension) and its position scheme. Attention and the step ask it and never name a method: with
// no extension every key is at its exact distance, nothing is dropped and nothing extra is kept.
class KeyMap {
 public:
  // cfg's extension over the decoder's scheme (null: none).
  KeyMap(const PositionConfig& cfg, const PositionScheme* decoder_scheme);

  // Error unless the decoder's scheme (null: the model has none) can take cfg's extension
  // (Transformer::set_position; `architecture` names the model).
  static void check(const PositionConfig& cfg, const PositionScheme* decoder_scheme, const std::string& architecture);

  // Whether any key is seen other than at its exact distance (attention then consults regions()).
  bool active() const { return e_.active(); }
  // Caches hold every key a second time, rotated at its grouped position (KVCache::kg).
  bool second_keys() const { return e_.self_extend() && rotates_; }
  // Queries are rotated a second time, at their alternate position, for the far keys' scores.
  bool alternate_queries() const { return e_.active() && rotates_; }

  // Records the setting a new sequence is made under.
  void adopt(Sequence& seq) const { seq.extension = e_; }
  // Before a sequence's T new tokens are placed: Error for a sequence made under another setting
  // or input the setting cannot take; then drops the cached slots no query from now on sees.
  void before_step(Sequence& seq, const uint8_t* mask, int64_t T) const;
  // The position the scheme must represent for a token at text position p (check_positions).
  int64_t scheme_position(int64_t p) const { return e_.streaming() ? e_.cache_position(p) : p; }
  // The positions the embedding sees for tokens at text positions pos: pos itself, or (sinks on a
  // scheme that embeds positions) each token's cache slot on arrival, which it keeps while cached.
  const int32_t* embed_positions(const std::vector<int32_t>& pos) const;

  // q [T, H, hd] and k [T, KV, hd], not yet rotated, of tokens at positions pos: qa ← q rotated at
  // each query's alternate position; kg (when second_keys()) ← k rotated at its grouped position.
  void rotate_alternates(const PositionScheme& scheme, const float* q, int64_t H, const float* k, int64_t KV,
                         int64_t hd, const int32_t* pos, int64_t T, int64_t seq_len, float* qa, float* kg) const;
  // Where the query at position pq sees the slots [0, nk) holding keys at kpos (valid: padding marks,
  // null when every key is real).
  KeyRegions regions(int32_t pq, const int32_t* kpos, const uint8_t* valid, int64_t nk) const;
  // The positions the far keys [0, n), at text positions kpos, get their score biases at.
  const int32_t* far_key_positions(const int32_t* kpos, int64_t n) const;

 private:
  ContextExtension e_;
  bool rotates_ = false, embeds_ = false;
};

}  // namespace ordo::detail
