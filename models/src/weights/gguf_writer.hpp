// A GGUF v3 file written out (the layout gguf.hpp reads): metadata, tensor infos, then the data
// blob, every tensor aligned to 32 bytes. Tensors are declared with their byte sizes first and
// their bytes produced one at a time afterwards, so a large model is never held whole in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf.hpp"
#include "ordo/output_file.hpp"

namespace ordo {

class GgufWriter {
 public:
  void add_string(const std::string& key, const std::string& v);
  void add_u32(const std::string& key, uint32_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_strings(const std::string& key, const std::vector<std::string>& v);
  void add_f32s(const std::string& key, const std::vector<float>& v);
  void add_i32s(const std::string& key, const std::vector<int32_t>& v);
  // Any value as the reader returned it (copying metadata from another GGUF file).
  void add_value(const std::string& key, const GgufValue& v);

  // `dims` innermost first (ggml's ne); `bytes` the tensor's size in `type`.
  void add_tensor(const std::string& name, const std::vector<int64_t>& dims, uint32_t type, uint64_t bytes);

  // Writes header, metadata and tensor infos, then asks `produce(i)` for tensor i's bytes in the
  // order added (each must be exactly the size declared) and commits `out` (atomic rename).
  using Produce = std::function<std::vector<uint8_t>(size_t index)>;
  void write(OutputFile& out, const Produce& produce) const;

 private:
  struct Info {
    std::string name;
    std::vector<int64_t> dims;
    uint32_t type;
    uint64_t bytes, offset;
  };
  std::string kv_;  // serialized metadata entries
  uint64_t n_kv_ = 0, data_size_ = 0;
  std::vector<Info> tensors_;
  // An array entry's key, type and length; the caller appends the n elements.
  void begin_array(const std::string& key, GgufType elem, uint64_t n);
};

}  // namespace ordo
