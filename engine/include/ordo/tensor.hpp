// Tensors: a dtype, a row-major shape and a pointer to bytes that are either
// owned (heap) or borrowed (a memory-mapped file kept alive by `owner`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ordo {

// Q8_0 / Q4_0: llama.cpp's blocks of 32 elements (ordo/quant_blocks.hpp), for 2-D linear weights
// [N, K] with K a multiple of 32, each row K / 32 blocks. Q4_K: its super-blocks of 256 (K a
// multiple of 256), as GGUF files store them; read and run, never written.
enum class DType { F32, F16, BF16, I8, Q8_0, Q4_0, Q4_K };

const char* dtype_name(DType t);
// Bytes per element; an Error for the block types, whose size is per row (dtype_row_bytes).
size_t dtype_size(DType t);
bool is_block_dtype(DType t);
// Bytes of `cols` consecutive elements of one row (block types: whole blocks, else Error).
size_t dtype_row_bytes(DType t, int64_t cols);

// Thrown for every user-facing failure (bad file, bad config, bad token id, ...).
// The message names the file, field or token at fault.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  void* data = nullptr;
  std::shared_ptr<void> owner;  // keeps `data` alive (heap block or mapping)

  bool empty() const { return data == nullptr; }
  int64_t numel() const;
  // Rows of the last dimension times their bytes (dtype_row_bytes).
  size_t nbytes() const;
  int64_t dim(int i) const { return shape.at(i < 0 ? shape.size() + i : i); }
  int ndim() const { return static_cast<int>(shape.size()); }
  std::string shape_str() const;

  float* f32() { return static_cast<float*>(data); }
  const float* f32() const { return static_cast<const float*>(data); }

  // A zero-filled owned tensor.
  static Tensor zeros(std::vector<int64_t> shape, DType dtype = DType::F32);
  // Like zeros() without the clearing pass: for buffers written before they are read (KV caches,
  // whose large untouched tail then never becomes resident).
  static Tensor uninitialized(std::vector<int64_t> shape, DType dtype = DType::F32);
  static Tensor from(std::vector<int64_t> shape, const std::vector<float>& values);
  // A view that shares `owner` with this tensor: rows [row_begin, row_end) of dim 0.
  Tensor rows(int64_t row_begin, int64_t row_end) const;
  // An owned F32 copy (converting F16/BF16, dequantising Q8_0/Q4_0/Q4_K). Throws for I8.
  Tensor to_f32() const;
};

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_bf16(float f);

}  // namespace ordo
