// Student t statistics for `ordo compare` (see ordo/stats.hpp).
#include "ordo/stats.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "ordo/tensor.hpp"  // ordo::Error

namespace ordo::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The continued fraction of I_x(a, b) (Numerical Recipes' betacf, modified Lentz).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    d = std::fabs(d) < kTiny ? 1 / kTiny : 1 / d;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    d = std::fabs(d) < kTiny ? 1 / kTiny : 1 / d;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) return h;
  }
  throw Error("incomplete beta: no convergence for a=" + std::to_string(a) + " b=" + std::to_string(b) +
              " x=" + std::to_string(x));
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !(x >= 0 && x <= 1))
    throw Error("incomplete beta: needs a, b > 0 and x in [0, 1], got a=" + std::to_string(a) +
                " b=" + std::to_string(b) + " x=" + std::to_string(x));
  if (x == 0 || x == 1) return x;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double dof) {
  if (!(dof > 0)) throw Error("Student t: degrees of freedom must be > 0, got " + std::to_string(dof));
  if (std::isnan(t)) return kNaN;
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(|T| > |t|) = I_{dof/(dof+t²)}(dof/2, 1/2)
  const double tail = 0.5 * incomplete_beta(dof / 2, 0.5, dof / (dof + t * t));
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double dof) {
  if (!(p > 0 && p < 1)) throw Error("Student t quantile: p must be in (0, 1), got " + std::to_string(p));
  if (p < 0.5) return -student_t_quantile(1 - p, dof);
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, dof) < p) lo = hi, hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-14 * hi; ++i) {  // bisection: the cdf is monotone
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, dof) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

MeanInterval mean_interval(const std::vector<double>& x, double level) {
  MeanInterval r;
  r.n = static_cast<int64_t>(x.size());
  if (x.empty()) return {0, kNaN, kNaN, kNaN};
  double sum = 0;
  for (double v : x) sum += v;
  r.mean = sum / static_cast<double>(r.n);
  if (r.n < 2) {
    r.sd = r.half_width = kNaN;
    return r;
  }
  double ss = 0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  r.sd = std::sqrt(ss / static_cast<double>(r.n - 1));
  const double tq = student_t_quantile(0.5 + level / 2, static_cast<double>(r.n - 1));
  r.half_width = tq * r.sd / std::sqrt(static_cast<double>(r.n));
  return r;
}

PairedTest paired_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw Error("paired t-test: " + std::to_string(a.size()) + " values against " + std::to_string(b.size()));
  std::vector<double> diff(a.size());
  for (size_t i = 0; i < a.size(); ++i) diff[i] = a[i] - b[i];
  const MeanInterval m = mean_interval(diff);
  PairedTest r{m.n, m.mean, kNaN, kNaN};
  if (m.n < 2) return r;
  if (m.sd == 0) {
    r.t = m.mean == 0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), m.mean);
    r.p = m.mean == 0 ? 1.0 : 0.0;
    return r;
  }
  r.t = m.mean / (m.sd / std::sqrt(static_cast<double>(m.n)));
  r.p = 2 * student_t_cdf(-std::fabs(r.t), static_cast<double>(m.n - 1));
  return r;
}

}  // namespace ordo::stats
