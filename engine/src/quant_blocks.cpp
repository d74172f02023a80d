// q8_0 / q4_0 block codec, q4_k decoder (layouts and rounding in ordo/quant_blocks.hpp).
#include "ordo/quant_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "ordo/tensor.hpp"

namespace ordo {
namespace {

constexpr size_t kQ8Block = 34, kQ4Block = 18;

int64_t blocks(int64_t n, const char* what) {
  if (n < 0 || n % kQuantBlock != 0)
    throw Error(std::string(what) + ": " + std::to_string(n) + " elements is not a multiple of the block size " +
                std::to_string(kQuantBlock));
  return n / kQuantBlock;
}

void put_half(uint8_t* p, float d) {
  const uint16_t h = f32_to_f16(d);
  std::memcpy(p, &h, 2);
}

float get_half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// 1/d, or 0 when d is 0 or so small (a denormal, |x| <= ~3.7e-37 over 127 or 8) that 1/d is inf:
// x * inf cast to an integer is undefined, and that d is stored as fp16 0, so the codes must be too.
float inverse_scale(float d) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  return std::isfinite(id) ? id : 0.0f;
}

}  // namespace

size_t q8_0_bytes(int64_t n) { return static_cast<size_t>(blocks(n, "q8_0")) * kQ8Block; }
size_t q4_0_bytes(int64_t n) { return static_cast<size_t>(blocks(n, "q4_0")) * kQ4Block; }
size_t q4_k_bytes(int64_t n) {
  if (n < 0 || n % kQ4KBlock != 0)
    throw Error("q4_k: " + std::to_string(n) + " elements is not a multiple of the block size " +
                std::to_string(kQ4KBlock));
  return static_cast<size_t>(n / kQ4KBlock) * kQ4KBytes;
}

void quantize_q8_0(const float* x, int64_t n, uint8_t* out) {
  const int64_t nb = blocks(n, "quantize_q8_0");
  for (int64_t b = 0; b < nb; ++b, x += kQuantBlock, out += kQ8Block) {
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = inverse_scale(d);
    put_half(out, d);
    for (int j = 0; j < kQuantBlock; ++j) {
      const float v = std::round(x[j] * id);  // half away from zero, as ggml's roundf
      out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::isnan(v) ? 0.0f : v));
    }
  }
}

void quantize_q4_0(const float* x, int64_t n, uint8_t* out) {
  const int64_t nb = blocks(n, "quantize_q4_0");
  for (int64_t b = 0; b < nb; ++b, x += kQuantBlock, out += kQ4Block) {
    float amax = 0.0f, max = 0.0f;  // the element of largest magnitude, with its sign (first one wins)
    for (int j = 0; j < kQuantBlock; ++j)
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    const float d = max / -8.0f;
    const float id = inverse_scale(d);
    put_half(out, d);
    auto code = [&](float v) {
      const float t = v * id + 8.5f;  // in [0, 16.5]: truncation is ggml's (int8_t) cast
      return static_cast<uint8_t>(std::min(15, t >= 0.0f ? static_cast<int>(t) : 0));
    };
    for (int j = 0; j < kQuantBlock / 2; ++j)
      out[2 + j] = static_cast<uint8_t>(code(x[j]) | code(x[j + kQuantBlock / 2]) << 4);
  }
}

void dequantize_q8_0(const uint8_t* in, int64_t n, float* out) {
  const int64_t nb = blocks(n, "dequantize_q8_0");
  for (int64_t b = 0; b < nb; ++b, in += kQ8Block, out += kQuantBlock) {
    const float d = get_half(in);
    for (int j = 0; j < kQuantBlock; ++j) out[j] = d * static_cast<float>(static_cast<int8_t>(in[2 + j]));
  }
}

void dequantize_q4_0(const uint8_t* in, int64_t n, float* out) {
  const int64_t nb = blocks(n, "dequantize_q4_0");
  for (int64_t b = 0; b < nb; ++b, in += kQ4Block, out += kQuantBlock) {
    const float d = get_half(in);
    for (int j = 0; j < kQuantBlock / 2; ++j) {
      out[j] = d * static_cast<float>((in[2 + j] & 0x0F) - 8);
      out[j + kQuantBlock / 2] = d * static_cast<float>((in[2 + j] >> 4) - 8);
    }
  }
}

// j < 4: the low 6 bits of bytes j (scale) and j + 4 (min); j >= 4: the nibbles of byte j + 4
// below the top 2 bits of bytes j - 4 (scale) and j (min).
void q4_k_scale_min(int j, const uint8_t* q, int* sc, int* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

void dequantize_q4_k(const uint8_t* in, int64_t n, float* out) {
  const int64_t nb = static_cast<int64_t>(q4_k_bytes(n) / kQ4KBytes);
  for (int64_t b = 0; b < nb; ++b, in += kQ4KBytes) {
    const float d = get_half(in), dmin = get_half(in + 2);
    const uint8_t* qs = in + 16;
    for (int i = 0; i < 4; ++i, qs += 32)
      for (int part = 0; part < 2; ++part) {
        int sc = 0, mn = 0;
        q4_k_scale_min(2 * i + part, in + 4, &sc, &mn);
        const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
        for (int l = 0; l < kQuantBlock; ++l) *out++ = dl * static_cast<float>(part ? qs[l] >> 4 : qs[l] & 0x0F) - ml;
      }
  }
}

}  // namespace ordo
