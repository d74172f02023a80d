// Builds GGUF files byte by byte for tests and fuzz seeds: valid ones, and hostile ones by
// patching the bytes it reports the positions of.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ordo::test {

class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3, uint32_t alignment = 32) : version_(version), alignment_(alignment) {}
  void add_string(const std::string& key, const std::string& v);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_strings(const std::string& key, const std::vector<std::string>& v);
  void add_f32s(const std::string& key, const std::vector<float>& v);
  void add_i32s(const std::string& key, const std::vector<int32_t>& v);
  // A tensor with ggml type `type`, dims innermost first, and its raw data bytes.
  void add_tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type, const std::string& data);
  // The file: header, metadata, tensor infos, padding, data.
  std::string bytes() const;

 private:
  uint32_t version_, alignment_;
  uint64_t n_kv_ = 0;
  std::string kv_;
  struct T {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::string data;
  };
  std::vector<T> tensors_;
  void key(const std::string& k, uint32_t type);
};

// Little-endian helpers for building and patching.
void put_u32(std::string& s, uint32_t v);
void put_u64(std::string& s, uint64_t v);
void put_str(std::string& s, const std::string& v);
void poke_u64(std::string& s, size_t pos, uint64_t v);
void poke_u32(std::string& s, size_t pos, uint32_t v);

}  // namespace ordo::test
