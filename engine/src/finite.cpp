// Non-finite scans (ordo/finite.hpp): exponent bits all ones is NaN or ±inf in every float format.
#include "ordo/finite.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernels/gemm_backend.hpp"
#include "ordo/quant_blocks.hpp"

namespace ordo {
namespace {

// Whether any of x[0, n) has all exponent bits set; a branch-free loop the compiler vectorises.
template <class U, U kExp>
bool any_nonfinite(const U* x, int64_t n) {
  U bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= static_cast<U>((x[i] & kExp) == kExp);
  return bad != 0;
}

template <class U, U kExp>
int64_t first_of(const void* data, int64_t n) {
  const U* x = static_cast<const U*>(data);
  constexpr int64_t kChunk = int64_t{1} << 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  int64_t first_chunk = chunks;
  if (chunks > 1) detail::ensure_threads();
#pragma omp parallel for schedule(static) reduction(min : first_chunk) if (chunks > 4)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b = c * kChunk;
    if (any_nonfinite<U, kExp>(x + b, std::min(kChunk, n - b))) first_chunk = std::min(first_chunk, c);
  }
  if (first_chunk == chunks) return -1;
  for (int64_t i = first_chunk * kChunk; i < n; ++i)
    if ((x[i] & kExp) == kExp) return i;
  return -1;
}

// A block dtype's elements and bytes per block.
int64_t block_elems(DType t) { return t == DType::Q4_K ? kQ4KBlock : kQuantBlock; }
size_t block_bytes(DType t) { return t == DType::Q8_0 ? 34 : t == DType::Q4_0 ? 18 : kQ4KBytes; }

// Block dtypes: the integers are finite, so a block's values are non-finite exactly when one of its
// fp16 scales (its first two bytes; Q4_K: d and dmin, its first four) is NaN or inf (inf · 0 is NaN).
// The first element of the first such block at or after block `from`, or -1.
int64_t first_bad_block(const Tensor& t, int64_t from = 0) {
  const size_t block = block_bytes(t.dtype);
  const int64_t elems = block_elems(t.dtype), scales = t.dtype == DType::Q4_K ? 2 : 1;
  const auto* p = static_cast<const unsigned char*>(t.data);
  for (int64_t b = from, nb = t.numel() / elems; b < nb; ++b)
    for (int64_t s = 0; s < scales; ++s) {
      uint16_t d;
      std::memcpy(&d, p + static_cast<size_t>(b) * block + 2 * s, 2);
      if ((d & 0x7c00u) == 0x7c00u) return b * elems;
    }
  return -1;
}

}  // namespace

int64_t first_nonfinite(const float* x, int64_t n) { return first_of<uint32_t, 0x7f800000u>(x, n); }

int64_t first_nonfinite(const Tensor& t) {
  if (t.empty()) return -1;
  switch (t.dtype) {
    case DType::F32: return first_of<uint32_t, 0x7f800000u>(t.data, t.numel());
    case DType::F16: return first_of<uint16_t, 0x7c00u>(t.data, t.numel());
    case DType::BF16: return first_of<uint16_t, 0x7f80u>(t.data, t.numel());
    case DType::I8: return -1;
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K: return first_bad_block(t);
  }
  return -1;
}

int64_t count_nonfinite(const Tensor& t) {
  int64_t n = 0;
  if (t.empty() || t.dtype == DType::I8) return 0;
  if (is_block_dtype(t.dtype)) {  // every value of a block with a non-finite scale (inf * 0 is NaN)
    const int64_t elems = block_elems(t.dtype);
    for (int64_t i = first_bad_block(t); i >= 0; i = first_bad_block(t, i / elems + 1)) n += elems;
    return n;
  }
  for (int64_t i = 0, e = t.numel(); i < e; ++i) n += std::isfinite(element_as_f32(t, i)) ? 0 : 1;
  return n;
}

float element_as_f32(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::F32: return t.f32()[i];
    case DType::F16:
    case DType::BF16: {
      uint16_t h;
      std::memcpy(&h, static_cast<const unsigned char*>(t.data) + 2 * i, 2);
      return t.dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
    case DType::I8: return static_cast<float>(static_cast<const int8_t*>(t.data)[i]);
    case DType::Q8_0:
    case DType::Q4_0: {  // d times the element's code (for messages: one element, not a hot path)
      const int64_t b = i / kQuantBlock, j = i % kQuantBlock;
      const auto* p = static_cast<const unsigned char*>(t.data) + b * (t.dtype == DType::Q8_0 ? 34 : 18);
      uint16_t h;
      std::memcpy(&h, p, 2);
      const int q = t.dtype == DType::Q8_0
                        ? static_cast<int8_t>(p[2 + j])
                        : (j < kQuantBlock / 2 ? p[2 + j] & 0x0F : p[2 + j - kQuantBlock / 2] >> 4) - 8;
      return f16_to_f32(h) * static_cast<float>(q);
    }
    case DType::Q4_K: {  // the element's super-block decoded
      float block[kQ4KBlock];
      dequantize_q4_k(static_cast<const unsigned char*>(t.data) + static_cast<size_t>(i / kQ4KBlock) * kQ4KBytes,
                      kQ4KBlock, block);
      return block[i % kQ4KBlock];
    }
  }
  return 0.0f;
}

std::string index_str(const std::vector<int64_t>& shape, int64_t i) {
  std::vector<int64_t> at(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = std::max<int64_t>(shape[d], 1);
    at[d] = i % n;
    i /= n;
  }
  std::string s = "[";
  for (size_t d = 0; d < at.size(); ++d) s += (d ? ", " : "") + std::to_string(at[d]);
  return s + "]";
}

std::string value_str(float v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

void check_finite_row(const float* row, int64_t n, int64_t position, const std::string& what) {
  const int64_t i = first_nonfinite(row, n);
  if (i < 0) return;
  const std::string v = value_str(row[i]);
  throw NonFiniteError(what + " at position " + std::to_string(position) + " are " +
                       (v == "NaN" ? "NaN" : "infinite (" + v + ")") + " (entry " + std::to_string(i) +
                       "): the model's weights or activations are not finite (check with ordo inspect)");
}

}  // namespace ordo
