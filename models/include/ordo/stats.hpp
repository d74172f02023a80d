// Small-sample statistics for reporting probe results over seeds and items: Student t intervals and
// the paired t-test, on a regularized incomplete beta function of our own (no statistics library in
// the design card). Accurate to ~1e-10 relative over the ranges compare uses (dof 1..10^4).
#pragma once

#include <cstdint>
#include <vector>

namespace ordo::stats {

// I_x(a, b), the regularized incomplete beta function, for a, b > 0 and x in [0, 1] (Lentz's
// continued fraction, with I_x(a, b) = 1 − I_{1−x}(b, a) where that converges faster).
double incomplete_beta(double a, double b, double x);

// Student t with `dof` > 0 degrees of freedom: P(T <= t), and the t with P(T <= t) = p, p in (0, 1).
double student_t_cdf(double t, double dof);
double student_t_quantile(double p, double dof);

struct MeanInterval {
  int64_t n = 0;
  double mean = 0;        // NaN when n = 0
  double sd = 0;          // sample standard deviation (n − 1); NaN when n < 2
  double half_width = 0;  // mean ± half_width is the two-sided `level` interval; NaN when n < 2
};
// The Student t interval (n − 1 dof) of the mean of x.
MeanInterval mean_interval(const std::vector<double>& x, double level = 0.95);

struct PairedTest {
  int64_t n = 0;
  double mean_diff = 0;  // mean of a[i] − b[i]
  double t = 0;          // mean_diff / (sd / sqrt(n)); ±inf when every difference is the same non-zero
  double p = 0;          // two-sided; 1 when every difference is 0; NaN when n < 2
};
// Paired t-test of a against b (equal sizes, item by item); n − 1 dof.
PairedTest paired_t_test(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace ordo::stats
