// The decode attention row kernels (engine/src/kernels/attention_kernels.hpp, private) against a double
// reference, for every cache element type: F32, F16 (widened) and I8 (row scales). Lengths cover
// fewer rows than streams, the stream split's remainder and long runs; head sizes cover the AVX2
// kernels (32, 64, 128) and the generic loop (24). The I8 reference is computed from the
// dequantised rows, so these tests check the arithmetic exactly; what rounding to I8 costs in
// logits is kv_cache_test's subject.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../engine/src/kernels/attention_kernels.hpp"  // private

namespace {

using ordo::detail::pv_accumulate;
using ordo::detail::qk_scores;

std::vector<float> random_vec(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A cache of n rows of hd in element type E, and the F32 values each element stands for.
template <class E>
struct Rows {
  std::vector<E> data;
  std::vector<float> scale;  // I8 only
  std::vector<float> value;  // what the kernels must see
};

template <class E>
Rows<E> make_rows(const std::vector<float>& src, int64_t n, int64_t hd) {
  Rows<E> r;
  r.data.resize(src.size());
  r.value.resize(src.size());
  if constexpr (std::is_same_v<E, float>) {
    r.data = src;
    r.value = src;
  } else if constexpr (std::is_same_v<E, uint16_t>) {
    ordo::detail::to_f16(src.data(), static_cast<int64_t>(src.size()), r.data.data());
    for (size_t i = 0; i < src.size(); ++i) r.value[i] = ordo::f16_to_f32(r.data[i]);
  } else {
    r.scale.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      r.scale[j] = ordo::detail::to_i8(&src[j * hd], hd, &r.data[j * hd]);
      for (int64_t i = 0; i < hd; ++i) r.value[j * hd + i] = r.scale[j] * static_cast<float>(r.data[j * hd + i]);
    }
  }
  return r;
}

template <class E>
void check_kernels(int64_t n, int64_t hd) {
  SCOPED_TRACE("n=" + std::to_string(n) + " hd=" + std::to_string(hd) + " element bytes " + std::to_string(sizeof(E)));
  std::mt19937 rng(static_cast<unsigned>(n * 131 + hd));
  const std::vector<float> q = random_vec(hd, rng), kv = random_vec(n * hd, rng, 2.0f);
  const Rows<E> rows = make_rows<E>(kv, n, hd);
  const float* rs = rows.scale.empty() ? nullptr : rows.scale.data();
  const float scale = 0.125f;

  std::vector<float> scores(n);
  qk_scores(q.data(), rows.data.data(), rs, n, hd, scale, scores.data());
  // I8 keys with hd 32/64/128 meet q rounded to 16-bit fixed point: each q element moves by at
  // most max|q| / 32766, so a score by at most that times Σ|k| (the sums themselves are exact).
  double q_step = 0;
  if (std::is_same_v<E, int8_t> && (hd == 32 || hd == 64 || hd == 128))
    for (float v : q) q_step = std::max(q_step, std::fabs(double(v)) / 32766.0);
  for (int64_t j = 0; j < n; ++j) {
    double ref = 0, mag = 0, k_abs = 0;
    for (int64_t i = 0; i < hd; ++i) {
      ref += double(q[i]) * rows.value[j * hd + i];
      mag += std::fabs(double(q[i]) * rows.value[j * hd + i]);
      k_abs += std::fabs(double(rows.value[j * hd + i]));
    }
    ASSERT_NEAR(scores[j], scale * ref, 1e-5 * scale * mag + scale * q_step * k_abs + 1e-7) << "row " << j;
  }

  // p has zeros (skipped rows) and the output starts non-zero (the kernel accumulates).
  std::vector<float> p = random_vec(n, rng);
  for (int64_t j = 0; j < n; j += 3) p[j] = 0.0f;
  std::vector<float> out = random_vec(hd, rng), start = out;
  pv_accumulate(p.data(), rows.data.data(), rs, n, hd, out.data());
  for (int64_t i = 0; i < hd; ++i) {
    double ref = start[i], mag = std::fabs(start[i]);
    for (int64_t j = 0; j < n; ++j) {
      ref += double(p[j]) * rows.value[j * hd + i];
      mag += std::fabs(double(p[j]) * rows.value[j * hd + i]);
    }
    ASSERT_NEAR(out[i], ref, 1e-5 * mag + 1e-7) << "element " << i;
  }
}

template <class E>
void check_all_shapes() {
  for (int64_t hd : {64, 32, 128, 24})
    for (int64_t n : {1, 3, 4, 5, 7, 37, 1024}) check_kernels<E>(n, hd);
}

#ifdef ORDO_SIMD
// The kernels this CPU runs (AVX-512 where it has it, unless ORDO_MAX_ISA=avx2) against the AVX2
// ones, bit for bit: a sequence's attention must not depend on the instruction set.
template <int NV, class E>
void check_same_bits_as_avx2(int64_t n) {
  constexpr int64_t hd = 8 * NV;
  SCOPED_TRACE("n=" + std::to_string(n) + " hd=" + std::to_string(hd) + " element bytes " + std::to_string(sizeof(E)));
  std::mt19937 rng(static_cast<unsigned>(n * 17 + hd));
  const std::vector<float> q = random_vec(hd, rng), kv = random_vec(n * hd, rng, 2.0f);
  const Rows<E> rows = make_rows<E>(kv, n, hd);
  const float* rs = rows.scale.empty() ? nullptr : rows.scale.data();
  if constexpr (!std::is_same_v<E, int8_t>) {  // I8 keys take the fixed-point path on every ISA
    std::vector<float> got(n), want(n);
    qk_scores(q.data(), rows.data.data(), rs, n, hd, 0.125f, got.data());
    ordo::detail::qk_scores_t<NV>(q.data(), rows.data.data(), rs, n, 0.125f, want.data());
    ASSERT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0);
  }
  std::vector<float> p = random_vec(n, rng);
  for (int64_t j = 0; j < n; j += 3) p[j] = 0.0f;
  std::vector<float> got = random_vec(hd, rng), want = got;
  pv_accumulate(p.data(), rows.data.data(), rs, n, hd, got.data());
  ordo::detail::pv_accumulate_t<NV>(p.data(), rows.data.data(), rs, n, want.data());
  ASSERT_EQ(std::memcmp(got.data(), want.data(), hd * sizeof(float)), 0);
}

template <class E>
void check_same_bits_all_shapes() {
  for (int64_t n : {1, 3, 4, 5, 7, 37, 137, 1024}) {
    check_same_bits_as_avx2<8, E>(n);
    check_same_bits_as_avx2<4, E>(n);
    check_same_bits_as_avx2<16, E>(n);
  }
}

TEST(AttentionKernels, SameBitsAsTheAvx2Kernels) {
  const char* cap = std::getenv("ORDO_MAX_ISA");
  if (cap && std::string(cap) == "avx2") {
    EXPECT_FALSE(ordo::detail::attention_avx512());
  }
  check_same_bits_all_shapes<float>();
  check_same_bits_all_shapes<uint16_t>();
  check_same_bits_all_shapes<int8_t>();
}
#endif

TEST(AttentionKernels, F32RowsMatchDoubleReference) { check_all_shapes<float>(); }
TEST(AttentionKernels, F16RowsMatchDoubleReference) { check_all_shapes<uint16_t>(); }
TEST(AttentionKernels, I8RowsWithScalesMatchDoubleReference) { check_all_shapes<int8_t>(); }

// Symmetric rounding to 127 steps of the row's largest magnitude, to nearest: every element within
// half a step, the largest exactly ±127. 13 elements: the vector path and the scalar tail.
TEST(AttentionKernels, I8RowRoundingIsToNearestWithinHalfAStep) {
  const std::vector<float> row = {0.5f,  -3.0f, 1.2f,  0.0f, 2.99f,  -0.01f, 0.7f,
                                  -1.5f, 2.99f, -0.7f, 1.2f, -2.99f, 0.01f};
  std::vector<int8_t> q(row.size());
  const float s = ordo::detail::to_i8(row.data(), static_cast<int64_t>(row.size()), q.data());
  EXPECT_FLOAT_EQ(s, 3.0f / 127.0f);
  EXPECT_EQ(q[1], -127);
  for (size_t i = 0; i < row.size(); ++i) {
    EXPECT_EQ(q[i], static_cast<int8_t>(std::nearbyint(double(row[i]) * 127.0 / 3.0))) << i;
    EXPECT_LE(std::fabs(s * q[i] - row[i]), 0.5f * s + 1e-7f) << i;
  }
  EXPECT_EQ(q[4], 127);    // 2.99 / 3 · 127 = 126.6 rounds up (vector path)
  EXPECT_EQ(q[11], -127);  // and in the tail
}

// The fixed-point query of the I8 QK path: a zero query gives zero scores, and a query with a NaN
// or inf takes the float path, so its scores are non-finite (NaN, or ±inf), not finite garbage.
TEST(AttentionKernels, I8KeysWithAZeroOrNonFiniteQuery) {
  std::mt19937 rng(7);
  for (int64_t hd : {32, 64, 128}) {
    const int64_t n = 9;
    const Rows<int8_t> rows = make_rows<int8_t>(random_vec(n * hd, rng), n, hd);
    std::vector<float> q(hd, 0.0f), scores(n, 1.0f);
    qk_scores(q.data(), rows.data.data(), rows.scale.data(), n, hd, 0.125f, scores.data());
    for (float s : scores) EXPECT_EQ(s, 0.0f) << "hd=" << hd;
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      q = random_vec(hd, rng);
      q[5] = bad;
      qk_scores(q.data(), rows.data.data(), rows.scale.data(), n, hd, 0.125f, scores.data());
      for (float s : scores) EXPECT_FALSE(std::isfinite(s)) << "hd=" << hd << " q[5]=" << bad << " score " << s;
    }
  }
}

TEST(AttentionKernels, I8ZeroRowHasScaleZeroAndNonFiniteRowScaleNaN) {
  std::vector<float> row(16, 0.0f);
  std::vector<int8_t> q(16, 5);
  EXPECT_EQ(ordo::detail::to_i8(row.data(), 16, q.data()), 0.0f);
  for (int8_t v : q) EXPECT_EQ(v, 0);
  // A NaN or inf key must not become a finite, silently wrong row: its scale is NaN.
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    row[3] = bad;
    EXPECT_TRUE(std::isnan(ordo::detail::to_i8(row.data(), 16, q.data())));
  }
}

}  // namespace
