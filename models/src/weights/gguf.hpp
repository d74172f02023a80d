// A GGUF file (v2/v3, ggml's single-file model format) read as untrusted input: header, metadata.
//
// Layout (little-endian): "GGUF", u32 version, u64 tensor count, u64 metadata count; each metadata
// entry a string key, a u32 value type and the value (arrays: u32 element type, u64 count, the
// elements); each tensor info a string name, u32 ndim, ndim u64 dims (innermost first), u32 ggml
// type, u64 offset; then, aligned to general.alignment (default 32), the data blob the offsets point
// into. Strings are a u64 length and the bytes. Every count, length, dimension and offset is checked
// against the file before it is used; every error names the file and the key or tensor at fault.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ordo/tensor.hpp"

namespace ordo {

// GGUF's metadata value types (their numbers are the file's).
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char* gguf_type_name(GgufType t);

struct GgufValue {
  GgufType type = GgufType::U8;
  // Integers and bools in `i` (u64 values above INT64_MAX in `u` only), floats in `f`.
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string s;
  GgufType elem = GgufType::U8;  // arrays: the elements' type
  std::vector<GgufValue> items;  // arrays: the elements
  bool is_int() const;           // any integer type (not bool)
  bool is_float() const { return type == GgufType::F32 || type == GgufType::F64; }
};

// ggml's tensor types ordo names (the numbers are ggml's).
enum GgmlType : uint32_t {
  kGgmlF32 = 0,
  kGgmlF16 = 1,
  kGgmlQ4_0 = 2,
  kGgmlQ4_1 = 3,
  kGgmlQ5_0 = 6,
  kGgmlQ5_1 = 7,
  kGgmlQ8_0 = 8,
  kGgmlQ2_K = 10,
  kGgmlQ3_K = 11,
  kGgmlQ4_K = 12,
  kGgmlQ5_K = 13,
  kGgmlQ6_K = 14,
  kGgmlBF16 = 30,
};
// ggml's name of a tensor type ("Q4_K"), or "" for a number ggml does not define.
std::string ggml_type_name(uint32_t type);
// Elements per block of a type, and the bytes of n elements (n a multiple of the block); 0 for a
// type ordo does not know the layout of.
uint64_t ggml_type_block(uint32_t type);
uint64_t ggml_type_bytes(uint32_t type, uint64_t n);
// Types ordo decodes to floats without kernels of its own (ggml_decode.cpp): Q4_1, Q5_0, Q5_1,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
bool ggml_type_decodable(uint32_t type);
// n elements (whole blocks) of a decodable type at src, as floats, as llama.cpp dequantizes them.
void ggml_decode(uint32_t type, const unsigned char* src, int64_t n, float* out);
// "<file>: tensor '<name>' has type <T>, which ordo does not read yet (it reads ...)".
std::string ggml_type_unread(const std::string& file, const std::string& tensor, uint32_t type);

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // as stored: innermost first (ggml's ne)
  uint32_t type = 0;
  uint64_t offset = 0;  // from the start of the data blob
  uint64_t bytes = 0;   // 0 for types ordo does not read
};

class GgufFile {
 public:
  // Maps `path` read-only and reads everything before the data blob, checked.
  static GgufFile open(const std::string& path);
  // Parses a GGUF image already in memory (the fuzzer's entry point); `label` names it in errors.
  static GgufFile parse(const unsigned char* data, size_t size, const std::string& label);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_start_; }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  const GgufValue* find(const std::string& key) const;  // nullptr when absent
  // Typed look-ups: an Error naming the file and key when absent (without a default) or of
  // another type. Integers of any integer type must fit the result.
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& def) const;
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t def) const;
  double get_float(const std::string& key, double def) const;
  bool get_bool(const std::string& key, bool def) const;
  // An array whose elements are of type `elem` (an Error otherwise).
  const std::vector<GgufValue>& get_array(const std::string& key, GgufType elem) const;

  // The tensor's values as a Tensor of shape dims reversed (outermost first, as PyTorch's): F32,
  // F16 and BF16 point into the mapping (copied when misaligned for their type), Q8_0, Q4_0 and
  // Q4_K dequantised into an owned F32 tensor, or with keep_blocks a 2-D one of rows of whole blocks
  // as an engine Q8_0 / Q4_0 / Q4_K tensor pointing into the mapping; the other types ordo decodes
  // as F32, or with keep_blocks (2-D) re-encoded as Q8_0. Any other type: an Error naming the
  // tensor and its type.
  Tensor tensor(const GgufTensorInfo& info, bool keep_blocks = false) const;
  const std::shared_ptr<void>& mapping() const { return mapping_; }
  std::pair<const unsigned char*, size_t> mapped_bytes() const { return {base_, size_}; }

 private:
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32, data_start_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::shared_ptr<void> mapping_;
  const unsigned char* base_ = nullptr;
  size_t size_ = 0;
  const GgufValue& need(const std::string& key, const char* what) const;
  [[noreturn]] void wrong_type(const std::string& key, const GgufValue& v, const char* want) const;
};

// llama.cpp's converter reorders each head's Q/K rows from HF's half-split RoPE layout
// (x_i, x_{i+hd/2}) to ggml's interleaved pairs (x_2i, x_2i+1): row h·hd + 2i + j of the file is
// HF's row h·hd + j·hd/2 + i. to_gguf: HF order to the file's; otherwise back. `what` names the
// tensor in the Error for rows that are not `heads` heads of even size.
Tensor gguf_rope_rows(const Tensor& t, int64_t heads, bool to_gguf, const std::string& what);

// Whether `path` is a regular file that starts with the GGUF magic. Never blocks on a FIFO.
bool is_gguf_file(const std::string& path);

}  // namespace ordo
