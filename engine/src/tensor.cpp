// Tensors: dtype names and sizes, shapes, row views, F32 conversion and half-float rounding.
#include "ordo/tensor.hpp"

#include "ordo/input.hpp"
#include "ordo/quant_blocks.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ordo {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I8: return "I8";
    case DType::Q8_0: return "Q8_0";
    case DType::Q4_0: return "Q4_0";
    case DType::Q4_K: return "Q4_K";
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I8: return 1;
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K:
      throw Error(std::string("dtype_size: ") + dtype_name(t) + " is stored in blocks; its size is per row");
  }
  return 0;
}

bool is_block_dtype(DType t) { return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_K; }

size_t dtype_row_bytes(DType t, int64_t cols) {
  if (t == DType::Q8_0) return q8_0_bytes(cols);
  if (t == DType::Q4_0) return q4_0_bytes(cols);
  if (t == DType::Q4_K) return q4_k_bytes(cols);
  return static_cast<size_t>(cols) * dtype_size(t);
}

size_t Tensor::nbytes() const {
  if (!is_block_dtype(dtype)) return static_cast<size_t>(numel()) * dtype_size(dtype);
  if (shape.empty()) throw Error(std::string("a ") + dtype_name(dtype) + " tensor needs rows of blocks, got a scalar");
  const int64_t cols = shape.back();
  return static_cast<size_t>(cols ? numel() / cols : 0) * dtype_row_bytes(dtype, cols);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Tensor::shape_str() const {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

Tensor Tensor::zeros(std::vector<int64_t> shape, DType dtype) {
  Tensor t = uninitialized(std::move(shape), dtype);
  std::memset(t.data, 0, (t.nbytes() + 63) / 64 * 64);
  return t;
}

Tensor Tensor::uninitialized(std::vector<int64_t> shape, DType dtype) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  // 64-byte alignment so SIMD kernels can use aligned loads on rows of owned tensors.
  size_t bytes = (t.nbytes() + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes ? bytes : 64);
  if (!p) throw out_of_memory("a " + t.shape_str() + " tensor", bytes);
  t.owner = std::shared_ptr<void>(p, std::free);
  t.data = p;
  return t;
}

Tensor Tensor::from(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t = zeros(std::move(shape));
  if (static_cast<size_t>(t.numel()) != values.size())
    throw Error("Tensor::from: " + std::to_string(values.size()) + " values for shape " + t.shape_str());
  std::memcpy(t.data, values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::rows(int64_t row_begin, int64_t row_end) const {
  if (shape.empty() || row_begin < 0 || row_end > shape[0] || row_begin > row_end)
    throw Error("Tensor::rows: range [" + std::to_string(row_begin) + ", " + std::to_string(row_end) + ") outside " +
                shape_str());
  Tensor v = *this;
  const size_t row_bytes = shape[0] ? nbytes() / static_cast<size_t>(shape[0]) : 0;
  v.shape[0] = row_end - row_begin;
  v.data = static_cast<char*>(data) + static_cast<size_t>(row_begin) * row_bytes;
  return v;
}

Tensor Tensor::to_f32() const {
  Tensor out = zeros(shape);
  const int64_t n = numel();
  float* dst = out.f32();
  switch (dtype) {
    case DType::F32: std::memcpy(dst, data, n * 4); break;
    // Mapped tensors may sit at any byte offset: read 16-bit values with memcpy.
    case DType::F16:
    case DType::BF16: {
      auto src = static_cast<const unsigned char*>(data);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    }
    case DType::I8: throw Error("to_f32: I8 tensors need their scales to dequantize");
    case DType::Q8_0: dequantize_q8_0(static_cast<const uint8_t*>(data), n, dst); break;
    case DType::Q4_0: dequantize_q4_0(static_cast<const uint8_t*>(data), n, dst); break;
    case DType::Q4_K: dequantize_q4_k(static_cast<const uint8_t*>(data), n, dst); break;
  }
  return out;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // round to nearest even
  return static_cast<uint16_t>(half);
}

uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace ordo
