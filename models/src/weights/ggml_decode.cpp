// ggml's other block types decoded to floats: Q4_1, Q5_0, Q5_1 (32 elements) and the k-quants
// Q2_K..Q6_K (256), as llama.cpp's reference dequantizers define each layout.
//
// ordo has no kernels for these but Q4_K (the engine's, whose decoder this uses); a GGUF file's
// tensors of the others are decoded once at load (and a linear weight re-encoded as Q8_0, see
// gguf_tensors.cpp). fp16 fields are little-endian.
#include <cstring>

#include "gguf.hpp"
#include "ordo/quant_blocks.hpp"

namespace ordo {
namespace {

float half(const unsigned char* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// Q4_1, 20 bytes: d, m (fp16), 16 bytes of nibbles: low nibble j is element j, high nibble 16 + j;
// x = d·q + m.
void q4_1(const unsigned char* b, float* y) {
  const float d = half(b), m = half(b + 2);
  const unsigned char* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// Q5_0 (22 bytes: d, 32 high bits, 16 bytes of nibbles; x = d·(q - 16)) and Q5_1 (24 bytes: d, m,
// high bits, nibbles; x = d·q + m). Bit j of the high bits is element j's fifth bit.
void q5(bool with_min, const unsigned char* b, float* y) {
  const float d = half(b), m = with_min ? half(b + 2) : 0.0f;
  const unsigned char* p = b + (with_min ? 4 : 2);
  uint32_t qh;
  std::memcpy(&qh, p, 4);
  const unsigned char* qs = p + 4;
  const int offset = with_min ? 0 : 16;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    y[j] = static_cast<float>(lo - offset) * d + m;
    y[j + 16] = static_cast<float>(hi - offset) * d + m;
  }
}

// Q2_K, 84 bytes: 16 scale bytes (low nibble a sub-block's scale, high its min), 64 bytes of 2-bit
// codes, d, dmin. Each half of the super-block takes 32 code bytes; shift 2s of them gives
// sub-blocks 2s (bytes 0-15) and 2s+1 (bytes 16-31). x = d·sc·q - dmin·mn.
void q2_k(const unsigned char* b, float* y) {
  const unsigned char *sc = b, *qs = b + 16;
  const float d = half(b + 80), dmin = half(b + 82);
  int s = 0;
  for (int h = 0; h < 2; ++h, qs += 32)
    for (int shift = 0; shift < 8; shift += 2)
      for (int part = 0; part < 2; ++part, ++s) {
        const float dl = d * static_cast<float>(sc[s] & 0x0F), ml = dmin * static_cast<float>(sc[s] >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((qs[16 * part + l] >> shift) & 3) - ml;
      }
}

// Q3_K, 110 bytes: 32 bytes of high bits, 64 of 2-bit codes, 12 bytes holding sixteen 6-bit scales
// (low 4 bits of scales 0-7 then 8-15 in bytes 0-7, their top 2 bits in bytes 8-11), d. Codes are
// laid out as Q2_K's; the high bit of element e's slot (bit h·4 + shift/2 of high byte l) clear
// means q - 4. x = d·(sc - 32)·q.
void q3_k(const unsigned char* b, float* y) {
  const unsigned char *hm = b, *qs = b + 32, *packed = b + 96;
  const float d = half(b + 108);
  int scales[16];
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? packed[i] & 0x0F : packed[i - 8] >> 4;
    const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    scales[i] = (low | (high << 4)) - 32;
  }
  int s = 0, bit = 0;
  for (int h = 0; h < 2; ++h, qs += 32)
    for (int shift = 0; shift < 8; shift += 2, ++bit)
      for (int part = 0; part < 2; ++part, ++s) {
        const float dl = d * static_cast<float>(scales[s]);
        for (int l = 0; l < 16; ++l) {
          const int i = 16 * part + l;
          const int q = ((qs[i] >> shift) & 3) - ((hm[i] >> bit) & 1 ? 0 : 4);
          *y++ = dl * static_cast<float>(q);
        }
      }
}

// Q5_K, 176 bytes: Q4_K's layout (ordo/quant_blocks.hpp) with 32 bytes of fifth bits before the
// nibbles: the fifth bit of element l of sub-block s is bit s of byte l. x = d·sc·q - dmin·mn.
void q5_k(const unsigned char* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const unsigned char *qh = b + 16, *qs = b + 48;
  for (int i = 0; i < 4; ++i, qs += 32)
    for (int part = 0; part < 2; ++part) {
      const int s = 2 * i + part;
      int sc = 0, mn = 0;
      q4_k_scale_min(s, b + 4, &sc, &mn);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) {
        const int q = (part ? qs[l] >> 4 : qs[l] & 0x0F) + (((qh[l] >> s) & 1) << 4);
        *y++ = dl * static_cast<float>(q) - ml;
      }
    }
}

// Q6_K, 210 bytes: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, d. Each 128
// elements take 64 low bytes and 32 high bytes: element 32c + l (c = 0..3) has the low nibble of
// byte l + 32·(c & 1) (high nibble when c >= 2) and bits 2c..2c+1 of high byte l; its scale is
// 8·half + 2c + l / 16. x = d·sc·(q - 32).
void q6_k(const unsigned char* b, float* y) {
  const unsigned char *ql = b, *qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half(b + 208);
  for (int h = 0; h < 2; ++h, ql += 64, qh += 32, sc += 8, y += 128)
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) {
        const unsigned char lo = ql[l + 32 * (c & 1)];
        const int q = ((c < 2 ? lo & 0x0F : lo >> 4) | (((qh[l] >> (2 * c)) & 3) << 4)) - 32;
        y[32 * c + l] = d * static_cast<float>(sc[2 * c + l / 16]) * static_cast<float>(q);
      }
}

}  // namespace

bool ggml_type_decodable(uint32_t type) {
  switch (type) {
    case kGgmlQ4_1:
    case kGgmlQ5_0:
    case kGgmlQ5_1:
    case kGgmlQ2_K:
    case kGgmlQ3_K:
    case kGgmlQ4_K:
    case kGgmlQ5_K:
    case kGgmlQ6_K: return true;
    default: return false;
  }
}

void ggml_decode(uint32_t type, const unsigned char* src, int64_t n, float* out) {
  const int64_t block = static_cast<int64_t>(ggml_type_block(type));
  const uint64_t bytes = ggml_type_bytes(type, static_cast<uint64_t>(block));
  if (!ggml_type_decodable(type) || block <= 0 || n % block != 0)
    throw Error("ggml_decode: " + ggml_type_name(type) + " with " + std::to_string(n) + " elements");
  for (int64_t i = 0; i < n / block; ++i, src += bytes, out += block) switch (type) {
      case kGgmlQ4_1: q4_1(src, out); break;
      case kGgmlQ5_0: q5(false, src, out); break;
      case kGgmlQ5_1: q5(true, src, out); break;
      case kGgmlQ2_K: q2_k(src, out); break;
      case kGgmlQ3_K: q3_k(src, out); break;
      case kGgmlQ4_K: dequantize_q4_k(src, block, out); break;
      case kGgmlQ5_K: q5_k(src, out); break;
      case kGgmlQ6_K: q6_k(src, out); break;
      default: break;
    }
}

}  // namespace ordo
