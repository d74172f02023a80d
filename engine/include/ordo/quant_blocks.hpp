// llama.cpp's q8_0 / q4_0 weight blocks: sizes, and float <-> block conversion with ggml's rounding.
//
// Both cut a row into blocks of kQuantBlock = 32 elements, each an fp16 scale d then the codes:
//   q8_0: 34 bytes, 32 int8 q; x = d * q, d = max|x| / 127, q = round-half-away(x / d).
//   q4_0: 18 bytes, 16 bytes of nibbles; byte j holds element j in its low nibble and element
//         j + 16 in its high one; x = d * (q - 8), d = m / -8 for m the element of largest
//         magnitude (so m itself is code 0), q = min(15, trunc(x / d + 8.5)).
// The quantizers reproduce ggml's reference quantizers (quantize_row_q8_0_ref/_q4_0_ref) bit for bit,
// so a model quantized here equals the one llama.cpp's quantizer writes from the same F32 tensor.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ordo {

constexpr int64_t kQuantBlock = 32;  // elements per q8_0 / q4_0 block

// Bytes of n elements (n % 32 == 0, else Error naming n).
size_t q8_0_bytes(int64_t n);  // n / 32 * 34
size_t q4_0_bytes(int64_t n);  // n / 32 * 18

// n elements (n % 32 == 0, else Error naming n) to blocks and back.
void quantize_q8_0(const float* x, int64_t n, uint8_t* out);
void quantize_q4_0(const float* x, int64_t n, uint8_t* out);
void dequantize_q8_0(const uint8_t* in, int64_t n, float* out);
void dequantize_q4_0(const uint8_t* in, int64_t n, float* out);

}  // namespace ordo
