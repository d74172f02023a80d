// KV cache storage: allocation in one block, growth, slot removal, and Sequence's truncate and copy.
#include "ordo/kv_cache.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/big_alloc.hpp"
#include "kv_cache_internal.hpp"

namespace ordo {

namespace {

// A tensor of this shape with no storage yet (place_in_one_block gives it some).
Tensor unplaced(std::vector<int64_t> shape, DType dtype) {
  Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

// Every tensor of ts as a view into one block (each 64-byte aligned): a decode step reads a
// sequence's whole cache and writes a row into every head of it. With huge_pages, a block of 2 MB or
// more goes on huge pages (detail::alloc_streamed; measured on 16 sequences: the reads 10-20%
// faster, the row writes 25-40%), which makes it resident in full once written to.
void place_in_one_block(const std::vector<Tensor*>& ts, bool huge_pages) {
  auto padded = [](const Tensor* t) { return (t->nbytes() + 63) / 64 * 64; };
  size_t total = 0;
  for (const Tensor* t : ts) total += padded(t);
  std::shared_ptr<void> block = detail::alloc_streamed(total, "a KV cache", huge_pages);
  size_t at = 0;
  for (Tensor* t : ts) {
    t->data = static_cast<char*>(block.get()) + at;
    t->owner = block;
    at += padded(t);
  }
}

// Every tensor of a cache that holds one entry per slot, each [heads, capacity, ...]: keys and
// values (rows of hd), I8 row scales, Self-Extend's grouped keys and their scales.
std::vector<Tensor*> slot_tensors(KVCache& c) {
  std::vector<Tensor*> out;
  for (size_t l = 0; l < c.k.size(); ++l) {
    out.insert(out.end(), {&c.k[l], &c.v[l]});
    if (l < c.k_scale.size()) out.insert(out.end(), {&c.k_scale[l], &c.v_scale[l]});
    if (l < c.kg.size()) out.push_back(&c.kg[l]);
    if (l < c.kg_scale.size()) out.push_back(&c.kg_scale[l]);
  }
  return out;
}

}  // namespace

namespace detail {

KVCache make_kv_cache(int64_t n_layers, int64_t n_kv, int64_t head_dim, int64_t capacity, DType dtype, bool second_keys,
                      bool filled) {
  KVCache c;
  c.capacity = capacity;
  const std::vector<int64_t> rows{n_kv, capacity, head_dim}, scales{n_kv, capacity};
  for (int64_t l = 0; l < n_layers; ++l) {
    // Slots are written before they are read (attention reads [0, length) only).
    c.k.push_back(unplaced(rows, dtype));
    c.v.push_back(unplaced(rows, dtype));
    if (second_keys) c.kg.push_back(unplaced(rows, dtype));
    if (dtype == DType::I8) {
      c.k_scale.push_back(unplaced(scales, DType::F32));
      c.v_scale.push_back(unplaced(scales, DType::F32));
      if (second_keys) c.kg_scale.push_back(unplaced(scales, DType::F32));
    }
  }
  place_in_one_block(slot_tensors(c), filled);
  return c;
}

void reserve_kv_cache(KVCache& c, int64_t needed) {
  if (needed <= c.capacity) return;
  const int64_t cap = std::max(needed, c.capacity * 2);
  const std::vector<Tensor*> ts = slot_tensors(c);
  // The new tensors are placed and filled before any replaces its old one: an allocation that
  // throws leaves the cache as it was. Grown caches stay on 4 KB pages (up to half of it empty).
  std::vector<Tensor> grown;
  for (const Tensor* t : ts) {
    std::vector<int64_t> shape = t->shape;
    shape[1] = cap;
    grown.push_back(unplaced(std::move(shape), t->dtype));
  }
  std::vector<Tensor*> places;
  for (Tensor& t : grown) places.push_back(&t);
  place_in_one_block(places, false);
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& o = *ts[i];
    const int64_t heads = o.shape[0], row = o.numel() / (heads * c.capacity);  // elements per slot
    const size_t es = dtype_size(o.dtype);
    auto dst = static_cast<char*>(grown[i].data);
    auto src = static_cast<const char*>(o.data);
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(dst + h * cap * row * es, src + h * c.capacity * row * es, c.length * row * es);
  }
  for (size_t i = 0; i < ts.size(); ++i) *ts[i] = std::move(grown[i]);
  c.capacity = cap;
}

void drop_kv_slots(KVCache& c, int64_t begin, int64_t end) {
  if (end <= begin) return;
  const int64_t moved = c.length - end;
  for (Tensor* t : slot_tensors(c)) {
    const int64_t heads = t->shape[0], row = t->numel() / (heads * c.capacity);
    const size_t es = dtype_size(t->dtype) * static_cast<size_t>(row);
    auto base = static_cast<char*>(t->data);
    for (int64_t h = 0; h < heads; ++h)
      std::memmove(base + (h * c.capacity + begin) * es, base + (h * c.capacity + end) * es,
                   static_cast<size_t>(moved) * es);
  }
  c.positions.erase(c.positions.begin() + begin, c.positions.begin() + end);
  c.valid.erase(c.valid.begin() + begin, c.valid.begin() + end);
  c.length = begin + moved;
}

}  // namespace detail

void Sequence::truncate(int64_t n) {
  if (n < 0 || n > self.length)
    throw Error("Sequence::truncate: " + std::to_string(n) + " is outside [0, " + std::to_string(self.length) + "]");
  if (n == self.length) return;
  if (n > 0 && has_evicted())
    throw Error(
        "Sequence::truncate: attention sinks have dropped tokens from this sequence's cache, "
        "so its slots are no longer a prefix of the text; start a new sequence");
  const size_t k = static_cast<size_t>(n);
  self.length = n;
  self.positions.resize(k);
  self.valid.resize(k);
  tokens.resize(std::min(tokens.size(), k));
  token_valid.resize(std::min(token_valid.size(), k));
  // Real tokens take positions 0, 1, ... in order; padding takes none.
  next_position = std::count(self.valid.begin(), self.valid.end(), uint8_t{1});
}

bool Sequence::has_evicted() const {
  // Real tokens take positions 0, 1, ... in order; a gap means some were dropped.
  int64_t expected = 0;
  for (int64_t i = 0; i < self.length; ++i)
    if (self.valid[static_cast<size_t>(i)] && self.positions[static_cast<size_t>(i)] != expected++) return true;
  return false;
}

void Sequence::copy_from(const Sequence& other) {
  if (this == &other) return;
  if (owner_ != other.owner_)
    throw Error("Sequence::copy_from: the source sequence was made by " +
                (other.owner_ ? other.owner_name_ : std::string("no model")) + " and this one by " +
                (owner_ ? owner_name_ : std::string("no model")) + "; both must come from the same model");
  KVCache& c = self;
  const KVCache& o = other.self;
  if (o.length > c.capacity)
    throw Error("Sequence::copy_from: " + std::to_string(o.length) + " cached tokens do not fit in " +
                std::to_string(c.capacity) + " slots");
  std::vector<Tensor*> to = slot_tensors(c);
  const std::vector<Tensor*> from = slot_tensors(const_cast<KVCache&>(o));
  if (to.size() != from.size()) throw Error("Sequence::copy_from: the sequences' caches differ in layout");
  for (size_t i = 0; i < to.size(); ++i) {
    const Tensor& s = *from[i];
    if (s.dtype != to[i]->dtype || s.shape[0] != to[i]->shape[0])
      throw Error("Sequence::copy_from: the sequences' caches differ in layout");
    const int64_t heads = s.shape[0], row = s.numel() / (heads * o.capacity);  // elements per slot
    const size_t es = dtype_size(s.dtype) * static_cast<size_t>(row);
    auto dst = static_cast<char*>(to[i]->data);
    auto src = static_cast<const char*>(s.data);
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(dst + h * c.capacity * es, src + h * o.capacity * es, static_cast<size_t>(o.length) * es);
  }
  c.length = o.length;
  c.positions = o.positions;
  c.valid = o.valid;
  cross = other.cross;
  next_position = other.next_position;
  tokens = other.tokens;
  token_valid = other.token_valid;
  extension = other.extension;
}

}  // namespace ordo
