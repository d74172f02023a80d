// Linear layers and GEMM vs double-precision references: LinearTest (linear() on weights without
// panels, packed per call) and GemmTest, parameterised over the GEMM backends (which linear() does
// not use). Element-wise and row ops: row_ops_test.cpp.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ordo/ops.hpp"
#include "support/random.hpp"

using ordo::Activation;
using ordo::Backend;
using ordo::DType;
using ordo::Tensor;

using ordo::test::random_vec;

namespace {

// A weight [N, K] of dtype `dt` from random values, plus its exact dequantised F32 values.
struct TestLinear {
  ordo::Linear lin;
  std::vector<float> w;  // dequantised [N, K] (scales applied for I8)
};

TestLinear make_linear(int64_t N, int64_t K, DType dt, bool bias, uint32_t seed) {
  TestLinear t;
  std::vector<float> src = random_vec(static_cast<size_t>(N * K), seed);
  t.lin.weight = Tensor::zeros({N, K}, dt);
  t.w.resize(src.size());
  switch (dt) {
    case DType::F32:
      std::memcpy(t.lin.weight.data, src.data(), src.size() * 4);
      t.w = src;
      break;
    case DType::F16: {
      auto* p = static_cast<uint16_t*>(t.lin.weight.data);
      for (size_t i = 0; i < src.size(); ++i) {
        p[i] = ordo::f32_to_f16(src[i]);
        t.w[i] = ordo::f16_to_f32(p[i]);
      }
      break;
    }
    case DType::BF16: {
      auto* p = static_cast<uint16_t*>(t.lin.weight.data);
      for (size_t i = 0; i < src.size(); ++i) {
        p[i] = ordo::f32_to_bf16(src[i]);
        t.w[i] = ordo::bf16_to_f32(p[i]);
      }
      break;
    }
    case DType::I8: {
      auto* p = static_cast<int8_t*>(t.lin.weight.data);
      std::vector<float> sc = random_vec(static_cast<size_t>(N), seed + 1, 0.001f, 0.02f);
      t.lin.scales = Tensor::from({N}, sc);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
          const size_t i = static_cast<size_t>(n * K + k);
          p[i] = static_cast<int8_t>(std::lround(src[i] * 127.0f));
          t.w[i] = static_cast<float>(p[i]) * sc[static_cast<size_t>(n)];
        }
      break;
    }
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K: break;  // not built here: block weights are tested in block_kernels_test.cpp
  }
  if (bias) t.lin.bias = Tensor::from({N}, random_vec(static_cast<size_t>(N), seed + 2));
  return t;
}

// Checks y against a double reference x·wᵀ + b; the tolerance is relative to Σ|x·w| + |b|,
// the natural scale of float rounding error in a dot product.
void expect_linear_close(const std::vector<float>& x, int64_t M, int64_t K, const TestLinear& t,
                         const std::vector<float>& y, double rel, const std::string& what) {
  const int64_t N = t.lin.weight.dim(0);
  const float* b = t.lin.bias.empty() ? nullptr : t.lin.bias.f32();
  int bad = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = b ? b[n] : 0.0, scale = b ? std::fabs(b[n]) : 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(x[size_t(m * K + k)]) * t.w[size_t(n * K + k)];
        ref += p;
        scale += std::fabs(p);
      }
      const double got = y[size_t(m * N + n)];
      if (!(std::fabs(got - ref) <= rel * scale + 1e-30) && bad++ < 5)
        ADD_FAILURE() << what << " y[" << m << "," << n << "] = " << got << ", reference " << ref;
    }
  EXPECT_EQ(bad, 0) << what;
}

class LinearTest : public ::testing::TestWithParam<Backend> {};
class GemmTest : public ::testing::TestWithParam<Backend> {};

std::string backend_param_name(const ::testing::TestParamInfo<Backend>& info) { return ordo::backend_name(info.param); }

}  // namespace

// ---- linear ------------------------------------------------------------------------------

TEST_P(LinearTest, F32MatchesDoubleReference) {
  const Backend be = GetParam();
  const std::vector<std::pair<int64_t, int64_t>> kn = {{17, 33}, {33, 100}, {100, 17}, {1, 5}, {768, 300}};
  uint32_t seed = 1;
  for (int64_t M : {1, 7, 64})
    for (auto [K, N] : kn)
      for (bool bias : {false, true}) {
        TestLinear t = make_linear(N, K, DType::F32, bias, seed++);
        std::vector<float> x = random_vec(size_t(M * K), seed++);
        std::vector<float> y(size_t(M * N), std::nanf(""));
        ordo::linear(be, x.data(), M, K, t.lin, y.data());
        expect_linear_close(
            x, M, K, t, y, 1e-4,
            "M=" + std::to_string(M) + " K=" + std::to_string(K) + " N=" + std::to_string(N) + (bias ? " bias" : ""));
      }
}

TEST_P(LinearTest, ReducedPrecisionWeightsMatchDequantisedReference) {
  const Backend be = GetParam();
  uint32_t seed = 100;
  for (DType dt : {DType::F16, DType::BF16, DType::I8})
    for (int64_t M : {1, 7, 64})
      for (auto [K, N] : std::vector<std::pair<int64_t, int64_t>>{{17, 33}, {100, 17}, {768, 129}})
        for (bool bias : {false, true}) {
          TestLinear t = make_linear(N, K, dt, bias, seed++);
          std::vector<float> x = random_vec(size_t(M * K), seed++);
          std::vector<float> y(size_t(M * N), std::nanf(""));
          ordo::linear(be, x.data(), M, K, t.lin, y.data());
          expect_linear_close(x, M, K, t, y, 1e-4,
                              std::string(ordo::dtype_name(dt)) + " M=" + std::to_string(M) +
                                  " K=" + std::to_string(K) + " N=" + std::to_string(N) + (bias ? " bias" : ""));
        }
}

TEST_P(LinearTest, OneRowOddShapes) {
  // Decode (M = 1) at row counts around and off the 64-row panels and widths off the SIMD step
  // (odd K pads I8 panels), and an I8 width of several 512-column integer blocks plus a tail.
  const Backend be = GetParam();
  uint32_t seed = 500;
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::I8})
    for (int64_t N : {1, 7, 9, 16, 17, 63, 130, 1031})
      for (int64_t K : {5, 8, 23, 64, 100, 768}) {
        TestLinear t = make_linear(N, K, dt, N % 2 == 1, seed++);
        std::vector<float> x = random_vec(size_t(K), seed++);
        std::vector<float> y(size_t(N), std::nanf(""));
        ordo::linear(be, x.data(), 1, K, t.lin, y.data());
        expect_linear_close(x, 1, K, t, y, 1e-4,
                            std::string(ordo::dtype_name(dt)) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
      }
  for (DType dt : {DType::F32, DType::I8}) {  // I8: eight integer blocks and a tail
    TestLinear t = make_linear(67, 4100, dt, true, seed++);
    std::vector<float> x = random_vec(4100, seed++);
    std::vector<float> y(67);
    ordo::linear(be, x.data(), 1, 4100, t.lin, y.data());
    expect_linear_close(x, 1, 4100, t, y, 1e-4, std::string(ordo::dtype_name(dt)) + " K=4100");
  }
}

TEST_P(LinearTest, GroupEqualsSeparateCalls) {
  // linear_group (q/k/v, gate/up) shares one parallel region; each row is computed in the same
  // order however the rows are split, so the results are identical to linear().
  const Backend be = GetParam();
  const int64_t K = 768;
  TestLinear a = make_linear(768, K, DType::F32, true, 41);
  TestLinear b = make_linear(256, K, DType::I8, false, 42);
  TestLinear c = make_linear(300, K, DType::BF16, true, 43);
  for (int64_t M : {1, 5}) {
    std::vector<float> x = random_vec(size_t(M * K), 44);
    std::vector<float> ya(size_t(M * 768)), yb(size_t(M * 256)), yc(size_t(M * 300));
    ordo::linear_group(be, x.data(), M, K, {{&a.lin, ya.data()}, {&b.lin, yb.data()}, {&c.lin, yc.data()}});
    for (const auto& [t, y] : {std::pair<const TestLinear*, std::vector<float>*>{&a, &ya}, {&b, &yb}, {&c, &yc}}) {
      std::vector<float> alone(y->size());
      ordo::linear(be, x.data(), M, K, t->lin, alone.data());
      EXPECT_EQ(*y, alone) << "M=" << M << " N=" << t->lin.weight.dim(0);
      expect_linear_close(x, M, K, *t, *y, 1e-4, "group M=" + std::to_string(M));
    }
  }
  std::vector<float> x(10), y(8);
  TestLinear bad = make_linear(8, 16, DType::F32, false, 45);
  EXPECT_THROW(ordo::linear_group(be, x.data(), 1, 10, {{&bad.lin, y.data()}}), ordo::Error);
}

TEST_P(LinearTest, RejectsMismatchedShapes) {
  const Backend be = GetParam();
  TestLinear t = make_linear(8, 16, DType::F32, false, 3);
  std::vector<float> x(32), y(16);
  try {
    ordo::linear(be, x.data(), 2, 15, t.lin, y.data());
    FAIL() << "no error for K mismatch";
  } catch (const ordo::Error& e) {
    EXPECT_NE(std::string(e.what()).find("15"), std::string::npos) << e.what();
  }
  TestLinear q = make_linear(8, 16, DType::I8, false, 4);
  q.lin.scales = Tensor();
  EXPECT_THROW(ordo::linear(be, x.data(), 2, 16, q.lin, y.data()), ordo::Error);
  t.lin.bias = Tensor::from({3}, {1, 2, 3});
  EXPECT_THROW(ordo::linear(be, x.data(), 2, 16, t.lin, y.data()), ordo::Error);
}

TEST_P(LinearTest, InsideOpenMPParallelRegion) {
  // Callers that parallelise themselves still get correct results (run sequentially inside).
  const Backend be = GetParam();
  const int64_t M = 5, K = 33, N = 40;
  TestLinear t = make_linear(N, K, DType::F32, true, 11);
  std::vector<float> x = random_vec(size_t(M * K), 12);
  constexpr int kCopies = 4;
  std::vector<std::vector<float>> ys(kCopies, std::vector<float>(size_t(M * N)));
#pragma omp parallel for num_threads(2)
  for (int c = 0; c < kCopies; ++c) ordo::linear(be, x.data(), c % 2 ? M : 1, K, t.lin, ys[size_t(c)].data());
  for (int c = 0; c < kCopies; ++c) {
    const int64_t m = c % 2 ? M : 1;
    std::vector<float> xs(x.begin(), x.begin() + m * K), yc(ys[size_t(c)].begin(), ys[size_t(c)].begin() + m * N);
    expect_linear_close(xs, m, K, t, yc, 1e-4, "copy " + std::to_string(c));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, LinearTest, ::testing::Values(Backend::OpenBLAS, Backend::OneDNN),
                         backend_param_name);

// ---- gemm_nt -----------------------------------------------------------------------------

TEST_P(GemmTest, StridesAlphaBeta) {
  const Backend be = GetParam();
  const int64_t M = 9, N = 13, K = 21, lda = 25, ldb = 30, ldc = 17;
  const std::vector<float> A = random_vec(size_t(M * lda), 31), B = random_vec(size_t(N * ldb), 32);
  const std::vector<float> C0 = random_vec(size_t(M * ldc), 33);
  for (float alpha : {1.0f, 0.5f})
    for (float beta : {0.0f, 1.0f, -0.5f}) {
      std::vector<float> C = C0;
      if (beta == 0.0f)  // beta 0 must overwrite, even NaN
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) C[size_t(m * ldc + n)] = std::nanf("");
      ordo::gemm_nt(be, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t n = 0; n < N; ++n) {
          double ref = 0, scale = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double p = double(A[size_t(m * lda + k)]) * B[size_t(n * ldb + k)];
            ref += p;
            scale += std::fabs(p);
          }
          ref = alpha * ref + (beta == 0.0f ? 0.0 : beta * double(C0[size_t(m * ldc + n)]));
          scale = std::fabs(alpha) * scale + std::fabs(beta * C0[size_t(m * ldc + n)]);
          EXPECT_NEAR(C[size_t(m * ldc + n)], ref, 1e-5 * scale + 1e-30)
              << "alpha=" << alpha << " beta=" << beta << " at " << m << "," << n;
        }
        for (int64_t n = N; n < ldc; ++n)  // padding between rows untouched
          EXPECT_EQ(C[size_t(m * ldc + n)], C0[size_t(m * ldc + n)]);
      }
    }
}

TEST_P(GemmTest, NnStridesAlphaBetaAndSplit) {
  // C = alpha · A[M, K] · B[K, N] + beta · C; the large shape is split into panels over threads
  // (OpenBLAS: columns of B, not rows), and inside a parallel region it runs on one thread.
  const Backend be = GetParam();
  for (const auto& shape : {std::tuple<int64_t, int64_t, int64_t>{9, 13, 21}, {70, 130, 200}}) {
    // Plain variables, not a structured binding: an OpenMP region may not capture one in C++17.
    const int64_t M = std::get<0>(shape), N = std::get<1>(shape), K = std::get<2>(shape);
    const int64_t lda = K + 3, ldb = N + 5, ldc = N + 2;
    const std::vector<float> A = random_vec(size_t(M * lda), 51), B = random_vec(size_t(K * ldb), 52);
    const std::vector<float> C0 = random_vec(size_t(M * ldc), 53);
    for (bool nested : {false, true})
      for (float beta : {0.0f, -0.5f}) {
        const float alpha = 0.75f;
        std::vector<float> C = C0;
        if (nested) {
#pragma omp parallel num_threads(2)
          {
#pragma omp single
            ordo::gemm_nn(be, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
          }
        } else {
          ordo::gemm_nn(be, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
        }
        int bad = 0;
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t n = 0; n < N; ++n) {
            double ref = 0, scale = 0;
            for (int64_t k = 0; k < K; ++k) {
              const double p = double(A[size_t(m * lda + k)]) * B[size_t(k * ldb + n)];
              ref += p;
              scale += std::fabs(p);
            }
            ref = alpha * ref + beta * double(C0[size_t(m * ldc + n)]);
            scale = alpha * scale + std::fabs(beta * C0[size_t(m * ldc + n)]);
            if (!(std::fabs(C[size_t(m * ldc + n)] - ref) <= 1e-5 * scale + 1e-30) && bad++ < 5)
              ADD_FAILURE() << "M=" << M << " beta=" << beta << " nested=" << nested << " at " << m << "," << n;
          }
          for (int64_t n = N; n < ldc; ++n) EXPECT_EQ(C[size_t(m * ldc + n)], C0[size_t(m * ldc + n)]);
        }
      }
  }
  std::vector<float> C(4);
  EXPECT_THROW(ordo::gemm_nn(be, 2, 2, 3, 1.0f, C.data(), 3, C.data(), 1, 0.0f, C.data(), 2), ordo::Error);
}

TEST_P(GemmTest, LargeMatchesReference) {
  const Backend be = GetParam();
  const int64_t M = 70, N = 130, K = 200;
  const std::vector<float> A = random_vec(size_t(M * K), 41), B = random_vec(size_t(N * K), 42);
  std::vector<float> C(size_t(M * N));
  ordo::gemm_nt(be, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C.data(), N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = 0, scale = 0;
      for (int64_t k = 0; k < K; ++k) {
        ref += double(A[size_t(m * K + k)]) * B[size_t(n * K + k)];
        scale += std::fabs(double(A[size_t(m * K + k)]) * B[size_t(n * K + k)]);
      }
      ASSERT_NEAR(C[size_t(m * N + n)], ref, 1e-5 * scale) << m << "," << n;
    }
}

TEST_P(GemmTest, EmptyAndZeroK) {
  const Backend be = GetParam();
  std::vector<float> C = {1, 2, 3, 4};
  ordo::gemm_nt(be, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 3, 0.0f, C.data(), 2);
  EXPECT_EQ(C, (std::vector<float>{1, 2, 3, 4}));
  ordo::gemm_nt(be, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 1, 2.0f, C.data(), 2);
  EXPECT_EQ(C, (std::vector<float>{2, 4, 6, 8}));
  EXPECT_THROW(ordo::gemm_nt(be, 2, 2, 3, 1.0f, C.data(), 2, C.data(), 3, 0.0f, C.data(), 2), ordo::Error);
}

TEST_P(GemmTest, InsideOpenMPParallelRegion) {
  // Attention may call gemm_nt per head from its own parallel loop.
  const Backend be = GetParam();
  const int64_t M = 6, N = 19, K = 64;
  constexpr int kHeads = 6;
  const std::vector<float> A = random_vec(size_t(kHeads * M * K), 101), B = random_vec(size_t(kHeads * N * K), 102);
  std::vector<float> C(size_t(kHeads * M * N));
#pragma omp parallel for num_threads(2)
  for (int h = 0; h < kHeads; ++h)
    ordo::gemm_nt(be, M, N, K, 0.125f, A.data() + h * M * K, K, B.data() + h * N * K, K, 0.0f, C.data() + h * M * N, N);
  for (int h = 0; h < kHeads; ++h)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double ref = 0, scale = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = double(A[size_t((h * M + m) * K + k)]) * B[size_t((h * N + n) * K + k)];
          ref += p;
          scale += std::fabs(p);
        }
        ASSERT_NEAR(C[size_t((h * M + m) * N + n)], 0.125 * ref, 1e-5 * scale) << h << ":" << m << "," << n;
      }
}

INSTANTIATE_TEST_SUITE_P(Backends, GemmTest, ::testing::Values(Backend::OpenBLAS, Backend::OneDNN), backend_param_name);
