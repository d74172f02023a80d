// The element-wise kernels at 16 lanes (AVX-512, ops_wide.cpp) give the bits of the 8-lane AVX2
// code, value for value, sums included, over every tail length and the exp range's edges; and
// both stay within the expf reference's tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "../engine/src/kernels/ops_wide.hpp"

namespace {

using ordo::Activation;

// Values over exp's whole range and its edges: the clamps at −87.34 / 88.72, infinities and NaN.
std::vector<float> edge_values(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            -87.33654475f,
                            -87.4f,
                            88.72283905f,
                            88.8f,
                            1e-30f,
                            -1e-30f,
                            0.5f,
                            -20.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = (g() % 5 == 0) ? specials[g() % 13] : u(g);
  return v;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The widths this CPU runs: 8 always, 16 with AVX-512 (a machine without it shows one width).
std::vector<int> widths() {
#if defined(ORDO_SIMD) && defined(__x86_64__)
  if (ordo::simd::cpu_avx512()) return {8, 16};
#endif
  return {8};
}

TEST(WideOps, ActivationsHaveTheSameBitsAtEveryWidth) {
  for (Activation a : {Activation::SiLU, Activation::GeluTanh, Activation::ReLU})
    for (int64_t n : {1, 7, 8, 15, 16, 17, 31, 33, 100, 4099})
      for (bool gated : {false, true}) {
        SCOPED_TRACE(std::string(ordo::activation_name(a)) + " n=" + std::to_string(n) + (gated ? " gated" : ""));
        const std::vector<float> x = edge_values(n, static_cast<uint32_t>(n)), up = edge_values(n, 7);
        std::vector<float> first;
        for (int lanes : widths()) {
          std::vector<float> y = x;
          ordo::detail::act_span_lanes(a, y.data(), gated ? up.data() : nullptr, n, lanes);
          for (int64_t i = 0; i < n; ++i) {  // and near the double reference (finite, moderate inputs)
            const double v = x[i];
            if (!std::isfinite(v) || std::fabs(v) > 80 || (gated && !std::isfinite(up[i]))) continue;
            double ref = a == Activation::ReLU ? std::max(v, 0.0)
                         : a == Activation::SiLU
                             ? v / (1 + std::exp(-v))
                             : v / (1 + std::exp(-2 * 0.79788456080286535588 * (v + 0.044715 * v * v * v)));
            if (gated) ref *= up[i];
            ASSERT_NEAR(y[i], ref, 1e-5 * std::fabs(ref) + 1e-30) << "lanes=" << lanes << " i=" << i;
          }
          if (first.empty()) {
            first = y;
            continue;
          }
          for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(y[i], first[i])) << "i=" << i << " x=" << x[i];
        }
      }
}

TEST(WideOps, SoftmaxHasTheSameBitsAtEveryWidth) {
  for (int64_t n : {1, 5, 8, 9, 16, 17, 24, 31, 32, 33, 47, 64, 65, 512, 1023}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    std::vector<float> x = edge_values(n, static_cast<uint32_t>(n + 100));
    for (float& v : x)  // scores: no NaN or +inf here (the NaN and masked rows are OpsTest's)
      if (std::isnan(v) || v == std::numeric_limits<float>::infinity()) v = 3.0f;
    std::vector<float> first;
    float first_sum = 0.0f;
    for (int lanes : widths()) {
      std::vector<float> y = x;
      const float sum = ordo::detail::softmax_unnormalized_lanes(y.data(), n, lanes);
      float mx = -INFINITY;
      double ref_sum = 0;
      for (float v : x) mx = std::max(mx, v);
      for (int64_t i = 0; i < n; ++i) {
        const float arg = x[i] - mx;  // the kernels' argument, rounded as they round it
        const double e = arg < -87.33654475f ? 0.0 : std::exp(static_cast<double>(arg));
        ref_sum += e;
        ASSERT_NEAR(y[i], e, 4e-7 * e + 1e-37) << "lanes=" << lanes << " i=" << i;
      }
      ASSERT_NEAR(sum, ref_sum, 1e-6 * ref_sum) << "lanes=" << lanes;
      if (first.empty()) {
        first = y;
        first_sum = sum;
        continue;
      }
      ASSERT_TRUE(same_bits(sum, first_sum)) << "sum " << sum << " vs " << first_sum;
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(y[i], first[i])) << "i=" << i;
    }
  }
}

TEST(WideOps, TheMachineRunsTheWidthItReports) {
  // The test above compared two widths here unless this CPU lacks AVX-512: say which ran.
  const std::vector<int> w = widths();
  ASSERT_FALSE(w.empty());
  EXPECT_EQ(w.front(), 8);
  std::printf("element-wise widths tested: %s\n", w.size() == 2 ? "8 and 16 lanes" : "8 lanes (no AVX-512)");
}

}  // namespace
