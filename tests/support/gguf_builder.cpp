// GgufBuilder: GGUF v2/v3 files written field by field (support/gguf_builder.hpp).
#include "support/gguf_builder.hpp"

#include <cstring>

namespace ordo::test {

void put_u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
void put_str(std::string& s, const std::string& v) {
  put_u64(s, v.size());
  s += v;
}
void poke_u64(std::string& s, size_t pos, uint64_t v) { std::memcpy(&s[pos], &v, 8); }
void poke_u32(std::string& s, size_t pos, uint32_t v) { std::memcpy(&s[pos], &v, 4); }

void GgufBuilder::key(const std::string& k, uint32_t type) {
  put_str(kv_, k);
  put_u32(kv_, type);
  ++n_kv_;
}

void GgufBuilder::add_string(const std::string& k, const std::string& v) { key(k, 8), put_str(kv_, v); }
void GgufBuilder::add_u32(const std::string& k, uint32_t v) { key(k, 4), put_u32(kv_, v); }
void GgufBuilder::add_i32(const std::string& k, int32_t v) { key(k, 5), put_u32(kv_, static_cast<uint32_t>(v)); }
void GgufBuilder::add_f32(const std::string& k, float v) {
  key(k, 6);
  kv_.append(reinterpret_cast<const char*>(&v), 4);
}
void GgufBuilder::add_bool(const std::string& k, bool v) { key(k, 7), kv_ += static_cast<char>(v); }

void GgufBuilder::add_strings(const std::string& k, const std::vector<std::string>& v) {
  key(k, 9);
  put_u32(kv_, 8);
  put_u64(kv_, v.size());
  for (const auto& s : v) put_str(kv_, s);
}
void GgufBuilder::add_f32s(const std::string& k, const std::vector<float>& v) {
  key(k, 9);
  put_u32(kv_, 6);
  put_u64(kv_, v.size());
  kv_.append(reinterpret_cast<const char*>(v.data()), 4 * v.size());
}
void GgufBuilder::add_i32s(const std::string& k, const std::vector<int32_t>& v) {
  key(k, 9);
  put_u32(kv_, 5);
  put_u64(kv_, v.size());
  kv_.append(reinterpret_cast<const char*>(v.data()), 4 * v.size());
}

void GgufBuilder::add_tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type,
                             const std::string& data) {
  tensors_.push_back({name, dims, type, data});
}

std::string GgufBuilder::bytes() const {
  std::string out = "GGUF";
  put_u32(out, version_);
  put_u64(out, tensors_.size());
  put_u64(out, n_kv_ + (alignment_ != 32 ? 1 : 0));
  out += kv_;
  if (alignment_ != 32) {
    put_str(out, "general.alignment");
    put_u32(out, 4);
    put_u32(out, alignment_);
  }
  uint64_t offset = 0;
  auto pad = [&](uint64_t x) { return (x + alignment_ - 1) / alignment_ * alignment_; };
  for (const T& t : tensors_) {
    put_str(out, t.name);
    put_u32(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) put_u64(out, d);
    put_u32(out, t.type);
    put_u64(out, offset);
    offset = pad(offset + t.data.size());
  }
  out.resize(pad(out.size()), '\0');
  for (const T& t : tensors_) {
    out += t.data;
    out.resize(pad(out.size()), '\0');
  }
  return out;
}

}  // namespace ordo::test
