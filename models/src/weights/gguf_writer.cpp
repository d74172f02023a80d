// GGUF v3 serialization (gguf_writer.hpp): little-endian scalars, u64-length strings, aligned data.
#include "gguf_writer.hpp"

#include <cstring>

namespace ordo {
namespace {

constexpr uint64_t kAlign = 32;  // general.alignment's default, which readers assume when absent

template <typename T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the hosts ordo builds for are little-endian, as GGUF is
  s.append(b, sizeof(T));
}

void put_str(std::string& s, const std::string& v) {
  put<uint64_t>(s, v.size());
  s += v;
}

uint64_t padded(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

void put_scalar(std::string& s, const GgufValue& v, const std::string& key) {
  switch (v.type) {
    case GgufType::U8: put<uint8_t>(s, static_cast<uint8_t>(v.i)); break;
    case GgufType::I8: put<int8_t>(s, static_cast<int8_t>(v.i)); break;
    case GgufType::U16: put<uint16_t>(s, static_cast<uint16_t>(v.i)); break;
    case GgufType::I16: put<int16_t>(s, static_cast<int16_t>(v.i)); break;
    case GgufType::U32: put<uint32_t>(s, static_cast<uint32_t>(v.i)); break;
    case GgufType::I32: put<int32_t>(s, static_cast<int32_t>(v.i)); break;
    case GgufType::F32: put<float>(s, static_cast<float>(v.f)); break;
    case GgufType::Bool: put<uint8_t>(s, v.i ? 1 : 0); break;
    case GgufType::String: put_str(s, v.s); break;
    case GgufType::U64: put<uint64_t>(s, v.i < 0 ? v.u : static_cast<uint64_t>(v.i)); break;
    case GgufType::I64: put<int64_t>(s, v.i); break;
    case GgufType::F64: put<double>(s, v.f); break;
    case GgufType::Array: throw Error("GGUF writer: key '" + key + "' holds an array of arrays, which is not written");
  }
}

}  // namespace

void GgufWriter::add_value(const std::string& key, const GgufValue& v) {
  put_str(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(v.type));
  if (v.type == GgufType::Array) {
    put<uint32_t>(kv_, static_cast<uint32_t>(v.elem));
    put<uint64_t>(kv_, v.items.size());
    for (const GgufValue& e : v.items) put_scalar(kv_, e, key);
  } else {
    put_scalar(kv_, v, key);
  }
  ++n_kv_;
}

namespace {

GgufValue scalar(GgufType type) {
  GgufValue g;
  g.type = type;
  return g;
}

}  // namespace

void GgufWriter::add_string(const std::string& key, const std::string& v) {
  GgufValue g = scalar(GgufType::String);
  g.s = v;
  add_value(key, g);
}

void GgufWriter::add_u32(const std::string& key, uint32_t v) {
  GgufValue g = scalar(GgufType::U32);
  g.i = v;
  add_value(key, g);
}

void GgufWriter::add_f32(const std::string& key, float v) {
  GgufValue g = scalar(GgufType::F32);
  g.f = v;
  add_value(key, g);
}

void GgufWriter::add_bool(const std::string& key, bool v) {
  GgufValue g = scalar(GgufType::Bool);
  g.i = v;
  add_value(key, g);
}

// Arrays are serialized directly: a vocabulary of 150k strings is not worth a GgufValue each.
void GgufWriter::begin_array(const std::string& key, GgufType elem, uint64_t n) {
  put_str(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufType::Array));
  put<uint32_t>(kv_, static_cast<uint32_t>(elem));
  put<uint64_t>(kv_, n);
  ++n_kv_;
}

void GgufWriter::add_strings(const std::string& key, const std::vector<std::string>& v) {
  begin_array(key, GgufType::String, v.size());
  for (const std::string& s : v) put_str(kv_, s);
}

void GgufWriter::add_f32s(const std::string& key, const std::vector<float>& v) {
  begin_array(key, GgufType::F32, v.size());
  for (float f : v) put<float>(kv_, f);
}

void GgufWriter::add_i32s(const std::string& key, const std::vector<int32_t>& v) {
  begin_array(key, GgufType::I32, v.size());
  for (int32_t x : v) put<int32_t>(kv_, x);
}

void GgufWriter::add_tensor(const std::string& name, const std::vector<int64_t>& dims, uint32_t type, uint64_t bytes) {
  tensors_.push_back({name, dims, type, bytes, data_size_});
  data_size_ = padded(data_size_ + bytes);
}

void GgufWriter::write(OutputFile& out, const Produce& produce) const {
  std::string head = "GGUF";
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, n_kv_);
  head += kv_;
  for (const Info& t : tensors_) {
    put_str(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) put<uint64_t>(head, static_cast<uint64_t>(d));
    put<uint32_t>(head, t.type);
    put<uint64_t>(head, t.offset);
  }
  head.resize(padded(head.size()), '\0');
  out.write(head);
  const std::string zeros(kAlign, '\0');
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const std::vector<uint8_t> bytes = produce(i);
    if (bytes.size() != tensors_[i].bytes)
      throw Error(out.path() + ": tensor '" + tensors_[i].name + "': " + std::to_string(bytes.size()) +
                  " bytes produced, " + std::to_string(tensors_[i].bytes) + " declared");
    out.write(bytes.data(), bytes.size());
    out.write(zeros.data(), padded(bytes.size()) - bytes.size());
  }
  out.commit();
}

}  // namespace ordo
