// Element-wise and row kernels vs double-precision references (suite OpsTest): activations,
// norms, softmax, dot/axpy/add, backend names and the thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ordo/ops.hpp"
#include "support/random.hpp"

using ordo::Activation;
using ordo::Backend;

using ordo::test::random_vec;

namespace {

// Double references, in cancellation-free forms for negative x: 1 + erf(t) = erfc(−t) and
// 1 + tanh(u) = 2 / (1 + e^−2u). (The textbook forms lose every digit in double below x ≈ −6.)
double act_ref(Activation a, double x) {
  switch (a) {
    case Activation::SiLU: return x / (1.0 + std::exp(-x));
    case Activation::GeluErf: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case Activation::GeluTanh: return x / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::ReLU: return x > 0 ? x : 0.0;
  }
  return 0;
}

// Allowed relative error of a float activation at x: a few ulp, plus the float rounding of the
// inner argument (x/√2, or the exponent −x, −2u) amplified by the function's condition number
// (≈ x² for erfc(−x/√2), ≈ |z| for e^z) — this dominates far in the negative tail, where the
// results are tiny anyway.
double act_tol(Activation a, double x) {
  double cond = 0;
  switch (a) {
    case Activation::SiLU: cond = std::fabs(x); break;
    case Activation::GeluErf: cond = x * x; break;
    case Activation::GeluTanh: cond = 2.0 * std::sqrt(2.0 / M_PI) * std::fabs(x + 0.044715 * x * x * x); break;
    case Activation::ReLU: break;
  }
  return 4e-7 + 2.4e-7 * cond;
}

}  // namespace

TEST(OpsTest, ActivationClosedForms) {
  auto at = [](Activation a, float v) {
    ordo::activate(a, &v, 1);
    return v;
  };
  EXPECT_NEAR(at(Activation::SiLU, 1.0f), 0.7310585786300049, 1e-7);
  EXPECT_NEAR(at(Activation::GeluErf, 1.0f), 0.8413447460685429, 1e-7);
  EXPECT_NEAR(at(Activation::GeluTanh, 1.0f), 0.8411919906082768, 1e-7);
  EXPECT_NEAR(at(Activation::GeluErf, -1.0f), -0.15865525393145707, 1e-7);
  EXPECT_EQ(at(Activation::ReLU, -2.0f), 0.0f);
  EXPECT_EQ(at(Activation::ReLU, 2.5f), 2.5f);
  EXPECT_EQ(at(Activation::SiLU, 0.0f), 0.0f);
  EXPECT_STREQ(ordo::activation_name(Activation::GeluTanh), "gelu_tanh");
}

TEST(OpsTest, ActivationsMatchDoubleOverRange) {
  // 2003 values in [-12, 12] (SIMD body and scalar tail), plus extremes.
  std::vector<float> xs;
  for (int i = 0; i < 2003; ++i) xs.push_back(-12.0f + 24.0f * float(i) / 2002.0f);
  for (float v : {-100.0f, -88.0f, 88.0f, 100.0f, 1e-6f, -1e-6f}) xs.push_back(v);
  for (Activation a : {Activation::SiLU, Activation::GeluErf, Activation::GeluTanh, Activation::ReLU}) {
    std::vector<float> y = xs;
    ordo::activate(a, y.data(), int64_t(y.size()));
    int bad = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double ref = act_ref(a, double(xs[i]));
      // A few ulp relative, and an absolute floor for results that underflow toward 0.
      if (!(std::fabs(y[i] - ref) <= act_tol(a, xs[i]) * std::fabs(ref) + 1e-37) && bad++ < 5)
        ADD_FAILURE() << ordo::activation_name(a) << "(" << xs[i] << ") = " << y[i] << ", reference " << ref;
    }
    EXPECT_EQ(bad, 0) << ordo::activation_name(a);
  }
}

TEST(OpsTest, LargeActivationAndGatedActivation) {
  const int64_t n = 100003;  // multi-threaded path
  std::vector<float> g = random_vec(size_t(n), 51, -6.0f, 6.0f), up = random_vec(size_t(n), 52);
  for (Activation a : {Activation::SiLU, Activation::GeluErf, Activation::GeluTanh, Activation::ReLU}) {
    std::vector<float> y = g;
    ordo::gated_activate(a, y.data(), up.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double ref = act_ref(a, g[size_t(i)]) * up[size_t(i)];
      ASSERT_NEAR(y[size_t(i)], ref, (act_tol(a, g[size_t(i)]) + 1.2e-7) * std::fabs(ref) + 1e-37)
          << ordo::activation_name(a) << " at " << i;
    }
  }
}

TEST(OpsTest, RmsNormMatchesDouble) {
  const int64_t M = 5, D = 1003;
  const std::vector<float> x = random_vec(size_t(M * D), 61, -3.0f, 3.0f), w = random_vec(size_t(D), 62);
  std::vector<float> y(size_t(M * D)), inplace = x;
  ordo::rmsnorm(x.data(), w.data(), 1e-5f, M, D, y.data());
  ordo::rmsnorm(inplace.data(), w.data(), 1e-5f, M, D, inplace.data());
  for (int64_t m = 0; m < M; ++m) {
    double ss = 0;
    for (int64_t i = 0; i < D; ++i) ss += double(x[size_t(m * D + i)]) * x[size_t(m * D + i)];
    const double inv = 1.0 / std::sqrt(ss / double(D) + 1e-5);
    for (int64_t i = 0; i < D; ++i) {
      const double ref = x[size_t(m * D + i)] * inv * w[size_t(i)];
      ASSERT_NEAR(y[size_t(m * D + i)], ref, 1e-5 * std::fabs(ref) + 1e-7) << m << "," << i;
      ASSERT_EQ(inplace[size_t(m * D + i)], y[size_t(m * D + i)]);
    }
  }
}

TEST(OpsTest, LayerNormMatchesDouble) {
  const int64_t M = 4, D = 771;
  const std::vector<float> x = random_vec(size_t(M * D), 71, 2.0f, 6.0f);  // non-zero mean
  const std::vector<float> w = random_vec(size_t(D), 72), b = random_vec(size_t(D), 73);
  for (int variant = 0; variant < 3; ++variant) {
    const float* wp = variant == 2 ? nullptr : w.data();
    const float* bp = variant >= 1 ? nullptr : b.data();
    std::vector<float> y = x;  // in place
    ordo::layernorm(y.data(), wp, bp, 1e-5f, M, D, y.data());
    for (int64_t m = 0; m < M; ++m) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < D; ++i) mean += x[size_t(m * D + i)];
      mean /= double(D);
      for (int64_t i = 0; i < D; ++i) var += (x[size_t(m * D + i)] - mean) * (x[size_t(m * D + i)] - mean);
      var /= double(D);
      for (int64_t i = 0; i < D; ++i) {
        double ref = (x[size_t(m * D + i)] - mean) / std::sqrt(var + 1e-5);
        if (wp) ref *= w[size_t(i)];
        if (bp) ref += b[size_t(i)];
        ASSERT_NEAR(y[size_t(m * D + i)], ref, 2e-5 * std::fabs(ref) + 2e-6) << variant << ":" << m << "," << i;
      }
    }
  }
}

TEST(OpsTest, SoftmaxMatchesDoubleAndHandlesNegInf) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t n : {1, 7, 8, 37, 1000}) {
    std::vector<float> x = random_vec(size_t(n), uint32_t(80 + n), -20.0f, 20.0f);
    if (n > 2) x[1] = x[size_t(n - 1)] = ninf;
    std::vector<float> y = x;
    ordo::softmax(y.data(), n);
    double mx = -INFINITY, s = 0;
    for (float v : x) mx = std::max(mx, double(v));
    for (float v : x) s += std::exp(double(v) - mx);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double ref = std::exp(double(x[size_t(i)]) - mx) / s;
      EXPECT_NEAR(y[size_t(i)], ref, 1e-6 * ref + 1e-12) << "n=" << n << " i=" << i;
      if (x[size_t(i)] == ninf) {
        EXPECT_EQ(y[size_t(i)], 0.0f);
      }
      total += y[size_t(i)];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  std::vector<float> all(19, ninf);
  ordo::softmax(all.data(), int64_t(all.size()));
  for (float v : all) EXPECT_EQ(v, 0.0f);  // documented: all −inf → zeros
}

TEST(OpsTest, SoftmaxUnnormalizedReturnsTheSumOfExponentials) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t n : {1, 9, 64, 1000}) {
    std::vector<float> x = random_vec(size_t(n), uint32_t(180 + n), -20.0f, 20.0f);
    if (n > 2) x[0] = ninf;
    std::vector<float> y = x;
    const float sum = ordo::softmax_unnormalized(y.data(), n);
    double mx = -INFINITY, s = 0;
    for (float v : x) mx = std::max(mx, double(v));
    for (float v : x) s += std::exp(double(v) - mx);
    EXPECT_NEAR(sum, s, 1e-6 * s) << "n=" << n;
    EXPECT_GE(sum, 1.0f);  // the maximum contributes exp(0)
    for (int64_t i = 0; i < n; ++i) {
      const double ref = std::exp(double(x[size_t(i)]) - mx);
      EXPECT_NEAR(y[size_t(i)], ref, 1e-6 * ref + 1e-12) << "n=" << n << " i=" << i;
    }
  }
  std::vector<float> all(11, ninf);
  EXPECT_EQ(ordo::softmax_unnormalized(all.data(), int64_t(all.size())), 0.0f);
  for (float v : all) EXPECT_EQ(v, 0.0f);
}

// Every tail length of the masked last vector: the maximum may sit in the tail, and nothing past
// n is read into the result or written.
TEST(OpsTest, SoftmaxUnnormalizedTailsStayInsideTheRow) {
  for (int64_t n = 1; n <= 17; ++n) {
    std::vector<float> buf(size_t(n) + 8, 1e30f);  // past n: huge values that must not count
    for (int64_t i = 0; i < n; ++i) buf[size_t(i)] = 0.5f * float(i % 5) - 1.0f;
    buf[size_t(n - 1)] = 3.0f;  // the maximum, last (in the tail unless n is a multiple of 8)
    const float sum = ordo::softmax_unnormalized(buf.data(), n);
    double s = 0;
    for (int64_t i = 0; i < n - 1; ++i) s += std::exp(0.5 * double(i % 5) - 1.0 - 3.0);
    s += 1.0;
    EXPECT_NEAR(sum, s, 1e-6 * s) << "n=" << n;
    EXPECT_EQ(buf[size_t(n - 1)], 1.0f) << "n=" << n;
    for (size_t i = size_t(n); i < buf.size(); ++i) ASSERT_EQ(buf[i], 1e30f) << "n=" << n << " wrote " << i;
  }
}

TEST(OpsTest, DotAxpyAdd) {
  for (int64_t n : {0, 1, 7, 8, 33, 1000, 50001}) {
    const std::vector<float> a = random_vec(size_t(n), 91), b = random_vec(size_t(n), 92);
    double ref = 0, scale = 0;
    for (int64_t i = 0; i < n; ++i) {
      ref += double(a[size_t(i)]) * b[size_t(i)];
      scale += std::fabs(double(a[size_t(i)]) * b[size_t(i)]);
    }
    EXPECT_NEAR(ordo::dot(a.data(), b.data(), n), ref, 1e-6 * scale + 1e-12) << n;
    std::vector<float> y = b;
    ordo::axpy(-0.75f, a.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y[size_t(i)], b[size_t(i)] - 0.75 * a[size_t(i)], 1e-6) << n;
    y = b;
    ordo::add_inplace(y.data(), a.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[size_t(i)], b[size_t(i)] + a[size_t(i)]) << n;
  }
}

TEST(OpsTest, ParseBackend) {
  EXPECT_EQ(ordo::parse_backend("openblas"), Backend::OpenBLAS);
  EXPECT_EQ(ordo::parse_backend("OpenBLAS"), Backend::OpenBLAS);
  EXPECT_EQ(ordo::parse_backend("ONEDNN"), Backend::OneDNN);
  EXPECT_EQ(ordo::parse_backend(ordo::backend_name(Backend::OneDNN)), Backend::OneDNN);
  try {
    ordo::parse_backend("cuBLAS");
    FAIL() << "no error";
  } catch (const ordo::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cuBLAS"), std::string::npos) << msg;
    EXPECT_NE(msg.find("openblas"), std::string::npos) << msg;
    EXPECT_NE(msg.find("onednn"), std::string::npos) << msg;
  }
}

TEST(OpsTest, ThreadCount) {
  const int before = ordo::num_threads();
  EXPECT_GE(before, 1);
  ordo::set_num_threads(1);
  EXPECT_EQ(ordo::num_threads(), 1);
  EXPECT_EQ(omp_get_max_threads(), 1);
  int seen_in_other_thread = 0;
  std::thread([&] {
    ordo::num_threads();  // applies the count to this thread's OpenMP ICV
    seen_in_other_thread = omp_get_max_threads();
  }).join();
  EXPECT_EQ(seen_in_other_thread, 1);
  ordo::set_num_threads(0);
  const unsigned hc = std::thread::hardware_concurrency();
  EXPECT_EQ(ordo::num_threads(), hc ? int(hc) : 1);
  ordo::set_num_threads(before);
}
