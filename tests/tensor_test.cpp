// Tests of Tensor: f16/bf16 conversions, shapes and views.
#include <gtest/gtest.h>

#include <cmath>

#include "ordo/tensor.hpp"

using ordo::Tensor;

TEST(Tensor, F16RoundTripsExactValues) {
  // 1.0 = 0x3c00, -2.0 = 0xc000, 65504 = 0x7bff (max), 2^-24 = 0x0001 (smallest subnormal)
  EXPECT_EQ(ordo::f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(ordo::f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(ordo::f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(ordo::f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(ordo::f16_to_f32(0x7c00)));
  EXPECT_EQ(ordo::f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(ordo::f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(ordo::f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: rounds to even (1.0)
  EXPECT_EQ(ordo::f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
}

TEST(Tensor, BF16IsTheTop16Bits) {
  EXPECT_EQ(ordo::bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(ordo::bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(ordo::f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(ordo::f32_to_bf16(-3.0f), 0xc040);
}

TEST(Tensor, RowsViewSharesStorage) {
  Tensor t = Tensor::from({3, 2}, {0, 1, 2, 3, 4, 5});
  Tensor v = t.rows(1, 3);
  EXPECT_EQ(v.shape_str(), "[2, 2]");
  EXPECT_EQ(v.f32()[0], 2.0f);
  v.f32()[0] = 9.0f;
  EXPECT_EQ(t.f32()[2], 9.0f);
  EXPECT_THROW(t.rows(2, 4), ordo::Error);
}

TEST(Tensor, ToF32ConvertsHalfTypes) {
  Tensor h = Tensor::zeros({2}, ordo::DType::F16);
  static_cast<uint16_t*>(h.data)[0] = 0x3c00;
  static_cast<uint16_t*>(h.data)[1] = 0xc000;
  Tensor f = h.to_f32();
  EXPECT_EQ(f.f32()[0], 1.0f);
  EXPECT_EQ(f.f32()[1], -2.0f);
}
