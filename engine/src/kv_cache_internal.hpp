// Private: making, growing and compacting KV caches (kv_cache.cpp), for the forward and the step.
#pragma once

#include <cstdint>

#include "ordo/kv_cache.hpp"

namespace ordo::detail {

// A cache of n_layers layers of [n_kv, capacity, head_dim] keys and values in `dtype` (I8: with
// row scales; second_keys: a second copy of the keys, cache.kg), all in one block. filled: the
// cache will be filled to its capacity, so a block of 2 MB or more may take 2 MB pages.
KVCache make_kv_cache(int64_t n_layers, int64_t n_kv, int64_t head_dim, int64_t capacity, DType dtype = DType::F32,
                      bool second_keys = false, bool filled = true);

// Grows a cache (keeping its contents) so that `needed` slots fit.
void reserve_kv_cache(KVCache& c, int64_t needed);

// Drops slots [begin, end), moving the later ones down (positions and padding marks with them).
void drop_kv_slots(KVCache& c, int64_t begin, int64_t end);

}  // namespace ordo::detail
