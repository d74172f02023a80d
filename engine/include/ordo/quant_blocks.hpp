// llama.cpp's q8_0 / q4_0 weight blocks: sizes, and float <-> block conversion with ggml's rounding.
//
// Both cut a row into blocks of kQuantBlock = 32 elements, each an fp16 scale d then the codes:
//   q8_0: 34 bytes, 32 int8 q; x = d * q, d = max|x| / 127, q = round-half-away(x / d).
//   q4_0: 18 bytes, 16 bytes of nibbles; byte j holds element j in its low nibble and element
//         j + 16 in its high one; x = d * (q - 8), d = m / -8 for m the element of largest
//         magnitude (so m itself is code 0), q = min(15, trunc(x / d + 8.5)).
// The quantizers reproduce ggml's reference quantizers (quantize_row_q8_0_ref/_q4_0_ref) bit for bit,
// so a model quantized here equals the one llama.cpp's quantizer writes from the same F32 tensor.
//
// q4_k (read only: GGUF's Q4_K, the weights of a Q4_K_M file): super-blocks of kQ4KBlock = 256
// elements, 144 bytes: fp16 d, fp16 dmin, 12 bytes of eight 6-bit scales sc and mins mn (one each per
// sub-block of 32, q4_k_scale_min), then 128 bytes of nibbles, 32 per two sub-blocks: byte l holds
// element l of sub-block 2i in its low nibble and of sub-block 2i + 1 in its high one.
// x = d·sc·q - dmin·mn, q in [0, 15].
#pragma once

#include <cstddef>
#include <cstdint>

namespace ordo {

constexpr int64_t kQuantBlock = 32;  // elements per q8_0 / q4_0 block (and q4_k sub-block)
constexpr int64_t kQ4KBlock = 256;   // elements per q4_k super-block
constexpr size_t kQ4KBytes = 144;    // bytes per q4_k super-block

// Bytes of n elements (n % 32 == 0, else Error naming n).
size_t q8_0_bytes(int64_t n);  // n / 32 * 34
size_t q4_0_bytes(int64_t n);  // n / 32 * 18
size_t q4_k_bytes(int64_t n);  // n / 256 * 144 (n % 256 == 0, else Error)

// n elements (n % 32 == 0; q4_k: n % 256 == 0; else Error naming n) to blocks and back.
void quantize_q8_0(const float* x, int64_t n, uint8_t* out);
void quantize_q4_0(const float* x, int64_t n, uint8_t* out);
void dequantize_q8_0(const uint8_t* in, int64_t n, float* out);
void dequantize_q4_0(const uint8_t* in, int64_t n, float* out);
void dequantize_q4_k(const uint8_t* in, int64_t n, float* out);

// Sub-block j's (0..7) scale and min from a q4_k (or q5_k) super-block's 12 scale bytes.
void q4_k_scale_min(int j, const uint8_t* scales, int* sc, int* mn);

}  // namespace ordo
