// The q8_0 / q4_0 block codec against llama.cpp's own quantizer: stories260K's F32 tensors,
// quantized here, equal byte for byte the blocks llama-quantize wrote into the Q8_0 / Q4_0 fixtures;
// decoding and block-size errors on hand-computed values.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../models/src/weights/gguf.hpp"
#include "ordo/quant_blocks.hpp"
#include "ordo/tensor.hpp"
#include "support/golden.hpp"

namespace {

using ordo::GgufFile;

// Quantizes every F32 tensor of the F32 fixture that `quantized` stores as `type` and compares
// the bytes; returns how many tensors were compared.
int compare_with_llama_cpp(const std::string& quantized, uint32_t type) {
  const GgufFile f32 = GgufFile::open(ordo::test::data_path("gguf/stories260K-f32.gguf"));
  const GgufFile q = GgufFile::open(ordo::test::data_path(quantized));
  int compared = 0;
  for (const auto& info : q.tensors()) {
    if (info.type != type) continue;
    const ordo::GgufTensorInfo* src = nullptr;
    for (const auto& s : f32.tensors())
      if (s.name == info.name) src = &s;
    EXPECT_NE(src, nullptr) << info.name;
    if (!src) continue;
    const ordo::Tensor x = f32.tensor(*src);
    const int64_t n = x.numel();
    const size_t bytes = type == ordo::kGgmlQ8_0 ? ordo::q8_0_bytes(n) : ordo::q4_0_bytes(n);
    EXPECT_EQ(bytes, info.bytes) << info.name;
    std::vector<uint8_t> mine(bytes);
    (type == ordo::kGgmlQ8_0 ? ordo::quantize_q8_0 : ordo::quantize_q4_0)(x.f32(), n, mine.data());
    const auto* theirs = q.mapped_bytes().first + q.data_offset() + info.offset;
    size_t first_diff = bytes;
    for (size_t i = 0; i < bytes && first_diff == bytes; ++i)
      if (mine[i] != theirs[i]) first_diff = i;
    EXPECT_EQ(first_diff, bytes) << info.name << ": first differing byte";
    ++compared;
  }
  return compared;
}

TEST(QuantBlocks, Q8_0EqualsLlamaCppQuantizer) {
  EXPECT_GE(compare_with_llama_cpp("gguf/stories260K-q8_0.gguf", ordo::kGgmlQ8_0), 30);
}

TEST(QuantBlocks, Q4_0EqualsLlamaCppQuantizer) {
  EXPECT_GE(compare_with_llama_cpp("gguf/stories260K-q4_0.gguf", ordo::kGgmlQ4_0), 30);
}

TEST(QuantBlocks, SizesAndRoundTrip) {
  EXPECT_EQ(ordo::q8_0_bytes(64), 68u);
  EXPECT_EQ(ordo::q4_0_bytes(64), 36u);
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i - 16);  // max magnitude -16 at i = 0
  std::vector<uint8_t> q8(34), q4(18);
  ordo::quantize_q8_0(x.data(), 32, q8.data());
  ordo::quantize_q4_0(x.data(), 32, q4.data());
  // q4_0: d = -16 / -8 = 2, so x = 2 (q - 8): element 0 (-16) is code 0, element 16 (0) code 8.
  EXPECT_EQ(ordo::f16_to_f32(static_cast<uint16_t>(q4[0] | q4[1] << 8)), 2.0f);
  EXPECT_EQ(q4[2], 0x80);
  // q8_0: d = 16 / 127; element 1 (-15) is round(-15 * 127 / 16) = round(-119.06) = -119.
  EXPECT_EQ(static_cast<int8_t>(q8[3]), -119);
  std::vector<float> y8(32), y4(32);
  ordo::dequantize_q8_0(q8.data(), 32, y8.data());
  ordo::dequantize_q4_0(q4.data(), 32, y4.data());
  for (int i = 0; i < 32; ++i) {
    EXPECT_NEAR(y8[i], x[i], 16.0 / 127 / 2 + 1e-3) << i;
    EXPECT_NEAR(y4[i], x[i], 1.0 + 1e-6) << i;  // half a step of d = 2
  }
  EXPECT_EQ(y4[0], -16.0f);
}

// A block whose largest magnitude is tiny (1e-38) has d = amax / 127 (or / -8) a nonzero denormal
// whose 1/d is inf: x * inf cast to an integer was undefined, and q4_0's zeros got code 0 (NaN
// compares false) instead of 8. Now 1/d is taken as 0: d stores as fp16 0 (-0 for q4_0's negative
// d), every code is the zero code, and the block decodes to zeros.
TEST(QuantBlocks, TinyBlockQuantizesToZeros) {
  std::vector<float> x(32, 0.0f);
  x[5] = 1e-38f;
  std::vector<uint8_t> q8(34, 0xff), q4(18, 0xff);
  ordo::quantize_q8_0(x.data(), 32, q8.data());
  ordo::quantize_q4_0(x.data(), 32, q4.data());
  EXPECT_EQ(q8, std::vector<uint8_t>(34, 0));  // d = 0, codes 0
  std::vector<uint8_t> want4(18, 0x88);        // d = -0 (fp16 0x8000), codes 8 (zero) in both nibbles
  want4[0] = 0x00;
  want4[1] = 0x80;
  EXPECT_EQ(q4, want4);
  std::vector<float> y8(32, 1.0f), y4(32, 1.0f);
  ordo::dequantize_q8_0(q8.data(), 32, y8.data());
  ordo::dequantize_q4_0(q4.data(), 32, y4.data());
  EXPECT_EQ(y8, std::vector<float>(32, 0.0f));
  EXPECT_EQ(y4, std::vector<float>(32, 0.0f));
}

TEST(QuantBlocks, CountNotAMultipleOf32IsAnError) {
  std::vector<float> x(40);
  std::vector<uint8_t> out(64);
  try {
    ordo::quantize_q8_0(x.data(), 40, out.data());
    FAIL() << "no error";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("40 elements"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ordo::q4_0_bytes(33), ordo::Error);
  EXPECT_THROW(ordo::dequantize_q4_0(out.data(), 31, x.data()), ordo::Error);
}

}  // namespace
