// Self-Extend and attention sinks: checking a setting, mapping query and key positions, evicting slots.
#include "context_extension.hpp"

#include <algorithm>
#include <limits>

#include "kv_cache_internal.hpp"

namespace ordo::detail {

KeyMap::KeyMap(const PositionConfig& cfg, const PositionScheme* decoder_scheme)
    : e_(cfg.extension),
      rotates_(decoder_scheme && decoder_scheme->rotates()),
      embeds_(decoder_scheme && decoder_scheme->embeds()) {}

void KeyMap::check(const PositionConfig& cfg, const PositionScheme* dec, const std::string& architecture) {
  const ContextExtension& e = cfg.extension;
  check_context_extension(e);
  if (!e.active()) return;
  const std::string what = e.self_extend() ? "self-extend (--self-extend)" : "sinks (--sinks/--window)";
  if (!dec) throw Error(what + " applies to a decoder's self-attention; " + architecture + " has no decoder");
  if (e.self_extend() && dec->embeds())
    throw Error(what + " does not apply to the " + cfg.scheme +
                " scheme: its positions are added to the input embeddings, one per token for every query, "
                "while Self-Extend sees a key at one position from near queries and another from far ones; "
                "use sinks (--sinks K --window N) or a scheme acting in attention (rope, alibi, relative)");
  // Both scalings pick their frequencies from the sequence length: sinks hold that length at the
  // cache size, and Self-Extend keeps every distance seen within the trained length, so the
  // frequencies would be stretched for distances that never occur.
  if (cfg.scaling.type == ScalingType::Dynamic || cfg.scaling.type == ScalingType::LongRoPE)
    throw Error(what + " cannot be combined with " + scaling_name(cfg.scaling.type) +
                " scaling: it picks its frequencies from the sequence length, which " +
                (e.streaming() ? "sinks hold at the cache size" : "Self-Extend keeps within the trained length") +
                "; use a static scaling (linear, ntk, yarn, llama3) or none");
}

namespace {

// Attention sinks: drops the cached keys the next query (text position `next`) no longer sees,
// every slot past the first `sinks` tokens and before the `window` − 1 most recent, moving the
// recent ones down. Keys stay rotated at their text positions (see rotate_alternates), so nothing
// is re-rotated; relative order is kept.
void evict_for_sinks(KVCache& c, int64_t sinks, int64_t window, int64_t next) {
  int64_t keep_end = 0;  // slots [0, keep_end) are sinks
  while (keep_end < c.length && c.positions[static_cast<size_t>(keep_end)] < sinks) ++keep_end;
  int64_t recent = c.length;  // slots [recent, length) are within the window of `next`
  while (recent > keep_end && next - c.positions[static_cast<size_t>(recent - 1)] < window) --recent;
  drop_kv_slots(c, keep_end, recent);
}

}  // namespace

void KeyMap::before_step(Sequence& seq, const uint8_t* mask, int64_t T) const {
  if (seq.extension != e_)
    throw Error("this sequence was created with context extension '" + seq.extension.describe() +
                "' and the model is now set to '" + e_.describe() + "'; start a new sequence");
  if (!e_.streaming()) return;
  if (mask && std::find(mask, mask + T, uint8_t{0}) != mask + T)
    throw Error("sinks (--sinks/--window): padded input (an attention mask with 0) is not supported");
  if (seq.next_position + T > std::numeric_limits<int32_t>::max())
    throw Error("sinks: the sequence has reached 2^31 positions");
  evict_for_sinks(seq.self, e_.sinks, e_.window, seq.next_position);
}

const int32_t* KeyMap::embed_positions(const std::vector<int32_t>& pos) const {
  if (!e_.streaming() || !embeds_) return pos.data();
  thread_local std::vector<int32_t> embed_pos;
  embed_pos.resize(pos.size());
  for (size_t t = 0; t < pos.size(); ++t) embed_pos[t] = static_cast<int32_t>(e_.cache_position(pos[t]));
  return embed_pos.data();
}

// Cached keys are rotated at their text positions, so each far key's score comes from a second
// copy of the query rotated at its alternate position: for sinks, the query's cache slot (every
// sink key is stored at its own cache slot, and window keys keep their text distance, which equals
// their distance in the cache); for Self-Extend, the grouped query position, against keys also
// stored rotated at ⌊p/G⌋ — a grouped position is fixed per key, so it is rotated once, when
// stored, instead of re-rotating every cached key for every query.
void KeyMap::rotate_alternates(const PositionScheme& scheme, const float* q, int64_t H, const float* k, int64_t KV,
                               int64_t hd, const int32_t* pos, int64_t T, int64_t seq_len, float* qa, float* kg) const {
  thread_local std::vector<int32_t> alt;
  alt.resize(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t)
    alt[static_cast<size_t>(t)] =
        static_cast<int32_t>(e_.self_extend() ? e_.grouped_query_position(pos[t]) : e_.cache_position(pos[t]));
  std::copy(q, q + T * H * hd, qa);
  scheme.rotate(qa, RotateTarget::Query, H, alt.data(), T, seq_len);
  if (!kg) return;
  for (int64_t t = 0; t < T; ++t) alt[static_cast<size_t>(t)] = static_cast<int32_t>(pos[t] / e_.group);
  std::copy(k, k + T * KV * hd, kg);
  scheme.rotate(kg, RotateTarget::Key, KV, alt.data(), T, seq_len);
}

KeyRegions KeyMap::regions(int32_t pq, const int32_t* kpos, const uint8_t* valid, int64_t nk) const {
  KeyRegions r;
  if (!kpos) return r;
  auto real = [&](int64_t j) { return !valid || valid[j]; };
  if (e_.self_extend()) {
    r.far_qpos = static_cast<int32_t>(e_.grouped_query_position(pq));
    int64_t j = nk;
    while (j > 0 && !(real(j - 1) && int64_t{pq} - kpos[j - 1] >= e_.neighbor)) --j;
    r.far_end = r.near_begin = j;
  } else if (e_.streaming() && pq >= e_.cache_size()) {
    r.far_qpos = static_cast<int32_t>(e_.cache_position(pq));
    int64_t j = nk;
    while (j > 0 && !(real(j - 1) && int64_t{pq} - kpos[j - 1] >= e_.window)) --j;
    r.near_begin = j;
    int64_t f = 0;
    while (f < r.near_begin && !(real(f) && kpos[f] >= e_.sinks)) ++f;
    r.far_end = f;
  }
  return r;
}

const int32_t* KeyMap::far_key_positions(const int32_t* kpos, int64_t n) const {
  if (!e_.self_extend()) return kpos;
  thread_local std::vector<int32_t> grouped;
  grouped.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) grouped[static_cast<size_t>(j)] = static_cast<int32_t>(kpos[j] / e_.group);
  return grouped.data();
}

}  // namespace ordo::detail
